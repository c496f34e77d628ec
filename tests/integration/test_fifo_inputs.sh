#!/usr/bin/env bash
# A FIFO without a writer never hangs the tool (issue 16): every file argument of every command, and
# a document or tensor inside a package, is refused at once as "a FIFO, not a regular file" (exit 1
# or 2) — each run is bounded by a 5-second timeout, which a blocking open would hit.
# usage: test_fifo_inputs.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
EX="$SRC/examples"; G="$EX/gemma4-audio"; GLIB="$G/lib/gemma4-audio-webgpu.wasm"; L="$EX/llava-image"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
EXPECT_TIMEOUT=5; . "$(dirname "$0")/expect.sh"
mkfifo "$T/f"
F="$T/f"
FIFO='FIFO'

# expect_refused NAME -- CMD...: exit 1 or 2 within the timeout, naming the FIFO.
expect_refused() {
  local name="$1"; shift 2
  local out rc
  out="$(timeout "$EXPECT_TIMEOUT" "$@" 2>&1 </dev/null)"; rc=$?
  if { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } && grep -q -- "$FIFO" <<<"$out"; then ok
  else bad "$name (exit $rc$( [ "$rc" -eq 124 ] && echo ': timed out, it blocked'))"; first_lines 5 "$out"; fi
}

# ---- file arguments
expect_refused audio_in -- "$MPK" audio "$F" --package "$G" -o "$T/a.f32"
expect_refused image_in -- "$MPK" image "$F" --package "$L" -o "$T/i.raw"
expect_refused check_lib -- "$MPK" check "$G" --lib "$F"
expect_refused fit_lib -- "$MPK" fit "$G" --lib "$F"
expect_refused mlc_metadata -- "$MPK" mlc metadata "$F"
expect_refused mlc_plan_segments -- "$MPK" mlc plan --package "$G" --lib "$GLIB" --segments "$F"
cp -r "$G" "$T/g"
expect_refused mlc_build_tasks -- "$MPK" mlc build "$T/g" --tasks "$F" --lib "$GLIB"
expect_refused mt_handoff_fmt -- "$MPK" mt handoff fmt "$F"
cp -r "$EX/mt-tiny" "$T/mt"
expect_refused mt_build_describe -- "$MPK" mt build "$T/mt" --describe "$F"
expect_refused mt_merge_adapter -- "$MPK" mt merge "$T/mt" --adapter "$F"

# ---- documents and tensors inside packages
INF=variants/cpu-fp16/inference
W=model.layers.0.attn.q_proj.MatMul.weight.bin
for doc in mlc-model-manifest.json mlc-chat-config.json tensor-cache.json params_shard_0.bin; do
  rm -rf "$T/p"; cp -r "$G" "$T/p"; rm "$T/p/$doc"; mkfifo "$T/p/$doc"
  expect_refused "mlc_package_$doc" -- "$MPK" check "$T/p" --lib "$GLIB" --device-features shader-f16
done
for doc in mobiletransformers_manifest.json "$INF/weight_handoff_map.json" "$INF/$W"; do
  rm -rf "$T/p"; cp -r "$EX/mt-tiny" "$T/p"; rm "$T/p/$doc"; mkfifo "$T/p/$doc"
  expect_refused "mt_package_check_$(basename "$doc")" -- "$MPK" check "$T/p"
  expect_refused "mt_package_no_hash_$(basename "$doc")" -- "$MPK" check "$T/p" --no-hash
  expect_refused "mt_package_tensors_$(basename "$doc")" -- "$MPK" mt tensors "$T/p"
done
rm -rf "$T/p"; cp -r "$EX/mt-tiny" "$T/p"
for v in "$T"/p/variants/*/inference; do rm "$v/$W"; mkfifo "$v/$W"; done # whichever variant is chosen
expect_refused mt_install_source_file -- "$MPK" mt install "$T/p" --repo-id org/Tiny --cache "$T/cache"
[ -z "$(ls -A "$T/cache" 2>/dev/null | grep -v '^\.')" ] && ok || bad "mt_install_source_file: something was installed"

finish
