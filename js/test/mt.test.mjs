// MobileTransformers through the package: the tiny fixture's manifest read as the exporter wrote it,
// its variants' planned files, and the package checked from its files with the native CLI's report.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { CLI, EXAMPLES, SHARED, readTree } from './helpers.mjs';

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

// The native document with the clock's fields left out (each run hashes at its own time).
const timeless = (doc) => ({ ...doc, tensors: doc.tensors.map(({ hashed_at: _a, hashed_at_ms: _b, ...t }) => t) });

test('mtTensors and mtLoadTensors: the load gate as the native `mt tensors`; typed arrays of the verified bytes; a changed tensor refused', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  const files = readTree(join(EXAMPLES, 'mt-tiny'));
  for (const variant of ['cpu-fp16', 'cpu-int4']) {
    const r = spawnSync(CLI, ['mt', 'tensors', 'mt-tiny', '--variant', variant, '--json'], { cwd: EXAMPLES, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const got = await mpk.mtTensors(files, { name: 'mt-tiny', variant });
    assert.deepEqual(timeless(got), timeless(JSON.parse(r.stdout)), variant);
    const loaded = await mpk.mtLoadTensors(files, { name: 'mt-tiny', variant });
    assert.equal(loaded.length, got.tensors.length);
    for (const [i, x] of loaded.entries()) {
      const want = readFileSync(join(EXAMPLES, got.tensors[i].file));
      assert.deepEqual(Buffer.from(x.data.buffer), want, x.file);
      assert.equal(x.data.byteLength, x.shape.reduce((a, b) => a * b, 1) * x.data.BYTES_PER_ELEMENT * (x.dtype.endsWith('4') ? 0.5 : 1));
      if (x.dtype === 'float32') assert.ok(x.data instanceof Float32Array);
    }
  }
  // one byte of a tensor changed: the gate refuses, naming the file; nothing is returned
  const name = Object.keys(files).find((n) => n.startsWith('variants/cpu-fp16/inference/') && n.endsWith('.weight.bin'));
  const bad = { ...files, [name]: Uint8Array.from(files[name], (b, i) => (i === 0 ? b ^ 1 : b)) };
  await assert.rejects(mpk.mtLoadTensors(bad, { name: 'mt-tiny', variant: 'cpu-fp16' }),
    (e) => e instanceof mpk.ModelpkgError && e.file.endsWith(name.split('/').pop()), 'refused');
  const doc = await mpk.mtTensors(bad, { name: 'mt-tiny', variant: 'cpu-fp16' });
  assert.equal(doc.ok, false);
  assert.ok(doc.tensors.some((x) => x.status === 'mismatch'));
});

test('mtSelect: the native `mt select --json` for devices that pick, fall back and exclude; a broken manifest refused in the document', async (t) => {
  if (!existsSync(CLI)) return t.skip(`${CLI} not found`);
  const devices = [
    [{}, []],
    [{ memoryMb: 4096, preferQuant: ['fp16', 'int4'] }, ['--memory-mb', '4096', '--prefer-quant', 'fp16,int4']],
    [{ abis: ['arm64-v8a', 'x86_64'], executionProvider: 'cpu', apiLevel: 21 }, ['--abi', 'arm64-v8a,x86_64', '--ep', 'cpu', '--api-level', '21']],
    [{ quantization: 'int8', engine: 'genai' }, ['--quant', 'int8', '--engine', 'genai']],
    [{ features: ['inference'], storageBytes: 7000 }, ['--features', 'inference', '--storage-bytes', '7000']],
    [{ storageBytes: 10 }, ['--storage-bytes', '10']],
  ];
  const dirs = [join(EXAMPLES, 'mt-tiny'), ...(existsSync(TINY) ? [TINY] : [])];
  for (const dir of dirs) {
    const manifest = readFileSync(join(dir, MANIFEST));
    for (const [device, flags] of devices) {
      const r = spawnSync(CLI, ['mt', 'select', MANIFEST, '--json', ...flags], { cwd: dir, encoding: 'utf8' });
      assert.deepEqual(await mpk.mtSelect(manifest, device), JSON.parse(r.stdout), `${dir} ${flags.join(' ')}`);
    }
  }
  const broken = await mpk.mtSelect('{"schemaVersion": "1.0"', {});
  assert.equal(broken.ok, false);
  assert.match(broken.problems[0].message, /invalid JSON/);
  await assert.rejects(mpk.mtSelect('{}', { memoryMb: 'lots' }), mpk.InvalidArgumentError);
});
