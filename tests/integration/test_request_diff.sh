#!/usr/bin/env bash
# The request differential test (tests/request/request_diff.mjs): mpk_mlc_request_check against
# WebLLM 0.2.86's own postInitAndCheckFieldsChatCompletion on a few thousand random chat requests
# (fixed seeds and a fresh one, printed). usage: test_request_diff.sh REQUEST_EVAL SOURCE_DIR
set -uo pipefail
. "$(dirname "$0")/expect.sh"
eval_tool="$1" src="$2"
need_tool node
bundle="$src/.deps/node_modules/@mlc-ai/web-llm/lib/index.js"
if [ ! -f "$bundle" ]; then
  SKIP_HOW="scripts/deps_node.sh webllm installs it"
  skip_test "the WebLLM bundle ($bundle)"
fi
expect request_diff 0 'request_diff: [0-9]+ cases .* 0 differ' -- node "$src/tests/request/request_diff.mjs" "$eval_tool" "$bundle"
finish
