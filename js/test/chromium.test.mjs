// The package in headless Chromium (Debian's chromium, driven by puppeteer-core from npm:
// scripts/deps_node.sh js), from files served by this test's own HTTP server on 127.0.0.1: the
// WebLLM conformance suites (the same as in Node), and the examples checked from fetched files with
// the native CLI's report. Skipped, naming what is missing, without chromium or puppeteer-core.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { CLI, EXAMPLES, REPO, SHARED, readTree } from './helpers.mjs';
import { serve } from './server.mjs';

const CHROMIUM = process.env.MPK_CHROMIUM || '/usr/bin/chromium';
const PUPPETEER = join(REPO, '.deps', 'node_modules', 'puppeteer-core');
const missing = !existsSync(CHROMIUM) ? `${CHROMIUM} not found (Debian's chromium: scripts/setup.sh --test)`
  : !existsSync(PUPPETEER) ? `${PUPPETEER} not found (puppeteer-core: scripts/deps_node.sh js)` : null;

let browser, page, server;
before(async () => {
  if (missing) return;
  const puppeteer = createRequire(join(REPO, '.deps', 'package.json'))('puppeteer-core');
  server = await serve({ '/js/': join(REPO, 'js'), '/examples/': EXAMPLES, '/shared/': SHARED });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'], // root in a container, small /dev/shm
  });
  page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push(String(e)));
  await page.goto(`${server.url}/js/test/browser/index.html`);
  await page.waitForFunction('window.mpkReady === true', { timeout: 30000 }).catch((e) => {
    throw new Error(`the test page did not load: ${e.message}\n${logs.join('\n')}`);
  });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

test('Chromium: the WebLLM conformance suites, every case as in Node', async (t) => {
  if (missing) return t.skip(missing);
  const results = await page.evaluate(() => window.mpkTest.conformance());
  const failed = results.filter((r) => r.error);
  assert.deepEqual(failed, []);
  assert.ok(results.length >= 8, JSON.stringify(results));
  const v = await page.evaluate(() => window.mpkTest.version());
  assert.deepEqual(v.components, ['core', 'mlc', 'mt']);
});

test('Chromium: the audio and image vectors through the media module', async (t) => {
  if (missing) return t.skip(missing);
  const media = join(REPO, 'js', 'dist', 'modelpkg-media.wasm');
  if (!existsSync(media)) return t.skip(`${media} not found (the media module: scripts/wasm.sh)`);
  const results = await page.evaluate(() => window.mpkTest.conformance(true));
  assert.deepEqual(results.filter((r) => r.error), []);
  assert.ok(results.length >= 2, JSON.stringify(results));
});

function native(args) {
  const r = spawnSync(CLI, args, { cwd: EXAMPLES, encoding: 'utf8' });
  assert.ok(r.status === 0 || r.status === 1, `${CLI} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const EXAMPLE_CASES = [
  { dir: 'gemma4-audio', lib: 'lib/gemma4-audio-webgpu.wasm', flags: ['--device-features', 'shader-f16'], opts: { deviceFeatures: ['shader-f16'] } },
  { dir: 'llava-image', lib: 'lib/llava-image-webgpu.wasm', flags: [], opts: {} },
];
for (const c of EXAMPLE_CASES) {
  test(`Chromium: check ${c.dir} from files fetched over HTTP: the native CLI's report`, async (t) => {
    if (missing) return t.skip(missing);
    if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
    const want = native(['check', c.dir, '--json', '--lib', `${c.dir}/${c.lib}`, ...c.flags]);
    const names = Object.keys(readTree(join(EXAMPLES, c.dir)));
    const got = await page.evaluate((dir, n, o) => window.mpkTest.checkExample(dir, n, o), c.dir, names, { lib: c.lib, ...c.opts });
    assert.deepEqual(got, want);
    const lazy = await page.evaluate((dir, o) => window.mpkTest.checkLazy(dir, o), c.dir, { lib: c.lib, noWeights: false, ...c.opts });
    assert.deepEqual(lazy.report, want);
  });
}
