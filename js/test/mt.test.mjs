// MobileTransformers through the package: the tiny fixture's manifest read as the exporter wrote it,
// its variants' planned files, and the package checked from its files with the native CLI's report.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { CLI, SHARED, readTree } from './helpers.mjs';

const TINY = join(SHARED, 'conformance', 'mobiletransformers', 'tiny_package');
const MANIFEST = 'mobiletransformers_manifest.json';

test('parseMtManifest: the tiny fixture\'s manifest, field for field; mtPlanFiles per variant', async (t) => {
  if (!existsSync(TINY)) return t.skip(`${TINY} not found (the shared conformance vectors)`);
  const bytes = readFileSync(join(TINY, MANIFEST));
  const m = await mpk.parseMtManifest(bytes);
  assert.deepEqual(m, JSON.parse(bytes));
  for (const v of m.variants) {
    const files = await mpk.mtPlanFiles(bytes, { variant: v.id });
    assert.ok(files.length > 0, v.id);
    for (const f of files) {
      assert.equal(f.size, m.fileSizes[f.path], f.path);
      assert.equal(f.sha256, m.sha256[f.path] ?? null, f.path);
    }
    assert.deepEqual(files.map((f) => f.path), [...files.map((f) => f.path)].sort());
  }
  assert.deepEqual(await mpk.mtPlanFiles(bytes), await mpk.mtPlanFiles(bytes, { variant: m.defaultVariant }));
  await assert.rejects(mpk.mtPlanFiles(bytes, { variant: 'no-such' }), (e) => e instanceof mpk.NotFoundError && e.pointer === '/variants');
  const newer = { ...JSON.parse(bytes), minReaderVersion: '2.0' };
  await assert.rejects(mpk.parseMtManifest(newer), (e) => e instanceof mpk.VersionError && e.pointer === '/minReaderVersion');
});

test('check of the tiny fixture from its files: the native CLI\'s report (placeholder sidecars refused)', async (t) => {
  if (!existsSync(TINY)) return t.skip(`${TINY} not found`);
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  for (const flags of [[], ['--all-variants'], ['--no-hash']]) {
    const r = spawnSync(CLI, ['check', 'tiny_package', '--json', '--no-graph', ...flags], { cwd: dirname(TINY), encoding: 'utf8' });
    const want = JSON.parse(r.stdout);
    const got = await mpk.check(readTree(TINY), { name: 'tiny_package', noGraph: true, allVariants: flags.includes('--all-variants'), noHash: flags.includes('--no-hash') });
    assert.deepEqual(got, want, flags.join(' '));
  }
});
