#!/usr/bin/env bash
# run_tensor.sh — MobileTransformers tensor loading and the load gate, modelpkg side by side with
# its peers, in one run.
#
#   bench/run_tensor.sh                      # from the source tree, after building build-bench
#   ROWS=16384 COLS=16384 ITERS=2000 REPEAT=5 FROMFILE=4 MEMMAP_ITERS=2000 COLD=1 COLD_REPEAT=5 \
#     WRITTEN=1 NTENSORS=8 TENSOR_MIB=128 GATE_REPEAT=5 SPEED_SECONDS=2 bench/run_tensor.sh
#
# bench/tensor_package.py writes two inference directories (weight_handoff_map.json, raw .bin
# tensors of random bytes, .bin.sha256 sidecars) in a temporary directory, removed at the end,
# also on failure: `big` with one float32 [ROWS, COLS] tensor (1 GiB by default) and `gate` with
# NTENSORS float32 tensors of TENSOR_MIB MiB ([TENSOR_MIB*64, 4096]).
#
# 1. Opening the 1 GiB tensor. REPEAT interleaved rounds (the order rotated every round) of:
#   mpk-open     bench_tensor open --iters ITERS --touch: the map read once, then ITERS times
#                mpk_mt_tensor_open (declared layout, exact-size check, read-only mmap) +
#                mpk_tensor_view_dltensor (DLPack) + mpk_tensor_view_close, each timed; the page
#                faults per open and the resident set with the view open (it must not grow by the
#                tensor: the open reads nothing); then one byte of every 4 KiB page is read — the
#                first use of the data, which a mapping defers to the page faults
#   mpk-populate the same first use after madvise(MADV_POPULATE_READ) of the whole view
#                (an experiment: one call instead of one fault per 64 KiB or per folio)
#   numpy        NUMPY_PYTHON (it must have numpy; /usr/bin/python3 on Debian): FROMFILE times
#                numpy.fromfile(path, float32).reshape(ROWS, COLS) — a copy into a new array —
#                and MEMMAP_ITERS times numpy.memmap(path, float32, "r", (ROWS, COLS)) + del —
#                numpy's own zero-copy view, the like-for-like peer. The first fromfile of a
#                process is reported apart: on this VM a fresh 1 GiB allocation is much slower
#                (docs/PERFORMANCE.md section 4); the fromfile figure is the median of the others.
#   Every peer also sums the byte at every 4 KiB offset of the tensor: the sums must agree.
#   Cold (COLD=1, when /proc/sys/vm/drop_caches is writable): COLD_REPEAT times, the page cache,
#   dentries and inodes dropped, then one process: the map read, the first open, how many of the
#   file's pages are in the page cache right after it (mincore: 0 = nothing was read), and the
#   first use of the data (from disk). The files are then read once, so the warm rounds see a
#   page cache filled by reading, as after a reboot. Before that (WRITTEN=1), right after the
#   files are written, the first use is measured twice with and twice without MADV_POPULATE_READ
#   on the page cache the writes left (4 KiB folios, which make the first use much slower here:
#   docs/PERFORMANCE.md section 4).
#
# 2. The load gate over `gate` (NTENSORS x TENSOR_MIB MiB, warm page cache). REPEAT interleaved
#    rounds of these peers, each one process, timed from outside (start-up included):
#   openssl      `openssl speed -evp sha256 -seconds SPEED_SECONDS -bytes 1048576 -elapsed`: one
#                core hashing a 1 MiB buffer in memory — the per-core ceiling
#   gate-1w      bench_tensor gate --workers 1: read the map, mpk_mt_load_gate() — every tensor
#                present, its sidecar read, its SHA-256 computed and compared (all must verify)
#   gate-2w      the same with 2 workers
#   digest-1w    bench_digest --algo sha256 --workers 1 --sizes over the same .bin files:
#                mpk_digest_files() alone, the hashing of run_digest.sh (same rounds)
#   python       python3 hashlib, readinto() of 1 MiB into one buffer (run_digest.sh's loop)
#   The digests of gate, digest-1w and python are compared every round (the gate itself checks
#   them against the sidecars). The gate's 1-worker MB/s is also divided by DIGEST_DOC_MBPS, the
#   SHA-256 1-worker figure of docs/PERFORMANCE.md section 1 (1480 MB/s, run 4), and its MB/cpu-s
#   by DIGEST_DOC_CPU_MBPS (1534, the same run; insensitive to other tenants).
#
# Every figure is the median over the rounds; a ratio is the median of per-round ratios (both
# peers ran in the same round, seconds apart). MB = 10^6 bytes. cpu/wall, MB/cpu-s, other (cores
# busy with OTHER processes, from /proc/stat), steal and peak RSS as in run_digest.sh.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_tensor}
DIGEST_BENCH=${DIGEST_BENCH:-$BUILD_DIR/bench/bench_digest}
ROWS=${ROWS:-16384}
COLS=${COLS:-16384}
ITERS=${ITERS:-2000}
REPEAT=${REPEAT:-5}
FROMFILE=${FROMFILE:-4}
MEMMAP_ITERS=${MEMMAP_ITERS:-2000}
COLD=${COLD:-1}
COLD_REPEAT=${COLD_REPEAT:-5}
NTENSORS=${NTENSORS:-8}
TENSOR_MIB=${TENSOR_MIB:-128}
GATE_REPEAT=${GATE_REPEAT:-5}
SPEED_SECONDS=${SPEED_SECONDS:-2}
WRITTEN=${WRITTEN:-1}
DIGEST_DOC_MBPS=${DIGEST_DOC_MBPS:-1480}
DIGEST_DOC_CPU_MBPS=${DIGEST_DOC_CPU_MBPS:-1534}
# The interpreter itself, not a pyenv/asdf shim (a shim's start-up would be charged to Python).
PYTHON=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
NUMPY_PYTHON=${NUMPY_PYTHON:-/usr/bin/python3}
TIME=/usr/bin/time

for tool in "$BENCH" "$DIGEST_BENCH" "$TIME" openssl "$PYTHON" "$NUMPY_PYTHON"; do
  command -v "$tool" >/dev/null || { echo "run_tensor.sh: missing $tool (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench bench_tensor bench_digest)" >&2; exit 2; }
done
"$NUMPY_PYTHON" -c 'import numpy' 2>/dev/null || { echo "run_tensor.sh: $NUMPY_PYTHON has no numpy (set NUMPY_PYTHON)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-tensor.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
BIG=$WORK/big
GATE=$WORK/gate
RES1=$WORK/open.txt    # peer round key value
RES2=$WORK/gate.txt    # peer round wall_s cpu_s rss_kib other_cores bytes steal_cores
: >"$RES1"
: >"$RES2"

big_bytes=$((ROWS * COLS * 4))
gate_bytes=$((NTENSORS * TENSOR_MIB << 20))
need_mib=$(( (big_bytes + gate_bytes) >> 20 ))
avail_mib=$(df -Pm "$WORK" | awk 'NR==2{print $4}')
if (( avail_mib < need_mib + 1024 )); then
  echo "run_tensor.sh: $WORK has $avail_mib MiB free, needs $need_mib MiB (+1 GiB margin)" >&2; exit 2
fi

HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8, $9; exit}' /proc/stat; }
now_ns() { date +%s%N; }
drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }

echo "== machine"
echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   openssl: $(openssl version | cut -d' ' -f2)   python: $("$PYTHON" -c 'import sys;print(sys.version.split()[0])')   numpy: $("$NUMPY_PYTHON" -c 'import sys, numpy; print(numpy.__version__, "on python", sys.version.split()[0])')"
echo "transparent hugepages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?')   memory available: $(awk '/^MemAvailable:/{print int($2/1024)}' /proc/meminfo) MiB   disk free: $avail_mib MiB"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tensor: float32 [$ROWS, $COLS] = $big_bytes bytes   gate: $NTENSORS x $TENSOR_MIB MiB   rounds: $REPEAT (gate $GATE_REPEAT, cold $COLD_REPEAT)"

echo "== writing the tensors"
"$PYTHON" "$SRC_DIR/bench/tensor_package.py" "$BIG" --tensors 1 --rows "$ROWS" --cols "$COLS"
"$PYTHON" "$SRC_DIR/bench/tensor_package.py" "$GATE" --tensors "$NTENSORS" --rows $((TENSOR_MIB * 64)) --cols 4096
BIGBIN=$(ls "$BIG"/*.bin)
GATEBINS=("$GATE"/*.bin)

# -------------------------------------------------------------------- 1. opening the 1 GiB tensor

PY_NUMPY='
import resource, statistics, sys, time
import numpy as np
path, rows, cols, nfrom, nmm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
page = resource.getpagesize()
def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page // 1024
def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
times, flts, added, check = [], [], 0, None
for i in range(nfrom):
    r0, f0 = rss_kib(), minflt()
    t0 = time.perf_counter_ns()
    a = np.fromfile(path, dtype=np.float32).reshape(rows, cols)
    t1 = time.perf_counter_ns()
    times.append((t1 - t0) / 1e3)
    flts.append(minflt() - f0)
    added = max(added, rss_kib() - r0)
    if check is None:
        check = int(a.reshape(-1).view(np.uint8)[::page].sum(dtype=np.uint64))
    del a
mm = []
for i in range(nmm):
    t0 = time.perf_counter_ns()
    m = np.memmap(path, dtype=np.float32, mode="r", shape=(rows, cols))
    del m
    mm.append((time.perf_counter_ns() - t0) / 1e3)
mm.sort()
rest = times[1:] or times
print("RESULT fromfile_first_us=%.1f fromfile_us=%.1f fromfile_minflt=%d rss_added_kib=%d memmap_us=%.2f "
      "memmap_p10_us=%.2f memmap_p90_us=%.2f checksum=%d" % (times[0], statistics.median(rest),
      statistics.median(flts[1:] or flts), added, statistics.median(mm), mm[len(mm) // 10], mm[len(mm) * 9 // 10], check))
'

# kv PEER ROUND LINE: every key=value of LINE into $RES1.
kv() { tr ' ' '\n' <<<"$3" | awk -F= -v p="$1" -v r="$2" 'NF == 2 {print p, r, $1, $2}' >>"$RES1"; }

CHECKSUM=
same_checksum() {
  local c
  c=$(sed -n 's/.*checksum=\([0-9]*\).*/\1/p' <<<"$2")
  [[ -z $CHECKSUM ]] && CHECKSUM=$c
  [[ $c == "$CHECKSUM" ]] || { echo "run_tensor.sh: $1 read other bytes (checksum $c, expected $CHECKSUM)" >&2; exit 1; }
}

open_peer() {
  local peer=$1 round=$2 out line
  case $peer in
    mpk-open)
      out=$("$BENCH" open --iters "$ITERS" --touch "$BIG")
      kv "$peer" "$round" "$(grep '^RESULT mode=open' <<<"$out")"
      line=$(grep '^RESULT mode=touch' <<<"$out") ;;
    mpk-populate)
      out=$("$BENCH" open --iters 0 --populate "$BIG")
      line=$(grep '^RESULT mode=populate' <<<"$out") ;;
    numpy)
      line=$("$NUMPY_PYTHON" -c "$PY_NUMPY" "$BIGBIN" "$ROWS" "$COLS" "$FROMFILE" "$MEMMAP_ITERS" | grep '^RESULT') ;;
  esac
  kv "$peer" "$round" "$line"
  same_checksum "$peer" "$line"
}

if [[ $WRITTEN == 1 ]]; then
  echo "== 1. first use with the page cache the writes left: 2 x (touch, populate + touch)"
  for r in 1 2; do
    for m in touch populate; do
      line=$("$BENCH" open --iters 0 --$m "$BIG" | grep "^RESULT mode=$m")
      kv "written-$m" "$r" "$line"
      same_checksum "written-$m" "$line"
    done
  done
fi
CAN_DROP=0
drop_caches && CAN_DROP=1
if [[ $COLD == 1 && $CAN_DROP == 1 ]]; then
  echo "== 1. cold: page cache, dentries and inodes dropped before each of $COLD_REPEAT processes"
  for ((r = 1; r <= COLD_REPEAT; r++)); do
    drop_caches
    out=$("$BENCH" open --iters 0 --touch "$BIG")
    kv cold "$r" "$(grep '^RESULT mode=open' <<<"$out")"
    line=$(grep '^RESULT mode=touch' <<<"$out")
    kv cold-touch "$r" "$line"
    same_checksum cold "$line"
  done
fi
echo "== 1. warm: every file read once, then $REPEAT rounds"
cat "$BIGBIN" "${GATEBINS[@]}" >/dev/null
PEERS1=(mpk-open mpk-populate numpy)
for ((r = 1; r <= REPEAT; r++)); do
  for ((k = 0; k < ${#PEERS1[@]}; k++)); do open_peer "${PEERS1[$(((k + r - 1) % ${#PEERS1[@]}))]}" "$r"; done
  echo "   round $r/$REPEAT done (load average $(cut -d' ' -f1 /proc/loadavg))"
done

awk -v can_drop="$CAN_DROP" -v cold="$COLD" '
  function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
  }
  function med(peer, key,   r, n, a) {
    n = 0
    for (r = 1; r <= maxr; r++) if ((peer, r, key) in V) a[++n] = V[peer, r, key]
    return n ? median(a, n) : -1
  }
  function rng(peer, key,   r, lo, hi, x) {
    lo = 1e30; hi = -1e30
    for (r = 1; r <= maxr; r++) if ((peer, r, key) in V) { x = V[peer, r, key]; if (x < lo) lo = x; if (x > hi) hi = x }
    return sprintf("%s-%s", fmt(lo), fmt(hi))
  }
  function fmt(x) { return x >= 1000 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x) }
  function ratio(p1, k1, p2, k2,   r, n, a) {   # median over rounds of p1.k1 / p2.k2
    n = 0
    for (r = 1; r <= maxr; r++) if ((p1, r, k1) in V && (p2, r, k2) in V && V[p2, r, k2] > 0) a[++n] = V[p1, r, k1] / V[p2, r, k2]
    return n ? median(a, n) : -1
  }
  { V[$1, $2, $3] = $4; if ($2 > maxr) maxr = $2; if ($1 == "mpk-open" && $3 == "median_us") nwarm++ }
  END {
    mib = med("mpk-open", "bytes") / 1048576
    printf "\n-- 1. opening a %.0f MiB float32 tensor, warm page cache (median of %d rounds; range over rounds)\n", mib, nwarm
    printf "%-54s %12s %18s\n", "peer", "median", "rounds"
    printf "%-54s %9s us %18s\n", "modelpkg open + DLPack export + close", fmt(med("mpk-open", "median_us")), rng("mpk-open", "median_us")
    printf "%-54s p10 %s, p90 %s, min %s us (each process: %d opens)\n", "", fmt(med("mpk-open", "p10_us")), fmt(med("mpk-open", "p90_us")), fmt(med("mpk-open", "min_us")), med("mpk-open", "iters")
    printf "%-54s %9s us %18s\n", "  the same, first of the process", fmt(med("mpk-open", "first_us")), rng("mpk-open", "first_us")
    printf "%-54s %9s us %18s\n", "  reading weight_handoff_map.json (once per process)", fmt(med("mpk-open", "map_us")), rng("mpk-open", "map_us")
    printf "%-54s %9s us %18s\n", "numpy.memmap + del (zero-copy peer)", fmt(med("numpy", "memmap_us")), rng("numpy", "memmap_us")
    printf "%-54s %9s us %18s\n", "numpy.fromfile (a copy)", fmt(med("numpy", "fromfile_us")), rng("numpy", "fromfile_us")
    printf "%-54s %9s us %18s\n", "  the same, first of the process (a fresh array)", fmt(med("numpy", "fromfile_first_us")), rng("numpy", "fromfile_first_us")
    print "ratios (median of per-round ratios)"
    printf "  numpy.fromfile / modelpkg open                       %12.0f x\n", ratio("numpy", "fromfile_us", "mpk-open", "median_us")
    printf "  numpy.memmap / modelpkg open                         %12.2f x\n", ratio("numpy", "memmap_us", "mpk-open", "median_us")
    print "the open reads nothing"
    printf "  page faults per open (minor / major)                 %s / %s\n", fmt(med("mpk-open", "minflt_per_open")), fmt(med("mpk-open", "majflt_per_open"))
    printf "  page faults of the first open (minor / major)        %s / %s\n", med("mpk-open", "first_minflt"), med("mpk-open", "first_majflt")
    printf "  resident set before / with the view open             %.1f / %.1f MiB (the tensor: %.0f MiB)\n", med("mpk-open", "rss_before_kib") / 1024, med("mpk-open", "rss_open_kib") / 1024, mib
    printf "  numpy.fromfile: resident set added, minor faults     %.1f MiB, %s per call\n", med("numpy", "rss_added_kib") / 1024, med("numpy", "fromfile_minflt")
    print "first use of the data: one byte of every 4 KiB page read"
    printf "  modelpkg view, pages faulted in on first touch       %9s us   %s minor / %s major faults, resident %.0f MiB\n", fmt(med("mpk-open", "touch_us")), med("mpk-open", "minflt"), med("mpk-open", "majflt"), med("mpk-open", "rss_touched_kib") / 1024
    printf "  MADV_POPULATE_READ, then touch (experiment)          %9s us + %s us   (%s faults in populate)\n", fmt(med("mpk-populate", "populate_us")), fmt(med("mpk-populate", "touch_us")), med("mpk-populate", "populate_minflt")
    printf "  numpy.fromfile / (modelpkg open + first touch)       %12.2f x\n", ratio("numpy", "fromfile_us", "mpk-open", "touch_us")
    if (("written-touch", 1, "touch_us") in V) {
      printf "  the same, page cache filled by writing (2 runs)      %9s us   %s minor faults\n", fmt(med("written-touch", "touch_us")), med("written-touch", "minflt")
      printf "  populate + touch, page cache filled by writing       %9s us + %s us\n", fmt(med("written-populate", "populate_us")), fmt(med("written-populate", "touch_us"))
    }
    if (cold == 1 && can_drop != 1) print "\n-- 1. cold: skipped (cannot write /proc/sys/vm/drop_caches); the warm page cache was filled by writing"
    if (("cold", 1, "first_us") in V) {
      n = 0; for (r = 1; r <= maxr; r++) if (("cold", r, "first_us") in V) n++
      printf "\n-- 1. cold: caches dropped before each process (median of %d)\n", n
      printf "  reading weight_handoff_map.json                      %9s us %18s\n", fmt(med("cold", "map_us")), rng("cold", "map_us")
      printf "  first open + DLPack export + close                   %9s us %18s\n", fmt(med("cold", "first_us")), rng("cold", "first_us")
      printf "  faults of the open (minor / major)                   %s / %s\n", med("cold", "first_minflt"), med("cold", "first_majflt")
      printf "  the file\047s pages in the page cache after the open   %s of %s\n", med("cold", "cached_pages_after_first"), med("cold", "pages")
      printf "  first use, one byte per page (reads the disk)        %9s us %18s   (%s minor / %s major faults)\n", fmt(med("cold-touch", "touch_us")), rng("cold-touch", "touch_us"), med("cold-touch", "minflt"), med("cold-touch", "majflt")
    }
  }' "$RES1"

# -------------------------------------------------------------------- 2. the load gate

PY_HASH='
import hashlib, sys
buf = bytearray(1 << 20)
view = memoryview(buf)
for path in sys.argv[1:]:
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    print(h.hexdigest() + "  " + path)
'

# measure PEER ROUND: run one peer once, append one line to $RES2.
measure() {
  local peer=$1 round=$2
  local out=$WORK/out.$peer tf=$WORK/time.txt
  local -a cmd
  case $peer in
    openssl)   cmd=(openssl speed -evp sha256 -seconds "$SPEED_SECONDS" -bytes 1048576 -elapsed) ;;
    gate-1w)   cmd=("$BENCH" gate --workers 1 "$GATE") ;;
    gate-2w)   cmd=("$BENCH" gate --workers 2 "$GATE") ;;
    digest-1w) cmd=("$DIGEST_BENCH" --algo sha256 --workers 1 --sizes "${GATEBINS[@]}") ;;
    python)    cmd=("$PYTHON" -c "$PY_HASH" "${GATEBINS[@]}") ;;
  esac
  local j0 t0 t1 j1 s0 s1 u s rss
  read -r j0 s0 < <(busy_jiffies); t0=$(now_ns)
  "$TIME" -f '%U %S %M' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.$peer" || {
    echo "run_tensor.sh: $peer failed:" >&2; cat "$out" "$WORK/err.$peer" "$tf" >&2; exit 1; }
  t1=$(now_ns); read -r j1 s1 < <(busy_jiffies)
  local wall cpu bg steal bytes=$gate_bytes
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", (b-a)/1e9}')
  read -r u s rss < <(tail -1 "$tf")
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  if [[ $peer == openssl ]]; then
    local rate
    rate=$(awk 'tolower($1)=="sha256" && $2 ~ /k$/ {sub(/k$/,"",$2); print $2*1000}' "$out")
    [[ -n $rate ]] || { echo "run_tensor.sh: cannot parse openssl speed output" >&2; cat "$out" >&2; exit 1; }
    bytes=$(awk -v r="$rate" -v s="$SPEED_SECONDS" 'BEGIN{printf "%.0f", r*s}')
    wall=$SPEED_SECONDS.000000
  fi
  case $peer in
    gate-*|digest-*) sed -n 's/^DIGEST //p' "$out" | sort -k2 >"$out.sums" ;;
    python)          sort -k2 "$out" >"$out.sums" ;;
  esac
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v c="$cpu" -v t0="$t0" -v t1="$t1" \
    'BEGIN{w=(t1-t0)/1e9; b=j/hz/w - c/w; if (b<0) b=0; printf "%.2f", b}')
  steal=$(awk -v j="$((s1 - s0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.2f", j/hz/((t1-t0)/1e9)}')
  echo "$peer $round $wall $cpu $rss $bg $bytes $steal" >>"$RES2"
}

check_digests() {
  local ref=$WORK/out.gate-1w.sums p
  for p in gate-2w digest-1w python; do
    diff -q "$ref" "$WORK/out.$p.sums" >/dev/null || {
      echo "run_tensor.sh: $p and gate-1w disagree on the digests (round $1):" >&2; diff "$ref" "$WORK/out.$p.sums" >&2 || true; exit 1; }
  done
}

echo
echo "== 2. the load gate: $NTENSORS x $TENSOR_MIB MiB, warm page cache, $GATE_REPEAT rounds"
cat "${GATEBINS[@]}" >/dev/null
PEERS2=(openssl gate-1w gate-2w digest-1w python)
for ((r = 1; r <= GATE_REPEAT; r++)); do
  rm -f "$WORK"/out.*.sums
  for ((k = 0; k < ${#PEERS2[@]}; k++)); do measure "${PEERS2[$(((k + r - 1) % ${#PEERS2[@]}))]}" "$r"; done
  check_digests "$r"
  echo "   round $r/$GATE_REPEAT done (load average $(cut -d' ' -f1 /proc/loadavg))"
done

awk -v doc="$DIGEST_DOC_MBPS" -v doccpu="$DIGEST_DOC_CPU_MBPS" '
  function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
  }
  function med_of(peer, field,   i, n, a) {
    n = 0
    for (i = 1; i <= nr; i++) if (P[i] == peer) a[++n] = V[i, field]
    return n ? median(a, n) : -1
  }
  function med_ratio(p1, p2, field,   r, n, a) {
    n = 0
    for (r in R) if ((p1, r) in IDX && (p2, r) in IDX && V[IDX[p2, r], field] > 0) a[++n] = V[IDX[p1, r], field] / V[IDX[p2, r], field]
    return n ? median(a, n) : -1
  }
  function range_ratio(p1, p2, field,   r, lo, hi, x) {
    lo = 1e9; hi = 0
    for (r in R) if ((p1, r) in IDX && (p2, r) in IDX && V[IDX[p2, r], field] > 0) {
      x = V[IDX[p1, r], field] / V[IDX[p2, r], field]; if (x < lo) lo = x; if (x > hi) hi = x }
    return sprintf("%.3f-%.3f", lo, hi)
  }
  {
    nr++; P[nr] = $1; if (!($2 in R)) nrounds++; R[$2] = 1; IDX[$1, $2] = nr
    V[nr, "wall"] = $3
    V[nr, "mbps"] = $7 / $3 / 1e6
    V[nr, "cpumbps"] = $4 > 0 ? $7 / $4 / 1e6 : 0
    V[nr, "cpuwall"] = $4 / $3
    V[nr, "bg"] = $6
    V[nr, "steal"] = $8
    if ($5 / 1024 > maxrss[$1]) maxrss[$1] = $5 / 1024
    if ($1 != "openssl") bytes = $7
  }
  END {
    names["openssl"] = "openssl speed (1 core, in memory)"
    names["gate-1w"] = "modelpkg mpk_mt_load_gate, 1 worker"
    names["gate-2w"] = "modelpkg mpk_mt_load_gate, 2 workers"
    names["digest-1w"] = "modelpkg mpk_digest_files, 1 worker"
    names["python"] = "python3 hashlib, readinto 1 MiB"
    split("openssl gate-1w gate-2w digest-1w python", want, " ")
    printf "\n-- 2. the load gate, SHA-256 of %.0f MB, warm cache (median of %d rounds; every tensor verified in every round)\n", bytes / 1e6, nrounds
    printf "%-40s %8s %7s %10s %8s %6s %6s %10s\n", "peer", "wall s", "MB/s", "MB/cpu-s", "cpu/wall", "other", "steal", "peak RSS"
    for (i = 1; i <= 5; i++) {
      p = want[i]
      printf "%-40s %8.3f %7.0f %10.0f %8.2f %6.2f %6.2f %7.1f MiB\n", names[p], med_of(p, "wall"), med_of(p, "mbps"),
             med_of(p, "cpumbps"), med_of(p, "cpuwall"), med_of(p, "bg"), med_of(p, "steal"), maxrss[p]
    }
    print "ratios (median of per-round ratios)                        value   rounds"
    printf "  gate 1 worker / openssl speed, MB/s                      %6.3f   %s\n", med_ratio("gate-1w", "openssl", "mbps"), range_ratio("gate-1w", "openssl", "mbps")
    printf "  gate 1 worker / openssl speed, MB per CPU-s              %6.3f   %s\n", med_ratio("gate-1w", "openssl", "cpumbps"), range_ratio("gate-1w", "openssl", "cpumbps")
    printf "  gate 2 workers / 1 worker, MB/s                          %6.3f   %s\n", med_ratio("gate-2w", "gate-1w", "mbps"), range_ratio("gate-2w", "gate-1w", "mbps")
    printf "  gate 1 worker / mpk_digest_files 1 worker (same rounds)  %6.3f   %s\n", med_ratio("gate-1w", "digest-1w", "mbps"), range_ratio("gate-1w", "digest-1w", "mbps")
    printf "  the same, MB per CPU-s                                   %6.3f   %s\n", med_ratio("gate-1w", "digest-1w", "cpumbps"), range_ratio("gate-1w", "digest-1w", "cpumbps")
    printf "  gate 1 worker / run_digest.sh 1-worker figure, MB/s      %6.3f   (%s MB/s, docs/PERFORMANCE.md section 1)\n", med_of("gate-1w", "mbps") / doc, doc
    printf "  the same, MB per CPU-s                                   %6.3f   (%s MB/cpu-s)\n", med_of("gate-1w", "cpumbps") / doccpu, doccpu
    printf "  gate 1 worker / python hashlib                           %6.3f   %s\n", med_ratio("gate-1w", "python", "mbps"), range_ratio("gate-1w", "python", "mbps")
    printf "  gate 2 workers / python hashlib                          %6.3f   %s\n", med_ratio("gate-2w", "python", "mbps"), range_ratio("gate-2w", "python", "mbps")
  }' "$RES2"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
