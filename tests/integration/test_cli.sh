#!/usr/bin/env bash
# CLI integration tests: run the real `modelpkg` binary on the bundled examples and on broken
# copies of them. usage: test_cli.sh MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
MPK="$1"; SRC="$2"; SHARED="$3"
EX="$SRC/examples"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0

# expect NAME STATUS PATTERN -- CMD...: CMD exits STATUS and its stdout+stderr match PATTERN (grep -E).
expect() {
  local name="$1" status="$2" pattern="$3"; shift 4
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  if [ "$rc" -eq "$status" ] && printf '%s\n' "$out" | grep -Eq -- "$pattern"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status; pattern '$pattern')"; printf '%s\n' "$out" | head -20
  fi
}

G="$EX/gemma4-audio"; GLIB="$G/lib/gemma4-audio-webgpu.wasm"
L="$EX/llava-image"; LLIB="$L/lib/llava-image-webgpu.wasm"

expect version 0 '^modelpkg [0-9]+\.[0-9]+\.[0-9]+$' -- "$MPK" --version
expect help 0 'usage: modelpkg <command>' -- "$MPK" --help
expect check_help 0 'usage: modelpkg check DIR' -- "$MPK" check --help
expect mlc_help 0 'mlc id DIR' -- "$MPK" mlc --help
expect no_args 2 'usage' -- "$MPK"
expect unknown_cmd 2 "unknown command 'frobnicate'" -- "$MPK" frobnicate
expect unknown_opt 2 "unknown option '--bogus'" -- "$MPK" check "$G" --bogus
expect missing_dir_arg 2 'missing the package directory' -- "$MPK" check
expect bad_binding 2 'non-negative integer' -- "$MPK" check "$G" --max-binding-size 12x
expect no_such_dir 1 'not a directory' -- "$MPK" check "$TMP/nope"

expect gemma_ok 0 'OK: all checks hold' -- "$MPK" check "$G" --lib "$GLIB" --device-features shader-f16 --max-binding-size 268435456
expect gemma_binding 0 'audio input "audio" -> audio_embed \(float32' -- "$MPK" check "$G" --lib "$GLIB"
expect llava_uint32 0 'image input "image" -> image_embed \(uint32' -- "$MPK" check "$L" --lib "$LLIB" --device-features f16
expect legacy 0 'contract:  none declared' -- "$MPK" check "$EX/legacy-no-manifest"
expect no_lib_note 0 'no library given' -- "$MPK" check "$G"
expect mismatched_lib 1 'mlc-model-manifest.json: /weights/parameter_schema_id: artifact contract: weight and compiled-program parameter schema IDs differ' \
  -- "$MPK" check "$G" --lib "$EX/mismatched-lib/gemma4-audio-other-weights-webgpu.wasm"
expect missing_feature 1 'required_features/0: Compiled artifact requires unsupported WebGPU feature "shader-f16"' \
  -- "$MPK" check "$G" --lib "$GLIB" --device-features ""
expect binding_too_small 1 'requires maxStorageBufferBindingSize 512, but this device exposes 100' \
  -- "$MPK" check "$G" --lib "$GLIB" --max-binding-size 100
expect mlc_id 0 '^sha256:6453d39d6c1a05b41e3d10ac1547892e2fde2ae228c6705b122ffde5e4c9c490$' -- "$MPK" mlc id "$G"

# --json is one valid JSON document with the documented fields.
"$MPK" check "$G" --lib "$EX/mismatched-lib/gemma4-audio-other-weights-webgpu.wasm" --json > "$TMP/r.json"
expect json_report 0 '^ok$' -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is False and r["contract"] == "declared", r
assert all(p["code"] == "mismatch" for p in r["problems"]), r["problems"]
assert [p["pointer"] for p in r["problems"]] == ["/params", "", "/weights/parameter_schema_id"], r["problems"]
assert r["library"]["has_artifact"] is True and r["binding"] is None
w = r["weights"]
assert w["parameters"] == 3 and w["shards"] == 1 and w["verified"] is True, w
assert w["resources"] == {"max_storage_buffer_binding_size": 512, "estimated_device_memory_bytes": 704}, w
print("ok")' "$TMP/r.json"

# Broken copies of the audio package: each names the file, the JSON pointer and the rule.
cp -r "$G" "$TMP/g"
sed -i 's/"channels": 1/"channels": 2/' "$TMP/g/mlc-model-manifest.json"
expect channels_2 1 'mlc-model-manifest.json: /tasks/chat.completions/inputs/audio/processor: channels must be 1' -- "$MPK" check "$TMP/g"
cp "$G/mlc-model-manifest.json" "$TMP/g/"
sed -i 's/"min_samples": 161/"min_samples": 160/' "$TMP/g/mlc-model-manifest.json"
expect id_mismatch 1 'interface_id does not match its tasks' -- "$MPK" check "$TMP/g"
expect id_recomputed 1 'declared sha256:6453.* differs' -- "$MPK" mlc id "$TMP/g"
printf '{"schema":"mlc.model-package","schema":"x"}' > "$TMP/g/mlc-model-manifest.json"
expect duplicate_key 1 'duplicate object key' -- "$MPK" check "$TMP/g"
cp "$G/mlc-model-manifest.json" "$TMP/g/"
rm "$TMP/g/tensor-cache.json"
expect missing_tensor_cache 1 'tensor-cache.json: required file is missing' -- "$MPK" check "$TMP/g"

# Weights: the shard files are read unless --no-weights.
cp "$G/tensor-cache.json" "$TMP/g/"
printf '\x01' | dd of="$TMP/g/params_shard_0.bin" bs=1 seek=100 conv=notrunc status=none
expect flipped_byte 1 'params_shard_0.bin: MD5 [0-9a-f]{32} does not equal md5sum' -- "$MPK" check "$TMP/g"
expect no_weights 0 'shard files not read' -- "$MPK" check "$TMP/g" --no-weights
head -c 700 "$G/params_shard_0.bin" > "$TMP/g/params_shard_0.bin"
expect truncated_shard 1 'shard is 700 bytes, the tensor cache says 704 \(truncated\)' -- "$MPK" check "$TMP/g" --jobs 1
# On a terminal (script(1) gives it one) a progress bar is drawn on stderr; piped, nothing.
expect progress_tty 0 'hashing shards \[#+\] 100%' -- script -qec "'$MPK' check '$G'" /dev/null
expect progress_piped 0 '^0$' -- sh -c "'$MPK' check '$G' 2>&1 >/dev/null | wc -c"
expect bad_jobs 2 'an integer from 1 to 256' -- "$MPK" check "$G" --jobs 0
sed -i 's/"byteOffset": 512/"byteOffset": 500/' "$TMP/g/tensor-cache.json"
expect overlap 1 'tensor-cache.json: /records/0/records/1: record "layers.0.mlp.weight" at byte 500 overlaps record "embed.weight"' -- "$MPK" check "$TMP/g"
cp "$G/params_shard_0.bin" "$G/tensor-cache.json" "$TMP/g/"
expect legacy_lib_mismatch 1 'legacy-no-manifest/tensor-cache.json: parameter embed.weight: dtype float32, but .* expects float16' \
  -- "$MPK" check "$EX/legacy-no-manifest" --lib "$GLIB"

# A library without _metadata.artifact cannot serve a package that declares a contract.
python3 - "$SHARED/realdata/mlc-lib-metadata/Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.metadata.json" "$TMP/plain.so" <<'PY'
import struct, sys
text = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(b"\x7fELF" + bytes(60) + struct.pack("<Q", len(text)) + text + bytes(16))
PY
expect no_artifact 1 '_metadata.artifact is missing' -- "$MPK" check "$G" --lib "$TMP/plain.so"
"$MPK" mlc metadata "$TMP/plain.so" > "$TMP/extracted.json"
expect metadata_byte_exact 0 '^same$' -- sh -c "cmp -s '$TMP/extracted.json' '$SHARED/realdata/mlc-lib-metadata/Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.metadata.json' && echo same"
cat "$TMP/plain.so" "$GLIB" > "$TMP/two.so"
expect two_metadata 1 'different _metadata' -- "$MPK" mlc metadata "$TMP/two.so"
head -c 5000 /dev/zero > "$TMP/empty.so"
expect no_metadata 1 'no _metadata' -- "$MPK" mlc metadata "$TMP/empty.so"

# The producer: rebuild the audio example's sidecar from its tasks and library, byte for byte.
mkdir -p "$TMP/b"
cp "$G/mlc-chat-config.json" "$G/tensor-cache.json" "$G/params_shard_0.bin" "$TMP/b/"
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["tasks"]))' "$G/mlc-model-manifest.json" > "$TMP/tasks.json"
expect build_help 0 'usage: modelpkg mlc build DIR --tasks' -- "$MPK" mlc build --help
expect build_runs 0 'wrote .*mlc-model-manifest.json \(interface_id sha256:6453d39d' \
  -- "$MPK" mlc build "$TMP/b" --tasks "$TMP/tasks.json" --lib "$GLIB" --required-features shader-f16 -o "$TMP/b/artifact.json"
expect build_byte_exact 0 '^same$' -- sh -c "cmp '$TMP/b/mlc-model-manifest.json' '$G/mlc-model-manifest.json' && echo same"
expect build_roundtrip_artifact 0 'OK: all checks hold' -- "$MPK" check "$TMP/b" --lib "$TMP/b/artifact.json"
expect build_roundtrip_lib 0 'OK: all checks hold' -- "$MPK" check "$TMP/b" --lib "$GLIB"
cat > "$TMP/programs.json" <<'P'
{"generation": {"kind": "token_generation", "exports": {"embed_tokens": "e", "prefill_tokens": "p",
 "decode_tokens": "d", "create_kv_cache": "k"}, "adapters": {"audio": "a"}}}
P
expect build_from_weights 0 '"max_storage_buffer_binding_size": 512' \
  -- "$MPK" mlc build "$TMP/b" --tasks "$TMP/tasks.json" --programs "$TMP/programs.json"
sed 's/"adapter": "audio"/"adapter": "speech"/' "$TMP/tasks.json" > "$TMP/tasks-bad.json"
expect build_refuses_adapter 1 'tasks-bad.json: /chat.completions/inputs/audio/adapter: input "audio" of task "chat.completions" names adapter "speech"' \
  -- "$MPK" mlc build "$TMP/b" --tasks "$TMP/tasks-bad.json" --lib "$GLIB"
expect build_kept_manifest 0 '^same$' -- sh -c "cmp '$TMP/b/mlc-model-manifest.json' '$G/mlc-model-manifest.json' && echo same"
expect build_usage 2 'give --lib or --params, not both' -- "$MPK" mlc build "$TMP/b" --tasks "$TMP/tasks.json" --lib "$GLIB" --params x

# fit: parameters + KV cache + workspace against a device.
RGEMMA="$SHARED/realdata/mlc-lib-metadata/gemma-2-2b-it-q4f16_1-ctx4k_cs1k-webgpu.metadata.json"
mkdir -p "$TMP/fitempty"
expect fit_help 0 'usage: modelpkg fit DIR' -- "$MPK" fit --help
expect fit_in_usage 0 'fit DIR \[--lib FILE\]' -- "$MPK" --help
expect fit_missing_dir 2 'missing the package directory' -- "$MPK" fit
expect fit_bad_context 2 '--context needs a positive integer' -- "$MPK" fit "$G" --context 0
expect fit_bad_memory 2 '--device-memory needs a number of bytes' -- "$MPK" fit "$G" --device-memory 4GB
expect fit_bad_set 2 '--set needs NAME=VALUE' -- "$MPK" fit "$G" --set vocab_size
expect fit_set_twice 2 '--set vocab_size is given twice' -- "$MPK" fit "$G" --set vocab_size=1 --set vocab_size=2
expect fit_no_dir 1 'not a directory' -- "$MPK" fit "$TMP/nope"
expect fit_example_lib 0 'total: +68288 bytes' -- "$MPK" fit "$G" --lib "$GLIB"
expect fit_example_lib_too_small 1 'the model needs 68288 bytes \(parameters 704 \+ KV cache 65536 \+ workspace 2048\), but the device has 60000' \
  -- "$MPK" fit "$G" --lib "$GLIB" --device-memory 60000
# A library without _metadata.kv_cache cannot be sized: named, not guessed.
python3 - "$GLIB" "$TMP/nokv.wasm" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(data.replace(b'"kv_cache": {', b'"kv_cachX": {'))
PY
expect fit_no_kv_cache 1 'nokv.wasm: /kv_cache: missing: the KV cache size needs _metadata.kv_cache' \
  -- "$MPK" fit "$G" --lib "$TMP/nokv.wasm"
expect fit_example_weights 0 'parameters: +704 bytes .* from .*tensor-cache.json; largest 512 bytes \(embed.weight\)' -- "$MPK" fit "$G"
expect fit_example_needs_only 0 '^NEEDS ONLY' -- "$MPK" fit "$G"
expect fit_example_too_small 1 'the parameters alone need 704 bytes, but the device has 100' -- "$MPK" fit "$G" --device-memory 100
expect fit_example_cannot_tell 1 'cannot tell whether 1048576 bytes suffice' -- "$MPK" fit "$G" --device-memory 1MiB
expect fit_example_set_no_lib 2 'named dimension "vocab_size" was set, but the tensor cache' -- "$MPK" fit "$G" --set vocab_size=32
# A real library (gemma-2 2B q4f16_1): WebLLM lists 1895.3 MB for it.
expect fit_real_total 0 'total: +1987707392 bytes +1895.63 MiB' -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000
expect fit_real_kv 0 'KV cache: +436207616 bytes .* 26 layers x 2 x 4 KV heads x head_dim 256 x 4096 tokens x 2 bytes \(float16\)' \
  -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000
expect fit_real_context 0 'KV cache: +109051904 bytes .*context from --context' \
  -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000 --context 1024
expect fit_real_fits 0 '^FITS$' -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000 --device-memory 2GiB \
  --max-binding-size 1073741824 --device-features f16
expect fit_real_too_small 1 'DOES NOT FIT: 3 reasons' -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000 \
  --device-memory 1GiB --max-binding-size 134217728 --device-features ""
expect fit_real_memory 1 'device memory: the model needs 1987707392 bytes \(parameters 1470915072 \+ KV cache 436207616 \+ workspace 80584704\), but the device has 1073741824' \
  -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000 --device-memory 1GiB
expect fit_real_binding 1 'parameter model.embed_tokens.q_weight is 294912000 bytes, but the device.s maxStorageBufferBindingSize is 134217728' \
  -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_size=256000 --max-binding-size 134217728
expect fit_unknown_dim 1 'named dimension "vocab_size" has no value' -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA"
expect fit_set_unused 2 'no parameter of the library uses a named dimension "vocab_sise"' \
  -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --set vocab_sise=256000
printf '{"model_config": {"vocab_size": 256000}, "context_window_size": 2048}' > "$TMP/fitempty/mlc-chat-config.json"
expect fit_chat_config_dims 0 'total: +1987707392 bytes' -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA"
expect fit_chat_config_note 0 "note: the chat config's context_window_size is 2048" -- "$MPK" fit "$TMP/fitempty" --lib "$RGEMMA"
"$MPK" fit "$TMP/fitempty" --lib "$RGEMMA" --device-memory 1GiB --json > "$TMP/fit.json"
expect fit_json 0 '^ok$' -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["fits"] is False, r
n = r["needs"]
assert n["total_bytes"] == n["parameter_bytes"] + n["kv_cache_bytes"] + n["workspace_bytes"] == 1987707392, n
assert n["kv_dtype"] == "float16" and n["context"] == 4096 and n["context_source"] == "library", n
assert n["kv_cache"] == {"num_hidden_layers": 26, "num_key_value_heads": 4, "head_dim": 256}, n
assert n["workspace_function"] == "batch_prefill" and n["quantization"] == "q4f16_1", n
assert r["device"] == {"memory_bytes": 1073741824, "max_storage_buffer_binding_size": None, "features": None}, r
assert [p["code"] for p in r["problems"]] == ["mismatch"], r["problems"]
print("ok")' "$TMP/fit.json"

# The committed examples are exactly what the generator writes.
python3 "$SRC/scripts/gen_examples.py" "$TMP/examples" >/dev/null
expect examples_deterministic 0 '^same$' -- sh -c "diff -r '$TMP/examples' '$EX' >/dev/null && echo same"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
