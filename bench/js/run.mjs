// The JS package timed where it runs: headless Chromium (Debian's chromium, puppeteer-core from
// .deps) and Node, side by side with the native CLI as a process (bench/run_js.sh; docs/wasm.md).
// Prints medians (and the 90th percentile) of many calls in one process; the machine is shared:
// compare figures of one run.
//   node bench/js/run.mjs [ROUNDS]
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { readTree } from '../../js/test/helpers.mjs';
import { serve } from '../../js/test/server.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ROUNDS = Number(process.argv[2] || 200);
const CHROMIUM = process.env.MPK_CHROMIUM || '/usr/bin/chromium';
const CLI = process.env.MODELPKG_CLI || join(REPO, 'build', 'modelpkg');
const EX = 'gemma4-audio', LIB = 'lib/gemma4-audio-webgpu.wasm';

// The measured calls, as source run in either place (mp: the package; files: name -> bytes).
const CALLS = `
  const opts = { name: '${EX}', lib: '${LIB}', deviceFeatures: ['shader-f16'], noWeights: true };
  // n timed calls after n / 10 untimed ones (JIT, heap growth)
  const time = async (fn, n) => {
    for (let i = 0; i < Math.ceil(n / 10); i++) await fn();
    const t = [];
    for (let i = 0; i < n; i++) { const t0 = performance.now(); await fn(); t.push(performance.now() - t0); }
    t.sort((a, b) => a - b);
    return { median: t[t.length >> 1], p90: t[Math.floor(t.length * 0.9)], first: null };
  };
  const first0 = performance.now(); await mp.check(files, opts); const first = performance.now() - first0;
  const check = await time(() => mp.check(files, opts), ROUNDS);
  check.first = first;
  const withWeights = await time(() => mp.check(files, { ...opts, noWeights: false }), ROUNDS);
  const pkgText = new TextDecoder().decode(files['mlc-model-manifest.json']);
  const parse = await time(() => mp.parsePackage(pkgText), ROUNDS);
  return { check, withWeights, parse };
`;
const run = new Function('mp', 'files', 'ROUNDS', `return (async () => { ${CALLS} })();`);

function nativeCheck(n) {
  const t = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = spawnSync(CLI, ['check', EX, '--lib', `${EX}/${LIB}`, '--device-features', 'shader-f16', '--no-weights'], { cwd: join(REPO, 'examples') });
    t.push(performance.now() - t0);
    if (r.status !== 0) throw new Error(`${CLI}: exit ${r.status}`);
  }
  t.sort((a, b) => a - b);
  return { median: t[t.length >> 1], p90: t[Math.floor(t.length * 0.9)] };
}

const files = readTree(join(REPO, 'examples', EX));
const mp = await import(join(REPO, 'js', 'src', 'index.js'));
const node = await run(mp, files, ROUNDS);

const puppeteer = createRequire(join(REPO, '.deps', 'package.json'))('puppeteer-core');
const server = await serve({ '/js/': join(REPO, 'js'), '/bench/': join(REPO, 'bench') });
const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
let chromium;
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/bench/js/page.html`);
  await page.waitForFunction('window.benchReady === true');
  const b64 = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, v.toString('base64')]));
  chromium = await page.evaluate(async (b64files, src, rounds) => {
    const files = Object.fromEntries(Object.entries(b64files).map(([k, v]) => [k, Uint8Array.from(atob(v), (c) => c.charCodeAt(0))]));
    const fn = new Function('mp', 'files', 'ROUNDS', `return (async () => { ${src} })();`);
    return fn(window.modelpkg, files, rounds);
  }, b64, CALLS, ROUNDS);
} finally {
  await browser.close();
  await server.close();
}
const nat = nativeCheck(Math.min(ROUNDS, 30));

const ms = (x) => `${x.toFixed(3)} ms`;
console.log(`modelpkg JS (WebAssembly) on examples/${EX} + ${LIB}, ${ROUNDS} calls each (median, p90)`);
console.log(`${'call'.padEnd(52)}${'Chromium'.padEnd(24)}Node ${process.versions.node}`);
const row = (name, c, n) => console.log(`${name.padEnd(52)}${`${ms(c.median)} (${ms(c.p90)})`.padEnd(24)}${ms(n.median)} (${ms(n.p90)})`);
row('check (manifest + library, no weights)', chromium.check, node.check);
row('check (manifest + library + shards)', chromium.withWeights, node.withWeights);
row('parsePackage (sidecar, interface_id self-check)', chromium.parse, node.parse);
console.log(`first check, module load included: Chromium ${ms(chromium.check.first)}, Node ${ms(node.check.first)}`);
console.log(`native: modelpkg check --no-weights as a process: ${ms(nat.median)} (${ms(nat.p90)}), ${Math.min(ROUNDS, 30)} runs`);
console.log(`verdict (issue 23: a package pair checked in <= 2 ms in Chromium): ${chromium.check.median <= 2 ? 'met' : 'NOT met'} (${ms(chromium.check.median)})`);
