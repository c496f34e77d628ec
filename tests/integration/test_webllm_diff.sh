#!/usr/bin/env bash
# A differential test against WebLLM 0.2.86's own functions, taken from its npm bundle: DIFF.mjs
# draws a few thousand random cases (fixed seeds and a fresh one, printed), runs them through
# WebLLM's function and through EVAL (tests/util/webllm_eval.c), and counts the cases that differ.
#   tests/url/url_diff.mjs          WHATWG URL resolution and cleanModelUrl (docs/mlc-urls.md)
#   tests/request/request_diff.mjs  the request checks (docs/mlc-request.md)
# usage: test_webllm_diff.sh DIFF.mjs EVAL SOURCE_DIR   (the test is named test_<DIFF>)
set -uo pipefail
diff_mjs="$1" eval_tool="$2" src="$3"
name=$(basename "$diff_mjs" .mjs)
TEST_NAME="test_$name"
. "$(dirname "$0")/expect.sh"
need_tool node
bundle="$src/.deps/node_modules/@mlc-ai/web-llm/lib/index.js"
if [ ! -f "$bundle" ]; then
  SKIP_HOW="scripts/deps_node.sh webllm installs it"
  skip_test "the WebLLM bundle ($bundle)"
fi
expect "$name" 0 "$name: [0-9]+ cases .* 0 differ" -- node "$src/$diff_mjs" "$eval_tool" "$bundle"
finish
