// The TypeScript declarations (src/index.d.ts) checked by tsc --strict: a typed use of the API is
// accepted and a misuse refused (TypeScript from npm, scripts/deps_node.sh js; skipped without it).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { REPO } from './helpers.mjs';

const TSC = process.env.MPK_TSC || join(REPO, '.deps', 'node_modules', 'typescript', 'bin', 'tsc');

function tsc(file) {
  return spawnSync(process.execPath, [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext',
    '--moduleResolution', 'nodenext', '--lib', 'es2022,dom',
    join(REPO, 'js', 'test', 'types', file)], { encoding: 'utf8' });
}

test('index.d.ts: a typed use compiles under tsc --strict, a misuse does not', (t) => {
  if (!existsSync(TSC)) return t.skip(`${TSC} not found (TypeScript: scripts/deps_node.sh js)`);
  const good = tsc('usage.ts');
  assert.equal(good.status, 0, good.stdout + good.stderr);
  const bad = tsc('misuse.ts');
  assert.notEqual(bad.status, 0);
  assert.match(bad.stdout, /misuse\.ts\(5,9\): error TS2322/);
  assert.match(bad.stdout, /misuse\.ts\(6,9\): error TS2322/);
});
