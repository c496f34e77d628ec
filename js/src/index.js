// modelpkg for JavaScript: the C library compiled to WebAssembly (docs/wasm.md, js/README.md).
// Every function is async (the module loads on first use). Documents are bytes (Uint8Array,
// ArrayBuffer, a typed array, a Blob or File), their text (a string), or a JSON value (an object or
// array, serialized with JSON.stringify). Results are plain objects: a check or fit report is the
// CLI's --json document (docs/check-report.md, docs/CLI.md); parsed documents and bindings have the
// shapes WebLLM 0.2.86 gives them. A failure is thrown as a ModelpkgError subclass (errors.js)
// carrying the file, the JSON pointer and the rule.
import { errorFromProblem, InvalidArgumentError } from './errors.js';
import { loadModule } from './module.js';

export * from './errors.js';

const core = () => loadModule('modelpkg-core');
const enc = new TextEncoder();

function invalid(message) {
  return new InvalidArgumentError({ code: 'invalid-argument', code_value: -11, file: '', pointer: '', message });
}

// Bytes of a document or file.
export async function toBytes(x) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (typeof x === 'string') return enc.encode(x);
  if (x && typeof x.arrayBuffer === 'function') return new Uint8Array(await x.arrayBuffer()); // Blob, File, Response
  if (x !== null && typeof x === 'object') return enc.encode(JSON.stringify(x));
  throw invalid(`not a document: ${x === null ? 'null' : typeof x} (bytes, a Blob, a string or a JSON value)`);
}

function unwrap(answer) {
  if (answer.error) throw errorFromProblem(answer.error);
  return answer.result;
}

async function callCore(op, args, data) {
  const m = await core();
  return unwrap(m.call(op, args, data == null ? null : await toBytes(data)));
}

async function text(x) {
  return typeof x === 'string' ? x : new TextDecoder().decode(await toBytes(x));
}

/** The library's version, its components and what computes its hashes. */
export async function version() {
  const v = await callCore('version');
  return { version: v.version, components: v.components.split(' '), hashImplementation: v.hash_implementation };
}

/** Canonical JSON (sorted keys by code point, no whitespace, integers only) and its "sha256:<hex>". */
export async function canonicalJson(doc) {
  return callCore('canonical_json', null, doc);
}

/** "sha256:<hex>" of bytes. */
export async function sha256Id(data) {
  return callCore('sha256_id', null, data);
}

/** The interface_id of a `tasks` object (normalized first, as WebLLM and MLC's producer do). */
export async function interfaceId(tasks) {
  return callCore('interface_id', null, tasks);
}

/** Parse mlc-model-manifest.json: WebLLM's parsed object (tasks normalized). Unless
 * checkInterfaceId is false, its interface_id must be its tasks' (loadModelPackageManifest). */
export async function parsePackage(doc, { file, checkInterfaceId = true } = {}) {
  return callCore('package_parse', { file, skip_interface_check: !checkInterfaceId }, doc);
}

/** Parse a compiled program (the `artifact` object of a library's _metadata). */
export async function parseArtifact(doc, { file } = {}) {
  return callCore('artifact_parse', { file }, doc);
}

/** The _metadata a compiled model library carries (.wasm, .so, .dylib, .dll, .tar; or a JSON file of
 * it): {metadata (the object as stored), model_type, kv_state_kind, artifact (parsed, or null),
 * artifact_only}. */
export async function readMetadata(lib, { file } = {}) {
  return callCore('metadata', { file: file ?? lib?.name }, lib);
}

/** Bind a package to a compiled program as WebLLM's resolveChatCompletionArtifact does. */
export async function bind(pkg, artifact, { checkInterfaceId = true, artifactFile } = {}) {
  return callCore('resolve', { package: await text(pkg), skip_interface_check: !checkInterfaceId, file: artifactFile },
    artifact);
}

/** WebLLM's cleanModelUrl (hub URLs gain resolve/main/). */
export async function cleanModelUrl(url) {
  return callCore('clean_model_url', { url });
}

/** Where WebLLM fetches a model's documents: {chatConfigUrl, tensorCacheBaseUrl, tensorCacheManifestUrl}. */
export async function resourceUrls(url, pkg = null) {
  return callCore('resource_urls', { url, package: pkg == null ? null : await text(pkg) });
}

/** Check a chat-completion request as WebLLM's postInitAndCheckFieldsChatCompletion checks its
 * messages (docs/mlc-request.md): content arrays only where the model takes them, input_audio and
 * image_url parts only where declared, their fields, one text part per message, message order.
 * model: {modelId, modelType ('LLM' default, 'VLM', 'embedding'), inputKinds (WebLLM's
 * supportedInputKinds: a Set or array of 'audio' / 'image', e.g. a binding's supported_input_kinds;
 * undefined for a model without a manifest)}. Resolves to true or throws the refusal (a
 * MalformedError or UnsupportedError naming the field, e.g. /messages/0/content/1/type). */
export async function checkRequest(request, { modelId, modelType, inputKinds, file } = {}) {
  let text;
  try {
    text = JSON.stringify(request, (k, v) => (v instanceof Float32Array ? { $float32array: v.length } : v));
  } catch (e) {
    throw invalid(`request: not serializable as JSON (${e.message})`);
  }
  if (typeof text !== 'string') throw invalid('request: a chat-completion request object');
  const kinds = inputKinds == null ? null : [...inputKinds];
  return callCore('request_check', { model_id: modelId, model_type: modelType, kinds, file }, text);
}

// ---- packages as files

function checkName(name) {
  const parts = String(name).split('/');
  if (!name || parts.some((p) => p === '' || p === '.' || p === '..'))
    throw invalid(`file name '${name}': a relative path without '.', '..' or empty parts`);
  return parts.join('/');
}

// The package's files as [[path, Uint8Array]]: a Map or object of name -> content, or an array or
// FileList of File objects from a folder picker (their webkitRelativePath without the folder).
async function filesOf(files) {
  let entries;
  if (files instanceof Map) entries = [...files];
  else if (Array.isArray(files) || (typeof FileList !== 'undefined' && files instanceof FileList))
    entries = [...files].map((f) => [relativeName(f), f]);
  else if (files && typeof files === 'object') entries = Object.entries(files);
  else throw invalid('files: a Map or object of name -> content, File objects, or a function (name) -> content');
  const out = [];
  for (const [name, content] of entries) out.push([checkName(name), await toBytes(content)]);
  // a file system holds each name once, and not as a file and a directory at once
  const names = new Set();
  for (const [n] of out) {
    if (names.has(n)) throw invalid(`file name '${n}' given twice`);
    names.add(n);
  }
  for (const [n] of out)
    for (let i = n.indexOf('/'); i >= 0; i = n.indexOf('/', i + 1))
      if (names.has(n.slice(0, i))) throw invalid(`file name '${n.slice(0, i)}' is a file and the directory of '${n}'`);
  return out;
}

function relativeName(f) {
  const rel = f.webkitRelativePath || f.name;
  const i = rel.indexOf('/');
  return f.webkitRelativePath && i >= 0 ? rel.slice(i + 1) : rel;
}

// A fetch function (name) -> content|null: what an MLC check reads, fetched by name — the
// sidecar, the chat config, the tensor cache it names and, only when weights are wanted, the
// shards it lists (a check of the documents needs no shard: noWeights).
async function fetchMlcFiles(get, wantWeights) {
  const out = [];
  const seen = new Map(); // name -> bytes: each file fetched once (shards hold many records)
  const fetchOne = async (name) => {
    if (seen.has(name)) return seen.get(name);
    seen.set(name, null);
    const c = await get(name);
    if (c == null) return null;
    const bytes = await toBytes(c);
    out.push([checkName(name), bytes]);
    seen.set(name, bytes);
    return bytes;
  };
  const manifest = await fetchOne('mlc-model-manifest.json');
  let cacheName = 'tensor-cache.json';
  if (manifest) {
    try {
      cacheName = JSON.parse(new TextDecoder().decode(manifest))?.weights?.manifest || cacheName;
    } catch {
      // the check reports the broken sidecar
    }
  }
  await fetchOne('mlc-chat-config.json');
  const cache = await fetchOne(checkName(cacheName));
  if (cache && wantWeights) {
    let records = [];
    try {
      records = JSON.parse(new TextDecoder().decode(cache)).records || [];
    } catch {
      // reported by the check
    }
    const base = cacheName.includes('/') ? cacheName.slice(0, cacheName.lastIndexOf('/') + 1) : '';
    for (const r of records) if (typeof r?.dataPath === 'string') await fetchOne(base + r.dataPath);
  }
  return out;
}

// The library: a name among the package's files (fetched with them by a fetch function), or bytes
// written outside the package. {arg: its path for --lib, outside: [[path, bytes]] to place}.
async function libraryFile(lib, files, get, dir) {
  if (lib == null) return { arg: null, outside: [] };
  if (typeof lib === 'string') {
    const name = checkName(lib);
    if (get) files.push([name, await toBytes(await get(name) ?? '')]);
    else if (!files.some(([n]) => n === name)) throw invalid(`lib: '${name}' is not among the package's files`);
    return { arg: `${dir}/${name}`, outside: [] };
  }
  const name = checkName(lib.name || 'model-lib.wasm');
  return { arg: `.lib/${name}`, outside: [[`.lib/${name}`, await toBytes(lib)]] };
}

// Run a CLI command with --json over the package's files; the parsed document. argv(dir, lib) gives
// the command's arguments; extra: more files ([[path, bytes]]) placed beside the package, under
// names starting with '.', which a package's own name (options.name) may not.
async function runJson(cmd, files, options, argv, extra = [], after = null) {
  const m = await core();
  const dir = checkName(options.name || 'model');
  if (dir.startsWith('.')) throw invalid(`name '${dir}': a package's name may not start with '.'`);
  const get = typeof files === 'function' ? files : null;
  const list = get ? await fetchMlcFiles(get, options.noWeights === false) : await filesOf(files);
  const lib = await libraryFile(options.lib, list, get, dir);
  // the package under DIR/ (an empty one still a directory), the rest beside it; run from DIR's parent
  const placed = list.length ? list.map(([n, b]) => [`${dir}/${n}`, b]) : [[`${dir}/.keep`, new Uint8Array(0)]];
  const doc = jsonOf(cmd, m.run(argv(dir, lib.arg), [...placed, ...lib.outside, ...extra]));
  // `after` reads the files the command judged in the same turn: nothing can change them in between
  return after ? after(doc, new Map(placed)) : doc;
}

// A command's --json document from its run; a usage error (exit status 2) thrown as its problem.
function jsonOf(cmd, r) {
  let doc = null;
  try {
    doc = r.stdout ? JSON.parse(r.stdout) : null;
  } catch {
    doc = null;
  }
  if (!doc) throw invalid(`modelpkg ${cmd}: ${r.stderr || `exit status ${r.status}`}`);
  if (r.status === 2) throw errorFromProblem(doc.problems?.[0] ?? { code: 'invalid-argument', message: r.stderr });
  return doc;
}

function features(f) {
  return Array.isArray(f) ? f.join(',') : String(f);
}

/** Check a package (MLC or MobileTransformers) from its files: the `modelpkg check --json` report.
 * files: a Map or object of name -> content, File objects from a folder picker, or a function
 * (name) -> content|null that fetches MLC documents lazily (shards only with noWeights: false).
 * options: lib (a file name among the files, or bytes/File), deviceFeatures, maxBindingSize,
 * noWeights, variant, allVariants, noHash, noGraph, name (the directory's name in the report). */
export async function check(files, options = {}) {
  const f = [];
  if (options.deviceFeatures != null) f.push('--device-features', features(options.deviceFeatures));
  if (options.maxBindingSize != null) f.push('--max-binding-size', String(options.maxBindingSize));
  if (options.noWeights) f.push('--no-weights');
  if (options.variant != null) f.push('--variant', String(options.variant));
  if (options.allVariants) f.push('--all-variants');
  if (options.noHash) f.push('--no-hash');
  if (options.noGraph) f.push('--no-graph');
  return runJson('check', files, options, (dir, lib) => ['check', dir, '--json', ...(lib ? ['--lib', lib] : []), ...f]);
}

/** Choose a MobileTransformers variant for a device and explain the choice: the `modelpkg mt select
 * --json` document (docs/mt-select.md; `ok` false and each variant's excluding filter when none
 * fits). manifest: mobiletransformers_manifest.json (bytes, text or the JSON value). device: abis
 * (array), executionProvider, quantization, engine, features (array), memoryMb, apiLevel,
 * preferQuant (array), storageBytes; a field not given filters nothing. */
export async function mtSelect(manifest, device = {}) {
  const list = (x) => (Array.isArray(x) ? x.join(',') : String(x));
  const flags = [['abis', '--abi', list], ['executionProvider', '--ep', String], ['quantization', '--quant', String],
    ['engine', '--engine', String], ['features', '--features', list], ['memoryMb', '--memory-mb', String],
    ['apiLevel', '--api-level', String], ['preferQuant', '--prefer-quant', list], ['storageBytes', '--storage-bytes', String]];
  const argv = ['mt', 'select', 'mobiletransformers_manifest.json', '--json'];
  for (const [key, flag, str] of flags) if (device[key] != null) argv.push(flag, str(device[key]));
  const m = await core();
  return jsonOf('mt select', m.run(argv, [['mobiletransformers_manifest.json', await toBytes(manifest)]]));
}

/** The MobileTransformers load gate (loadMergedWeightsReady) over a package's files: the `modelpkg
 * mt tensors --json` document (docs/CLI.md): per handoff-map entry and role the declared dtype and
 * shape, the .bin file, its size and checksum status. options: variant, name. */
export async function mtTensors(files, options = {}) {
  const v = options.variant != null ? ['--variant', String(options.variant)] : [];
  return runJson('mt tensors', files, options, (dir) => ['mt', 'tensors', dir, '--json', ...v]);
}

// A handoff dtype's typed array: its elements where JavaScript has the type, else the raw bits
// (float16 and bfloat16 as Uint16Array) or bytes (int4, uint4: two per byte, as stored).
const TYPED = { float32: Float32Array, float16: Uint16Array, bfloat16: Uint16Array, int64: BigInt64Array,
  int32: Int32Array, int8: Int8Array, uint8: Uint8Array };

/** The merged-weight tensors, once the load gate accepts every one: [{layer, role, dtype, shape,
 * file, data}] with `data` a typed array over a copy of the verified bytes (little-endian, as every
 * host running this module is). A package without merged weights gives []. A gate that refuses
 * throws its first problem (a MismatchError naming the file, ...); nothing is returned then. */
export async function mtLoadTensors(files, options = {}) {
  const v = options.variant != null ? ['--variant', String(options.variant)] : [];
  return runJson('mt tensors', files, options, (dir) => ['mt', 'tensors', dir, '--json', ...v], [], (doc, placed) => {
    if (!doc.ok) throw errorFromProblem(doc.problems[0] ?? { code: 'mismatch', message: 'the load gate refused the tensors' });
    return doc.tensors.map((t) => {
      const bytes = placed.get(t.file);
      if (!bytes || bytes.length !== t.declared_bytes) throw invalid(`${t.file}: not the bytes the gate verified`);
      const copy = new Uint8Array(bytes).buffer; // a copy of exactly these bytes (a Buffer's slice() is a view)
      const T = TYPED[t.dtype] ?? Uint8Array;
      return { layer: t.layer, role: t.role, dtype: t.dtype, shape: t.shape, file: t.file, data: new T(copy) };
    });
  });
}

/** What an MLC model needs of a device next to what it has: the `modelpkg fit --json` document.
 * options: lib, context, set ({name: value}), deviceMemory (bytes), maxBindingSize, deviceFeatures, name. */
export async function fit(files, options = {}) {
  const f = [];
  if (options.context != null) f.push('--context', String(options.context));
  for (const [k, v] of Object.entries(options.set || {})) f.push('--set', `${k}=${v}`);
  if (options.deviceMemory != null) f.push('--device-memory', String(options.deviceMemory));
  if (options.maxBindingSize != null) f.push('--max-binding-size', String(options.maxBindingSize));
  if (options.deviceFeatures != null) f.push('--device-features', features(options.deviceFeatures));
  return runJson('fit', files, options, (dir, lib) => ['fit', dir, '--json', ...(lib ? ['--lib', lib] : []), ...f]);
}

/** Plan the prefill of a prompt for a package and its library: the `modelpkg mlc plan --json`
 * document. segments: SEGMENTS.json ({filled_kv_cache_length?, segments: [{text: [ids]},
 * {audio: {rows}}, {image: {}}, ...]}, docs/prefill.md) as a JSON value or text. options: lib
 * (required), name. A refused prompt is thrown (LimitError for the context window, ...). */
export async function planPackagePrefill(files, segments, options = {}) {
  if (options.lib == null) throw invalid('planPackagePrefill: options.lib (the compiled library) is required');
  const doc = await runJson('mlc plan', files, options,
    (dir, lib) => ['mlc', 'plan', '--package', dir, '--lib', lib, '--segments', '.prompt/segments.json', '--json'],
    [['.prompt/segments.json', await toBytes(segments)]]);
  if (!doc.ok) throw errorFromProblem(doc.problems[0]);
  return doc;
}

/** Plan the prefill of a prompt with a planner configuration given as an object (the fields of
 * mpk_mlc_prefill_config: generation_inputs, embed_tokens, prefill, decode, audio and image
 * ({prompt: {prefix_token_ids, placeholder_token_id, suffix_token_ids}, adapter_function,
 * num_embeddings} or null), prefill_chunk_size, context_window_size, sliding_window_size,
 * system_prefix_token_ids); segments as for planPackagePrefill. The plan object of `mlc plan --json`. */
export async function planPrefill(config, segments, { file } = {}) {
  return callCore('prefill_plan', { config, file }, segments);
}

/** WebLLM's pre-manifest chunker (getChunkedPrefillInputData): items [{text: TOKENS} | {image:
 * EMBED_SIZE}] into chunks [{length, pieces: [{item, start, count}]}]; images are never split. */
export async function legacyChunks(items, prefillChunkSize) {
  return callCore('legacy_chunks', { items, prefill_chunk_size: prefillChunkSize });
}

// ---- MobileTransformers documents

/** Read mobiletransformers_manifest.json (its version gate and schema): the manifest as the
 * reference exporter writes it, as a plain object. */
export async function parseMtManifest(doc, { file } = {}) {
  return callCore('mt_manifest_parse', { file }, doc);
}

/** The files a variant's download plan selects ({path, size, sha256}, sorted by path): variant
 * (default: the manifest's defaultVariant), groups (default: all of the plan's). */
export async function mtPlanFiles(doc, { variant, groups, file } = {}) {
  return callCore('mt_plan_files', { variant, groups, file }, doc);
}

/** The shared version gate: resolves true when a document of schemaVersion / minReaderVersion is
 * readable by `reader` ("1.0"); a VersionError (or MalformedError) otherwise. */
export async function checkVersions(schemaVersion, minReaderVersion, reader = '1.0') {
  return callCore('mt_check_versions', { schema_version: schemaVersion, min_reader_version: minReaderVersion, reader });
}

/** A hub repo id's cache directory name ("org/model" -> "org__model"). */
export async function sanitizeRepoId(repoId) {
  return callCore('mt_sanitize_repo_id', { repo_id: repoId });
}

// ---- audio and image: the media module (dist/modelpkg-media), loaded on first use

const media = () => loadModule('modelpkg-media');

function processorOf(p, kind) {
  if (!p || typeof p !== 'object') throw invalid(`${kind} processor: an object as the package's tasks declare it`);
  return p;
}

/** Decode audio to the processor's PCM, as WebLLM's decodeAudioInput (with a better resampler:
 * docs/audio.md): input is a WAV file (bytes, Blob, File), input_audio.data text (base64 or a
 * data:audio/wav;base64 URL), or a Float32Array of mono samples with options.sampleRate. processor:
 * {sample_rate_hz, min_samples, max_samples} (the task input's processor). Returns {samples:
 * Float32Array, sampleRate, sourceRate, sourceChannels, sourceFrames, resampled, fromWav, peak, rms}. */
export async function decodeAudio(input, processor, { sampleRate, file } = {}) {
  processorOf(processor, 'audio');
  let form = 'wav', data, plainLength, noData = false;
  const bytesLike = input instanceof ArrayBuffer || ArrayBuffer.isView(input) || typeof input?.arrayBuffer === 'function';
  if (!bytesLike && !Array.isArray(input) && typeof input !== 'string') {
    form = 'data'; // neither text nor bytes: refused with WebLLM's message
    noData = true;
    data = new Uint8Array(0);
  } else if (Array.isArray(input)) {
    form = 'pcm_f32'; // not a Float32Array: refused with WebLLM's message
    plainLength = input.length;
    data = new Uint8Array(0);
  } else if (input instanceof Float32Array) {
    if (sampleRate == null) throw invalid('decodeAudio: PCM samples need options.sampleRate');
    form = 'pcm_f32';
    data = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  } else if (typeof input === 'string') {
    form = 'data';
    data = enc.encode(input);
  } else {
    data = await toBytes(input);
  }
  const m = await media();
  const r = m.callBlob('audio_decode', { processor, form, sample_rate: sampleRate, file, plain_array_length: plainLength, no_data: noData }, data);
  const a = unwrap(r);
  return {
    samples: new Float32Array(r.bytes.buffer, 0, a.samples), sampleRate: a.sample_rate_hz, sourceRate: a.source_rate,
    sourceChannels: a.source_channels, sourceFrames: a.source_frames, resampled: a.resampled, fromWav: a.from_wav,
    peak: a.peak, rms: a.rms,
  };
}

/** Decode an image (JPEG, PNG, WebP; EXIF orientation applied) to the adapter's tensor: processor
 * {resize: {mode: 'stretch' | 'center_crop', height, width}} (the task input's processor). options:
 * dtype 'uint8' (default) or 'uint32', ignoreOrientation, maxPixels, file. Returns {data:
 * Uint8Array | Uint32Array ([1, height, width, 3] row-major RGB), shape, format, source size,
 * orientation, plan, ...}. */
export async function decodeImage(input, processor, { dtype = 'uint8', ignoreOrientation = false, maxPixels = 0, file } = {}) {
  processorOf(processor, 'image');
  const m = await media();
  const r = m.callBlob('image_decode', { processor, dtype, ignore_orientation: ignoreOrientation, max_pixels: maxPixels, file },
    await toBytes(input));
  const i = unwrap(r);
  const data = i.dtype === 'uint32' ? new Uint32Array(r.bytes.buffer, 0, r.bytes.length / 4) : r.bytes;
  return {
    data, shape: [1, i.height, i.width, 3], dtype: i.dtype, format: i.format, sourceWidth: i.source_width,
    sourceHeight: i.source_height, sourceChannels: i.source_channels, sourceBits: i.source_bits, hasAlpha: i.has_alpha,
    orientation: i.orientation, orientationApplied: i.orientation_applied, decodedWidth: i.decoded_width,
    decodedHeight: i.decoded_height, jpegScaleNum: i.jpeg_scale_num, plan: i.plan, warning: i.warning,
  };
}

/** WebLLM's planImageResize: where a srcWidth x srcHeight image is drawn ({width, height, left, top}). */
export async function planImageResize(srcWidth, srcHeight, resize) {
  const m = await media();
  return unwrap(m.call('image_plan', { resize, src_width: srcWidth, src_height: srcHeight }));
}
