#!/usr/bin/env bash
# Libraries whose function tables we control, built in every container MLC ships
# (tests/tools/make_tvm_lib.py: WebAssembly, ELF x86-64 and AArch64 .so, Mach-O dylib and .o, gzip'd
# tars and ar archives of ELF and Mach-O objects), then read by modelpkg: `mlc functions` lists the
# table written, `mlc metadata` gives the _metadata byte-exactly, and `check --lib` binds a package
# only when every role and adapter is a VM function with the right arity (a missing function, a
# wrong arity, a packed kernel of the role's name are problems naming the role's JSON pointer);
# without a manifest the legacy ABI is a note, or a problem when none is offered. Then the six real
# libraries of ../shared/realdata/mlc-libs: their tables and legacy ABIs.
# usage: test_mlc_libs_built.sh MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
M="$1"; SRC="$2"; SHARED="$3"
. "$SRC/tests/integration/expect.sh"
EXPECT_TIMEOUT=120
need_tool clang
need_tool ld.lld
need_tool wasm-ld
need_tool llvm-ar
need_tool python3

T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
MAKE=(python3 "$SRC/tests/tools/make_tvm_lib.py")
EX="$SRC/examples"

# The file of each container for a built library NAME in DIR.
containers() { local d="$1" n="$2"
  printf '%s\n' "$d/$n.wasm" "$d/$n-x86_64.so" "$d/$n-aarch64.so" "$d/$n-arm64.dylib" "$d/$n-macho.o" \
    "$d/$n-elf.tar" "$d/$n-macho.tar" "$d/$n-elf.a" "$d/$n-macho.a"; }

build() { # build DIR NAME ARGS...: make_tvm_lib.py, a failure to build is a failed check
  local d="$1" n="$2"; shift 2
  local out
  if out="$(timeout 300 "${MAKE[@]}" "$d" --name "$n" "$@" 2>&1)"; then ok; else
    [ $? -eq 77 ] && { echo "$out"; exit 77; }
    bad "make_tvm_lib.py $n: $out"; fi
}

# same_table LIB FUNCTIONS_JSON: `mlc functions LIB --json` lists every function of the table written,
# with its kind, num_args and parameter names (wherever the envelope puts the list).
cat >"$T/same_table.py" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))
doc = json.load(sys.stdin)
found = []
def walk(v):
    if isinstance(v, dict):
        if isinstance(v.get("name"), str) and "num_args" in v:
            found.append(v)
        for x in v.values(): walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
walk(doc)
got = {f["name"]: f for f in found}
for w in want:
    g = got.get(w["name"])
    if g is None: sys.exit("missing %s" % w["name"])
    if g["num_args"] != w["num_args"]: sys.exit("%s: num_args %s, want %s" % (w["name"], g["num_args"], w["num_args"]))
    if "kind" in g and g["kind"] != w["kind"]: sys.exit("%s: kind %s, want %s" % (w["name"], g["kind"], w["kind"]))
    if w["kind"] != "packed" and "param_names" in g and g["param_names"] != w["param_names"]:
        sys.exit("%s: param_names %s, want %s" % (w["name"], g["param_names"], w["param_names"]))
if len(found) != len(want): sys.exit("%d functions listed, %d written" % (len(found), len(want)))
PY
same_table() {
  local lib="$1" want="$2" got rc
  got="$(timeout 60 "$M" mlc functions "$lib" --json 2>&1)"; rc=$?
  if [ $rc -ne 0 ]; then bad "mlc functions $lib: exit $rc: $(first_lines 5 "$got")"; return; fi
  if python3 "$T/same_table.py" "$want" <<<"$got" >"$T/why" 2>&1; then ok; else bad "mlc functions $lib: $(cat "$T/why")"; fi
}
same_metadata() {
  local lib="$1" want="$2"
  if timeout 60 "$M" mlc metadata "$lib" >"$T/md.out" 2>"$T/md.err" && cmp -s "$T/md.out" "$want"; then ok
  else bad "mlc metadata $lib is not byte-exact: $(first_lines 3 "$(cat "$T/md.err")")"; fi
}

# ---- an artifact: the Gemma 4 audio example's _metadata in libraries we build
"$M" mlc metadata "$EX/gemma4-audio/lib/gemma4-audio-webgpu.wasm" >"$T/g4.json" || bad "the example's _metadata"
G4=(--preset gemma4 --metadata "$T/g4.json")
build "$T/g4" good "${G4[@]}"
build "$T/g4" nodecode "${G4[@]}" --drop decode_tokens
build "$T/g4" arity "${G4[@]}" --arity prefill_tokens=3
build "$T/g4" packed "${G4[@]}" --packed embed
build "$T/g4" adapter "${G4[@]}" --arity audio_embed=3
CHECK=("$M" check "$EX/gemma4-audio" --device-features shader-f16 --lib)
while read -r lib; do
  c="$(basename "$lib")"
  same_table "$lib" "$T/g4/good.functions.json"
  same_metadata "$lib" "$T/g4/good.metadata.json"
  expect "good $c binds" 0 "OK: all checks hold" -- "${CHECK[@]}" "$lib"
done < <(containers "$T/g4" good)
while read -r lib; do
  expect "missing function: $(basename "$lib")" 1 \
    '/artifact/programs/generation/exports/decode_tokens: role decode_tokens names "decode_tokens", which is not a VM function' \
    -- "${CHECK[@]}" "$lib"
done < <(containers "$T/g4" nodecode)
while read -r lib; do
  expect "wrong arity: $(basename "$lib")" 1 \
    'exports/prefill_tokens: role prefill_tokens names "prefill_tokens", which takes 3 arguments \(input_embeds, token_ids, modality_ids\); the role takes 5' \
    -- "${CHECK[@]}" "$lib"
done < <(containers "$T/g4" arity)
while read -r lib; do
  expect "packed kernel: $(basename "$lib")" 1 'exports/embed_tokens: role embed_tokens names "embed", a packed function' \
    -- "${CHECK[@]}" "$lib"
done < <(containers "$T/g4" packed)
while read -r lib; do
  expect "adapter arity: $(basename "$lib")" 1 'adapters/audio: adapter audio names "audio_embed", which takes 3 arguments' \
    -- "${CHECK[@]}" "$lib"
done < <(containers "$T/g4" adapter)

# ---- LLaVA: the embeddings pair (its existing prefill/decode) and image_embed(pixels, params)
"$M" mlc metadata "$EX/llava-image/lib/llava-image-webgpu.wasm" >"$T/llava.json" || bad "the example's _metadata"
build "$T/lv" good --preset llava --metadata "$T/llava.json"
build "$T/lv" vision6 --preset llava --metadata "$T/llava.json" --arity image_embed=6
VCHECK=("$M" check "$EX/llava-image" --device-features shader-f16 --lib)
while read -r lib; do
  expect "llava $(basename "$lib") binds" 0 "OK: all checks hold" -- "${VCHECK[@]}" "$lib"
done < <(containers "$T/lv" good)
while read -r lib; do
  expect "llava 6-argument image_embed: $(basename "$lib")" 1 \
    'adapters/image: adapter image names "image_embed", which takes 6 arguments \(pixel_values, packed_params, extra_0, extra_1, extra_2, extra_3\); the adapter takes 2' \
    -- "${VCHECK[@]}" "$lib"
done < <(containers "$T/lv" vision6)

# ---- no manifest: the legacy ABI (the example package without a contract, a matching _metadata)
cat >"$T/legacy.json" <<'EOF'
{"model_type": "llama", "quantization": "q0f16", "context_window_size": 4096, "prefill_chunk_size": 1024,
 "params": [{"name": "embed.weight", "shape": [16, 8], "dtype": "float32", "preprocs": []}]}
EOF
build "$T/lg" chat --preset phi3 --metadata "$T/legacy.json"
build "$T/lg" embedding --preset embedding --metadata "$T/legacy.json"
build "$T/lg" oldkv --preset phi3 --metadata "$T/legacy.json" --arity create_tir_paged_kv_cache=4
build "$T/lg" none --preset phi3 --metadata "$T/legacy.json" --drop prefill --drop decode --drop batch_prefill \
  --drop batch_decode
LCHECK=("$M" check "$EX/legacy-no-manifest" --lib)
while read -r lib; do
  same_table "$lib" "$T/lg/chat.functions.json"
  expect "legacy chat: $(basename "$lib")" 0 \
    'legacy ABI \(no manifest\): chat: embed, prefill \+ decode, create_tir_paged_kv_cache \(kv_state_kind kv_cache\); batch_prefill \+ batch_decode \+ batch_verify too' \
    -- "${LCHECK[@]}" "$lib"
done < <(containers "$T/lg" chat)
while read -r lib; do
  expect "legacy embedding: $(basename "$lib")" 0 'legacy ABI \(no manifest\): embedding: prefill' -- "${LCHECK[@]}" "$lib"
done < <(containers "$T/lg" embedding)
while read -r lib; do
  expect "legacy old KV creator: $(basename "$lib")" 1 \
    'offers no pipeline WebLLM 0.2.86 runs without a manifest: create_tir_paged_kv_cache takes 4 arguments' \
    -- "${LCHECK[@]}" "$lib"
done < <(containers "$T/lg" oldkv)
while read -r lib; do
  expect "legacy none: $(basename "$lib")" 1 'neither prefill \+ decode nor batch_prefill \+ batch_decode' \
    -- "${LCHECK[@]}" "$lib"
done < <(containers "$T/lg" none)

# ---- the real libraries: a package directory with only a chat config (no weights, no contract)
R="$SHARED/realdata/mlc-libs"
mkdir -p "$T/real"
printf '{"conv_template": {"name": "x"}}\n' >"$T/real/mlc-chat-config.json"
RCHECK=("$M" check "$T/real" --lib)
for lib in Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm TinyLlama-1.1B-Chat-v0.4-q4f16_1-ctx1k-webgpu.wasm \
           Llama-2-7b-chat-hf-q4f16_1-mali.so phi-2-q4f16_1-android.tar; do
  expect "real $lib: functions" 0 'batch_prefill' -- "$M" mlc functions "$R/$lib"
  expect "real $lib: legacy chat + batch" 0 \
    'legacy ABI \(no manifest\): chat: embed, prefill \+ decode, create_tir_paged_kv_cache \(kv_state_kind kv_cache\); batch_prefill \+ batch_decode \+ batch_verify too' \
    -- "${RCHECK[@]}" "$R/$lib"
done
expect "real snowflake: embedding" 0 'legacy ABI \(no manifest\): embedding: prefill' \
  -- "${RCHECK[@]}" "$R/snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.wasm"
# gemma-2b-it (iphone): its creator predates support_sliding_window; WebLLM 0.2.86 passes 5.
expect "real gemma iphone: 4-argument KV creator" 1 \
  'create_tir_paged_kv_cache takes 4 arguments \(max_batch_size_, max_total_seq_len_, prefill_chunk_size_, page_size_\), WebLLM 0.2.86 passes 5' \
  -- "${RCHECK[@]}" "$R/gemma-2b-it-q4f16_1-iphone.tar"
finish test_mlc_libs_built
