// The page under examples/web/ in headless Chromium, served by this test's own HTTP server: a
// model checked from a URL (the form filled from the query) and from a picked folder shows the check
// report and the fit verdict; a screenshot of it is saved (MPK_SCREENSHOT, else the temporary
// directory) and the report's verdict is seen in the screenshot's pixels, not only in the DOM.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { EXAMPLES, REPO } from './helpers.mjs';
import { serve } from './server.mjs';

const CHROMIUM = process.env.MPK_CHROMIUM || '/usr/bin/chromium';
const PUPPETEER = join(REPO, '.deps', 'node_modules', 'puppeteer-core');
const SHOT = process.env.MPK_SCREENSHOT || join(tmpdir(), 'modelpkg-web-page.png');
const missing = !existsSync(CHROMIUM) ? `${CHROMIUM} not found (Debian's chromium: scripts/setup.sh --test)`
  : !existsSync(PUPPETEER) ? `${PUPPETEER} not found (puppeteer-core: scripts/deps_node.sh js)` : null;

let browser, server;
before(async () => {
  if (missing) return;
  const puppeteer = createRequire(join(REPO, '.deps', 'package.json'))('puppeteer-core');
  server = await serve({ '/js/': join(REPO, 'js'), '/examples/': EXAMPLES });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(query) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 1500 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.url}/examples/web/index.html${query}`);
  await page.waitForFunction("['done', 'failed'].includes(document.body.dataset.state) || (document.body.dataset.state === 'ready' && !location.search.includes('run=1'))", { timeout: 60000 });
  assert.deepEqual(errors, []);
  return page;
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);

test('the page: a model from a URL, its check report and fit verdict, in a screenshot', async (t) => {
  if (missing) return t.skip(missing);
  const q = new URLSearchParams({ url: '/examples/gemma4-audio/', lib: '/examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm',
    features: 'shader-f16', maxBinding: '134217728', memory: '1GiB', run: '1' });
  const page = await open(`?${q}`);
  assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await text(page, '#failure'));
  assert.equal(await text(page, '#verdict'), 'OK: all checks hold (gemma4-audio)');
  assert.equal(await text(page, '#fit .fits'), 'Fits this device');
  const report = await text(page, '#report');
  for (const want of ['contract', 'declared', 'interface_id', 'model_type: gemma4', 'verified: false'])
    assert.ok(report.includes(want), `report lacks '${want}': ${report}`);
  const png = await page.screenshot({ fullPage: true });
  writeFileSync(SHOT, png);
  // the verdict's box in the screenshot holds its green text (#0a6b2b): decoded by the page itself
  const box = await page.$eval('#verdict', (e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y + scrollY, w: r.width, h: r.height }; });
  const green = await page.evaluate(async (b64, b) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = new OffscreenCanvas(img.width, img.height);
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(Math.floor(b.x), Math.floor(b.y), Math.ceil(b.w), Math.ceil(b.h)).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 1] > d[i] + 40 && d[i + 1] > d[i + 2] + 20) n++;
    return n;
  }, Buffer.from(png).toString('base64'), box);
  assert.ok(green > 100, `only ${green} green pixels where the verdict is (screenshot: ${SHOT})`);
  t.diagnostic(`screenshot: ${SHOT} (${png.length} bytes)`);
  await page.close();
});

test('the page: a picked folder whose library is not the package\'s: FAILED, its problems listed', async (t) => {
  if (missing) return t.skip(missing);
  const tmp = mkdtempSync(join(tmpdir(), 'mpk-web-'));
  try {
    const dir = join(tmp, 'gemma4-audio');
    cpSync(join(EXAMPLES, 'gemma4-audio'), dir, { recursive: true });
    rmSync(join(dir, 'lib'), { recursive: true });
    mkdirSync(join(dir, 'lib'));
    cpSync(join(EXAMPLES, 'mismatched-lib', 'gemma4-audio-other-weights-webgpu.wasm'), join(dir, 'lib', 'other-webgpu.wasm'));
    const page = await open('');
    await (await page.$('#folder')).uploadFile(dir); // a directory: Chromium gives each file its webkitRelativePath
    assert.equal(await page.$eval('#libInFolder', (e) => e.value), 'lib/other-webgpu.wasm'); // the one library, chosen
    await page.click('#run');
    await page.waitForFunction("['done', 'failed'].includes(document.body.dataset.state)", { timeout: 60000 });
    assert.equal(await page.evaluate(() => document.body.dataset.state), 'done', await text(page, '#failure'));
    assert.match(await text(page, '#verdict'), /^FAILED: \d+ problems? \(gemma4-audio\)$/);
    const problems = await page.$$eval('#report table.problems tr', (rows) => rows.map((r) => r.textContent));
    assert.ok(problems.length > 0 && problems.some((p) => p.includes('mismatch')), JSON.stringify(problems));
    await page.close();
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
