// The conformance vectors (../shared/conformance: mlc-webllm, WebLLM 0.2.86's; mobiletransformers, the
// reference exporter's oracles; a suite's `dir`, mlc-webllm when absent) through the JS package,
// with the results the C suite asserts (tests/conformance/*.c): WebLLM's recorded results, or the
// documented divergences (docs/conformance.md). Shared by Node (conformance.test.mjs) and headless
// Chromium (chromium.test.mjs): each suite takes the package and the vector file's cases and throws
// on the first difference; it returns the number of cases it ran.
import { deepEqual, equal, ok, rejection } from './assert.mjs';

// WebLLM's location of an error: FILE then .key / [index] per pointer segment (tests/util/testutil.c).
export function webllmLocation(e) {
  let out = e.file;
  if (!e.pointer) return out;
  const segs = e.pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  segs.forEach((s, i) => {
    if (s === '' && i === segs.length - 1) out += ' key';
    else if (/^[0-9]+$/.test(s)) out += `[${s}]`;
    else out += `.${s}`;
  });
  return out;
}

function webllmMessage(e) {
  const loc = webllmLocation(e);
  return loc ? `${loc}: ${e.rule}` : e.rule;
}

function allSafeIntegers(v) {
  if (Array.isArray(v)) return v.every(allSafeIntegers);
  if (v && typeof v === 'object') return Object.values(v).every(allSafeIntegers);
  return typeof v !== 'number' || Number.isSafeInteger(v);
}

function base64Bytes(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// A parse vector file: each case's expected object, or WebLLM's error message opening ours.
async function parseCases(mpk, cases, parse, divergent = async () => false) {
  let ran = 0;
  for (const c of cases) {
    ran++;
    if (await divergent(c)) continue;
    if (c.expected_error) {
      const err = await rejection(parse(c), c.name);
      ok(err instanceof mpk.ModelpkgError, `${c.name}: not a ModelpkgError: ${err}`);
      const msg = webllmMessage(err);
      ok(msg.startsWith(c.expected_error.message), `${c.name}: expected\n  ${c.expected_error.message}\ngot\n  ${msg}`);
    } else {
      deepEqual(await parse(c), c.expected, c.name);
    }
  }
  return ran;
}

export const SUITES = [
  {
    file: 'canonical_json.json',
    title: "the Python producer's text and sha256; fractions and unsafe integers refused at their pointer",
    async run(mpk, cases) {
      let accepted = 0, refused = 0;
      for (const c of cases) {
        const doc = JSON.stringify(c.value);
        if (allSafeIntegers(c.value)) {
          const r = await mpk.canonicalJson(doc);
          equal(r.text, c.python_canonical_json, 'canonical text');
          equal(r.sha256, c.python_sha256, 'its sha256');
          equal(await mpk.sha256Id(r.text), c.python_sha256, 'sha256Id');
          accepted++;
        } else {
          const e = await rejection(mpk.canonicalJson(doc), JSON.stringify(c.value));
          ok(e instanceof mpk.MalformedError && e.pointer === '/n/2', `refused at /n/2: ${e}`);
          refused++;
        }
      }
      deepEqual([accepted, refused], [6, 1], 'accepted, refused');
      return accepted + refused;
    },
  },
  {
    file: 'interface_id.json',
    title: "the Python producer's id and canonical text; WebLLM's where they agree",
    async run(mpk, cases) {
      for (const c of cases) {
        const tasks = c.tasks !== undefined ? JSON.stringify(c.tasks) : c.tasks_json_text;
        if (c.name === 'lone_surrogate_in_name') {
          const e = await rejection(mpk.interfaceId(tasks), c.name);
          ok(e instanceof mpk.MalformedError && /invalid JSON/.test(e.rule), `${c.name}: ${e}`);
          continue;
        }
        const id = await mpk.interfaceId(tasks);
        equal(id, c.python_interface_id, c.name);
        equal(id === c.interface_id, c.webllm_equals_python === true, `${c.name}: equal to WebLLM's`);
        equal((await mpk.canonicalJson({ tasks: c.normalized_tasks })).text, c.python_canonical_json, c.name);
      }
      equal(cases.length, 15, 'cases');
      return cases.length;
    },
  },
  {
    file: 'model_package_parse.json',
    title: 'parseModelPackageManifest, every case',
    async run(mpk, cases) {
      const n = await parseCases(mpk, cases, (c) => mpk.parsePackage(JSON.stringify(c.input), { checkInterfaceId: false }));
      equal(n, 83, 'cases');
      return n;
    },
  },
  {
    file: 'load_model_package_manifest.json',
    title: 'bytes, then the interface_id self-check; two documented divergences',
    async run(mpk, cases) {
      let divergent = 0;
      const rules = { duplicate_key_last_wins: /duplicate object key/, invalid_utf8_byte_becomes_replacement_char: /invalid JSON/ };
      const n = await parseCases(mpk, cases, (c) => mpk.parsePackage(base64Bytes(c.input_base64)), async (c) => {
        const rule = rules[c.name];
        if (!rule) return false;
        // WebLLM keeps the last duplicate / decodes U+FFFD; modelpkg refuses at the byte
        const e = await rejection(mpk.parsePackage(base64Bytes(c.input_base64)), c.name);
        ok(e instanceof mpk.MalformedError && rule.test(e.rule) && e.offset > 0, `${c.name}: ${e}`);
        divergent++;
        return true;
      });
      deepEqual([n, divergent], [12, 2], 'cases, divergent');
      return n;
    },
  },
  {
    file: 'compiled_program_parse.json',
    title: 'parseCompiledProgramArtifact, every case',
    async run(mpk, cases) {
      const n = await parseCases(mpk, cases, (c) => mpk.parseArtifact(JSON.stringify(c.input)));
      equal(n, 41, 'cases');
      return n;
    },
  },
  {
    file: 'resolve_chat_completion.json',
    title: "the binding, or WebLLM's refusal as a MismatchError",
    async run(mpk, cases) {
      for (const c of cases) {
        // the vectors use placeholder ids: the sidecar's self-check is not part of this step
        const bound = mpk.bind(JSON.stringify(c.model_package), JSON.stringify(c.compiled_program), { checkInterfaceId: false });
        if (c.expected_error) {
          const e = await rejection(bound, c.name);
          ok(e instanceof mpk.MismatchError && e.rule.startsWith(c.expected_error.message), `${c.name}: ${e}`);
        } else {
          deepEqual(await bound, c.expected, c.name);
        }
      }
      equal(cases.length, 35, 'cases');
      return cases.length;
    },
  },
  {
    file: 'request_checks.json',
    title: "postInitAndCheckFieldsChatCompletion's message checks: accept, or WebLLM's refusal with its message",
    async run(mpk, cases) {
      const malformed = ['TypeError', 'SystemMessageOrderError', 'MessageOrderError'];
      // the vectors write a Float32Array as {"$float32array": [...]}: the real one goes in
      const typed = (v) => (Array.isArray(v) ? v.map(typed) : v && typeof v === 'object'
        ? ('$float32array' in v ? new Float32Array(v.$float32array) : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, typed(x)])))
        : v);
      for (const c of cases) {
        const checked = mpk.checkRequest(typed(c.request), { modelId: 'm', modelType: c.model_type, inputKinds: c.supported_input_kinds });
        if (!c.expected_error) {
          equal(await checked, true, c.name);
          continue;
        }
        const e = await rejection(checked, c.name);
        const cls = malformed.includes(c.expected_error.name) ? mpk.MalformedError : mpk.UnsupportedError;
        const [first, second] = c.expected_error.message.split('\n');
        ok(e instanceof cls && e.rule.startsWith(first) && (!second || e.rule.includes(second)) && e.pointer.startsWith('/messages/0'),
          `${c.name}: ${e}`);
      }
      equal(cases.length, 15, 'cases');
      return cases.length;
    },
  },
  {
    file: 'resource_urls.json',
    title: 'resolveModelPackageResourceURLs, every case',
    async run(mpk, cases) {
      for (const c of cases) {
        const pkg = c.model_package ? JSON.stringify(c.model_package) : null;
        deepEqual(await mpk.resourceUrls(c.model_url, pkg), c.expected, c.name);
      }
      ok(cases.length >= 4, 'at least 4 cases');
      return cases.length;
    },
  },
];

// ---- prefill planning (tests/conformance/test_conf_prefill.c)

// WebLLM's error class -> the package's Error subclass name.
const PREFILL_ERRORS = {
  ContextWindowSizeExceededError: 'LimitError',
  PrefillChunkSizeSmallerThanImageError: 'LimitError',
  ArtifactManifestError: 'UnsupportedError',
  Error: 'InvalidArgumentError',
};

// WebLLM's message up to its first newline opens ours; its second line is in ours too.
function prefillMessage(name, e, expected) {
  const [first, ...rest] = expected.split('\n');
  ok(e.rule.startsWith(first), `${name}: expected message\n  ${first}\ngot\n  ${e.rule}`);
  if (rest.length) ok(e.rule.includes(rest.join('\n')), `${name}: message lacks "${rest.join('\n')}": ${e.rule}`);
}

// An artifact case as a planner configuration and SEGMENTS.json; imageRowsKnown: the image's rows
// declared as num_embeddings and not passed (the check then runs before the adapter).
function artifactCase(c, imageRowsKnown) {
  const input = (p) => (p ? { prompt: { prefix_token_ids: p.prefix_token_ids, placeholder_token_id: p.placeholder_token_id, suffix_token_ids: p.suffix_token_ids } } : null);
  const config = {
    generation_inputs: 'tokens', prefill_chunk_size: c.prefill_chunk_size, context_window_size: c.context_window_size ?? 0,
    sliding_window_size: c.sliding_window_size ?? -1, system_prefix_token_ids: c.system_prefix_token_ids ?? [],
    audio: input(c.audio_prompt), image: input(c.image_prompt),
  };
  let next = 0;
  const segments = c.segments.map((s) => {
    if (s !== 'AUDIO' && s !== 'IMAGE') return { text: c.tokenizer[s] };
    const rows = c.adapter_rows[next++];
    if (s === 'AUDIO') return { audio: { rows } };
    if (imageRowsKnown && config.image) {
      config.image.num_embeddings = rows;
      return { image: {} };
    }
    return { image: { rows } };
  });
  return { config, prompt: { filled_kv_cache_length: c.filled_kv_cache_length ?? 0, segments } };
}

function comparePlan(name, c, plan) {
  equal(plan.prompt_length, c.expected_prompt_length, `${name}: prompt length`);
  equal(plan.chunks.length, c.expected_chunks.length, `${name}: chunks`);
  let offset = 0;
  plan.chunks.forEach((ch, i) => {
    const e = c.expected_chunks[i];
    deepEqual(ch.token_ids, e.token_ids, `${name}: chunk ${i} token ids`);
    deepEqual(ch.modality_ids, e.modality_ids, `${name}: chunk ${i} modality ids`);
    deepEqual(ch.embedding_rows, e.embedding_rows, `${name}: chunk ${i} embedding rows`);
    equal(ch.offset, offset, `${name}: chunk ${i} offset (the chunks tile the prompt)`);
    offset += ch.token_ids.length;
  });
  equal(offset, plan.prompt_length, `${name}: the chunks' positions`);
}

// A toy tokenizer for rendered strings: one token per UTF-8 byte, id = byte + 1000.
const toyTokens = (s) => [...new TextEncoder().encode(s)].map((b) => 1000 + b);

SUITES.push(
  {
    file: 'prefill_chunks_artifact.json',
    title: "getArtifactPrefillChunks: the same chunks, or the same error at the same step (both image forms)",
    async run(mpk, cases) {
      for (const c of cases) {
        for (const known of [false, true]) {
          const name = `${c.name}${known ? ' (image rows known)' : ''}`;
          const { config, prompt } = artifactCase(c, known);
          const planned = mpk.planPrefill(config, prompt);
          if (c.expected_error) {
            const e = await rejection(planned, name);
            equal(e.name, PREFILL_ERRORS[c.expected_error.name], `${name}: error class for ${c.expected_error.name}`);
            prefillMessage(name, e, c.expected_error.message);
            // WebLLM disposes an adapter output exactly when the context check before slicing refuses it
            const seg = /^\/segments\/(\d+)$/.exec(e.pointer);
            const media = seg && !prompt.segments[+seg[1]].text;
            equal(media && e instanceof mpk.LimitError ? 1 : 0, c.adapter_outputs_disposed, `${name}: adapter outputs disposed`);
          } else {
            comparePlan(name, c, await planned);
          }
        }
      }
      equal(cases.length, 15, 'cases');
      return cases.length;
    },
  },
  {
    file: 'prefill_chunks_legacy.json',
    title: 'getChunkedPrefillInputData: the same pieces and chunk lengths, or the same error',
    async run(mpk, cases) {
      for (const [i, c] of cases.entries()) {
        const items = c.input.map((it) => (it.image !== undefined ? { image: it.embed_size } : { text: it.count }));
        const chunked = mpk.legacyChunks(items, c.prefill_chunk_size);
        if (c.expected_error) {
          const e = await rejection(chunked, `legacy ${i}`);
          equal(e.name, PREFILL_ERRORS[c.expected_error.name], `legacy ${i}: error class`);
          prefillMessage(`legacy ${i}`, e, c.expected_error.message);
          continue;
        }
        const chunks = await chunked;
        deepEqual(chunks.map((ch) => ch.length), c.expected_chunk_lens, `legacy ${i}: chunk lengths`);
        chunks.forEach((ch, k) => {
          // the vectors write a token piece as [first, last] values of a range from the item's first
          // value, an image piece by the image's name (always whole)
          const got = ch.pieces.map((pc) => {
            const src = c.input[pc.item];
            if (src.image === undefined) return { tokens: [src.tokens[0] + pc.start, src.tokens[0] + pc.start + pc.count - 1], count: pc.count };
            equal(pc.start === 0 && pc.count === src.embed_size, true, `legacy ${i}: chunk ${k}: an image whole`);
            return { image: src.image };
          });
          const want = c.expected_chunks[k].map((ep) => (ep.image !== undefined ? { image: ep.image } : { tokens: ep.tokens, count: ep.count }));
          deepEqual(got, want, `legacy ${i}: chunk ${k}`);
        });
      }
      equal(cases.length, 9, 'cases');
      return cases.length;
    },
  },
  {
    file: 'prompt_segments.json',
    title: 'the segments a conversation renders to land in the plan in order, the system prefix in the first round only',
    async run(mpk, cases) {
      const audio = { prefix_token_ids: [256000], placeholder_token_id: 258881, suffix_token_ids: [258883] };
      const image = { prefix_token_ids: [], placeholder_token_id: 32000, suffix_token_ids: [] };
      let applied = 0;
      const check = async (name, conv, segs, filled) => {
        const sys = conv.system_prefix_token_ids ?? [];
        const config = {
          prefill_chunk_size: 64, context_window_size: 4096, sliding_window_size: -1, system_prefix_token_ids: sys,
          audio: { prompt: audio, adapter_function: 'audio_embed' }, image: { prompt: image, adapter_function: 'image_embed', num_embeddings: 576 },
        };
        const want = filled === 0 ? [...sys] : [];
        const mods = want.map(() => 0);
        const segments = segs.map((s) => {
          if (typeof s === 'string') {
            const ids = toyTokens(s);
            want.push(...ids), mods.push(...ids.map(() => 0));
            return { text: ids };
          }
          const isAudio = s.type === 'input_audio';
          const p = isAudio ? audio : image;
          const rows = isAudio ? 25 : 576;
          want.push(...p.prefix_token_ids), mods.push(...p.prefix_token_ids.map(() => 0));
          for (let r = 0; r < rows; r++) want.push(p.placeholder_token_id), mods.push(1);
          want.push(...p.suffix_token_ids), mods.push(...p.suffix_token_ids.map(() => 0));
          return isAudio ? { audio: { rows: 25 } } : { image: {} };
        });
        const plan = await mpk.planPrefill(config, { filled_kv_cache_length: filled, segments });
        deepEqual(plan.chunks.flatMap((ch) => ch.token_ids), want, `${name}: the prompt's token ids`);
        deepEqual(plan.chunks.flatMap((ch) => ch.modality_ids), mods, `${name}: modality ids`);
        deepEqual(plan.items.map((it) => it.segment), segments.flatMap((s, k) => (s.text ? [] : [k])), `${name}: items name their segments, in order`);
      };
      for (const c of cases) {
        if (!c.expected_segments) {
          ok(c.expected_error, `${c.name}: neither segments nor an error`); // a conversation-level refusal
          continue;
        }
        await check(c.name, c.conv_config, c.expected_segments, 0);
        if (c.expected_last_round_segments) await check(`${c.name} (last round)`, c.conv_config, c.expected_last_round_segments, 40);
        applied++;
      }
      equal(applied, 5, 'cases applied');
      return cases.length;
    },
  },
);

// ---- MobileTransformers (../shared/conformance/mobiletransformers): `dir: 'mt'` suites
SUITES.push(
  {
    dir: 'mobiletransformers',
    file: 'check_compat_cases.json',
    title: 'the shared version gate: accept, or a VersionError / MalformedError',
    async run(mpk, cases) {
      for (const c of cases) {
        const gate = mpk.checkVersions(c.doc, c.minReader, c.reader);
        if (c.expect === 'accept') equal(await gate, true, c.why);
        else {
          const e = await rejection(gate, c.why);
          ok(e instanceof mpk.VersionError || e instanceof mpk.MalformedError, `${c.why}: ${e}`);
        }
      }
      equal(cases.length, 10, 'cases');
      return cases.length;
    },
  },
  {
    dir: 'mobiletransformers',
    file: 'sanitize_repo_id_cases.json',
    title: 'sanitize_repo_id, byte for byte',
    async run(mpk, cases) {
      for (const c of cases) equal(await mpk.sanitizeRepoId(c.input), c.expected, c.input);
      return cases.length;
    },
  },
);

// ---- audio and image (the media module: `media: true` suites)

function hexF32(hex) {
  const out = new Float32Array(hex.length / 8);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < out.length; i++) dv.setUint32(4 * i, parseInt(hex.slice(8 * i, 8 * i + 8).match(/../g).reverse().join(''), 16), true);
  return out;
}

// The ideal resampling of x (a brick-wall low-pass at the lower Nyquist, every tap) at output i.
function idealAt(x, src, dst, i) {
  const t = (i * src) / dst, fc = (dst < src ? dst / src : 1) / 2;
  let sum = 0;
  for (let k = 0; k < x.length; k++) {
    const d = t - k, a = 2 * Math.PI * fc * d;
    sum += x[k] * 2 * fc * (d === 0 ? 1 : Math.sin(a) / a);
  }
  return sum;
}

function rmsError(got, x, src, dst, n) {
  let s = 0;
  for (let i = 0; i < n; i++) {
    const e = got[i] - idealAt(x, src, dst, i);
    s += e * e;
  }
  return Math.sqrt(s / n);
}

SUITES.push(
  {
    file: 'audio_decode.json',
    media: true,
    title: "decodeAudioInput: WebLLM's decisions, messages and lengths; its samples bit for bit without rate conversion, closer to the ideal with it",
    async run(mpk, cases) {
      let exact = 0, converted = 0, refused = 0;
      for (const c of cases) {
        const proc = c.processor, inp = c.input;
        let pcm = null, decoded;
        if (inp.format === 'pcm_f32') {
          // data that is not a Float32Array (a plain array) is refused as WebLLM refuses it
          pcm = inp.data_f32_hex !== undefined ? hexF32(inp.data_f32_hex) : null;
          decoded = mpk.decodeAudio(pcm ?? inp.pcm_as_plain_array, proc, { sampleRate: inp.sample_rate });
        } else {
          // every other format is taken as WAV data text; data of another type is refused
          decoded = mpk.decodeAudio(typeof inp.data === 'string' ? inp.data : inp.data_as_number ?? null, proc);
        }
        if (c.expected_error) {
          const e = await rejection(decoded, c.name);
          ok(e.rule.startsWith(c.expected_error.message), `${c.name}: expected\n  ${c.expected_error.message}\ngot\n  ${e.rule}`);
          refused++;
          continue;
        }
        const a = await decoded;
        const want = hexF32(c.expected_f32_hex);
        equal(a.samples.length, want.length, `${c.name}: samples`);
        if (!a.resampled) {
          deepEqual([...new Uint32Array(a.samples.buffer, a.samples.byteOffset, a.samples.length)],
            [...new Uint32Array(want.buffer)], `${c.name}: the samples bit for bit`);
          exact++;
        } else {
          const x = pcm ?? (await mpk.decodeAudio(inp.data, { sample_rate_hz: a.sourceRate, min_samples: 1, max_samples: 2 ** 40 })).samples;
          const ours = rmsError(a.samples, x, a.sourceRate, proc.sample_rate_hz, want.length);
          const theirs = rmsError(want, x, a.sourceRate, proc.sample_rate_hz, want.length);
          ok(ours <= theirs * 1.0001 + 1e-7, `${c.name}: farther from the ideal than WebLLM (${ours} > ${theirs})`);
          converted++;
        }
      }
      ok(exact > 0 && converted > 0 && refused > 0, `exact ${exact}, converted ${converted}, refused ${refused}`);
      return cases.length;
    },
  },
  {
    file: 'image_resize.json',
    media: true,
    title: "planImageResize: WebLLM's plan, every case",
    async run(mpk, cases) {
      for (const [i, c] of cases.entries())
        deepEqual(await mpk.planImageResize(c.source_width, c.source_height, c.resize), c.expected, `case ${i}`);
      ok(cases.length >= 12, 'at least 12 cases');
      return cases.length;
    },
  },
);

// cleanModelUrl as WebLLM 0.2.86 computes it (values from running its bundle in Node 20), and refusals.
export async function cleanModelUrlCases(mpk) {
  const cases = [
    ['https://huggingface.co/mlc-ai/M', 'https://huggingface.co/mlc-ai/M/resolve/main/'],
    ['https://huggingface.co/mlc-ai/M/resolve/v1.0/', 'https://huggingface.co/mlc-ai/M/resolve/v1.0/'],
    ['HTTPS://HF.co:443/a/../M', 'https://hf.co/M/resolve/main/'],
    ['https://h/resolve/', 'https://h/resolve/resolve/main/'],
    ['https://h/m /', 'https://h/m%20/resolve/main/'],
  ];
  for (const [url, want] of cases) equal(await mpk.cleanModelUrl(url), want, url);
  const ftp = await rejection(mpk.cleanModelUrl('ftp://h/m'), 'ftp');
  ok(ftp instanceof mpk.UnsupportedError && /ftp/.test(ftp.rule), `ftp: ${ftp}`);
  ok((await rejection(mpk.cleanModelUrl('models/m'), 'relative')) instanceof mpk.InvalidArgumentError, 'relative URL');
  return cases.length + 2;
}
