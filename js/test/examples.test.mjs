// The bundled examples (examples/) checked through the JS package from their files in memory: the
// same --json report as the native `modelpkg check` run on the directory (MODELPKG_CLI, else the
// checkout's build/modelpkg), passing and failing packages of both kinds; fit likewise.
import assert from 'node:assert/strict';
import { File } from 'node:buffer'; // a global only from Node 20; the package supports 18
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { CLI, EXAMPLES, readTree } from './helpers.mjs';

function native(args, cwd = EXAMPLES) {
  const r = spawnSync(CLI, args, { cwd, encoding: 'utf8' });
  assert.ok(r.status === 0 || r.status === 1, `${CLI} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// The native CLI (not the JS package) reports its own version and the components it was built
// with; the report documents themselves must agree.
const CASES = [
  { dir: 'gemma4-audio', lib: 'lib/gemma4-audio-webgpu.wasm', flags: ['--device-features', 'shader-f16'], opts: { deviceFeatures: ['shader-f16'] } },
  { dir: 'gemma4-audio', lib: 'lib/gemma4-audio-webgpu.wasm', flags: ['--device-features', '', '--max-binding-size', '1024'], opts: { deviceFeatures: [], maxBindingSize: 1024 } },
  { dir: 'gemma4-audio', flags: ['--no-weights'], opts: { noWeights: true } },
  { dir: 'llava-image', lib: 'lib/llava-image-webgpu.wasm', flags: [], opts: {} },
  { dir: 'legacy-no-manifest', flags: [], opts: {} },
  { dir: 'mt-tiny', flags: ['--no-graph'], opts: { noGraph: true } },
];

for (const c of CASES) {
  test(`check ${c.dir} ${c.flags.join(' ')}: the native CLI's report`, async (t) => {
    if (!existsSync(CLI)) return t.skip(`${CLI} not found (the native modelpkg: scripts/build.sh, or set MODELPKG_CLI)`);
    const args = ['check', c.dir, '--json', ...(c.lib ? ['--lib', `${c.dir}/${c.lib}`] : []), ...c.flags];
    const want = native(args);
    const got = await mpk.check(readTree(join(EXAMPLES, c.dir)), { name: c.dir, lib: c.lib, ...c.opts });
    assert.deepEqual(got, want);
  });
}

test('check of a package whose shard was damaged: the native CLI\'s report on the same damage, ok false', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  const tmp = mkdtempSync(join(tmpdir(), 'mpk-js-'));
  try {
    cpSync(join(EXAMPLES, 'gemma4-audio'), join(tmp, 'gemma4-audio'), { recursive: true });
    const files = readTree(join(tmp, 'gemma4-audio'));
    const shard = Object.keys(files).find((n) => n.endsWith('.bin'));
    files[shard][0] ^= 0xff;
    writeFileSync(join(tmp, 'gemma4-audio', shard), files[shard]);
    const want = native(['check', 'gemma4-audio', '--json'], tmp);
    const got = await mpk.check(files, { name: 'gemma4-audio' });
    assert.equal(got.ok, false);
    assert.ok(got.problems.some((p) => p.file === `gemma4-audio/${shard}` && p.code === 'mismatch'), JSON.stringify(got.problems));
    assert.deepEqual(got, want);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test('check with a library given as bytes, and with a fetch function that reads files by name', async () => {
  const files = readTree(join(EXAMPLES, 'gemma4-audio'));
  const libBytes = files['lib/gemma4-audio-webgpu.wasm'];
  const byBytes = await mpk.check(files, { lib: { name: 'g.wasm', arrayBuffer: async () => libBytes }, deviceFeatures: 'shader-f16' });
  assert.equal(byBytes.ok, true, JSON.stringify(byBytes.problems));
  assert.equal(byBytes.library.path, '.lib/g.wasm');
  const asked = [];
  const get = async (name) => { asked.push(name); return files[name] ?? null; };
  const lazy = await mpk.check(get, { lib: 'lib/gemma4-audio-webgpu.wasm', deviceFeatures: ['shader-f16'], noWeights: true });
  assert.equal(lazy.ok, true, JSON.stringify(lazy.problems));
  assert.ok(!asked.some((n) => n.endsWith('.bin')), `no shard fetched without weights: ${asked}`);
  const full = await mpk.check(get, { lib: 'lib/gemma4-audio-webgpu.wasm', deviceFeatures: ['shader-f16'], noWeights: false });
  assert.equal(full.ok, true);
  assert.equal(full.weights.verified, true);
});

test('fit: the native CLI\'s document', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  const want = native(['fit', 'gemma4-audio', '--json', '--lib', 'gemma4-audio/lib/gemma4-audio-webgpu.wasm', '--device-memory', '1GiB']);
  const got = await mpk.fit(readTree(join(EXAMPLES, 'gemma4-audio')), { name: 'gemma4-audio', lib: 'lib/gemma4-audio-webgpu.wasm', deviceMemory: '1GiB' });
  assert.deepEqual(got, want);
});

test('bad input: file names outside the package, unknown options values, a missing library', async () => {
  await assert.rejects(mpk.check({ '../x': 'a' }), mpk.InvalidArgumentError);
  await assert.rejects(mpk.check({ '/etc/passwd': 'a' }), mpk.InvalidArgumentError);
  await assert.rejects(mpk.check({ 'a.json': '{}' }, { lib: 'missing.wasm' }), /not among the package's files/);
  await assert.rejects(mpk.check({ a: 'x', 'a/b': 'y' }), (e) => e instanceof mpk.InvalidArgumentError && /is a file and the directory/.test(e.rule));
  await assert.rejects(mpk.check([new File(['1'], 'x.json'), new File(['2'], 'x.json')]), /given twice/);
  await assert.rejects(mpk.fit({ 'a.json': '{}' }, { deviceMemory: 'lots' }), (e) => e instanceof mpk.InvalidArgumentError && /device-memory/.test(e.message));
  assert.ok(readdirSync(EXAMPLES).length > 0);
});

test('a package may not be named like the files placed beside it; an empty package is still checked', async () => {
  await assert.rejects(mpk.check({ 'a.json': '{}' }, { name: '.lib' }), (e) => e instanceof mpk.InvalidArgumentError && /may not start with/.test(e.rule));
  const files = readTree(join(EXAMPLES, 'gemma4-audio'));
  // a package file whose name looks like the library's place outside it stays inside the package
  const r = await mpk.check({ ...files, '.lib/extra.bin': 'x' }, { lib: { name: 'g.wasm', arrayBuffer: async () => files['lib/gemma4-audio-webgpu.wasm'] }, deviceFeatures: 'shader-f16' });
  assert.equal(r.library.path, '.lib/g.wasm');
  assert.equal(r.ok, true, JSON.stringify(r.problems));
  const empty = await mpk.check({}, { name: 'nothing' });
  assert.equal(empty.dir, 'nothing');
  assert.equal(empty.contract, 'none');
});

test('readMetadata: a library\'s _metadata, as the native `modelpkg mlc metadata` prints it; a file without one refused', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  for (const lib of ['gemma4-audio/lib/gemma4-audio-webgpu.wasm', 'llava-image/lib/llava-image-webgpu.wasm']) {
    const r = spawnSync(CLI, ['mlc', 'metadata', lib], { cwd: EXAMPLES, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const md = await mpk.readMetadata(readFileSync(join(EXAMPLES, lib)), { file: lib });
    assert.deepEqual(md.metadata, JSON.parse(r.stdout));
    assert.equal(md.model_type, md.metadata.model_type);
    assert.deepEqual(md.artifact, await mpk.parseArtifact(md.metadata.artifact));
  }
  await assert.rejects(mpk.readMetadata(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])), mpk.ModelpkgError);
});
