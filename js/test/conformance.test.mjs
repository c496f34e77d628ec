// The conformance vectors (WebLLM 0.2.86's, the MobileTransformers oracles) through the JS package in Node (shared/conformance.mjs; the
// same suites run in headless Chromium: chromium.test.mjs).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { REPO, vectorsOr } from './helpers.mjs';
import { SUITES, cleanModelUrlCases } from './shared/conformance.mjs';

const MEDIA = join(REPO, 'js', 'dist', 'modelpkg-media.wasm');

for (const s of SUITES) {
  test(`${s.file}: ${s.title}`, async (t) => {
    if (s.media && !existsSync(MEDIA)) return t.skip(`${MEDIA} not found (the media module: scripts/wasm.sh)`);
    const cases = vectorsOr(t, s.file, s.dir);
    if (cases) await s.run(mpk, cases);
  });
}

test('cleanModelUrl as WebLLM 0.2.86 computes it; bad URLs refused', () => cleanModelUrlCases(mpk));
