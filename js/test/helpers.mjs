// Shared paths of the package's tests: the checkout (js/..), the conformance vectors
// ($MPK_SHARED_DIR/conformance or ../shared/conformance beside the checkout), the native CLI
// ($MODELPKG_CLI or the checkout's build/modelpkg) for comparing reports.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED = process.env.MPK_SHARED_DIR || join(REPO, '..', 'shared');
export const EXAMPLES = join(REPO, 'examples');
export const CLI = process.env.MODELPKG_CLI || join(REPO, 'build', 'modelpkg');

// The cases of a vector file under conformance/DIR, or null (the test then skips, naming the file).
export function vectorsOr(t, name, dir = 'mlc-webllm') {
  const f = join(SHARED, 'conformance', dir, name);
  if (existsSync(f)) return JSON.parse(readFileSync(f, 'utf8')).cases;
  t.skip(`${f} not found (the shared conformance vectors: ../shared, or set MPK_SHARED_DIR)`);
  return null;
}

// A directory's files as {relative path: Buffer}.
export function readTree(dir, prefix = '') {
  const out = {};
  for (const n of readdirSync(dir).sort()) {
    const f = join(dir, n);
    if (statSync(f).isDirectory()) Object.assign(out, readTree(f, `${prefix}${n}/`));
    else out[prefix + n] = readFileSync(f);
  }
  return out;
}
