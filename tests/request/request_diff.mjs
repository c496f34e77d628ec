// Differential test of the request checks (src/mlc/request.c, docs/mlc-request.md) against WebLLM
// 0.2.86's own postInitAndCheckFieldsChatCompletion, imported from its bundle: random chat requests
// drawn from a grammar of the pieces those checks read (roles, content arrays, image_url and
// input_audio parts with good and bad fields), against random models (type, declared kinds). A fresh
// seed each run (printed) plus fixed ones.
// usage: node request_diff.mjs WEBLLM_EVAL WEBLLM_BUNDLE [SEED...]   (MPK_REQUEST_DIFF_SEED=N: that seed alone)
//
// Agreement: WebLLM accepts -> modelpkg accepts, except where modelpkg is stricter by its documented
// rule (a content that is neither text nor an array, a part that is no object: refused, malformed);
// WebLLM throws one of its errors -> modelpkg refuses with that error's code and message (its second
// line joined with ". "); WebLLM crashes on the shape (a TypeError of its own making) -> modelpkg
// refuses the request as malformed.
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [evalTool, bundle, ...argSeeds] = process.argv.slice(2);
const w = await import(pathToFileURL(resolve(bundle)).href);
const check = w.postInitAndCheckFieldsChatCompletion;

const MALFORMED = -1, UNSUPPORTED = -5;
const CODE = {
  UserMessageContentErrorForNonVLM: UNSUPPORTED, UnsupportedContentPartError: UNSUPPORTED,
  UnsupportedDetailError: UNSUPPORTED, UnsupportedImageURLError: UNSUPPORTED, MultipleTextContentError: UNSUPPORTED,
  SystemMessageOrderError: MALFORMED, MessageOrderError: MALFORMED,
};
const OWN_TYPE_ERRORS = [/^pcm_f32 input_audio\./, /^WAV input_audio\.data/];

function rng(seed) { // mulberry32
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

const F32 = Symbol('f32'); // stands for a Float32Array until the case is built
const P = {
  role: ['user', 'user', 'user', 'user', 'system', 'assistant', 'tool', 'User', undefined, 3],
  text: ['hi', '', 'a\nb', '\u00fc\ud83d\ude00'],
  url: ['data:image/png;base64,AAAA', 'data:image', 'http://x/a.png', 'https://x/a.png', 'http', 'httpx', 'HTTP://x',
    'ftp://x/a.png', 'data:audio/wav;base64,AA', '', ' http://x', 'blob:x', 'file:///a.png'],
  detail: [undefined, undefined, undefined, null, 'low', 'high', 'auto', '', 0, false, [], ['a', null, 1.5], {}],
  format: ['pcm_f32', 'pcm_f32', 'wav', 'wav', 'mp3', undefined, 'PCM_F32', '', null, 3],
  data: [F32, F32, [0, 0], 'UklGRg==', 'data:audio/wav;base64,UklGRg==', 'https://x/a.wav', 'HTTP:x', 'http//x',
    'httpsx:', '  https://x', 3, null, undefined, '', {}, true],
  rate: [16000, 16000, 44100, 1, 0, -1, 1.5, '16000', 9007199254740991, 9007199254740992, 1e3, null, undefined, NaN,
    Infinity, -0, true],
  partType: ['text', 'text', 'image_url', 'image_url', 'input_audio', 'input_audio', 'other', undefined, 5, 'IMAGE_URL'],
  modelType: ['LLM', 'VLM', 'embedding'],
  kinds: [undefined, undefined, [], ['audio'], ['image'], ['audio', 'image']],
};

function gen(r) {
  const pick = (a) => a[Math.floor(r() * a.length)];
  const set = (o, k, v) => { if (v !== undefined) o[k] = v; return o; };
  const part = () => {
    const type = pick(P.partType);
    if (r() < 0.05) return pick([null, 'text', 7, [], 1.5e-5, -2.5e-7, 0.1, 1e21, 123.456, true]); // not an object
    const p = set({}, 'type', type);
    if (type === 'image_url') {
      const img = r() < 0.04 ? pick([undefined, 'x', null]) : set(set({}, 'url', r() < 0.04 ? pick([3, null]) : pick(P.url)), 'detail', pick(P.detail));
      set(p, 'image_url', img);
    } else if (type === 'input_audio') {
      const a = r() < 0.04 ? pick([undefined, 'x', null]) : set(set(set({}, 'format', pick(P.format)), 'data', pick(P.data)), 'sample_rate', pick(P.rate));
      set(p, 'input_audio', a);
    } else if (r() < 0.8) p.text = pick(P.text);
    return p;
  };
  const content = () => {
    const x = r();
    if (x < 0.3) return pick(P.text);
    if (x < 0.35) return pick([null, undefined, 3, 1.25e-6, {}, { type: 'text' }]);
    const n = Math.floor(r() * 4);
    return Array.from({ length: n }, part);
  };
  const n = 1 + Math.floor(r() * 4);
  const messages = Array.from({ length: n }, () => set(set({}, 'role', pick(P.role)), 'content', content()));
  return { request: { messages }, model_type: pick(P.modelType), kinds: pick(P.kinds), model_id: pick(['m', 'Llama-3-8B', 'x y']) };
}

// The request as WebLLM receives it (Float32Arrays), and as modelpkg's JSON text (the marker).
const toWebllm = (v) => v === F32 ? new Float32Array([0, 0.5]) : Array.isArray(v) ? v.map(toWebllm)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toWebllm(x)])) : v;
const toText = (req) => JSON.stringify(req, (k, v) => (v === F32 ? { $float32array: 2 } : v));

// modelpkg's documented strictness: a content that is neither text nor an array, or a part that is
// no object, is refused where WebLLM reads on. WebLLM gets a stand-in there that throws STRICT when
// it is read (content.length, part.type), so the check order decides as it does for WebLLM's own
// errors. Not where WebLLM's non-VLM refusal prints the content first.
const STRICT = new Error('modelpkg refuses this shape');
const tripwire = (key) => new Proxy({}, { get: (t, k) => { if (k === key) throw STRICT; return undefined; } });
function withTripwires(c, req) {
  if (c.kinds === undefined && c.model_type !== 'VLM') return req;
  for (const m of req.messages) {
    if (m.role !== 'user' || typeof m.content === 'string') continue;
    if (!Array.isArray(m.content)) m.content = tripwire('length');
    else m.content = m.content.map((p) => (p === null || typeof p !== 'object' || Array.isArray(p) ? tripwire('type') : p));
  }
  return req;
}

function webllm(c) {
  try {
    check(withTripwires(c, toWebllm(c.request)), c.model_id, w.ModelType[c.model_type],
      c.kinds === undefined ? undefined : new Set(c.kinds));
    return { ok: true };
  } catch (e) {
    if (e === STRICT) return null;
    if (e.name in CODE) return { name: e.name, code: CODE[e.name], message: e.message.replace('\n', '. ') };
    if (e instanceof TypeError && OWN_TYPE_ERRORS.some((re) => re.test(e.message))) return { name: 'TypeError', code: MALFORMED, message: e.message };
    if (e instanceof TypeError) return { crash: e.message, code: MALFORMED };
    throw e;
  }
}

const seeds = process.env.MPK_REQUEST_DIFF_SEED ? [Number(process.env.MPK_REQUEST_DIFF_SEED)]
  : argSeeds.length ? argSeeds.map(Number) : [1, 2, 3, randomInt(1, 2 ** 31)];
const cases = [];
for (const seed of seeds) {
  const r = rng(seed);
  for (let i = 0; i < 1500; i++) cases.push({ seed, ...gen(r) });
}

const input = cases.map((c) => JSON.stringify({ request: toText(c.request), model_id: c.model_id, model_type: c.model_type,
  kinds: c.kinds ?? null })).join('\n') + '\n';
const run = spawnSync(evalTool, ['request'], { input, encoding: 'utf8', maxBuffer: 1 << 28 });
if (run.status !== 0) { console.error(`request_diff: ${evalTool} failed: ${run.stderr}`); process.exit(1); }
const outs = run.stdout.trim().split('\n').map((l) => JSON.parse(l));

let differ = 0;
const tally = { accepted: 0, refused: 0, stricter: 0, crash: 0 };
cases.forEach((c, i) => {
  const want = webllm(c), got = outs[i];
  let ok;
  if (want === null) { ok = got.error === MALFORMED; tally.stricter++; }
  else if (want.ok) { ok = got.ok === true; tally.accepted++; }
  else if (want.crash) { ok = got.error === MALFORMED; tally.crash++; }
  else { ok = got.error === want.code && got.message.startsWith(want.message.slice(0, 400)); tally.refused++; }
  if (!ok && differ++ < 10) {
    console.log(`DIFFER (seed ${c.seed}): ${toText(c.request)} model ${c.model_type} ${JSON.stringify(c.kinds)}\n` +
      `  webllm:   ${JSON.stringify(want ?? 'refused by modelpkg\'s stricter shape rule')}\n  modelpkg: ${JSON.stringify(got)}`);
  }
});
console.log(`request_diff: ${cases.length} cases (seeds ${seeds.join(' ')}; ${tally.accepted} accepted, ${tally.refused} ` +
  `refused by WebLLM's checks, ${tally.crash} WebLLM crashes, ${tally.stricter} stricter), ${differ} differ`);
process.exit(differ ? 1 : 0);
