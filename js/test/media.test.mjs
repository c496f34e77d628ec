// The media module: a 12 MP JPEG decoded by the package gives the native `modelpkg image`'s tensor
// byte for byte, and three 30 s WAVs the native `modelpkg audio`'s samples byte for byte, in Node
// and in headless Chromium (the inputs served by this test's own HTTP server). Skipped, naming what is
// missing, without the media module, the native CLI, ImageMagick's convert (the JPEG) or Chromium.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import * as mpk from '../src/index.js';
import { CLI, REPO } from './helpers.mjs';
import { serve } from './server.mjs';

const MEDIA = join(REPO, 'js', 'dist', 'modelpkg-media.wasm');
const CHROMIUM = process.env.MPK_CHROMIUM || '/usr/bin/chromium';
const PUPPETEER = join(REPO, '.deps', 'node_modules', 'puppeteer-core');
const AUDIO = { kind: 'audio_decode', format: 'pcm_f32', sample_rate_hz: 16000, channels: 1, min_samples: 161, max_samples: 480000 };
const IMAGE = { kind: 'image_decode', format: 'rgb_u8', layout: 'nhwc', resize: { mode: 'center_crop', height: 336, width: 336 } };
const missing = !existsSync(MEDIA) ? `${MEDIA} not found (the media module: scripts/wasm.sh)`
  : !existsSync(CLI) ? `${CLI} not found (the native modelpkg)` : null;

let dir, wav, jpeg, want = {};
const sha = (b) => createHash('sha256').update(b).digest('hex');

// A 44.1 kHz int16 WAV of `channels` channels, sample(i, c) in [-32768, 32767].
function int16Wav(frames, channels, sample, rate = 44100) {
  const data = Buffer.alloc(frames * channels * 2);
  for (let i = 0; i < frames; i++) for (let c = 0; c < channels; c++) data.writeInt16LE(sample(i, c), 2 * (i * channels + c));
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8); h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(channels, 22); h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * channels * 2, 28); h.writeUInt16LE(channels * 2, 32); h.writeUInt16LE(16, 34); h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

// 30 s of 44.1 kHz stereo int16: a chirp and a seeded noise, different in each channel.
function makeWav(seconds = 30, rate = 44100) {
  let seed = 12345, noise = 0;
  return int16Wav(seconds * rate, 2, (i, c) => {
    if (c === 0) { seed = (seed * 1103515245 + 12345) >>> 0; noise = ((seed >>> 16) / 65536 - 0.5) * 0.1; }
    const t = i / rate;
    return c === 0 ? Math.round(16000 * Math.sin(2 * Math.PI * (200 + 100 * t) * t) + 3000 * noise)
      : Math.round(12000 * Math.sin(2 * Math.PI * 440 * t) - 3000 * noise);
  });
}

// 30 s of a 440 Hz sine, mono, with 2 s of digital silence every 10 s: every 200th output's exact
// value is 0, and the silences decay into the filter's rounding noise (below its 28-bit precision
// an output is written as 0: docs/audio.md).
const makeSine = () => int16Wav(30 * 44100, 1, (i) => (i % 441000 < 88200 ? 0 : Math.round(16000 * Math.sin(2 * Math.PI * 440 * i / 44100))));

// 30 s of a 24-bit mono sine sweeping linearly from 20 Hz to 20 kHz at half scale, as
// `sox -n -r 44100 -b 24 -c 1 sweep.wav synth 30 sine 20-20000 vol 0.5`: past the output's 8 kHz
// Nyquist the resampler leaves only small outputs (~1e-6), many a float32 rounding boundary away
// from another engine's or libm's result (16088 of 480000 differed before both builds ran the same).
function makeSweep(seconds = 30, rate = 44100, f0 = 20, f1 = 20000) {
  const frames = seconds * rate, data = Buffer.alloc(frames * 3);
  for (let i = 0; i < frames; i++) {
    const t = i / rate;
    data.writeIntLE(Math.round(0.5 * 8388607 * Math.sin(2 * Math.PI * (f0 * t + (f1 - f0) * t * t / (2 * seconds)))), 3 * i, 3);
  }
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8); h.write('fmt ', 12);
  h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22); h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 3, 28); h.writeUInt16LE(3, 32); h.writeUInt16LE(24, 34); h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}
const WAVS = ['speech', 'sine', 'sweep']; // the chirp+noise, the sine with silences, the sweep

function native(args) {
  const r = spawnSync(CLI, args, { encoding: 'buffer' });
  assert.equal(r.status, 0, `${CLI} ${args.join(' ')}: ${r.stderr}`);
}

before(() => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'mpk-media-'));
  wav = join(dir, 'speech.wav');
  writeFileSync(wav, makeWav());
  writeFileSync(join(dir, 'sine.wav'), makeSine());
  writeFileSync(join(dir, 'sweep.wav'), makeSweep());
  for (const w of WAVS) {
    native(['audio', join(dir, `${w}.wav`), '--rate', '16000', '--min-samples', '161', '--max-samples', '480000', '-o', join(dir, `${w}.f32`)]);
    want[w] = sha(readFileSync(join(dir, `${w}.f32`)));
  }
  const c = spawnSync('convert', ['-size', '4000x3000', '-seed', '7', 'plasma:', '-quality', '90', join(dir, 'photo.jpg')]);
  if (c.status === 0) {
    jpeg = join(dir, 'photo.jpg');
    native(['image', jpeg, '--mode', 'center_crop', '--width', '336', '--height', '336', '-o', join(dir, 'image.raw')]);
    want.image = sha(readFileSync(join(dir, 'image.raw')));
  }
});
after(() => dir && rmSync(dir, { recursive: true, force: true }));

// Audio is byte-identical to the native build (docs/wasm.md, "Same bytes"): both compile the same
// libsoxr engine (cr64s) against the same vector intrinsics, and design its filter with the same
// libm (musl's, built in), with the same arithmetic (no fused multiply-adds). Every sample is the
// same float32 (Object.is: a zero's sign too); the count of those that are not is in the message.
function compareAudio(got, wantBytes) {
  const want = new Float32Array(wantBytes.buffer.slice(wantBytes.byteOffset, wantBytes.byteOffset + wantBytes.byteLength));
  assert.equal(got.length, want.length);
  let differ = 0, first = -1;
  for (let i = 0; i < want.length; i++) {
    if (Object.is(got[i], want[i])) continue;
    if (differ++ === 0) first = i;
  }
  assert.equal(differ, 0, `${differ} of ${want.length} samples differ from the native build's; the first, ${first}: ${got[first]} against ${want[first]}`);
}

const AUDIO_CASES = {
  speech: 'a 30 s 44.1 kHz stereo 16-bit chirp and noise',
  sine: 'a 440 Hz sine with silences (its exact zeros and its silences 0)',
  sweep: 'a 24-bit sweep from 20 Hz to 20 kHz, past the output\'s Nyquist',
};
for (const w of WAVS) {
  test(`Node: ${AUDIO_CASES[w]} to the processor's PCM: the native build's samples, byte for byte`, async (t) => {
    if (missing) return t.skip(missing);
    const a = await mpk.decodeAudio(readFileSync(join(dir, `${w}.wav`)), AUDIO);
    assert.equal(a.samples.length, 480000);
    assert.equal(a.resampled, true);
    compareAudio(a.samples, readFileSync(join(dir, `${w}.f32`)));
    if (w === 'sine') assert.equal(a.samples.subarray(0, 30000).every((x) => Object.is(x, 0)), true); // the first silence stays silent
  });
}

test('Node: a 12 MP JPEG to the 336 x 336 center_crop tensor, byte-identical to the native build', async (t) => {
  if (missing) return t.skip(missing);
  if (!jpeg) return t.skip('convert not found (ImageMagick: scripts/setup.sh --test)');
  const i = await mpk.decodeImage(readFileSync(jpeg), IMAGE);
  assert.deepEqual(i.shape, [1, 336, 336, 3]);
  assert.deepEqual([i.sourceWidth, i.sourceHeight, i.format], [4000, 3000, 'jpeg']);
  assert.equal(sha(i.data), want.image);
  const u32 = await mpk.decodeImage(readFileSync(jpeg), IMAGE, { dtype: 'uint32' });
  assert.deepEqual([...u32.data.subarray(0, 12)], [...i.data.subarray(0, 12)]);
});

test('bad media input: a named refusal, nothing decoded', async (t) => {
  if (missing) return t.skip(missing);
  await assert.rejects(mpk.decodeAudio(Buffer.from('RIFF....WAVEjunk'), AUDIO), mpk.ModelpkgError);
  await assert.rejects(mpk.decodeImage(Buffer.from('GIF89a'), IMAGE), (e) => e instanceof mpk.UnsupportedError || e instanceof mpk.MalformedError);
  await assert.rejects(mpk.decodeImage(Buffer.alloc(10), { resize: { mode: 'fill', width: 3, height: 3 } }), (e) => e instanceof mpk.InvalidArgumentError && e.pointer === '/resize/mode');
  await assert.rejects(mpk.decodeAudio(new Float32Array(10), AUDIO), /sampleRate/);
});

test('Chromium: the same WAVs and JPEG fetched over HTTP: the native build\'s tensors, byte for byte', async (t) => {
  if (missing) return t.skip(missing);
  if (!existsSync(CHROMIUM)) return t.skip(`${CHROMIUM} not found (Debian's chromium)`);
  if (!existsSync(PUPPETEER)) return t.skip(`${PUPPETEER} not found (scripts/deps_node.sh js)`);
  const puppeteer = createRequire(join(REPO, '.deps', 'package.json'))('puppeteer-core');
  const server = await serve({ '/js/': join(REPO, 'js'), '/media/': dir });
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/js/test/browser/index.html`);
    await page.waitForFunction('window.mpkReady === true', { timeout: 30000 });
    const got = await page.evaluate(async (audio, image, hasJpeg, wavs) => {
      const hex = async (b) => [...new Uint8Array(await crypto.subtle.digest('SHA-256', b))].map((x) => x.toString(16).padStart(2, '0')).join('');
      const out = { audio: {} };
      for (const w of wavs) {
        const a = await window.mpkTest.mpk.decodeAudio(await (await fetch(`/media/${w}.wav`)).blob(), audio);
        out.audio[w] = await hex(a.samples); // little-endian float32, as the native -o file
      }
      if (hasJpeg) out.image = await hex((await window.mpkTest.mpk.decodeImage(await (await fetch('/media/photo.jpg')).blob(), image)).data);
      return out;
    }, AUDIO, IMAGE, !!jpeg, WAVS);
    for (const w of WAVS) assert.equal(got.audio[w], want[w], `${AUDIO_CASES[w]}: Chromium's samples differ from the native build's`);
    if (jpeg) assert.equal(got.image, want.image);
    else t.diagnostic('the JPEG case skipped: convert not found');
  } finally {
    await browser.close();
    await server.close();
  }
});
