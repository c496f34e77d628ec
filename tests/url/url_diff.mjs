// Differential test of modelpkg's WHATWG URL resolution (src/core/url.c) and cleanModelUrl
// (src/mlc/urls.c) against the reference: Node's `new URL(ref, base).href` and WebLLM 0.2.86's own
// cleanModelUrl, taken from its bundle. Random (base, reference) pairs and model URLs are drawn from
// a grammar of tricky pieces; a fresh seed each run (printed) plus a fixed set.
// usage: node url_diff.mjs WEBLLM_EVAL WEBLLM_BUNDLE [SEED...]   (MPK_URL_DIFF_SEED=N: that seed alone)
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { randomInt } from "node:crypto";

const [evalTool, bundle, ...argSeeds] = process.argv.slice(2);
const src = readFileSync(bundle, "utf8");
const m = src.match(/function cleanModelUrl\(modelUrl\) \{[\s\S]*?\n\}/);
if (!m) { console.error(`url_diff: cleanModelUrl not found in ${bundle}`); process.exit(1); }
const cleanModelUrl = new Function(`${m[0]}; return cleanModelUrl;`)();

function rng(seed) { // mulberry32
  let a = seed >>> 0;
  return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a; t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
}

const P = {
  scheme: ["http", "https", "HTTP", "hTtPs", "http", "https", "ftp", "file", "ws", "blob", "h+t"],
  slashes: ["//", "//", "//", "/", "\\\\", "", "///", "/\\", "\\/"],
  userinfo: ["", "", "", "", "u@", "u:p@", "a:b:c@", "@", "u@x@", "\u00fc:%41@", " :x@", ":@", "u:@", ":p@", "a^|[]@", "%zz@"],
  host: ["example.com", "EXAMPLE.com", "Ex.Com.", "127.0.0.1", "0x7f.1", "0x7F.0.0.1", "017700000001", "4294967295",
    "4294967296", "1.2.3", "1.2.3.4.5", "0x", "1.0x", "09", "08.1", "0.0.0.0x100", "1.256", "256.1", "0x100000000",
    "1.2.3.4.", "1.2.3.4..", "[::1]", "[0:0:0:0:0:0:0:1]", "[1:2:3:4:5:6:7:8]", "[::ffff:1.2.3.4]", "[1::2:0:0:3]",
    "[::]", "[1:0:0:2::3]", "[1::", "[::1.2.3.04]", "[1:2:3:4:5:6:7::]", "[1:2:3:4:5:6:1.2.3.4]", "[FFFF::ABCD]",
    "[:1]", "[1:::2]", "a%41b", "a%2fb", "%2e", ".", "..", "a..b", "xn--nxasmq6b.com", "b\u00fccher.de", "a b", "a<b",
    "localhost", "a_b", "a-b", "-a.b-", "h%00", "a.b.c.d.e.f", "a\u00adb", "\uff21.com", "1e1", "0.1.2.3.a", "a.0x1",
    "a.09", "a.1", "1.2.3.0x", "a%", "a%2", "a*b", "a!$&'()*+,;=b", "a~b", "a{b}"],
  port: ["", "", "", ":", ":80", ":443", ":8080", ":0", ":65535", ":65536", ":00080", ":x", ":99999999999", ":1:2", ": 1"],
  seg: ["a", "A", ".", "..", "%2e", "%2E%2e", ".%2E", "%2e.", "...", "resolve", "main", "x.json", "\u00fc", "a b", "^",
    "{}", "`", "|", "\"", "<>", "%", "%zz", "%41", "'", "~", "@", ":", ";", "=", "[]", "\u00e9\u4e2d\ud83d\ude00",
    "\u0001", "\u007f", "", "a\tb", "a\nb", "a\rb", "%2f", "\\", "!$&()*+,"],
  sep: ["/", "/", "/", "\\"],
  query: ["", "", "", "?", "?a=b", "?'\"<>`{}^ \u00fc\u0001", "?x?y", "?%zz\\|", "?\ud83d\ude00"],
  frag: ["", "", "", "#", "#f", "#\"<>`{}^ \u00fc'\u0001", "#a#b", "#?x", "#\u007f"],
  edge: ["", "", "", "", " ", "\u0001", "\t", "\n", " \u001f ", "\u0000"],
};

function gen(r) {
  const pick = (a) => a[Math.floor(r() * a.length)];
  const path = () => { let s = ""; const n = Math.floor(r() * 4); for (let i = 0; i < n; i++) s += pick(P.sep) + pick(P.seg); return s; };
  const rest = () => path() + pick(P.query) + pick(P.frag);
  const authority = () => pick(P.userinfo) + (r() < 0.4 ? pick(["h.example", "HF.co", "10.0.0.1", "[::1]"]) : pick(P.host)) +
    (r() < 0.5 ? "" : pick(P.port));
  const absolute = (sane) => {
    const scheme = sane || r() < 0.85 ? pick(P.scheme.slice(0, 6)) : pick(P.scheme);
    return scheme + ":" + (sane ? "//" : pick(P.slashes)) + authority() + rest();
  };
  const edge = (s) => (r() < 0.2 ? pick(P.edge) + s + pick(P.edge) : s).replace(/\u0000/g, "");
  const relative = () => {
    switch (Math.floor(r() * 12)) {
      case 0: return "//" + authority() + rest();
      case 1: return "\\\\" + authority() + rest();
      case 2: return "/" + pick(P.seg) + rest();
      case 3: return pick(P.query) || "?";
      case 4: return pick(P.frag) || "#";
      case 5: return "";
      case 6: return pick([".", "..", "./", "../", "%2e", "%2e%2e/", ".%2e", "../../.."]);
      case 7: return pick(["http:", "https:", "HTTP:"]) + pick(["", "/", "//"]) + pick(P.seg) + rest();
      case 8: return absolute(false);
      default: return pick(P.seg) + rest();
    }
  };
  const base = edge(r() < 0.9 ? absolute(true) : absolute(false));
  return ["resolve", edge(relative()), base];
}

function genClean(r) {
  const pick = (a) => a[Math.floor(r() * a.length)];
  const term = ["", "", "", "\n", "\r", "\u2028", "\u2029", " ", "\t"];
  let s = pick(["https://huggingface.co", "https://HF.co:443", "http://h", "HTTPS://x.example", "https://[::1]:8080", "ftp://h", "h"]);
  const n = 1 + Math.floor(r() * 5);
  for (let i = 0; i < n; i++) {
    s += pick(["/", "/", "\\"]) + pick(["org", "m", "resolve", "resolve", "main", "..", "%2e", "", "x" + pick(term) + "y", pick(term)]);
  }
  s += pick(["", "/", "/resolve/main", "/resolve/main/", "/resolve/", "/resolve//", "resolve/x/", pick(term) + "/"]);
  return ["clean", s + pick(["", "", "?q", "#f", " "])];
}

function reference([op, input, base]) {
  try { return { href: op === "clean" ? cleanModelUrl(input) : new URL(input, base).href }; }
  catch (e) { return { error: String(e.message || e) }; }
}

function acceptable(ref, got, c) {
  if (ref.href !== undefined && got.href !== undefined) return ref.href === got.href;
  if (ref.error !== undefined && got.error !== undefined) return true;
  if (ref.href !== undefined && got.error === -5 /* MPK_EUNSUPPORTED */) {
    const u = new URL(ref.href);
    if (u.protocol !== "http:" && u.protocol !== "https:") return "unsupported";
    // a base of another scheme, refused by name (WebLLM's model URLs are http(s))
    const sm = got.message.match(/scheme "([^"]*)": only http and https/);
    const strip = (s) => (s || "").replace(/^[\x00-\x20]+/, "").replace(/[\t\n\r]/g, "").toLowerCase();
    if (sm && !/^https?$/i.test(sm[1]) && (strip(c[1]).startsWith(sm[1].toLowerCase() + ":") ||
        strip(c[2]).startsWith(sm[1].toLowerCase() + ":"))) return "unsupported";
    const text = c[1] + (c[2] || "");
    if (/IDNA/.test(got.message) && (/[^\x00-\x7f%]/.test(text) || /%|xn--/i.test(text))) return "unsupported";
  }
  return false;
}

const fixed = [1, 2, 3, 42, 1234, 65537];
const seeds = process.env.MPK_URL_DIFF_SEED ? [Number(process.env.MPK_URL_DIFF_SEED)]
  : argSeeds.length ? argSeeds.map(Number) : [...fixed, randomInt(1, 2 ** 31)];
const t0 = Date.now();
let total = 0, unsupported = 0, failed = 0, parsed = 0;
for (const seed of seeds) {
  const r = rng(seed);
  const cases = [];
  for (let i = 0; i < 1000; i++) cases.push(gen(r));
  for (let i = 0; i < 300; i++) cases.push(genClean(r));
  const out = spawnSync(evalTool, ["url"], { input: cases.map((c) => JSON.stringify(c)).join("\n") + "\n", maxBuffer: 1 << 28 });
  if (out.status !== 0) { console.error(`url_diff: ${evalTool} exited ${out.status}: ${out.stderr}`); process.exit(1); }
  const lines = out.stdout.toString().trim().split("\n");
  if (lines.length !== cases.length) { console.error(`url_diff: ${lines.length} answers for ${cases.length} cases`); process.exit(1); }
  let bad = 0;
  cases.forEach((c, i) => {
    const ref = reference(c), got = JSON.parse(lines[i]);
    const ok = acceptable(ref, got, c);
    if (ok === true && ref.href !== undefined) parsed++;
    if (ok === "unsupported") unsupported++;
    else if (!ok) {
      if (bad < 10) console.log(`seed ${seed} case ${i}: ${JSON.stringify(c)}\n  reference: ${JSON.stringify(ref)}\n  modelpkg:  ${JSON.stringify(got)}`);
      bad++;
    }
  });
  total += cases.length;
  failed += bad;
  console.log(`seed ${seed}: ${cases.length} cases, ${bad} differ`);
}
console.log(`url_diff: ${total} cases (${parsed} equal hrefs, ${unsupported} refused as unsupported: other schemes, IDNA), ${failed} differ, ${Date.now() - t0} ms`);
process.exit(failed ? 1 : 0);
