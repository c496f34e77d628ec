#!/usr/bin/env bash
# mt reports and budgets (issue 16): the manifest reader's file budget (a 10^6-file manifest refused
# in bounded time and memory, one at the budget read), closed sets (--abi), handoff fmt's note on
# added keys, a placeholder model.onnx, and the --json envelope on success and refusal.
# usage: test_cli_mt_reports.sh MODELPKG SOURCE_DIR [sanitize|plain]
set -uo pipefail
MPK="$1"; SRC="$2"; FLAVOUR="${3:-plain}"
TINY="$SRC/examples/mt-tiny"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
. "$(dirname "$0")/expect.sh"
# AddressSanitizer reserves terabytes of address space: under it only the timeout applies.
# FAST_MS is a bound, not a benchmark: reading all 10^6 entries takes ~8 s, refusing at the budget
# well under a second; 5 s leaves room for a loaded machine (ctest -j2 beside other builds) and
# still fails a reader that parses the whole list first. The 30 s timeout only catches a hang.
# Under a cross build's emulator (tests/cross.cmake, MPK_TEST_EMULATOR) both are 5 times longer:
# 25 s still fails a reader that parses the whole list first (minutes there).
SLOW=1; [ -n "${MPK_TEST_EMULATOR:-}" ] && SLOW=5
LIMIT=(timeout $((30 * SLOW))); FAST_MS=$((5000 * SLOW))
if [ "$FLAVOUR" = sanitize ]; then FAST_MS=10000; elif as_limit "$MPK" --version; then LIMIT=("${AS_LIMIT[@]}" timeout $((30 * SLOW))); fi
# Elapsed wall time of a command in milliseconds must stay under $1 (the command's status is ignored).
within_ms() {
  local name="$1" ms="$2"; shift 3
  local t0 t1
  t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
  if [ $(((t1 - t0) / 1000000)) -lt "$ms" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: $name took $(((t1 - t0) / 1000000)) ms (limit $ms)"; fi
}

# A copy of mt-tiny whose manifest lists N more files (sizes only, or sizes and digests).
inflate() { # DIR N [sha]
  rm -rf "$1"; cp -r "$TINY" "$1"
  $PY - "$1/mobiletransformers_manifest.json" "$2" "${3:-}" <<'PY'
import json, sys
path, n, sha = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "sha"
m = json.load(open(path))
for i in range(n - len(set(m["fileSizes"]) | set(m["sha256"])) if n > 0 else -n):
    p = "files/%07d.bin" % i
    m["fileSizes"][p] = 1
    if sha: m["sha256"][p] = "0" * 64
open(path, "w").write(json.dumps(m, separators=(",", ":")))
PY
}

# ---- 1. the manifest's file budget
inflate "$TMP/million" -1000000        # 10^6 more files: 16 MB, under the 64 MiB document limit
expect budget_million 1 'fileSizes: fileSizes lists more than 100000 files: past the manifest reader.s budget of 100000 files \(raise it with MODELPKG_MT_MAX_FILES=N\)' \
  -- "${LIMIT[@]}" "$MPK" check "$TMP/million" --no-hash
within_ms budget_million_fast "$FAST_MS" -- "${LIMIT[@]}" "$MPK" check "$TMP/million" --no-hash
expect budget_million_plan 1 'past the manifest reader.s budget of 100000 files' \
  -- "${LIMIT[@]}" "$MPK" mt plan "$TMP/million" --variant cpu-fp16
expect budget_million_select 1 'past the manifest reader.s budget' -- "${LIMIT[@]}" "$MPK" mt select "$TMP/million"
inflate "$TMP/at" 100000 sha            # exactly at the budget: read
expect budget_at 0 'OK: 15 files' -- "${LIMIT[@]}" "$MPK" mt plan "$TMP/at" --variant cpu-fp16
# check at the budget: 100,000 listed files missing are 10 problems and one summary, not 100,000
expect budget_at_check_summary 1 '[0-9]{5} of 100000 listed files in scope are missing \(the first 10 listed\)' \
  -- "${LIMIT[@]}" "$MPK" check "$TMP/at" --no-hash --all-variants
expect budget_at_check_count 1 'FAILED: 11 problems' -- "${LIMIT[@]}" "$MPK" check "$TMP/at" --no-hash --all-variants
inflate "$TMP/over" 100001 sha
expect budget_over 1 '/fileSizes: fileSizes lists more than 100000 files' -- "$MPK" mt plan "$TMP/over" --variant cpu-fp16
expect budget_env_raise 0 'OK: 15 files' -- env MODELPKG_MT_MAX_FILES=100001 "$MPK" mt plan "$TMP/over" --variant cpu-fp16
expect budget_env_lower 1 'budget of 10 files' -- env MODELPKG_MT_MAX_FILES=10 "$MPK" check "$TINY" --no-hash
expect budget_env_bad 1 'MODELPKG_MT_MAX_FILES="ten" is not a positive integer' -- env MODELPKG_MT_MAX_FILES=ten "$MPK" mt plan "$TINY" --variant cpu-fp16
# the union of fileSizes and sha256 is what is counted
rm -rf "$TMP/union"; cp -r "$TINY" "$TMP/union"
$PY - "$TMP/union/mobiletransformers_manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for i in range(60): m["fileSizes"]["a/%d" % i] = 1; m["sha256"]["b/%d" % i] = "0" * 64
json.dump(m, open(sys.argv[1], "w"))
PY
expect budget_union 1 '/sha256: fileSizes and sha256 list [0-9]+ files together: past the manifest reader.s budget of 100 files' \
  -- env MODELPKG_MT_MAX_FILES=100 "$MPK" mt plan "$TMP/union" --variant cpu-fp16
# many download patterns / variants: fixed budgets
rm -rf "$TMP/pat"; cp -r "$TINY" "$TMP/pat"
$PY - "$TMP/pat/mobiletransformers_manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["downloadPlan"]["cpu-fp16"]["core"] += ["x/%d/**" % i for i in range(1100)]
json.dump(m, open(sys.argv[1], "w"))
PY
expect budget_patterns 1 '/downloadPlan: downloadPlan holds more than 1024 groups and patterns' -- "$MPK" mt plan "$TMP/pat" --variant cpu-fp16

# ---- 3. closed sets, notes, placeholders
expect abi_typo 2 "--abi 'arm64_v8a' is not one of arm64-v8a, armeabi-v7a, x86, x86_64, riscv64" \
  -- "$MPK" mt select "$TINY" --abi arm64_v8a
expect abi_typo_in_list 2 "--abi 'x86-64' is not one of" -- "$MPK" mt select "$TINY" --abi arm64-v8a,x86-64
expect abi_ok 0 'chosen: ' -- "$MPK" mt select "$TINY" --abi arm64-v8a,x86_64
expect engine_typo 2 "--engine 'gena' is not one of native, genai" -- "$MPK" mt select "$TINY" --engine gena
cp "$SRC/../shared/conformance/mobiletransformers/tiny_package/variants/cpu-int4/inference/weight_handoff_map.json" "$TMP/old-map.json"
expect handoff_fmt_note 0 'note: .*old-map.json: added 4 entry fields the map did not have.*: adapterDtypes \(1 of 1 entries\), adapterShapes \(1 of 1 entries\), tensorDtypes \(1 of 1 entries\), tensorShapes \(1 of 1 entries\)' \
  -- "$MPK" mt handoff fmt "$TMP/old-map.json"
out="$("$MPK" mt handoff fmt "$TMP/old-map.json" 2>&1)"
if grep -q 'note:' <<<"$out" || ! grep -q 'already canonical' <<<"$out"; then
  fail=$((fail + 1)); echo "FAIL: handoff_fmt_canonical_no_note: $out"; else pass=$((pass + 1)); fi
rm -rf "$TMP/ph"; cp -r "$TINY" "$TMP/ph"
printf 'placeholder: export the model here\n' > "$TMP/ph/variants/cpu-fp16/inference/model.onnx"
expect onnx_placeholder 1 'model.onnx@0: is not an ONNX protobuf \(it looks like text: a placeholder\?\): export the model into it, or check the rest of the package without the graph \(modelpkg check --no-graph\)' \
  -- timeout 10 "$MPK" mt graph "$TMP/ph" --variant cpu-fp16
expect onnx_placeholder_check 1 'it looks like text: a placeholder' -- timeout 10 "$MPK" check "$TMP/ph" --no-hash --variant cpu-fp16
: > "$TMP/ph/variants/cpu-fp16/inference/model.onnx"
expect onnx_empty 1 'is not an ONNX protobuf \(it is empty: a placeholder\?\)' -- timeout 10 "$MPK" mt graph "$TMP/ph" --variant cpu-fp16

# ---- 4. --json: one document on stdout, on success and on every refusal, with the envelope's keys
json_doc() { # NAME STATUS CMD...: exit STATUS, stdout one JSON document with the envelope
  local name="$1" status="$2"; shift 3
  local rc
  "$@" >"$TMP/out.json" 2>"$TMP/err.txt"; rc=$?
  if [ "$rc" -eq "$status" ] && $PY -c '
import json, sys
d = json.load(open(sys.argv[1]))
missing = {"modelpkg_version", "command", "ok", "problems", "notes"} - set(d)
assert not missing, missing
assert d["ok"] is (sys.argv[2] == "0"), d["ok"]
assert (len(d["problems"]) == 0) is (sys.argv[2] == "0"), d["problems"]
' "$TMP/out.json" "$status"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status)"; head -c 600 "$TMP/out.json"; cat "$TMP/err.txt"; fi
}
json_doc plan_ok 0 -- "$MPK" mt plan "$TINY" --variant cpu-fp16 --json
json_doc plan_no_variant 1 -- "$MPK" mt plan "$TINY" --variant nope --json
json_doc plan_budget 1 -- "${LIMIT[@]}" "$MPK" mt plan "$TMP/million" --variant cpu-fp16 --json
json_doc plan_missing_dir 1 -- "$MPK" mt plan "$TMP/nowhere" --variant cpu-fp16 --json
json_doc plan_default 0 -- "$MPK" mt plan "$TINY" --json
json_doc plan_usage 2 -- "$MPK" mt plan --json
json_doc plan_usage_first 2 -- "$MPK" mt plan --bogus --json
json_doc select_ok 0 -- "$MPK" mt select "$TINY" --json
json_doc select_none 1 -- "$MPK" mt select "$TINY" --ep nnapi --json
json_doc select_refused 1 -- "$MPK" mt select "$TMP/nowhere" --json
json_doc select_abi_typo 2 -- "$MPK" mt select "$TINY" --abi arm64_v8a --json
json_doc graph_ok 0 -- "$MPK" mt graph "$TINY" --variant cpu-fp16 --json
json_doc graph_placeholder 1 -- "$MPK" mt graph "$TMP/ph" --variant cpu-fp16 --json
json_doc graph_refused 1 -- "$MPK" mt graph "$TMP/nowhere" --json
json_doc graph_usage 2 -- "$MPK" mt graph "$TINY" --bogus --json
json_doc inspect_ok 0 -- "$MPK" mt inspect "$TINY" --json
json_doc inspect_placeholder 1 -- "$MPK" mt inspect "$TMP/ph" --json
json_doc inspect_refused 1 -- "$MPK" mt inspect "$TMP/million" --json
json_doc inspect_usage 2 -- "$MPK" mt inspect --json

finish test_cli_mt_reports
