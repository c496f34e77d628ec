#!/usr/bin/env bash
# run_cache.sh — loading a tensor cache: modelpkg side by side with Python's json, in one run.
#
#   bench/run_cache.sh                                   # the largest real cache (807 params)
#   CACHE=path/to/ndarray-cache.json ITERS=200 REPEAT=7 bench/run_cache.sh
#
# REPEAT interleaved rounds; in each, one bench_cache process and one python3 process, each
# timing ITERS iterations of every step after a warm-up:
#   modelpkg  jansson     json_loadb() alone (the parser modelpkg used until 2026-11; for comparison)
#             scan        mpk_json_scan(): the strict reader (yajl + core/json_scan.c), no tree
#             json        mpk_json_parse(): the same, building a jansson tree
#             parse       mpk_mlc_tensor_cache_parse() from memory: parse + every check
#             load        mpk_mlc_tensor_cache_load(): open + read + parse + check
#             load_all    load + mpk_mlc_params_from_tensor_cache() + mpk_mlc_params_resources()
#   python    loads       json.loads(bytes) from memory (parse only, no checks)
#             load        json.load(open(path, "rb")) (open + read + parse, no checks)
# Figures are medians over the rounds of the per-iteration time; ratios are medians of the
# per-round ratios. The pairs that do the same work are parse ~ loads and load ~ load; modelpkg
# also checks what Python only parses. The target (issue 3): load+params+resources at most
# 0.6 x json.load ("well under").
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_cache}
CACHE=${CACHE:-$SRC_DIR/../shared/realdata/mlc-packages/WizardLM-70B-V1.0-q4f16_1-MLC/ndarray-cache.json}
ITERS=${ITERS:-200}
REPEAT=${REPEAT:-7}
# The interpreter itself, not a pyenv/asdf shim.
PYTHON=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}

[[ -x $BENCH ]] || { echo "run_cache.sh: build $BENCH first (ninja -C build-bench bench_cache)" >&2; exit 2; }
[[ -r $CACHE ]] || { echo "run_cache.sh: cannot read $CACHE" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-cache.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RES=$WORK/results.txt   # round peer step us
: >"$RES"

PY_TIME='
import json, sys, timeit
path, iters = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    data = f.read()
def load():
    with open(path, "rb") as f:
        return json.load(f)
doc = json.loads(data)
assert sum(len(s["records"]) for s in doc["records"]) > 0
for name, fn in (("loads", lambda: json.loads(data)), ("load", load)):
    timeit.timeit(fn, number=max(1, iters // 10))          # warm-up
    t = timeit.timeit(fn, number=iters)
    print("RESULT step=%s iters=%d median_us=%.1f" % (name, iters, t / iters * 1e6))
'

echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python: $("$PYTHON" -c 'import sys, json; print(sys.version.split()[0], "json C accelerator:", json.decoder.c_scanstring is not None)')"
"$BENCH" --iters 1 --repeat 1 "$CACHE" | grep '^CACHE' | sed 's/^CACHE/cache:/'
echo "file: $CACHE"
echo "iterations per step: $ITERS   rounds: $REPEAT"

for ((r = 1; r <= REPEAT; r++)); do
  run_mpk() { "$BENCH" --iters "$ITERS" --repeat 1 "$CACHE" | awk -v r="$r" '/^RESULT/{split($2,s,"="); split($5,u,"="); print r, "modelpkg", s[2], u[2]}' >>"$RES"; }
  run_py() { "$PYTHON" -c "$PY_TIME" "$CACHE" "$ITERS" | awk -v r="$r" '/^RESULT/{split($2,s,"="); split($4,u,"="); print r, "python", s[2], u[2]}' >>"$RES"; }
  if ((r % 2)); then run_mpk; run_py; else run_py; run_mpk; fi
  echo "   round $r/$REPEAT done (load average $(cut -d' ' -f1 /proc/loadavg))"
done

awk '
  function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
  }
  function med(k,   r, n, a) { n = 0; for (r in RR) if ((k, r) in T) a[++n] = T[k, r]; return median(a, n) }
  function ratio(k1, k2,   r, n, a) { n = 0; for (r in RR) if ((k1, r) in T && (k2, r) in T) a[++n] = T[k1, r] / T[k2, r]; return median(a, n) }
  { T[$2 "/" $3, $1] = $4; RR[$1] = 1 }
  END {
    printf "\n%-58s %12s\n", "step (median time per iteration)", "microseconds"
    printf "%-58s %12.1f\n", "modelpkg  jansson json_loadb (the old reader, for comparison)", med("modelpkg/jansson")
    printf "%-58s %12.1f\n", "modelpkg  mpk_json_scan (strict reader, no tree)", med("modelpkg/scan")
    printf "%-58s %12.1f\n", "modelpkg  mpk_json_parse (strict reader + jansson tree)", med("modelpkg/json")
    printf "%-58s %12.1f\n", "modelpkg  mpk_mlc_tensor_cache_parse (memory)", med("modelpkg/parse")
    printf "%-58s %12.1f\n", "modelpkg  mpk_mlc_tensor_cache_load (file)", med("modelpkg/load")
    printf "%-58s %12.1f\n", "modelpkg  load + params_from_tensor_cache + params_resources", med("modelpkg/load_all")
    printf "%-58s %12.1f\n", "python    json.loads (memory)", med("python/loads")
    printf "%-58s %12.1f\n", "python    json.load (file)", med("python/load")
    print "\nratios (median of per-round ratios; < 1 means modelpkg is faster)      target"
    x = ratio("modelpkg/load_all", "python/load")
    printf "  modelpkg load+params+resources / python json.load   %6.3f     <= 0.6 %s\n", x, (x <= 0.6 ? "met" : "MISSED")
    printf "  modelpkg load / python json.load                    %6.3f\n", ratio("modelpkg/load", "python/load")
    printf "  modelpkg parse / python json.loads                  %6.3f\n", ratio("modelpkg/parse", "python/loads")
    printf "  mpk_json_parse / python json.loads                  %6.3f\n", ratio("modelpkg/json", "python/loads")
    printf "  mpk_json_scan / python json.loads                   %6.3f\n", ratio("modelpkg/scan", "python/loads")
    printf "  jansson json_loadb / python json.loads              %6.3f\n", ratio("modelpkg/jansson", "python/loads")
    printf "  mpk_json_parse / jansson json_loadb                 %6.3f\n", ratio("modelpkg/json", "modelpkg/jansson")
  }' "$RES"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
