#!/usr/bin/env bash
# mt reports and budgets (issue 16): the manifest reader's file budget (a 10^6-file manifest refused
# in bounded time and memory, one at the budget read), closed sets (--abi), handoff fmt's note on
# added keys, a placeholder model.onnx, and the --json envelope on success and refusal.
# usage: test_cli_mt_reports.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
TINY="$SRC/examples/mt-tiny"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
pass=0; fail=0
PY=/usr/bin/python3
LIMIT=(prlimit --as=1073741824 timeout 10)

expect() {
  local name="$1" status="$2" pattern="$3"; shift 4
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  if [ "$rc" -eq "$status" ] && grep -Eq -- "$pattern" <<<"$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $status; pattern '$pattern')"; printf '%s\n' "$out" | head -20
  fi
}
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
within_ms budget_million_fast 1000 -- "${LIMIT[@]}" "$MPK" check "$TMP/million" --no-hash
expect budget_million_plan 1 'past the manifest reader.s budget of 100000 files' \
  -- "${LIMIT[@]}" "$MPK" mt plan "$TMP/million" --variant cpu-fp16
expect budget_million_select 1 'past the manifest reader.s budget' -- "${LIMIT[@]}" "$MPK" mt select "$TMP/million"
inflate "$TMP/at" 100000 sha            # exactly at the budget: read
expect budget_at 0 'OK: 15 files' -- "${LIMIT[@]}" "$MPK" mt plan "$TMP/at" --variant cpu-fp16
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
m["downloadPlan"]["cpu-fp16"]["core"] += ["x/%d/**" % i for i in range(5000)]
json.dump(m, open(sys.argv[1], "w"))
PY
expect budget_patterns 1 '/downloadPlan: downloadPlan holds more than 4096 groups and patterns' -- "$MPK" mt plan "$TMP/pat" --variant cpu-fp16

echo "test_cli_mt_reports: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
