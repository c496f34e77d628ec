#!/usr/bin/env bash
# `modelpkg fit` totals next to WebLLM 0.2.86's vram_required_MB for the five real libraries whose
# _metadata is in ../shared/realdata/mlc-lib-metadata (the table in docs/fit.md).
# usage: scripts/fit_vs_webllm.sh [MODELPKG] [WEBLLM_INDEX_JS]
#   MODELPKG         the CLI (default: build/modelpkg)
#   WEBLLM_INDEX_JS  @mlc-ai/web-llm@0.2.86 lib/index.js: read the figures from it instead of the
#                    copies below (npm install --ignore-scripts @mlc-ai/web-llm@0.2.86)
set -euo pipefail
cd "$(dirname "$0")/.."
MPK="${1:-build/modelpkg}"; INDEX="${2:-}"
R="${MPK_SHARED_DIR:-../shared}/realdata/mlc-lib-metadata"
EMPTY="$(mktemp -d)"; trap 'rm -rf "$EMPTY"' EXIT

# vram_required_MB of prebuiltAppConfig in @mlc-ai/web-llm@0.2.86 lib/index.js
declare -A WEBLLM=(
  [Llama-3.2-1B-Instruct-q0f16]=2573.13 [Mistral-7B-Instruct-v0.3-q4f16_1]=4573.39
  [Phi-3-mini-4k-instruct-q4f16_1]=3672.07 [Qwen2-1.5B-Instruct-q4f16_1]=1629.75
  [gemma-2-2b-it-q4f16_1]=1895.3
)

echo "| model | parameters MiB | KV cache MiB | workspace MiB | ours MiB | WebLLM vram_required_MB | ours / WebLLM |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for model in Llama-3.2-1B-Instruct-q0f16 Mistral-7B-Instruct-v0.3-q4f16_1 Phi-3-mini-4k-instruct-q4f16_1 \
             Qwen2-1.5B-Instruct-q4f16_1 gemma-2-2b-it-q4f16_1; do
  lib="$model-ctx4k_cs1k-webgpu"
  web="${WEBLLM[$model]}"
  if [ -n "$INDEX" ]; then
    web="$(grep -A8 "model_id: \"$model-MLC\"," "$INDEX" | sed -n 's/.*vram_required_MB: \([0-9.]*\),.*/\1/p' | awk 'NR == 1')"
  fi
  # The named dimensions (vocab_size) these libraries use, as their model_config states them.
  sets=()
  while IFS= read -r kv; do [ -n "$kv" ] && sets+=(--set "$kv"); done < <(python3 -c '
import json, sys
for k, v in json.load(open(sys.argv[1])).get(sys.argv[2], {}).items(): print(f"{k}={v}")' "$R/named-dimensions.json" "$lib")
  "$MPK" fit "$EMPTY" --lib "$R/$lib.metadata.json" --context 4096 "${sets[@]}" --json | python3 -c '
import json, sys
n = json.load(sys.stdin)["needs"]
mib = lambda b: b / 2**20
web = float(sys.argv[2])
print("| %s | %.2f | %.2f | %.2f | %.2f | %s | %.4f |" % (sys.argv[1], mib(n["parameter_bytes"]),
      mib(n["kv_cache_bytes"]), mib(n["workspace_bytes"]), mib(n["total_bytes"]), sys.argv[2],
      mib(n["total_bytes"]) / web))' "$model" "$web"
done
