// The WebLLM 0.2.86 conformance vectors (../shared/conformance/mlc-webllm) through the JS package,
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
