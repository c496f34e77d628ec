#!/usr/bin/env bash
# data/runtimes/webllm-0.2.86.json is what scripts/runtime_from_webllm.mjs derives from WebLLM
# 0.2.86's published bundle (regenerated here and compared byte for byte), and the import object it
# states is the one the bundle really builds: the bundle's own tvmjs instantiate() is run in Node
# with WebAssembly.instantiate intercepted, and the functions it hands a library are compared with
# provides.imports. The generator fails cleanly (no hang) on JavaScript it cannot read.
# usage: test_runtime_webllm.sh SOURCE_DIR. Skipped without node or the bundle (scripts/deps_node.sh webllm).
set -uo pipefail
src="$1"
. "$(dirname "$0")/expect.sh"
need_tool node
bundle="$src/.deps/node_modules/@mlc-ai/web-llm/lib/index.js"
version="$(node -e "process.stdout.write(require('$src/.deps/node_modules/@mlc-ai/web-llm/package.json').version)" 2>/dev/null)"
if [ ! -f "$bundle" ] || [ "$version" != 0.2.86 ]; then
  echo "SKIP: $TEST_NAME: the @mlc-ai/web-llm 0.2.86 bundle not found${version:+ (found $version)} (scripts/deps_node.sh webllm installs it)"
  exit 77
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
committed="$src/data/runtimes/webllm-0.2.86.json"

# 1. Regenerated from the bundle: the same bytes.
if timeout 120 node "$src/scripts/runtime_from_webllm.mjs" "$bundle" >"$tmp/regen.json" 2>"$tmp/regen.err"; then
  if cmp -s "$tmp/regen.json" "$committed"; then ok "regenerated from the bundle: identical"
  else bad "regenerated description differs from $committed"; diff "$committed" "$tmp/regen.json" >"$tmp/diff"; first_lines 30 "$(cat "$tmp/diff")"; fi
else
  bad "the generator failed on the bundle"; first_lines 20 "$(cat "$tmp/regen.err")"
fi

# 2. The import object the bundle's tvmjs really builds (createPolyfillWASI + Environment).
{ echo 'globalThis.__dirname = "/";'; cat "$bundle"; echo 'export { libExports$2 as __tvmjs };'; } >"$tmp/bundle.mjs"
cat >"$tmp/imports.mjs" <<'JS'
import { readFileSync } from "node:fs";
const [bundle, description] = process.argv.slice(2);
const { __tvmjs: tvmjs } = await import(bundle);
let captured = null;
WebAssembly.instantiate = (buf, imports) => { captured = imports; return Promise.reject(new Error("captured")); };
await tvmjs.instantiate(new Uint8Array(8).buffer, tvmjs.createPolyfillWASI(), () => {}).catch(() => {});
if (!captured) { console.log("no import object captured"); process.exit(1); }
const real = [];
for (const m of Object.keys(captured))
  for (const k of Object.keys(captured[m])) if (typeof captured[m][k] === "function") real.push(`${m}.${k}`);
const stated = JSON.parse(readFileSync(description, "utf8")).provides.imports.map((i) => `${i.module}.${i.name}`);
real.sort(); stated.sort();
const a = JSON.stringify(real), b = JSON.stringify(stated);
if (a !== b) { console.log("the bundle gives " + a + "\nthe description states " + b); process.exit(1); }
console.log(`import object: ${real.length} functions, as stated`);
JS
expect "the import object the bundle builds is provides.imports" 0 "as stated" -- node "$tmp/imports.mjs" "$tmp/bundle.mjs" "$committed"

# 3. JavaScript the tokenizer cannot read: a clear error, no output, no hang.
mkdir -p "$tmp/bad/lib"
echo '{"name": "bad", "version": "1.0.0"}' >"$tmp/bad/package.json"
printf 'const a = "unterminated;\n' >"$tmp/bad/lib/index.js"
expect "unterminated string refused" 1 "unterminated string at line 1" -- node "$src/scripts/runtime_from_webllm.mjs" "$tmp/bad/lib/index.js"
printf 'function f() { return 1;\n' >"$tmp/bad/lib/index.js"
expect "unbalanced braces refused" 1 "unclosed bracket at line 1" -- node "$src/scripts/runtime_from_webllm.mjs" "$tmp/bad/lib/index.js"
printf 'class Environment { environment(e) { return e; } }\n' >"$tmp/bad/lib/index.js"
expect "no import object refused" 1 "Object.assign of object literals" -- node "$src/scripts/runtime_from_webllm.mjs" "$tmp/bad/lib/index.js"
finish
