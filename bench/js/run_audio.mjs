// Issue 23's audio benchmark, in headless Chromium: 10 minutes of 44.1 kHz stereo speech (espeak-ng,
// looped and converted by sox) decoded to 16 kHz mono by the JS package's media module and by
// WebLLM 0.2.86's decodeAudioInput (lifted from its npm bundle, as scripts/audio_quality.py does),
// in the same page, same input; medians of ROUNDS calls each, their ratio, and the SNR of both
// outputs against `sox ... rate -v 16000`. WebLLM takes base64 text: the encoding is done before
// its clock starts (its call alone is timed); modelpkg is given the file's bytes.
//   node bench/js/run_audio.mjs [SECONDS] [ROUNDS]     (bench/run_js.sh runs it)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { serve } from '../../js/test/server.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SECONDS = Number(process.argv[2] || 600), ROUNDS = Number(process.argv[3] || 5);
const CHROMIUM = process.env.MPK_CHROMIUM || '/usr/bin/chromium';
const WEBLLM = join(REPO, '.deps', 'node_modules', '@mlc-ai', 'web-llm', 'lib');

function sh(...args) {
  const r = spawnSync(args[0], args.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr || r.error}`);
}

const tmp = mkdtempSync(join(tmpdir(), 'mpk-audio-bench-'));
try {
  const text = 'The quick brown fox jumps over the lazy dog. Speech recognition on device needs a frontend that turns every recording into exactly the samples the model expects. '.repeat(8);
  sh('espeak-ng', '-w', join(tmp, 'espeak.wav'), text);
  sh('sox', join(tmp, 'espeak.wav'), '-r', '44100', '-c', '2', '-b', '16', join(tmp, 'speech.wav'), 'repeat', '-', 'trim', '0', String(SECONDS), 'rate', '-v', '44100');
  sh('sox', join(tmp, 'speech.wav'), '-t', 'raw', '-e', 'floating-point', '-b', '32', '-c', '1', join(tmp, 'sox.f32'), 'rate', '-v', '16000');
  const ref = new Float32Array(readFileSync(join(tmp, 'sox.f32')).buffer.slice(0));

  const puppeteer = createRequire(join(REPO, '.deps', 'package.json'))('puppeteer-core');
  const server = await serve({ '/js/': join(REPO, 'js'), '/bench/': join(REPO, 'bench'), '/media/': tmp, '/webllm/': WEBLLM });
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  let r;
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/bench/js/page.html`);
    await page.waitForFunction('window.benchReady === true');
    r = await page.evaluate(async (rounds) => {
      const src = await (await fetch('/webllm/index.js')).text();
      const start = src.indexOf('function audioError(message)'), tail = src.indexOf('/**\n * Based on `p_prob`');
      if (start < 0 || tail < 0) throw new Error('decodeAudioInput not found in the bundle');
      const decodeAudioInput = new Function(`class AudioInputError extends Error {}\n${src.slice(start, tail)}\nreturn decodeAudioInput;`)();
      const bytes = new Uint8Array(await (await fetch('/media/speech.wav')).arrayBuffer());
      let bin = '';
      for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
      const b64 = btoa(bin);
      const proc = { kind: 'audio_decode', format: 'pcm_f32', sample_rate_hz: 16000, channels: 1, min_samples: 1, max_samples: 1e9 };
      const median = (t) => t.sort((a, b) => a - b)[t.length >> 1];
      const tm = [], tw = [];
      let mo, wo;
      await window.modelpkg.decodeAudio(bytes, proc); // the media module loaded and warm (untimed)
      for (let i = 0; i < rounds; i++) {
        let t0 = performance.now();
        mo = (await window.modelpkg.decodeAudio(bytes, proc)).samples;
        tm.push(performance.now() - t0);
        t0 = performance.now();
        wo = decodeAudioInput({ format: 'wav', data: b64 }, proc);
        tw.push(performance.now() - t0);
      }
      const enc = (f) => { const u = new Uint8Array(f.buffer, f.byteOffset, f.byteLength); let s = ''; for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode.apply(null, u.subarray(i, i + 0x8000)); return btoa(s); };
      return { modelpkg: median(tm), webllm: median(tw), mo: enc(mo), wo: enc(wo), version: navigator.userAgent };
    }, ROUNDS);
  } finally {
    await browser.close();
    await server.close();
  }
  const dec = (b) => new Float32Array(Buffer.from(b, 'base64').buffer.slice(0));
  const snr = (x) => {
    const n = Math.min(ref.length, x.length);
    let s = 0, e = 0;
    for (let i = 0; i < n; i++) { s += ref[i] * ref[i]; e += (x[i] - ref[i]) ** 2; }
    return e === 0 ? Infinity : 10 * Math.log10(s / e);
  };
  const mo = dec(r.mo), wo = dec(r.wo);
  const ratio = r.webllm / r.modelpkg;
  console.log(`audio decode in Chromium (${r.version.match(/(Headless)?Chrome\/[\d.]+/)[0]}): ${SECONDS} s of 44.1 kHz stereo 16-bit speech to 16 kHz mono, medians of ${ROUNDS}`);
  console.log(`  modelpkg (WebAssembly, libsoxr VHQ)  ${r.modelpkg.toFixed(1)} ms   ${mo.length} samples   SNR vs sox -v ${snr(mo).toFixed(1)} dB`);
  console.log(`  WebLLM 0.2.86 decodeAudioInput        ${r.webllm.toFixed(1)} ms   ${wo.length} samples   SNR vs sox -v ${snr(wo).toFixed(1)} dB`);
  console.log(`  ratio WebLLM / modelpkg: ${ratio.toFixed(2)} x   (sox -v: ${ref.length} samples)`);
  console.log(`verdict (issue 23: >= 10 x faster at >= 100 dB): speed ${ratio >= 10 ? 'met' : 'NOT met'}, SNR ${snr(mo) >= 100 ? 'met' : 'NOT met'}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
