// One instance of a WebAssembly module of modelpkg (built by scripts/wasm.sh into ../dist/), loaded
// on first use and kept: its C library state (hash implementation, CPU features) is set up once.
// The .wasm bytes are handed to emscripten's loader (Node's fetch refuses file: URLs); in a browser
// they are fetched from beside this file (import.meta.url), so a static server or a bundler that
// copies dist/ serves them.

const instances = new Map();

async function readBytes(url) {
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return readFile(url);
  }
  const r = await fetch(url);
  if (!r.ok) throw new Error(`modelpkg: cannot load ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

// The module NAME ("modelpkg-core"): {mod, call, run} once it is ready.
export function loadModule(name) {
  if (!instances.has(name)) {
    const p = (async () => {
      const base = new URL(`../dist/${name}`, import.meta.url);
      let factory;
      try {
        ({ default: factory } = await import(`${base}.mjs`));
      } catch (e) {
        throw new Error(`modelpkg: cannot load the ${name} module (${base}.mjs; scripts/wasm.sh builds it): ${e.message}`);
      }
      const sink = { out: [], err: [] };
      const mod = await factory({
        wasmBinary: await readBytes(new URL(`${base}.wasm`)),
        print: (line) => sink.out.push(line),
        printErr: (line) => sink.err.push(line),
      });
      // a trap (a crash inside the module) leaves it unusable: the next call loads a fresh one
      return wrap(mod, sink, () => instances.delete(name));
    })();
    // a failed load is not cached: the next call tries again (a network error in a browser)
    p.catch(() => instances.delete(name));
    instances.set(name, p);
  }
  return instances.get(name);
}

function wrap(mod, sink, discard) {
  const enc = new TextEncoder();

  // mpkjs_call(op, args, data): the parsed {result} or {error} answer (js/wasm/api.c).
  function call(op, args, data) {
    const argText = args ? JSON.stringify(args) : '';
    const bytes = data == null ? null : typeof data === 'string' ? enc.encode(data) : data;
    const opLen = mod.lengthBytesUTF8(op) + 1;
    const argLen = mod.lengthBytesUTF8(argText) + 1;
    const opPtr = mod._malloc(opLen);
    const argPtr = mod._malloc(argLen);
    const dataPtr = bytes ? mod._malloc(Math.max(bytes.length, 1)) : 0;
    try {
      mod.stringToUTF8(op, opPtr, opLen);
      mod.stringToUTF8(argText, argPtr, argLen);
      if (bytes) mod.HEAPU8.set(bytes, dataPtr);
      let outPtr;
      try {
        outPtr = mod._mpkjs_call(opPtr, argPtr, dataPtr, bytes ? bytes.length : 0);
      } catch (e) {
        discard(); // a trap: this instance is done
        throw e;
      }
      try {
        return JSON.parse(mod.UTF8ToString(outPtr));
      } finally {
        mod._mpkjs_free(outPtr);
      }
    } finally {
      mod._free(opPtr);
      mod._free(argPtr);
      if (dataPtr) mod._free(dataPtr);
    }
  }

  // call(), then the tensor the operation left in the module's blob, copied out (the wasm memory
  // may grow and move) and freed: {result, bytes} (bytes: a Uint8Array of its own).
  function callBlob(op, args, data) {
    const answer = call(op, args, data);
    if (answer.error) return answer;
    const ptr = mod._mpkjs_blob_ptr();
    const bytes = mod.HEAPU8.slice(ptr, ptr + mod._mpkjs_blob_len());
    mod._mpkjs_blob_free();
    return { result: answer.result, bytes };
  }

  let runs = 0;
  // Run a modelpkg command (argv without "modelpkg") in a fresh directory holding FILES (path ->
  // Uint8Array), from that directory: {status, stdout, stderr}. The directory is removed after.
  function run(argv, files) {
    const FS = mod.FS;
    const root = `/run${++runs}`;
    FS.mkdir(root);
    try {
      const made = new Set(); // directories made (a lookup of a missing path throws inside FS: slow)
      for (const [path, bytes] of files) {
        const parts = path.split('/');
        let dir = root;
        for (const p of parts.slice(0, -1)) {
          dir += `/${p}`;
          if (!made.has(dir)) {
            FS.mkdir(dir);
            made.add(dir);
          }
        }
        FS.writeFile(`${root}/${path}`, bytes);
      }
      FS.chdir(root);
      sink.out = [];
      sink.err = [];
      let status;
      try {
        status = mod.callMain(argv);
      } catch (e) {
        if (e && e.name === 'ExitStatus') status = e.status;
        else {
          discard();
          throw e;
        }
      }
      mod._fflush(0);
      return { status, stdout: sink.out.join('\n'), stderr: sink.err.join('\n') };
    } finally {
      FS.chdir('/');
      removeTree(FS, root);
    }
  }
  return { mod, call, callBlob, run };
}

function removeTree(FS, path) {
  const st = FS.lstat(path);
  if (FS.isDir(st.mode)) {
    for (const name of FS.readdir(path)) if (name !== '.' && name !== '..') removeTree(FS, `${path}/${name}`);
    FS.rmdir(path);
  } else {
    FS.unlink(path);
  }
}
