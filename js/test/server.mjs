// A static HTTP server on 127.0.0.1 (an ephemeral port) for the browser tests: URL prefixes mapped
// to directories, files only (no listing), never outside their directory.
import { createReadStream, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png', '.css': 'text/css',
};

// roots: {'/js/': '/path/to/js', ...}. Resolves to {url, close()}.
export function serve(roots) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const prefix = Object.keys(roots).find((p) => path.startsWith(p));
    let file = null;
    if (prefix) {
      const rel = normalize(path.slice(prefix.length));
      if (!rel.startsWith('..') && !rel.includes(`${sep}..${sep}`)) file = join(roots[prefix], rel);
    }
    let st = null;
    try {
      st = file && statSync(file);
    } catch {
      st = null;
    }
    if (!st || !st.isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] || 'application/octet-stream', 'content-length': st.size });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
