// The conformance vectors (WebLLM 0.2.86's, the MobileTransformers oracles) through the JS package in Node (shared/conformance.mjs; the
// same suites run in headless Chromium: chromium.test.mjs).
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { vectorsOr } from './helpers.mjs';
import { SUITES, cleanModelUrlCases } from './shared/conformance.mjs';

for (const s of SUITES) {
  test(`${s.file}: ${s.title}`, async (t) => {
    const cases = vectorsOr(t, s.file, s.dir);
    if (cases) await s.run(mpk, cases);
  });
}

test('cleanModelUrl as WebLLM 0.2.86 computes it; bad URLs refused', () => cleanModelUrlCases(mpk));
