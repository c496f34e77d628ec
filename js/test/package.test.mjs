// The package as a user gets it: `npm pack` holds the sources, the declarations and the module, and
// the tarball installed offline into another project imports as 'modelpkg' and runs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { REPO } from './helpers.mjs';

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

test('npm pack, then npm install of the tarball into another project: import "modelpkg" works', (t) => {
  if (spawnSync('npm', ['--version']).status !== 0) return t.skip('npm not found');
  const tmp = mkdtempSync(join(tmpdir(), 'mpk-npm-'));
  try {
    const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], join(REPO, 'js')));
    const files = packed[0].files.map((f) => f.path).sort();
    for (const f of ['dist/modelpkg-core.mjs', 'dist/modelpkg-core.wasm', 'package.json', 'src/errors.js', 'src/index.d.ts', 'src/index.js', 'src/module.js'])
      assert.ok(files.includes(f), `${f} not in the tarball: ${files}`);
    assert.ok(!files.some((f) => f.startsWith('test/') || f.startsWith('wasm/')), `tests or C sources packed: ${files}`);
    writeFileSync(join(tmp, 'package.json'), '{"private": true}');
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', join(tmp, packed[0].filename)], tmp);
    const out = run(process.execPath, ['--input-type=module', '-e',
      "import * as m from 'modelpkg'; const v = await m.version(); const id = await m.sha256Id('abc'); console.log(JSON.stringify([v.version, id]))"], tmp);
    const { version } = JSON.parse(readFileSync(join(REPO, 'js', 'package.json'), 'utf8'));
    assert.deepEqual(JSON.parse(out), [version, 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad']);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
