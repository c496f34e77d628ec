#!/usr/bin/env bash
# CLI integration tests: run the real `modelpkg` binary on the bundled examples and on broken
# copies of them. usage: test_cli.sh MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
MPK="$1"; SRC="$2"; SHARED="$3"
EX="$SRC/examples"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

. "$(dirname "$0")/expect.sh"

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
assert [p["pointer"] for p in r["problems"]] == ["/params", "/records/0/records/0/shape", "/weights/parameter_schema_id"], r["problems"]
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
expect truncated_shard 1 'shard 0 is 700 bytes, the tensor cache says 704 \(truncated\)' -- "$MPK" check "$TMP/g" --jobs 1
# On a terminal (script(1) gives it one) a progress bar is drawn on stderr; piped, nothing.
case_needs script progress_tty && expect progress_tty 0 'hashing shards \[#+\] 100%' -- script -qec "'$MPK' check '$G'" /dev/null
expect progress_piped 0 '^0$' -- sh -c "'$MPK' check '$G' 2>&1 >/dev/null | wc -c"
expect bad_jobs 2 'an integer from 1 to 256' -- "$MPK" check "$G" --jobs 0
sed -i 's/"byteOffset": 512/"byteOffset": 500/' "$TMP/g/tensor-cache.json"
expect overlap 1 'tensor-cache.json: /records/0/records/1: record "layers.0.mlp.weight" at byte 500 overlaps record "embed.weight"' -- "$MPK" check "$TMP/g"
cp "$G/params_shard_0.bin" "$G/tensor-cache.json" "$TMP/g/"
expect legacy_lib_mismatch 1 'legacy-no-manifest/tensor-cache.json: /records/0/records/0/dtype: parameter embed.weight: dtype float32, but .* expects float16' \
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
{ printf '\177ELF'; head -c 5000 /dev/zero; } > "$TMP/empty.so"
expect no_metadata 1 'no _metadata' -- "$MPK" mlc metadata "$TMP/empty.so"
head -c 5000 /dev/zero > "$TMP/zeros.so"
expect not_a_library 1 'zeros.so: not a compiled model library' -- "$MPK" mlc metadata "$TMP/zeros.so"

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

# check on a MobileTransformers package: dispatched on mobiletransformers_manifest.json.
# The fixture's sidecars are placeholders (64 zeros) and its tensors 23-byte placeholders of a
# float32 [4, 3]: the load gate refuses them, naming the file and both digests, and a tensor that
# cannot be loaded is a problem (with --no-hash too). TOK is a copy with loadable tensors (padded
# to 48 bytes) and correct sidecars, resealed: every check holds. Its
# inference/model.onnx is a 17-byte placeholder, not a graph: by default check says so (mt_placeholder_graph);
# the other cases here are about files and the gate and pass --no-graph.
T="$SHARED/conformance/mobiletransformers/tiny_package"
TW="variants/cpu-int4/inference/model.layers.0.attn.q_proj.MatMul.weight.bin"
expect mt_placeholder_sidecars 1 "$TW: layer \"backbone.model.layers.0.self_attn.q_proj.base_layer\" role \"weight\": SHA-256 b39a7c6175b60a789569dd83dafebc0ef35cd78d53f955bdcd05fd8142895da3 does not equal its sidecar.s 0{64} \(the map has no sha256\) \[mismatch\]" \
  -- "$MPK" check "$T" --no-graph
expect mt_placeholder_size_problem 1 "$TW: layer .*: the file is 23 bytes, but float32 of 2 dimensions is 48 bytes: it cannot be loaded \[mismatch\]" -- "$MPK" check "$T" --no-graph
expect mt_placeholder_graph 1 'inference/model.onnx@0: is not an ONNX protobuf \(it looks like text: a placeholder\?\): .*\(modelpkg check --no-graph\) \[malformed\]' \
  -- "$MPK" check "$T"
expect mt_placeholder_all 1 'FAILED: 4 problems' -- "$MPK" check "$T" --no-graph --all-variants
expect mt_placeholder_no_hash 1 'it cannot be loaded' -- "$MPK" check "$T" --no-graph --no-hash
"$MPK" check "$T" --no-graph --no-hash --json > "$TMP/ph.json"
expect mt_placeholder_no_hash_json 0 '^ok$' -- python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["ok"] is False, r; print("ok")' "$TMP/ph.json"
TOK="$TMP/tinyok"
cp -r "$T" "$TOK" && chmod -R u+w "$TOK"
for f in "$TOK"/variants/*/inference/*.bin; do truncate -s 48 "$f"; sha256sum "$f" | cut -c1-64 > "$f.sha256"; done
"$MPK" mt reseal "$TOK" >/dev/null
expect mt_ok 0 'OK: all checks hold' -- "$MPK" check "$TOK" --no-graph
expect mt_gate_note 0 "note: load gate, variant \"cpu-int4\": .*$TW \(layer .*\) verified against the sidecar" -- "$MPK" check "$TOK" --no-graph
expect mt_gate_tensors 0 'tensors: +1 merged-weight tensor, 1 verified by the load gate' -- "$MPK" check "$TOK" --no-graph
expect mt_default_variant 0 'checked: +variant cpu-int4$' -- "$MPK" check "$TOK" --no-graph
expect mt_variant 0 'files: +19 listed files in scope, 19 present with their listed size, 19 SHA-256 verified' \
  -- "$MPK" check "$TOK" --no-graph --variant cpu-fp16
expect mt_all_variants 0 'files: +31 listed files in scope, 31 present with their listed size, 31 SHA-256 verified' \
  -- "$MPK" check "$TOK" --no-graph --all-variants --jobs 2
expect mt_no_hash 0 'digests not computed' -- "$MPK" check "$TOK" --no-graph --no-hash
expect mt_no_hash_gate 0 'load gate, variant "cpu-int4": 1 tensor present \(digests not computed\)' -- "$MPK" check "$TOK" --no-graph --no-hash
expect mt_example 0 'tensors: +4 merged-weight tensors, 4 verified by the load gate' -- "$MPK" check "$EX/mt-tiny" --all-variants
expect mt_unknown_variant 1 'mobiletransformers_manifest.json: /variants: the requested variant "cpu-int8" is not among the variants \(cpu-int4, cpu-fp16\)' \
  -- "$MPK" check "$T" --no-graph --variant cpu-int8
expect mt_variant_and_all 2 'give --variant ID or --all-variants, not both' -- "$MPK" check "$T" --no-graph --variant cpu-int4 --all-variants
expect mt_mlc_option 2 '--lib applies to an MLC package; .*tiny_package is a MobileTransformers package' -- "$MPK" check --lib x "$T"
expect mt_option_on_mlc 2 '--variant applies to a MobileTransformers package; .*gemma4-audio has no mobiletransformers_manifest.json' \
  -- "$MPK" check "$G" --variant cpu-int4
expect mt_missing_dir_arg 2 'missing the package directory' -- "$MPK" check --all-variants
expect mt_help 0 '--all-variants +check every variant' -- "$MPK" check --help
case_needs script mt_progress_tty && expect mt_progress_tty 0 'hashing files \[#+\] 100%' -- script -qec "'$MPK' check '$TOK' --no-graph" /dev/null
cp -r "$TOK" "$TMP/mt" && chmod -R u+w "$TMP/mt"
printf '\x01' | dd of="$TMP/mt/variants/cpu-int4/inference/model.onnx" bs=1 seek=3 conv=notrunc status=none
expect mt_flipped_byte 1 'mt/variants/cpu-int4/inference/model.onnx: SHA-256 [0-9a-f]{64} does not equal the manifest.s sha256 f41027621d84' \
  -- "$MPK" check "$TMP/mt" --no-graph
expect mt_flipped_no_hash 0 'OK: all checks hold' -- "$MPK" check "$TMP/mt" --no-graph --no-hash
expect mt_flipped_other_variant 0 'OK: all checks hold' -- "$MPK" check "$TMP/mt" --no-graph --variant cpu-fp16
head -c 10 "$T/variants/cpu-int4/inference/frozen_base.onnx.data" > "$TMP/mt/variants/cpu-int4/inference/frozen_base.onnx.data"
expect mt_truncated 1 'inference/frozen_base.onnx.data: file is 10 bytes, fileSizes says 24 \(truncated\) \[mismatch\]' \
  -- "$MPK" check "$TMP/mt" --no-graph --jobs 1
echo extra > "$TMP/mt/stray.txt"
expect mt_unlisted_warns 0 '^warning: .*/mt/stray.txt is on disk but the manifest does not list it' -- "$MPK" check "$TMP/mt" --no-graph --variant cpu-fp16
expect mt_unlisted_ok 0 'OK: all checks hold \(1 warning\)' -- "$MPK" check "$TMP/mt" --no-graph --variant cpu-fp16
"$MPK" check "$TMP/mt" --no-graph --json > "$TMP/mt.json"
expect mt_json 0 '^ok$' -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "mobiletransformers" and r["ok"] is False, r
assert r["manifest"]["defaultVariant"] == "cpu-int4" and r["manifest"]["variants"] == ["cpu-int4", "cpu-fp16"], r
assert r["checked"] == {"variants": ["cpu-int4"], "all_variants": False, "hashed": True, "installed": False}, r["checked"]
assert r["files"] == {"in_scope": 22, "sized": 21, "hashed": 20, "bytes_hashed": 4006 + 25 - 24 - 17, "merged": 0}, r["files"]
assert r["unlisted"] == ["stray.txt"], r["unlisted"]
assert r["tensors"] == {"gated": 1, "verified": 1}, r["tensors"]
assert [(p["code"], p["file"].split("/mt/")[1], p["pointer"]) for p in r["problems"]] == [
    ("mismatch", "variants/cpu-int4/inference/frozen_base.onnx.data", ""),
    ("mismatch", "variants/cpu-int4/inference/model.onnx", "")], r["problems"]
assert any(n.startswith("warning: ") and "stray.txt" in n for n in r["notes"]), r["notes"]
print("ok")' "$TMP/mt.json"
rm "$TMP/mt/variants/cpu-int4/inference/weight_handoff_map.json"
expect mt_missing_handoff 1 'inference/weight_handoff_map.json: the weight handoff map of variant "cpu-int4" \(weightHandoff\) is missing' \
  -- "$MPK" check "$TMP/mt" --no-graph --no-hash
rm "$TMP/mt/variants/cpu-int4/inference/model.onnx" && ln -s /etc/hostname "$TMP/mt/variants/cpu-int4/inference/model.onnx"
expect mt_symlink_outside 1 'inference/model.onnx: listed file resolves outside the package directory' -- "$MPK" check "$TMP/mt" --no-graph --no-hash
sed -i 's/"schemaVersion": "1.0"/"schemaVersion": "2.0"/' "$TMP/mt/mobiletransformers_manifest.json"
expect mt_future_major 1 'mobiletransformers_manifest.json: /schemaVersion: schemaVersion 2.0 is a newer major version than this reader supports \(1.0\)' \
  -- "$MPK" check "$TMP/mt" --no-graph
sed -i 's/"README.md": 42/"..\/README.md": 42/; s/"schemaVersion": "2.0"/"schemaVersion": "1.0"/' "$TMP/mt/mobiletransformers_manifest.json"
expect mt_dotdot 1 'mobiletransformers_manifest.json: /fileSizes/..~1README.md: file "../README.md" leaves the package' -- "$MPK" check "$TMP/mt" --no-graph
touch "$TMP/mt/mlc-model-manifest.json"
expect mt_and_mlc 1 'holds both mlc-model-manifest.json and mobiletransformers_manifest.json' -- "$MPK" check "$TMP/mt" --no-graph

# Sealing MobileTransformers packages (mt build / mt reseal): the committed example and the
# fixture re-sealed byte for byte, cross-checked against the generator's restatement of the
# reference exporter's rules.
MT="$EX/mt-tiny"
expect seal_help 0 'usage: modelpkg mt build DIR --describe BUILD.json' -- "$MPK" mt build --help
expect seal_no_sub 2 'usage: modelpkg mt <subcommand>' -- "$MPK" mt
expect seal_unknown_sub 2 "unknown subcommand 'seal'" -- "$MPK" mt seal "$MT"
expect seal_build_no_describe 2 'missing --describe BUILD.json' -- "$MPK" mt build "$MT"
expect seal_reseal_describe 2 '--describe is for mt build' -- "$MPK" mt reseal "$MT" --describe x.json
expect seal_bad_jobs 2 '--jobs needs an integer from 1 to 256' -- "$MPK" mt reseal "$MT" --jobs 0
expect seal_no_dir 2 "'$TMP/nope' is not a directory" -- "$MPK" mt reseal "$TMP/nope"
expect seal_example_dry 0 'OK: already sealed, nothing written' -- "$MPK" mt reseal "$MT" --dry-run
cp -r "$MT" "$TMP/seal"
expect seal_example_reseal 0 'changes: none since the previous manifest' -- "$MPK" mt reseal "$TMP/seal" --jobs 2
expect seal_example_bytes 0 '^same$' -- sh -c "diff -r '$TMP/seal' '$MT' >/dev/null && echo same"
rm "$TMP/seal/mobiletransformers_manifest.json" "$TMP/seal"/variants/*/checksums.json
expect seal_example_build 0 'OK: sealed \(3 documents written\)' -- "$MPK" mt build "$TMP/seal" --describe "$EX/mt-tiny.build.json"
expect seal_example_build_bytes 0 '^same$' -- sh -c "diff -r '$TMP/seal' '$MT' >/dev/null && echo same"
W="variants/cpu-int4/inference/model.layers.0.attn.q_proj.MatMul.weight.bin"
printf '\x01' | dd of="$TMP/seal/$W" bs=1 seek=3 conv=notrunc status=none
expect seal_changed_dry 0 "would write +variants/cpu-int4/checksums.json" -- "$MPK" mt reseal "$TMP/seal" --dry-run
expect seal_changed 0 "changed +$W" -- "$MPK" mt reseal "$TMP/seal"
expect seal_changed_only 0 '^ok$' -- python3 -c '
import json, sys
a, b = (json.load(open(p + "/mobiletransformers_manifest.json")) for p in sys.argv[1:3])
diff = sorted(k + "/" + f for k in ("fileSizes", "sha256") for f in a[k] if a[k][f] != b[k].get(f))
assert diff == ["sha256/variants/cpu-int4/checksums.json", "sha256/" + sys.argv[3]], diff
print("ok")' "$MT" "$TMP/seal" "$W"
case_needs script seal_progress_tty && expect seal_progress_tty 0 'hashing files \[#+\] 100%' -- script -qec "'$MPK' mt reseal '$TMP/seal'" /dev/null
T="$SHARED/conformance/mobiletransformers/tiny_package"
cp -r "$T" "$TMP/sealtiny" && chmod -R u+w "$TMP/sealtiny"
expect seal_tiny 0 'wrote +mobiletransformers_manifest.json' -- "$MPK" mt reseal "$TMP/sealtiny"
# The only difference: the two keys the fixture predates, written null.
expect seal_tiny_two_keys 0 '^> two keys$' -- bash -c 'd=$(diff -r "$1" "$2" | grep -E "^[<>]" | tr -d " " | tr "\n" "|")
  [ "$d" = ">\"trainableParameterCount\":null,|>\"trainingParameterCount\":null,|" ] && echo "> two keys"' _ "$T" "$TMP/sealtiny"
ln -s ../config.json "$TMP/sealtiny/shared/tokenizer/link.json"
expect seal_symlink 1 'link.json: "shared/tokenizer/link.json" is a symbolic link: a package holds regular files and directories only' \
  -- "$MPK" mt reseal "$TMP/sealtiny"
rm "$TMP/sealtiny/shared/tokenizer/link.json"
printf '{"baseModelId": "m", "variants": [{"id": "cpu-int4", "executionProvider": "cpu"}]}' > "$TMP/bad-build.json"
expect seal_bad_describe 1 'bad-build.json: /variants/0: missing field "quantization"' \
  -- "$MPK" mt build "$TMP/sealtiny" --describe "$TMP/bad-build.json"
printf '{"baseModelId": "m", "variants": [{"id": "gpu", "executionProvider": "gpu", "quantization": null}]}' > "$TMP/bad-build.json"
expect seal_no_variant_dir 1 'bad-build.json: /variants/0/id: variant "gpu" has no directory variants/gpu/ in the package' \
  -- "$MPK" mt build "$TMP/sealtiny" --describe "$TMP/bad-build.json"
# An unusual tree (non-ASCII and hidden names, '-' sorting before '/', an empty feature directory,
# a nested file named like the manifest, an undeclared variant's stale checksums.json), sealed by
# modelpkg and by the generator's Python restatement: the same bytes.
cp -r "$MT" "$TMP/odd"
mkdir -p "$TMP/odd/a" "$TMP/odd/variants/cpu-int4/embedding" "$TMP/odd/variants/old" "$TMP/odd/variants/cpu-fp16/inference-extra"
printf 'x' > "$TMP/odd/a-b"; printf 'y' > "$TMP/odd/a/b"; printf '' > "$TMP/odd/.hidden"
printf 'caf\xc3\xa9' > "$TMP/odd/shared/tokenizer/"$'caf\xc3\xa9 \xf0\x9f\x9a\x80.txt'
printf '{}' > "$TMP/odd/variants/old/checksums.json"; printf '{}' > "$TMP/odd/a/mobiletransformers_manifest.json"
printf 'z' > "$TMP/odd/variants/cpu-fp16/inference-extra/x.bin"
python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))
b.update(baseModelId="org/Mod\u00e8le-\U0001f680", exportedAt="2026-08-20T00:00:00+02:00 \u2014 \"quoted\"\t")
b["variants"][1]["features"] = ["core", "inference", "rag"]
json.dump(b, open(sys.argv[2], "w"), ensure_ascii=False)' "$EX/mt-tiny.build.json" "$TMP/odd-build.json"
cp -r "$TMP/odd" "$TMP/odd-py"
python3 -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import gen_examples as g
g.mt_seal(sys.argv[2], json.load(open(sys.argv[3], encoding="utf-8")))' "$SRC/scripts" "$TMP/odd-py" "$TMP/odd-build.json"
expect seal_odd_build 0 'OK: sealed' -- "$MPK" mt build "$TMP/odd" --describe "$TMP/odd-build.json"
expect seal_odd_same_as_python 0 '^same$' -- sh -c "diff -r '$TMP/odd' '$TMP/odd-py' && echo same"
expect seal_odd_escapes 0 'Mod\\u00e8le-\\ud83d\\ude80' -- cat "$TMP/odd/mobiletransformers_manifest.json"

# mt tensors: each entry's roles with dtype, shape, bytes, file and checksum status.
expect tensors_help 0 'usage: modelpkg mt tensors DIR' -- "$MPK" mt tensors --help
expect tensors_no_dir 2 'missing the package directory' -- "$MPK" mt tensors
expect tensors_example 0 'weight +float16 +\[6,4\] +48 bytes +model.layers.0.attn.v_proj.MatMul.weight.bin +size ok +checksum verified \(map\)' \
  -- "$MPK" mt tensors "$MT"
expect tensors_example_ok 0 'OK: 2 tensors verified and loadable' -- "$MPK" mt tensors "$MT" --variant cpu-int4
expect tensors_placeholder 1 'size MISMATCH \(23 on disk\) +checksum mismatch \(sidecar\)' -- "$MPK" mt tensors "$T"
expect tensors_placeholder_msg 1 "$TW: layer .* does not equal its sidecar.s 0{64}" -- "$MPK" mt tensors "$T"
expect tensors_unknown_variant 1 'variant "cpu-int8" is not among the variants' -- "$MPK" mt tensors "$T" --variant cpu-int8
cp -r "$MT" "$TMP/tens" && chmod -R u+w "$TMP/tens"
TV="$TMP/tens/variants/cpu-fp16/inference/model.layers.0.attn.v_proj.MatMul.weight.bin"
rm "$TV.sha256"
expect tensors_map_authority 0 'v_proj.MatMul.weight.bin +size ok +checksum verified \(map\)' -- "$MPK" mt tensors "$TMP/tens"
echo 1111111111111111111111111111111111111111111111111111111111111111 > "$TV.sha256"
expect tensors_stale_sidecar 1 'checksum mismatch \(sidecar\)' -- "$MPK" mt tensors "$TMP/tens"
expect tensors_stale_sidecar_msg 1 'the map.s sha256 matches, but a sidecar must agree with the bytes: a stale sidecar fails' -- "$MPK" mt tensors "$TMP/tens"
rm "$TV"
expect tensors_missing 1 'v_proj.MatMul.weight.bin: merged weight of layer "backbone.model.layers.0.self_attn.v_proj.base_layer" role "weight" is missing' \
  -- "$MPK" mt tensors "$TMP/tens"
python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); d["entries"] = []; json.dump(d, open(p, "w"))' \
  "$TMP/tens/variants/cpu-fp16/inference/weight_handoff_map.json"
expect tensors_no_entries 0 'no merged weights: the map has no entries: use the base weights' -- "$MPK" mt tensors "$TMP/tens"

# mt merge: the bundled adapter into a copy of the example; then check, a second merge, --dry-run.
AD="$EX/mt-tiny.adapter.safetensors"
expect merge_help 0 'usage: modelpkg mt merge DIR --adapter' -- "$MPK" mt merge --help
expect merge_no_adapter 2 'missing --adapter' -- "$MPK" mt merge "$MT"
expect merge_bad_orientation 2 'must be no_transpose or already_transposed_for_inference' \
  -- "$MPK" mt merge "$MT" --adapter "$AD" --orientation sideways
expect merge_bad_scale 2 "--scale '1e999' is not a finite number" -- "$MPK" mt merge "$MT" --adapter "$AD" --scale 1e999
cp -r "$MT" "$TMP/merge" && chmod -R u+w "$TMP/merge"
expect merge_dry_run 0 'DRY RUN: 2 entries would be merged' -- "$MPK" mt merge "$TMP/merge" --adapter "$AD" --dry-run
expect merge_dry_run_unchanged 0 'OK: all checks hold' -- "$MPK" check "$TMP/merge"
expect merge_ok 0 'orientation: no_transpose \(observed from 2 non-square entries' -- "$MPK" mt merge "$TMP/merge" --adapter "$AD"
expect merge_check_after 0 '4 merged on device' -- "$MPK" check "$TMP/merge"
# On a terminal a bar counts the weights merged (docs/CLI.md); piped, nothing.
cp -r "$MT" "$TMP/merge_tty" && chmod -R u+w "$TMP/merge_tty"
case_needs script merge_progress_tty &&
  expect merge_progress_tty 0 'merging \[#+\] 100% 2/2 weights' -- script -qec "'$MPK' mt merge '$TMP/merge_tty' --adapter '$AD'" /dev/null
expect merge_tensors_after 0 'OK: 2 tensors verified and loadable' -- "$MPK" mt tensors "$TMP/merge"
expect merge_twice 1 'already merged: its bytes .* are the merged ones modelpkg.s merge record lists' -- "$MPK" mt merge "$TMP/merge" --adapter "$AD"
expect merge_twice_unchanged 1 'nothing was changed' -- "$MPK" mt merge "$TMP/merge" --adapter "$AD"
expect merge_json 0 '"orientation": "no_transpose"' -- "$MPK" mt merge "$MT" --adapter "$AD" --dry-run --json
expect merge_no_scale 1 'no usable scale' -- "$MPK" mt merge "$MT" --adapter "$AD" --variant cpu-int4 --dry-run
expect merge_wrong_adapter 1 'not a safetensors|header' -- "$MPK" mt merge "$MT" --adapter "$MT/README.md"

# An installed model is a package to every command (docs/mt-installed.md): the user's journey of
# issue 18 — install, check, the gate, the graph, a merge in the cache, check again.
IC="$TMP/icache"
expect installed_install 0 'OK: installed cpu-fp16 ' -- "$MPK" mt install "$MT" --repo-id org/Tiny --cache "$IC" --features inference,train
expect installed_check 0 'checked:   variant cpu-fp16 \(an installed model' -- "$MPK" check "$IC/org__Tiny"
expect installed_check_ok 0 'OK: all checks hold' -- "$MPK" check "$IC/org__Tiny"
expect installed_tensors 0 'OK: 2 tensors verified and loadable' -- "$MPK" mt tensors "$IC/org__Tiny"
expect installed_graph 0 "graph: +$IC/org__Tiny/inference/model.onnx" -- "$MPK" mt graph "$IC/org__Tiny"
expect installed_other_variant 1 'the installed tree holds variant "cpu-fp16", not "cpu-int4"' -- "$MPK" mt tensors "$IC/org__Tiny" --variant cpu-int4
expect installed_merge 0 'OK: merged 2 entries' -- "$MPK" mt merge "$IC/org__Tiny" --adapter "$AD"
expect installed_check_merged 0 '4 merged on device' -- "$MPK" check "$IC/org__Tiny"
expect installed_plan 0 '\(variant cpu-fp16; groups core, checksums, inference\)' -- "$MPK" mt plan "$IC/org__Tiny"
expect installed_update_keeps 0 'OK: installed cpu-fp16 ' -- "$MPK" mt install "$MT" --repo-id org/Tiny --cache "$IC"

# mt select / mt plan: the variant a device gets and the exact bytes to download (docs/mt-select.md),
# on the reference fixture: arm64 and genai → cpu-int4; 1024 MB → nothing, each variant named with
# the filter that excluded it; cpu-int4 core+inference is 2,700 bytes: 3,000 free fits (budget
# 2,700), 2,999 does not (2,699) and cpu-fp16 (2,301) is taken instead.
expect select_help 0 'usage: modelpkg mt select DIR' -- "$MPK" mt select --help
expect plan_help 0 'usage: modelpkg mt plan DIR\|URL \[--variant ID\]' -- "$MPK" mt plan --help
expect mt_help_lists_select 0 'mt select DIR' -- "$MPK" mt --help
expect select_no_dir 2 'missing the package directory' -- "$MPK" mt select
expect select_bad_memory 2 "--memory-mb needs a non-negative integer, not '1G'" -- "$MPK" mt select "$T" --memory-mb 1G
expect select_empty_item 2 "--abi 'arm64-v8a,' has an empty item" -- "$MPK" mt select "$T" --abi arm64-v8a,
expect select_twice 2 '--engine given twice' -- "$MPK" mt select "$T" --engine native --engine genai
expect select_unknown_opt 2 "unknown option '--variant'" -- "$MPK" mt select "$T" --variant cpu-int4
expect plan_default_variant 0 'modelpkg mt plan .* \(variant cpu-int4; groups core, checksums, inference\)' -- "$MPK" mt plan "$T"
expect select_no_such 1 'nope: not found' -- "$MPK" mt select "$TMP/nope"
expect select_arm64 0 'chosen: cpu-int4 \(2700 bytes to download\)$' -- "$MPK" mt select "$T" --abi arm64-v8a
expect select_arm64_why 0 '#2  cpu-fp16 +fp16 +2301 bytes  lost: ranks below cpu-int4: its quantization "fp16" is not in the preference list' \
  -- "$MPK" mt select "$T" --abi arm64-v8a
expect select_manifest_file 0 'chosen: cpu-int4' -- "$MPK" mt select "$T/mobiletransformers_manifest.json"
expect select_genai 0 'chosen: cpu-int4' -- "$MPK" mt select "$T" --engine genai
expect select_genai_why 0 '--  cpu-fp16 .* excluded by engine: supportedEngines \[native\] does not include the requested "genai"' \
  -- "$MPK" mt select "$T" --engine genai
expect select_x86 0 'chosen: cpu-fp16' -- "$MPK" mt select "$T" --abi x86_64 --api-level 28
expect select_memory 1 'no variant fits: cpu-int4: recommendedDeviceMemoryMb 3072 exceeds the device memory of 1024 MB; cpu-fp16: recommendedDeviceMemoryMb 6144 exceeds the device memory of 1024 MB' \
  -- "$MPK" mt select "$T" --memory-mb 1024
expect select_memory_text 1 'NO VARIANT FITS' -- "$MPK" mt select "$T" --memory-mb 1024
expect select_storage_fits 0 'chosen: cpu-int4 \(2700 bytes to download\)$' -- "$MPK" mt select "$T" --abi arm64-v8a --storage-bytes 3000
expect select_storage_fallback 0 'chosen: cpu-fp16 \(2301 bytes to download\), falling back' -- "$MPK" mt select "$T" --abi arm64-v8a --storage-bytes 2999
expect select_storage_why 0 'cpu-int4 .* does not fit: its download of 2700 bytes exceeds the storage budget of 2699 bytes' \
  -- "$MPK" mt select "$T" --storage-bytes 2999
expect select_storage_none 1 'cpu-fp16: its download of 2301 bytes exceeds the storage budget of 2300 bytes' -- "$MPK" mt select "$T" --storage-bytes 2556
expect select_prefer 0 'chosen: cpu-fp16' -- "$MPK" mt select "$T" --prefer-quant QInt8,fp16,int4
"$MPK" mt select "$T" --abi arm64-v8a,x86_64 --storage-bytes 2999 --json > "$TMP/sel.json"
"$MPK" mt select "$T" --memory-mb 1024 --json > "$TMP/sel-none.json" 2>/dev/null
expect select_json 0 '^ok$' -- python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["chosen"] == "cpu-fp16" and r["fell_back"] is True and r["error"] is None, r
assert r["device"] == {"abis": ["arm64-v8a", "x86_64"], "execution_provider": None, "quantization": None, "engine": None,
                       "memory_mb": None, "api_level": None, "storage_bytes": 2999}, r["device"]
assert r["features"] == ["inference"] and r["groups"] == ["core", "checksums", "inference"], r
assert r["prefer_quant"] == ["int4"] and r["preferred_quant"] == "int4" and r["budget_bytes"] == 2699, r
c = {x["id"]: x for x in r["candidates"]}
assert [x["id"] for x in r["candidates"]] == ["cpu-int4", "cpu-fp16"], r
assert (c["cpu-int4"]["rank"], c["cpu-int4"]["download_bytes"], c["cpu-int4"]["excluded_by"], c["cpu-int4"]["chosen"]) == (1, 2700, "storage", False), c
assert (c["cpu-fp16"]["rank"], c["cpu-fp16"]["download_bytes"], c["cpu-fp16"]["excluded_by"], c["cpu-fp16"]["chosen"]) == (2, 2301, None, True), c
n = json.load(open(sys.argv[2]))
assert n["chosen"] is None and n["error"]["code"] == "no-variant" and n["error"]["pointer"] == "/variants", n
assert [x["excluded_by"] for x in n["candidates"]] == ["recommendedDeviceMemoryMb"] * 2, n
assert n["error"]["message"] == n["summary"], n
print("ok")' "$TMP/sel.json" "$TMP/sel-none.json"
expect plan_int4 0 'OK: 12 files, 2700 bytes to download' -- "$MPK" mt plan "$T" --variant cpu-int4
expect plan_manifest_line 0 'not counted +mobiletransformers_manifest.json' -- "$MPK" mt plan "$T" --variant cpu-int4
expect plan_fp16 0 'OK: 11 files, 2301 bytes to download' -- "$MPK" mt plan "$T" --variant cpu-fp16
expect plan_train 0 'OK: 16 files, 3833 bytes to download' -- "$MPK" mt plan "$T" --variant cpu-int4 --features inference,train,rag
expect plan_undeclared 1 '/variants/1/features: variant "cpu-fp16" does not declare feature "rag"' -- "$MPK" mt plan "$T" --variant cpu-fp16 --features rag
expect plan_unknown_variant 1 'no variant "cpu-int8"' -- "$MPK" mt plan "$T" --variant cpu-int8
"$MPK" mt plan "$T" --variant cpu-int4 --json > "$TMP/plan.json"
expect plan_json 0 '^ok$' -- python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
m = json.load(open(sys.argv[2]))
assert p["variant"] == "cpu-int4" and p["groups"] == ["core", "checksums", "inference"], p
assert p["total_bytes"] == 2700 and p["n_files"] == 12 == len(p["files"]), p
assert p["includes_manifest"] is True and p["installable"] is True and p["problems"] == [] and p["notes"] == [], p
assert [f["path"] for f in p["files"]] == sorted(f["path"] for f in p["files"]), p
for f in p["files"]:
    assert f["size"] == m["fileSizes"][f["path"]] and f["sha256"] == m["sha256"][f["path"]], f
assert sum(f["size"] for f in p["files"]) == 2700
assert {f["group"] for f in p["files"]} == {"core", "checksums", "inference"}, p
print("ok")' "$TMP/plan.json" "$T/mobiletransformers_manifest.json"
# A planned file without a digest: the plan shows and refuses it; selection passes that variant over.
cp -r "$T" "$TMP/unv" && chmod -R u+w "$TMP/unv"
python3 -c 'import json, sys; p = sys.argv[1]; d = json.load(open(p)); del d["sha256"]["variants/cpu-int4/inference/model.onnx"]
json.dump(d, open(p, "w"), indent=2, sort_keys=True)' "$TMP/unv/mobiletransformers_manifest.json"
expect plan_no_sha 1 'NO SHA256  variants/cpu-int4/inference/model.onnx' -- "$MPK" mt plan "$TMP/unv" --variant cpu-int4
expect plan_no_sha_refused 1 'REFUSED: 1 of 12 planned files has no size or no sha256 digest' -- "$MPK" mt plan "$TMP/unv" --variant cpu-int4
expect plan_no_sha_named 1 '/sha256/variants~1cpu-int4~1inference~1model.onnx: planned file .* has no sha256 digest: the installer refuses a file it cannot verify' \
  -- "$MPK" mt plan "$TMP/unv" --variant cpu-int4
expect select_no_sha 0 'excluded by downloadPlan: planned file "variants/cpu-int4/inference/model.onnx"' -- "$MPK" mt select "$TMP/unv"
expect select_no_sha_chosen 0 'chosen: cpu-fp16' -- "$MPK" mt select "$TMP/unv"

# The weight handoff map: canonical form (mt handoff fmt), the reference's bytes whatever the order.
HF="$SHARED/conformance/mobiletransformers/android_test_federated_handoff.json"
expect handoff_help 0 'mt handoff fmt FILE' -- "$MPK" mt handoff --help
expect handoff_no_sub 2 'usage: modelpkg mt handoff <subcommand>' -- "$MPK" mt handoff
expect handoff_unknown_sub 2 "unknown subcommand 'check'" -- "$MPK" mt handoff check "$HF"
expect handoff_no_file 2 'missing the map FILE' -- "$MPK" mt handoff fmt
cp "$HF" "$TMP/hm.json" && chmod u+w "$TMP/hm.json"
expect handoff_canonical 0 'is already canonical \(2 entries\)' -- "$MPK" mt handoff fmt "$TMP/hm.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); d["entries"].reverse()
json.dump(d, open(sys.argv[2], "w"))' "$HF" "$TMP/hm-shuffled.json"
expect handoff_fmt 0 'rewrote .*hm-shuffled.json in canonical form' -- "$MPK" mt handoff fmt "$TMP/hm-shuffled.json"
expect handoff_fmt_same 0 '^same$' -- sh -c "cmp '$TMP/hm-shuffled.json' '$HF' && echo same"
sed -i 's/"handoffMode": "external_initializer"/"handoffMode": "model_input"/' "$TMP/hm.json"
expect handoff_mode 1 'hm.json: /handoffMode: handoffMode "model_input" is not supported in v1' -- "$MPK" mt handoff fmt "$TMP/hm.json"
expect handoff_untouched 0 'model_input' -- cat "$TMP/hm.json"

# The committed example packages are exactly what the generator writes (examples/web/, the page of
# the JS package, is written by hand).
python3 "$SRC/scripts/gen_examples.py" "$TMP/examples" >/dev/null
expect examples_deterministic 0 '^same$' -- sh -c "diff -r -x web '$TMP/examples' '$EX' >/dev/null && echo same"

finish
