#!/usr/bin/env bash
# Hostile MLC packages and arguments (issue 16): links out of the package, files that are not
# regular files, a non-library --lib, fit's cross-check of library and package, every mismatch
# reported with a pointer, summaries, next steps, feature typos, --json on refusal. Each case runs
# under a timeout, and the message must name the file and the rule.
# usage: test_cli_mlc_hostile.sh MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
MPK="$1"; SRC="$2"; SHARED="$3"
EX="$SRC/examples"; R="$SHARED/realdata"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

EXPECT_TIMEOUT=10; . "$(dirname "$0")/expect.sh"
# json_ok NAME STATUS PYTHON-ASSERTS -- CMD...: stdout is exactly one JSON document `r` satisfying the asserts.
json_ok() {
  local name="$1" status="$2" check="$3"; shift 4
  local rc
  timeout 10 "$@" >"$TMP/out.json" 2>"$TMP/err.txt"; rc=$?
  if [ "$rc" -eq "$status" ] && python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert list(r)[:3] == ['modelpkg_version', 'command', 'ok'] and list(r)[-2:] == ['problems', 'notes'], list(r)
$check" "$TMP/out.json" 2>"$TMP/py.txt"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status)"; head -c 2000 "$TMP/out.json"; first_lines 20 "$(cat "$TMP/py.txt" "$TMP/err.txt")"
  fi
}

G="$EX/gemma4-audio"; GLIB="$G/lib/gemma4-audio-webgpu.wasm"
fresh() { rm -rf "$TMP/g"; cp -r "$G" "$TMP/g"; rm -rf "$TMP/g/lib"; }
OUT="$TMP/outside"; mkdir -p "$OUT"

# ---- 1. symbolic links out of the package: each document and a shard
for f in mlc-model-manifest.json mlc-chat-config.json tensor-cache.json params_shard_0.bin; do
  fresh; mv "$TMP/g/$f" "$OUT/$f"; ln -s "$OUT/$f" "$TMP/g/$f"
  expect "outside_link_$f" 1 "g/$f: .*resolves outside the package directory" -- "$MPK" check "$TMP/g"
done
# the same through the portable walk (kernels without openat2)
for f in mlc-model-manifest.json params_shard_0.bin; do
  fresh; mv "$TMP/g/$f" "$OUT/$f"; ln -s "$OUT/$f" "$TMP/g/$f"
  expect "outside_link_walk_$f" 1 "g/$f: .*resolves outside the package directory" -- env MPK_OPEN_FORCE_WALK=1 "$MPK" check "$TMP/g"
done
fresh; mv "$TMP/g/tensor-cache.json" "$OUT/"; ln -s ../outside/tensor-cache.json "$TMP/g/tensor-cache.json"
expect outside_relative_link 1 'g/tensor-cache.json: resolves outside the package directory' -- "$MPK" check "$TMP/g"
fresh; mv "$TMP/g/mlc-chat-config.json" "$OUT/"; ln -s "$OUT/mlc-chat-config.json" "$TMP/g/mlc-chat-config.json"
expect fit_outside_link 1 'g/mlc-chat-config.json: resolves outside the package directory' -- "$MPK" fit "$TMP/g"
# a link that stays inside is fine
fresh; mv "$TMP/g/params_shard_0.bin" "$TMP/g/real.bin"; ln -s real.bin "$TMP/g/params_shard_0.bin"
expect inside_link_ok 0 'OK: all checks hold' -- "$MPK" check "$TMP/g"

# ---- 2. not a regular file is not "absent"
fresh; rm "$TMP/g/mlc-model-manifest.json"; mkdir "$TMP/g/mlc-model-manifest.json"
expect manifest_dir 1 'mlc-model-manifest.json: is a directory, not a regular file' -- "$MPK" check "$TMP/g"
fresh; rm "$TMP/g/mlc-model-manifest.json"; mkfifo "$TMP/g/mlc-model-manifest.json"
expect manifest_fifo 1 'mlc-model-manifest.json: is a FIFO, not a regular file' -- "$MPK" check "$TMP/g"
expect manifest_fifo_not_legacy 1 'contract:  mlc-model-manifest.json present but not loadable' -- "$MPK" check "$TMP/g"
expect manifest_fifo_fit 1 'mlc-model-manifest.json: is a FIFO, not a regular file' -- "$MPK" fit "$TMP/g"
fresh; rm "$TMP/g/mlc-model-manifest.json"; ln -s nowhere.json "$TMP/g/mlc-model-manifest.json"
expect manifest_dangling 1 'mlc-model-manifest.json: is a dangling symbolic link' -- "$MPK" check "$TMP/g"
for f in mlc-chat-config.json tensor-cache.json params_shard_0.bin; do
  fresh; rm "$TMP/g/$f"; mkfifo "$TMP/g/$f"
  expect "fifo_$f" 1 "g/$f: .*is a FIFO, not a regular file" -- "$MPK" check "$TMP/g"
done
fresh; rm "$TMP/g/params_shard_0.bin"; mkdir "$TMP/g/params_shard_0.bin"
expect shard_dir 1 'params_shard_0.bin: shard 0 is a directory, not a regular file' -- "$MPK" check "$TMP/g"
fresh; rm "$TMP/g/mlc-chat-config.json"; mkfifo "$TMP/g/mlc-chat-config.json"
expect fit_fifo_chat_config 1 'mlc-chat-config.json: is a FIFO, not a regular file' -- "$MPK" fit "$TMP/g"

# ---- 3. a --lib that is not a library is refused from its header, not mapped and scanned
# bounded memory: 1 GiB of address space (a sanitizer build reserves more than that for its shadow
# memory and cannot start under the limit: it runs without it, and, slower to start, within 5 s
# rather than 1 s — scanning the 8 GB file took 19 s)
LIMIT=(); BOUND_MS=1000
if as_limit "$MPK" --version; then LIMIT=("${AS_LIMIT[@]}"); elif have_tool prlimit; then BOUND_MS=5000; fi
# Under a cross build's emulator (tests/cross.cmake) start-up alone takes up to 0.5 s: 5 s, still well
# below a scan of the file.
[ -n "${MPK_TEST_EMULATOR:-}" ] && BOUND_MS=5000
truncate -s 8G "$TMP/zeros.lib"
for cmd in "check $G --no-weights" "fit $G" "mlc metadata"; do
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  expect "not_a_library_${cmd%% *}" 1 "zeros.lib: not a compiled model library .*first bytes \(00 00 00 00\) are none of the accepted formats: WebAssembly .*ELF .*Mach-O .*ar archive .*tar archive" \
    -- "${LIMIT[@]}" "$MPK" $cmd $( [ "$cmd" = "mlc metadata" ] || echo --lib ) "$TMP/zeros.lib"
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$ms" -lt "$BOUND_MS" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: not_a_library_${cmd%% *} took $ms ms"; }
done
rm -f "$TMP/zeros.lib"
printf '\x1f\x8b\x08\x00rest' > "$TMP/gz.tar"
# gzip'd tars are read now (objfile); broken gzip data is refused naming the file and the format
expect gzip_library 1 'gz.tar@0: gzip: shorter than a gzip header' -- "$MPK" mlc metadata "$TMP/gz.tar"
: > "$TMP/empty.wasm"
expect empty_library 1 'empty.wasm: not a library: is empty' -- "$MPK" mlc metadata "$TMP/empty.wasm"
mkfifo "$TMP/fifo.wasm"
expect fifo_library 1 'fifo.wasm: is a FIFO, not a regular file' -- "$MPK" fit "$G" --lib "$TMP/fifo.wasm"
for lib in Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm Llama-2-7b-chat-hf-q4f16_1-mali.so; do
  expect "real_library_$lib" 0 '^\{"model_type"' -- "$MPK" mlc metadata "$R/mlc-libs/$lib"
done

# ---- 5. every mismatch with a pointer; many missing shards summed up
python3 - "$TMP/many" <<'PY'
import json, os, sys
d = sys.argv[1]; os.makedirs(d)
recs = [{"dataPath": f"params_shard_{i}.bin", "format": "raw-shard", "nbytes": 4,
         "records": [{"name": f"p{i}", "shape": [2], "dtype": "float16", "format": "f32-to-bf16",
                      "nbytes": 4, "byteOffset": 0}]} for i in range(483)]
json.dump({"metadata": {}, "records": recs}, open(f"{d}/tensor-cache.json", "w"))
json.dump({"model_type": "llama", "quantization": "q4f16_1", "model_config": {}}, open(f"{d}/mlc-chat-config.json", "w"))
PY
expect many_missing_summary 1 'many: 483 of 483 shards missing \(the first 10 listed\)' -- "$MPK" check "$TMP/many"
n=$(timeout 10 "$MPK" check "$TMP/many" 2>&1 | grep -c 'is missing')
[ "$n" -eq 10 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: many_missing_listed ($n lines, wanted 10)"; }
# a library that takes other shapes: every differing parameter, each with its pointer
python3 - "$TMP/many" "$TMP/many.json" <<'PY'
import json, sys
d, out = sys.argv[1:]
params = [{"name": f"p{i}", "shape": [3], "dtype": "float16"} for i in range(483)]
params[0]["dtype"] = "float32"
params.append({"name": "extra_param", "shape": [1], "dtype": "float16"})
json.dump({"model_type": "llama", "quantization": "q4f16_1", "kv_state_kind": "kv_cache", "params": params}, open(out, "w"))
PY
expect mismatch_pointer_dtype 1 'tensor-cache.json: /records/0/records/0/dtype: parameter p0: dtype float16, but .* expects float32' \
  -- "$MPK" check "$TMP/many" --lib "$TMP/many.json" --no-weights
expect mismatch_pointer_shape 1 'tensor-cache.json: /records/3/records/0/shape: parameter p3: shape \[2\], but .* expects \[3\]' \
  -- "$MPK" check "$TMP/many" --lib "$TMP/many.json" --no-weights
expect mismatch_missing_pointer 1 'many.json: /params/483: parameter extra_param, which the library expects, is missing from .*tensor-cache.json' \
  -- "$MPK" check "$TMP/many" --lib "$TMP/many.json" --no-weights
expect mismatch_summary 1 'tensor-cache.json: 482 of 484 parameters have a shape other than .* expects \(the first 10 listed\)' \
  -- "$MPK" check "$TMP/many" --lib "$TMP/many.json" --no-weights
expect fit_mismatch_summary 1 'REFUSED: the library is not this package' -- "$MPK" fit "$TMP/many" --lib "$TMP/many.json"

# ---- 4. fit cross-checks library and package, as check does
RL="$R/mlc-packages/ReaderLM-v2-q4f16_1-MLC"; PHI="$R/mlc-libs/Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm"
expect fit_real_mismatch 1 "Phi-3.*: /model_type: the library's model_type is \"phi3\", but the package's chat config .* says \"qwen2\"" \
  -- "$MPK" fit "$RL" --lib "$PHI"
expect fit_real_mismatch_params 1 'ReaderLM-v2-q4f16_1-MLC/tensor-cache.json: /records/0/records/0/name: parameter model.embed_tokens.q_weight is not one' \
  -- "$MPK" fit "$RL" --lib "$PHI"
expect check_real_mismatch 1 "/model_type: the library's model_type is \"phi3\"" -- "$MPK" check "$RL" --lib "$PHI" --no-weights
expect fit_real_match 0 'total: +3850440704 bytes' -- "$MPK" fit "$R/mlc-packages/phi-3-mini-128k-instruct-MLC" --lib "$PHI"
json_ok fit_json_refused 1 '
assert r["command"] == "fit" and r["ok"] is False and r["needs"] is None, r
assert any(p["pointer"] == "/model_type" for p in r["problems"]), r["problems"]' -- "$MPK" fit "$RL" --lib "$PHI" --json
# a legacy chat config without model_config (WizardLM-70B): no named dimension needed
expect fit_legacy_no_model_config 0 'parameters: +38802318336 bytes' -- "$MPK" fit "$R/mlc-packages/WizardLM-70B-V1.0-q4f16_1-MLC"
# an embedding model (no kv_cache, no decode in _metadata): parameters + workspace, no KV cache
python3 - "$R/mlc-lib-metadata/snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.metadata.json" "$TMP/embed" <<'PY'
import json, os, sys
md = json.load(open(sys.argv[1])); d = sys.argv[2]; os.makedirs(d)
json.dump({"model_type": "bert", "quantization": "q0f32", "model_config": {}}, open(f"{d}/mlc-chat-config.json", "w"))
PY
EMB="$R/mlc-lib-metadata/snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.metadata.json"
expect fit_embedding 0 'KV cache: +0 bytes +0.00 MiB +\(none: embedding model\)' -- "$MPK" fit "$TMP/embed" --lib "$EMB"
expect fit_embedding_note 0 'an embedding model .*counted are the parameters and the workspace' -- "$MPK" fit "$TMP/embed" --lib "$EMB"
json_ok fit_embedding_json 0 '
n = r["needs"]
assert n["kv_cache_bytes"] == 0 and n["kv_none_reason"] == "embedding model", n
assert n["total_bytes"] == n["parameter_bytes"] + n["workspace_bytes"], n' -- "$MPK" fit "$TMP/embed" --lib "$EMB" --json
# non-positive dimensions
expect fit_set_zero 2 "--set needs NAME=VALUE with a positive integer VALUE .*not 'vocab_size=0'" -- "$MPK" fit "$G" --lib "$GLIB" --set vocab_size=0
expect fit_set_negative 2 "positive integer VALUE" -- "$MPK" fit "$G" --lib "$GLIB" --set vocab_size=-5
json_ok fit_json_usage 2 'assert r["command"] == "fit" and r["ok"] is False and r["problems"][0]["code"] == "invalid-argument", r' \
  -- "$MPK" fit "$G" --json --set vocab_size=0

# ---- 6. the next step said; typos of closed sets refused with the accepted list
LEG="$EX/legacy-no-manifest"
expect mlc_id_legacy 1 'legacy-no-manifest: has no mlc-model-manifest.json \(a legacy package.*write one with `modelpkg mlc build .*legacy-no-manifest --tasks TASKS.json' \
  -- "$MPK" mlc id "$LEG"
echo '{"segments": [{"text": [1]}]}' > "$TMP/seg.json"
expect mlc_plan_legacy 1 'has no mlc-model-manifest.json \(a legacy package.*write one with `modelpkg mlc build' \
  -- "$MPK" mlc plan --package "$LEG" --lib "$GLIB" --segments "$TMP/seg.json"
expect feature_typo_check 2 '--device-features: unknown WebGPU feature "shader-f61"; WebGPU.s features are: .*shader-f16.*subgroups' \
  -- "$MPK" check "$G" --lib "$GLIB" --device-features shader-f61
expect feature_typo_fit 2 'unknown WebGPU feature "f61"' -- "$MPK" fit "$G" --device-features f16,f61
expect feature_known 0 'OK: all checks hold' -- "$MPK" check "$G" --lib "$GLIB" --device-features f16,subgroups,timestamp-query

# ---- 7. --json: one envelope on success and on refusal
json_ok check_json_typo 2 'assert r["command"] == "check" and r["ok"] is False and r["dir"] is None and "shader-f61" in r["problems"][0]["message"], r' \
  -- "$MPK" check "$G" --device-features shader-f61 --json
json_ok check_json_no_dir 1 'assert r["command"] == "check" and r["ok"] is False and r["problems"][0]["code"] == "not-found", r' \
  -- "$MPK" check "$TMP/nope" --json
json_ok check_json_ok 0 'assert r["command"] == "check" and r["ok"] is True and r["contract"] == "declared", r' -- "$MPK" check "$G" --json
json_ok fit_json_ok 0 'assert r["command"] == "fit" and r["ok"] is True and r["needs"]["parameter_bytes"] == 704, r' -- "$MPK" fit "$G" --json
json_ok fit_json_no_dir 1 'assert r["command"] == "fit" and r["needs"] is None and r["problems"][0]["code"] == "not-found", r' \
  -- "$MPK" fit "$TMP/nope" --json
json_ok fit_json_unknown_option 2 'assert r["command"] == "fit" and "--bogus" in r["problems"][0]["message"], r' -- "$MPK" fit "$G" --bogus --json
json_ok plan_json_legacy 1 'assert r["command"] == "mlc plan" and r["chunks"] is None and "legacy package" in r["problems"][0]["message"], r' \
  -- "$MPK" mlc plan --package "$LEG" --lib "$GLIB" --segments "$TMP/seg.json" --json
json_ok plan_json_usage 2 'assert r["command"] == "mlc plan" and r["problems"][0]["code"] == "invalid-argument", r' -- "$MPK" mlc plan --json
json_ok plan_json_ok 0 'assert r["command"] == "mlc plan" and r["ok"] is True and r["prompt_length"] > 0, r' \
  -- "$MPK" mlc plan --package "$G" --lib "$GLIB" --segments "$TMP/seg.json" --json
json_ok id_json_ok 0 'assert r["command"] == "mlc id" and r["interface_id"] == r["declared_interface_id"], r' -- "$MPK" mlc id "$G" --json
json_ok id_json_legacy 1 'assert r["command"] == "mlc id" and r["interface_id"] is None and "legacy package" in r["problems"][0]["message"], r' \
  -- "$MPK" mlc id "$LEG" --json

finish
