#!/usr/bin/env bash
# The six real MLC libraries (../shared/realdata/mlc-libs, README there): `mlc metadata --json`
# finds the _metadata at the README's offset with its byte count, model_type, quantization,
# context_window_size and parameter count; `mlc functions` lists the VM function table (Phi-3's
# prefill/decode/batch_prefill/batch_decode/create_tir_paged_kv_cache with their parameter names;
# the embedding model has no decode). A .tar row runs on the gzip'd archive itself (the README's
# offset is in the member) and on the member extracted with tar.
# usage: test_realdata_libs.sh MODELPKG SHARED_DIR
set -uo pipefail
MPK="$1"; SHARED="$2"; L="$SHARED/realdata/mlc-libs"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
TEST_NAME=test_realdata_libs
EXPECT_TIMEOUT=30; . "$(dirname "$0")/expect.sh"

# json_ok NAME STATUS PYTHON-ASSERTS -- CMD...: stdout is one JSON document `r` satisfying the asserts.
json_ok() {
  local name="$1" status="$2" check="$3"; shift 4
  local rc
  timeout 30 "$@" >"$TMP/out.json" 2>"$TMP/err.txt"; rc=$?
  if [ "$rc" -eq "$status" ] && python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
$check" "$TMP/out.json" 2>"$TMP/py.txt"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status)"; head -c 1500 "$TMP/out.json"; echo
    first_lines 20 "$(cat "$TMP/py.txt" "$TMP/err.txt")"
  fi
}

# file | member | offset | bytes | model_type | quantization | context_window_size | params
ROWS=(
  "Llama-2-7b-chat-hf-q4f16_1-mali.so||495629|36750|llama|q4f16_1|4096|325"
  "Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.wasm||2220319|36119|phi3|q4f16_1|4096|325"
  "TinyLlama-1.1B-Chat-v0.4-q4f16_1-ctx1k-webgpu.wasm||1945351|25429|llama|q4f16_1|1024|225"
  "gemma-2b-it-q4f16_1-iphone.tar|gemma_q4f16_1_devc.o|35170|20672|gemma|q4f16_1|8192|183"
  "phi-2-q4f16_1-android.tar|phi_msft_q4f16_1_devc.o|104214|46895|phi-msft|q4f16_1|768|455"
  "snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.wasm||2725810|20184|bert|q0f32|512|149"
)

for row in "${ROWS[@]}"; do
  IFS='|' read -r file member offset bytes mtype quant ctx params <<<"$row"
  libs=("$L/$file"); text="$L/$file"
  if [ -n "$member" ]; then
    tar xzf "$L/$file" -C "$TMP" "$member" 2>/dev/null || { bad "extract $member from $file"; continue; }
    libs+=("$TMP/$member"); text="$TMP/$member"
  fi
  for lib in "${libs[@]}"; do
  inner=$([ "$lib" = "$L/$file" ] && echo "$member")
  json_ok "metadata_$lib" 0 "
assert r['member'] == ('$inner' or None), r['member']
m = r['metadata']
assert r['ok'] is True
assert r['offset'] == $offset and r['bytes'] == $bytes, (r['offset'], r['bytes'])
assert m['model_type'] == '$mtype' and m['quantization'] == '$quant', m['model_type']
assert m['context_window_size'] == $ctx and len(m['params']) == $params
assert isinstance(r['where'], str) and r['where']
if not '$file'.endswith('.wasm'):
    assert r['scanned'] is False and 'the string the VM function _metadata returns' in r['where'], r['where']
" -- "$MPK" mlc metadata "$lib" --json
  # the text itself, byte-exact at that offset (+ 8: the u64 length before it)
  if python3 - "$lib" "$offset" "$bytes" "$MPK" "$text" <<'PY'
import subprocess, sys, struct
lib, off, n, mpk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
d = open(sys.argv[5], 'rb').read()
assert struct.unpack_from('<Q', d, off)[0] == n
out = subprocess.run([mpk, 'mlc', 'metadata', lib], capture_output=True, timeout=30).stdout
assert out == d[off + 8:off + 8 + n], 'not byte-exact'
PY
  then ok; else bad "metadata_bytes_$lib"; fi

  # the function table
  timeout 30 "$MPK" mlc functions "$lib" --json >"$TMP/f.json" 2>"$TMP/f.err"; rc=$?
  if [ "$mtype" = bert ]; then
    checks="
assert 'decode' not in fn and fn['prefill']['param_names'] == ['inputs', 'attention_mask', 'packed_params']
assert r['vm']['type_key'] == 'relax.VMExecutable'"
  else
    checks="
for name, n in [('prefill', 3), ('decode', 3), ('embed', 2), ('batch_prefill', 4), ('batch_decode', 3), ('batch_verify', 3), ('_metadata', 0)]:
    assert fn[name]['kind'] == 'vm' and fn[name]['num_args'] == n, name
assert fn['decode']['param_names'] == ['input_embed', 'paged_kv_cache', 'packed_params']
assert fn['batch_prefill']['param_names'] == ['input_embeds', 'logit_positions', 'paged_kv_cache', 'packed_params']
kv = fn['create_tir_paged_kv_cache']
assert kv['param_names'][:4] == ['max_batch_size_', 'max_total_seq_len_', 'prefill_chunk_size_', 'page_size_']
assert kv['num_args'] == (4 if '$mtype' == 'gemma' else 5)
assert r['vm']['type_key'] == 'relax.Executable'"
  fi
  if [ "$rc" -eq 0 ] && python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
fn = {f['name']: f for f in r['functions']}
assert r['vm']['version'] == '0.14' and r['vm']['where']
assert fn['vm.builtin.copy']['kind'] == 'packed' and fn['vm.builtin.copy']['num_args'] == -2
assert 'vm.builtin.copy' in r['globals_needed'] and all('.' in g for g in r['globals_needed'])
assert r['metadata']['offset'] == $offset + 8 and r['metadata']['bytes'] == $bytes
$checks" "$TMP/f.json" 2>"$TMP/py.txt"; then ok; else
    bad "functions_$lib (exit $rc)"; first_lines 10 "$(cat "$TMP/py.txt" "$TMP/f.err")"
  fi
  # the human table names the entrypoints with their parameters
  expect "functions_text_$lib" 0 "^  vm +prefill +3 \(" -- "$MPK" mlc functions "$lib"
  done
done

# a _metadata JSON file is no library for `mlc functions`; `mlc metadata` still reads it
"$MPK" mlc metadata "$L/Llama-2-7b-chat-hf-q4f16_1-mali.so" >"$TMP/md.json"
expect functions_json_file 1 "md.json: a _metadata JSON file, not a library" -- "$MPK" mlc functions "$TMP/md.json"
json_ok metadata_json_file 0 "
assert r['where'] == 'a _metadata JSON file' and r['offset'] is None and r['metadata']['model_type'] == 'llama'
" -- "$MPK" mlc metadata "$TMP/md.json" --json
# refusal documents
json_ok functions_refusal 1 "
assert r['ok'] is False and r['functions'] is None and 'not a library' in r['problems'][0]['message']
" -- "$MPK" mlc functions "$TMP/md.json" --json
expect functions_usage 2 "functions needs a library file" -- "$MPK" mlc functions

finish test_realdata_libs
