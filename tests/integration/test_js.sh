#!/usr/bin/env bash
# The JavaScript package (js/, docs/wasm.md): node --test over js/test/*.test.mjs — the WebLLM
# conformance vectors through the WebAssembly module, the examples' check and fit documents equal to
# this build's `modelpkg check --json`, the TypeScript declarations. Needs the module that
# scripts/wasm.sh builds into js/dist/ (scripts/test.sh builds it first) and node >= 18; skipped
# (exit 77, a SKIP line naming what is missing) without either; without TypeScript (scripts/deps_node.sh
# js) only the declarations test is skipped, without chromium or puppeteer-core the browser tests
# (node --test names what is missing).
# usage: test_js.sh MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
MPK="$1"; SRC="$2"; SHARED="$3"
. "$SRC/tests/integration/expect.sh"
need_tool node node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 18 ? 1 : 0)'
[ -f "$SRC/js/dist/modelpkg-core.wasm" ] ||
  { echo "SKIP: $TEST_NAME: $SRC/js/dist/modelpkg-core.wasm not found (scripts/wasm.sh builds it)"; exit 77; }
OUT="$PWD" # the build's tests/ directory: the page's screenshot goes there
cd "$SRC/js" || exit 1
out=$(MODELPKG_CLI="$MPK" MPK_SHARED_DIR="$SHARED" MPK_SCREENSHOT="$OUT/web-page.png" node --test --test-reporter=tap test/*.test.mjs 2>&1); rc=$?
printf '%s\n' "$out" | grep -E '^(not ok|ok|# (tests|pass|fail|skipped))|# SKIP' 
# on failure, each failed subtest's YAML block (the assertion and its stack), then the run's tail
if [ $rc -ne 0 ]; then
  printf '%s\n' "$out" | awk '/^not ok/ {p=1} p && n++ < 200 {print} p && /^  \.\.\.$/ {p=0}'
  printf '%s\n' "$out" | tail -20
fi
exit $rc
