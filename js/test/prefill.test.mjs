// Prefill planning through the package beyond the vectors: a package's plan equals the native
// `modelpkg mlc plan --json`; a planner configuration is read strictly; refusals carry the pointer.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { CLI, EXAMPLES, readTree } from './helpers.mjs';

const SEGMENTS = { segments: [{ text: [1, 2, 3] }, { audio: { rows: 3 } }, { text: [4] }] };

test('planPackagePrefill: the native mlc plan document; a prompt over the context window is a LimitError', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  const tmp = mkdtempSync(join(tmpdir(), 'mpk-plan-'));
  try {
    writeFileSync(join(tmp, 'seg.json'), JSON.stringify(SEGMENTS));
    const r = spawnSync(CLI, ['mlc', 'plan', '--package', 'gemma4-audio', '--lib', 'gemma4-audio/lib/gemma4-audio-webgpu.wasm',
      '--segments', join(tmp, 'seg.json'), '--json'], { cwd: EXAMPLES, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const files = readTree(join(EXAMPLES, 'gemma4-audio'));
    const got = await mpk.planPackagePrefill(files, SEGMENTS, { name: 'gemma4-audio', lib: 'lib/gemma4-audio-webgpu.wasm' });
    assert.deepEqual(got, JSON.parse(r.stdout));
    await assert.rejects(mpk.planPackagePrefill(files, { segments: [{ audio: { rows: 5000 } }] }, { lib: 'lib/gemma4-audio-webgpu.wasm' }),
      (e) => e instanceof mpk.LimitError && /context window/.test(e.rule));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('planPrefill: a configuration read strictly, with the field named', async () => {
  const base = { prefill_chunk_size: 4, context_window_size: 16, audio: { prompt: { placeholder_token_id: 7 } } };
  const plan = await mpk.planPrefill(base, SEGMENTS);
  assert.equal(plan.prompt_length, 7);
  assert.deepEqual(plan.items.map((i) => [i.kind, i.rows, i.offset]), [['audio', 3, 3]]);
  await assert.rejects(mpk.planPrefill({ ...base, prefil_chunk_size: 4 }, SEGMENTS),
    (e) => e instanceof mpk.InvalidArgumentError && e.pointer === '/prefil_chunk_size' && /unknown field/.test(e.rule));
  await assert.rejects(mpk.planPrefill({ ...base, audio: { prompt: { placeholder_token_id: 'x' } } }, SEGMENTS),
    (e) => e instanceof mpk.InvalidArgumentError && e.pointer === '/audio/prompt');
  await assert.rejects(mpk.planPrefill(base, { segments: [{ video: {} }] }), (e) => e instanceof mpk.ModelpkgError && e.pointer.startsWith('/segments/0'));
  await assert.rejects(mpk.planPrefill({ ...base, prefill_chunk_size: 0 }, SEGMENTS), mpk.InvalidArgumentError);
  assert.deepEqual(await mpk.legacyChunks([{ text: 5 }, { image: 3 }], 4), [
    { length: 4, pieces: [{ item: 0, start: 0, count: 4 }] },
    { length: 4, pieces: [{ item: 0, start: 4, count: 1 }, { item: 1, start: 0, count: 3 }] },
  ]);
});
