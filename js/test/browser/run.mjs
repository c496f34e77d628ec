// What chromium.test.mjs calls in the page (window.mpkTest): the shared conformance suites over the
// vectors fetched from the server, and checks of packages whose files are fetched by name.
import * as mpk from '/js/src/index.js';
import { SUITES, cleanModelUrlCases } from '/js/test/shared/conformance.mjs';

async function fetchOk(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r;
}

window.mpkTest = {
  // [{file, ran} | {file, error}] for every suite, then cleanModelUrl's cases.
  // media: false, the contract suites and cleanModelUrl; true, the media module's suites
  async conformance(media = false) {
    const out = [];
    for (const s of SUITES.filter((x) => !!x.media === media)) {
      try {
        const { cases } = await (await fetchOk(`/shared/conformance/${s.dir || 'mlc-webllm'}/${s.file}`)).json();
        out.push({ file: s.file, ran: await s.run(mpk, cases) });
      } catch (e) {
        out.push({ file: s.file, error: String(e && e.stack || e) });
      }
    }
    if (media) return out;
    try {
      out.push({ file: 'cleanModelUrl', ran: await cleanModelUrlCases(mpk) });
    } catch (e) {
      out.push({ file: 'cleanModelUrl', error: String(e) });
    }
    return out;
  },
  // check an example: its files (names relative to /examples/DIR/) fetched as Blobs into a Map.
  async checkExample(dir, names, options) {
    const files = new Map();
    for (const n of names) files.set(n, await (await fetchOk(`/examples/${dir}/${n}`)).blob());
    return mpk.check(files, { name: dir, ...options });
  },
  // the same through a fetch function: each file asked for by name.
  async checkLazy(dir, options) {
    const asked = [];
    const report = await mpk.check(async (name) => {
      asked.push(name);
      const r = await fetch(`/examples/${dir}/${name}`);
      return r.ok ? r : null;
    }, { name: dir, ...options });
    return { report, asked };
  },
  version: () => mpk.version(),
  mpk,
};
window.mpkReady = true;
