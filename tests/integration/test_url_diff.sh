#!/usr/bin/env bash
# The URL differential test (tests/url/url_diff.mjs): modelpkg's WHATWG URL resolution and
# cleanModelUrl against Node's URL and WebLLM 0.2.86's own cleanModelUrl, on a few thousand random
# cases (fixed seeds and a fresh one, printed). usage: test_url_diff.sh URL_EVAL SOURCE_DIR
set -uo pipefail
. "$(dirname "$0")/expect.sh"
eval_tool="$1" src="$2"
need_tool node
bundle="$src/.deps/node_modules/@mlc-ai/web-llm/lib/index.js"
if [ ! -f "$bundle" ]; then
  SKIP_HOW="scripts/deps_node.sh webllm installs it"
  skip_test "the WebLLM bundle ($bundle)"
fi
expect url_diff 0 'url_diff: [0-9]+ cases .* 0 differ' -- node "$src/tests/url/url_diff.mjs" "$eval_tool" "$bundle"
finish
