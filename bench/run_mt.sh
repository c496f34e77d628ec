#!/usr/bin/env bash
# run_mt.sh — sealing and checking a 4 GiB MobileTransformers package, modelpkg side by side with
# the reference exporter's way of hashing and with sha256sum, in one run; then one 2 GiB file,
# modelpkg against `openssl dgst`.
#
#   bench/run_mt.sh                          # from the source tree, after building build-bench
#   NBIG=6 BIG_MIB=512 NSMALL=1000 SMALL_MIB=1 REPEAT=5 ONE_GIB=2 ONE_REPEAT=7 bench/run_mt.sh
#
# 1. Package. bench/mt_package.py writes a package in the exporter's layout (two variants;
#    NBIG files of BIG_MIB MiB — frozen_base.onnx.data, training_model.onnx.data,
#    eval_model.onnx.data — and NSMALL files of SMALL_MIB MiB — per-tensor .bin files with their
#    .bin.sha256 sidecars and handoff-map entries, train/adapters/*.bin — of random bytes, plus
#    the tokenizer, configs, ONNX graphs and licenses), which `modelpkg mt build --describe` seals
#    once. The page cache is warmed (every file read once), then REPEAT interleaved rounds (the
#    order rotated every round) of these peers, each over every file the manifest lists:
#
#   py-exporter  python3: the reference exporter's `_sha256_of` — hashlib.sha256, `for chunk in
#                iter(lambda: f.read(1 << 20), b"")` on a default (buffered) open(), one file
#                after another. THE peer of the targets.
#   py-readinto  python3: the same loop with readinto() into one reused 1 MiB buffer (as in
#                run_digest.sh) — a faster Python, for a stricter comparison
#   sha256sum    coreutils over the same files
#   mt-build     `modelpkg mt build DIR --describe BUILD.json` (default --jobs: one per CPU): walks
#                the tree, hashes every file, builds the checksums files and the manifest, reads
#                it back, finds nothing changed and writes nothing
#   check        `modelpkg check DIR --all-variants`: the manifest, every variant, sizes, then the
#                SHA-256 of every listed file
#   pool-*       (ORDER=1) mpk_digest_files() alone, 2 workers (bench_digest), over the same files
#                in two orders — `sorted`: by path, as mt build and check pass them; `adverse`: five
#                big files first, then the small ones, the last big file last — each without
#                expected sizes (the files go out in the order given: the pool before
#                largest-first) and with them (--sizes: largest first, as the library's callers do)
#
#    Every figure is the median over the rounds; a ratio is the median of per-round ratios (both
#    peers ran in the same round, seconds apart). Digests: every peer's are compared with the
#    manifest's sha256 in every round; mt build must report nothing changed, check must pass.
#
# 2. One file (ONE_GIB GiB, random bytes): ONE_REPEAT interleaved rounds of
#   openssl      `openssl dgst -sha256 FILE`
#   mpk          bench_digest --algo sha256 --workers 1 FILE: mpk_digest_files() on that file
#
# Columns: wall (s, from the driver, process start-up included), MB/s (MB = 10^6 bytes),
# cpu/wall (user+sys over wall: ~2 when two threads each had a core), MB/cpu-s, sys/cpu (the
# share of the CPU time spent in the kernel: read() copies, page faults), `other` (cores
# busy with OTHER processes during the measurement, from /proc/stat — on a 2-core machine,
# other > 0 means a 2-thread peer could not have had both cores), steal, peak RSS (/usr/bin/time
# %M, the largest over the rounds). Disk: the package (~4 GiB) is removed before the single file
# (~2 GiB) is written; everything lives under one temporary directory, removed at the end, also
# on failure.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
MODELPKG=${MODELPKG:-$BUILD_DIR/modelpkg}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_digest}
NBIG=${NBIG:-6}
BIG_MIB=${BIG_MIB:-512}
NSMALL=${NSMALL:-1000}
SMALL_MIB=${SMALL_MIB:-1}
REPEAT=${REPEAT:-5}
ORDER=${ORDER:-1}
ONE_GIB=${ONE_GIB:-2}
ONE_REPEAT=${ONE_REPEAT:-7}
# The interpreter itself, not a pyenv/asdf shim (a shim's start-up would be charged to Python).
PYTHON=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
TIME=/usr/bin/time

for tool in "$MODELPKG" "$BENCH" "$TIME" openssl sha256sum "$PYTHON"; do
  command -v "$tool" >/dev/null || { echo "run_mt.sh: missing $tool (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench; /usr/bin/time: apt-get install time)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-mt.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PKG=$WORK/pkg
RES=$WORK/results.txt   # section peer round wall_s cpu_s rss_kib other_cores bytes steal_cores sys_s
: >"$RES"

need_mib=$(( NBIG * BIG_MIB + NSMALL * SMALL_MIB + 64 ))
(( ONE_GIB * 1024 > need_mib )) && need_mib=$(( ONE_GIB * 1024 + 64 ))
avail_mib=$(df -Pm "$WORK" | awk 'NR==2{print $4}')
if (( avail_mib < need_mib + 1024 )); then
  echo "run_mt.sh: $WORK has $avail_mib MiB free, needs $need_mib MiB (+1 GiB margin)" >&2; exit 2
fi
mem_mib=$(awk '/^MemAvailable:/{print int($2/1024)}' /proc/meminfo)

HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8, $9; exit}' /proc/stat; }
now_ns() { date +%s%N; }

echo "== machine"
echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   openssl: $(openssl version | cut -d' ' -f2)   coreutils: $(sha256sum --version | awk 'NR == 1 {print $NF}')   python: $($PYTHON -c 'import sys;print(sys.version.split()[0])')"
echo "modelpkg: $("$MODELPKG" --version 2>&1 | awk 'NR == 1')   ($MODELPKG)"
echo "disk free in $WORK: $avail_mib MiB (needs $need_mib)   memory available: $mem_mib MiB"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------------------------------- peers

PY_READINTO='
import hashlib, sys
buf = bytearray(1 << 20)
view = memoryview(buf)
for path in open(sys.argv[1], encoding="utf-8").read().splitlines():
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    print(h.hexdigest() + "  " + path)
'

# measure SECTION PEER ROUND BYTES: run one peer once (cwd: the package), append a line to $RES.
measure() {
  local section=$1 peer=$2 round=$3 bytes=$4
  local out=$WORK/out.$peer tf=$WORK/time.txt
  local -a cmd
  case $peer in
    py-exporter)        cmd=("$PYTHON" "$SRC_DIR/bench/py_exporter.py" "$WORK/files.txt") ;;
    py-readinto)        cmd=("$PYTHON" -c "$PY_READINTO" "$WORK/files.txt") ;;
    sha256sum)          cmd=(sha256sum "${FILES[@]}") ;;
    mt-build)           cmd=("$MODELPKG" mt build "$PKG" --describe "$WORK/pkg.build.json") ;;
    check)              cmd=("$MODELPKG" check "$PKG" --all-variants) ;;
    pool-sorted-given)  cmd=("$BENCH" --algo sha256 --workers 2 "${FILES[@]}") ;;
    pool-sorted-sizes)  cmd=("$BENCH" --algo sha256 --workers 2 --sizes "${FILES[@]}") ;;
    pool-adverse-given) cmd=("$BENCH" --algo sha256 --workers 2 "${ADVERSE[@]}") ;;
    pool-adverse-sizes) cmd=("$BENCH" --algo sha256 --workers 2 --sizes "${ADVERSE[@]}") ;;
    openssl)            cmd=(openssl dgst -sha256 "$ONE") ;;
    mpk)                cmd=("$BENCH" --algo sha256 --workers 1 "$ONE") ;;
  esac
  local j0 j1 s0 s1 t0 t1 u s rss
  read -r j0 s0 < <(busy_jiffies); t0=$(now_ns)
  (cd "$PKG_CWD" && "$TIME" -f '%U %S %M' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.$peer") || {
    echo "run_mt.sh: $peer failed:" >&2; cat "$out" "$WORK/err.$peer" "$tf" >&2; exit 1; }
  t1=$(now_ns); read -r j1 s1 < <(busy_jiffies)
  read -r u s rss < <(tail -1 "$tf")
  local wall cpu bg steal
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", (b-a)/1e9}')
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v w="$wall" -v c="$cpu" 'BEGIN{b=j/hz/w - c/w; if (b<0) b=0; printf "%.2f", b}')
  steal=$(awk -v j="$((s1 - s0))" -v hz="$HZ" -v w="$wall" 'BEGIN{printf "%.2f", j/hz/w}')
  echo "$section $peer $round $wall $cpu $rss $bg $bytes $steal $s" >>"$RES"
  # What each peer computed, as sorted "hex  path" lines (paths relative to the package).
  case $peer in
    py-*|sha256sum) sort -k2 "$out" >"$out.sums" ;;
    pool-*|mpk)     sed -n 's/^DIGEST //p' "$out" | sort -k2 >"$out.sums" ;;
    openssl)        sed -n 's/^SHA2-256(\(.*\))= \([0-9a-f]*\)$/\2  \1/p' "$out" >"$out.sums" ;;
    mt-build)       grep -q '^OK: already sealed, nothing written$' "$out" || {
                      echo "run_mt.sh: mt build changed the sealed package:" >&2; cat "$out" >&2; exit 1; } ;;
    check)          grep -q '^OK: all checks hold$' "$out" || {
                      echo "run_mt.sh: check did not pass:" >&2; cat "$out" >&2; exit 1; } ;;
  esac
}

# same_sums PEER REF: the peer's digests equal the reference's.
same_sums() {
  [[ -f $WORK/out.$1.sums ]] || return 0
  diff -q "$2" "$WORK/out.$1.sums" >/dev/null || {
    echo "run_mt.sh: $1 computed other digests than $2:" >&2; diff "$2" "$WORK/out.$1.sums" | awk 'NR <= 10' >&2; exit 1; }
}

# rounds SECTION N BYTES PEER...: interleaved rounds, the peer order rotated every round.
rounds() {
  local section=$1 n=$2 bytes=$3; shift 3
  local -a peers=("$@")
  local r k p np=${#peers[@]}
  for ((r = 1; r <= n; r++)); do
    rm -f "$WORK"/out.*.sums
    for ((k = 0; k < np; k++)); do measure "$section" "${peers[$(((k + r - 1) % np))]}" "$r" "$bytes"; done
    for p in "${peers[@]}"; do same_sums "$p" "$REF"; done
    echo "   round $r/$n done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
}

# summary SECTION TITLE: the table (medians) and the ratios of a section.
summary() {
  awk -v section="$1" -v title="$2" '
    function median(arr, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
      return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
    }
    function med_of(peer, field,   i, n, a) {
      n = 0
      for (i = 1; i <= nr; i++) if (P[i] == peer) a[++n] = V[i, field]
      return n ? median(a, n) : -1
    }
    function med_ratio(p1, p2,   r, n, a) {   # median over rounds of wall(p1) / wall(p2)
      n = 0
      for (r in R) if ((p1, r) in IDX && (p2, r) in IDX) a[++n] = V[IDX[p1, r], "wall"] / V[IDX[p2, r], "wall"]
      return n ? median(a, n) : -1
    }
    function range_ratio(p1, p2,   r, lo, hi, x) {
      lo = 1e9; hi = 0
      for (r in R) if ((p1, r) in IDX && (p2, r) in IDX) {
        x = V[IDX[p1, r], "wall"] / V[IDX[p2, r], "wall"]; if (x < lo) lo = x; if (x > hi) hi = x }
      return sprintf("%.3f-%.3f", lo, hi)
    }
    function ratio_line(label, p1, p2, target,   x, verdict) {
      if (!(p1 in seen) || !(p2 in seen)) return
      x = med_ratio(p1, p2)
      verdict = target == "" ? "" : (target ~ /^<=/ ? (x <= substr(target, 3) + 0 ? "met" : "MISSED") : "")
      printf "  %-46s %6.3f  (rounds %s)  %s %s\n", label, x, range_ratio(p1, p2), target, verdict
    }
    $1 == section {
      nr++; P[nr] = $2; if (!($3 in R)) nrounds++; R[$3] = 1; IDX[$2, $3] = nr
      V[nr, "wall"] = $4
      V[nr, "mbps"] = $8 / $4 / 1e6
      V[nr, "cpumbps"] = $5 > 0 ? $8 / $5 / 1e6 : 0
      V[nr, "cpuwall"] = $5 / $4
      V[nr, "bg"] = $7
      V[nr, "steal"] = $9
      V[nr, "sys"] = $5 > 0 ? $10 / $5 : 0
      if (!($2 in seen)) { seen[$2] = 1; order[++np] = $2 }
      if ($6 / 1024 > maxrss[$2]) maxrss[$2] = $6 / 1024
      bytes = $8
    }
    END {
      if (!nr) exit
      names["py-exporter"] = "python3 exporter _sha256_of (f.read 1 MiB)"
      names["py-readinto"] = "python3 hashlib, readinto 1 MiB"
      names["sha256sum"] = "sha256sum"
      names["mt-build"] = "modelpkg mt build --describe"
      names["check"] = "modelpkg check --all-variants"
      names["pool-sorted-given"] = "pool 2w, by path, order given"
      names["pool-sorted-sizes"] = "pool 2w, by path, largest first"
      names["pool-adverse-given"] = "pool 2w, adverse, order given"
      names["pool-adverse-sizes"] = "pool 2w, adverse, largest first"
      names["openssl"] = "openssl dgst -sha256"
      names["mpk"] = "modelpkg mpk_digest_files, 1 worker"
      printf "\n-- %s: %.0f MB, median of %d rounds\n", title, bytes / 1e6, nrounds
      printf "%-44s %8s %7s %8s %8s %7s %6s %6s %10s\n", "peer", "wall s", "MB/s", "cpu/wall", "MB/cpu-s", "sys/cpu", "other", "steal", "peak RSS"
      for (i = 1; i <= np; i++) {
        p = order[i]
        printf "%-44s %8.3f %7.0f %8.2f %8.0f %7.2f %6.2f %6.2f %7.1f MiB\n", names[p], med_of(p, "wall"), med_of(p, "mbps"),
               med_of(p, "cpuwall"), med_of(p, "cpumbps"), med_of(p, "sys"), med_of(p, "bg"), med_of(p, "steal"), maxrss[p]
      }
      print "ratios of wall times (median of per-round ratios)          value"
      ratio_line("mt build / python exporter loop", "mt-build", "py-exporter", "<=0.55")
      ratio_line("check --all-variants / python exporter loop", "check", "py-exporter", "<=0.55")
      ratio_line("mt build / python readinto loop", "mt-build", "py-readinto", "")
      ratio_line("check --all-variants / python readinto loop", "check", "py-readinto", "")
      ratio_line("mt build / sha256sum", "mt-build", "sha256sum", "")
      ratio_line("check / sha256sum", "check", "sha256sum", "")
      ratio_line("pool by path: largest first / order given", "pool-sorted-sizes", "pool-sorted-given", "")
      ratio_line("pool adverse: largest first / order given", "pool-adverse-sizes", "pool-adverse-given", "")
      ratio_line("mt build / pool by path, largest first", "mt-build", "pool-sorted-sizes", "")
      ratio_line("modelpkg 1 worker / openssl dgst", "mpk", "openssl", "<=1.05")
      for (i = 1; i <= np; i++) if (order[i] == "mt-build" || order[i] == "check")
        printf "  peak RSS %-37s %6.1f MiB  < 64 MiB %s\n", names[order[i]], maxrss[order[i]], maxrss[order[i]] < 64 ? "met" : "MISSED"
    }' "$RES"
}

# ---------------------------------------------------------------------------------------- 1. package

echo
echo "== 1. package: $NBIG x $BIG_MIB MiB + $NSMALL x $SMALL_MIB MiB, writing it (bench/mt_package.py, openssl rand)"
t0=$(now_ns)
"$PYTHON" "$SRC_DIR/bench/mt_package.py" "$PKG" --big "$NBIG" --big-mib "$BIG_MIB" --small "$NSMALL" --small-mib "$SMALL_MIB"
sync
echo "   written in $(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN{printf "%.1f", (b-a)/1e9}') s"
t0=$(now_ns)
"$MODELPKG" mt build "$PKG" --describe "$WORK/pkg.build.json" | tail -1
echo "   first seal (cache warm from writing) in $(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN{printf "%.2f", (b-a)/1e9}') s"

# The files every peer hashes: what the manifest lists (every file but the manifest), by path.
PKG_CWD=$PKG
(cd "$PKG" && find . -type f ! -name mobiletransformers_manifest.json | sed 's|^\./||' | LC_ALL=C sort) >"$WORK/files.txt"
mapfile -t FILES <"$WORK/files.txt"
BYTES=$(cd "$PKG" && du -cb --apparent-size "${FILES[@]}" | tail -1 | cut -f1)
# adverse order: all big files but the last, the rest by path, the last big file at the end
mapfile -t BIGS < <(cd "$PKG" && ls -S "${FILES[@]}" | awk -v n="$NBIG" 'NR <= n' | LC_ALL=C sort)
ADVERSE=("${BIGS[@]:0:NBIG-1}")
mapfile -t -O "${#ADVERSE[@]}" ADVERSE < <(printf '%s\n' "${FILES[@]}" | grep -vxF -f <(printf '%s\n' "${BIGS[@]}"))
ADVERSE+=("${BIGS[NBIG-1]}")
(( ${#ADVERSE[@]} == ${#FILES[@]} )) || { echo "run_mt.sh: adverse order lost files" >&2; exit 1; }
REF=$WORK/manifest.sums
"$PYTHON" -c '
import json, sys
m = json.load(open(sys.argv[1], encoding="utf-8"))
for p in sorted(m["sha256"], key=lambda s: s.encode()):
    print(m["sha256"][p] + "  " + p)
' "$PKG/mobiletransformers_manifest.json" | sort -k2 >"$REF"
[[ $(wc -l <"$REF") == "${#FILES[@]}" ]] || { echo "run_mt.sh: the manifest lists $(wc -l <"$REF") files, the tree has ${#FILES[@]}" >&2; exit 1; }
echo "   $((${#FILES[@]})) files, $BYTES bytes; largest: $(printf '%s ' "${BIGS[@]##*/}")"

echo "== warm cache: reading every file once"
(cd "$PKG" && cat "${FILES[@]}" >/dev/null)
PEERS=(py-exporter py-readinto sha256sum mt-build check)
[[ $ORDER == 1 ]] && PEERS+=(pool-sorted-given pool-sorted-sizes pool-adverse-given pool-adverse-sizes)
rounds pkg "$REPEAT" "$BYTES" "${PEERS[@]}"
summary pkg "package, SHA-256 of every listed file, warm cache"
rm -rf "$PKG"    # frees the disk and the page cache before the single file

# ---------------------------------------------------------------------------------------- 2. one file

if [[ $ONE_GIB != 0 ]]; then
  echo
  echo "== 2. one file of $ONE_GIB GiB (openssl rand), warm cache"
  ONE=$WORK/one.bin
  PKG_CWD=$WORK
  for ((g = 0; g < ONE_GIB; g++)); do openssl rand $((1 << 30)); done >"$ONE"
  sync
  cat "$ONE" >/dev/null
  REF=$WORK/one.sums
  (cd "$WORK" && sha256sum "$ONE") >"$REF"
  rounds one "$ONE_REPEAT" "$((ONE_GIB << 30))" openssl mpk
  summary one "one file, SHA-256"
fi

echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
