#!/usr/bin/env bash
# run_digest.sh — shard hashing, modelpkg side by side with its peers, in one run.
#
#   bench/run_digest.sh                      # from the source tree, after building build-bench
#   NFILES=4 SIZE_MIB=256 REPEAT=5 bench/run_digest.sh
#
# Creates NFILES files of SIZE_MIB MiB of random bytes in a temporary directory (removed at the
# end) and, for MD5 and SHA-256, measures REPEAT interleaved rounds of these peers (the order is
# rotated every round, so no peer always runs first or last):
#
#   openssl     `openssl speed -evp ALGO -seconds SPEED_SECONDS -bytes 1048576 -elapsed`:
#               one core hashing a 1 MiB buffer in memory — the ceiling for one core
#   mpk-1w      mpk_digest_files(), 1 worker       (bench_digest, Release build)
#   mpk-2w      mpk_digest_files(), 2 workers
#   coreutils   md5sum / sha256sum over the same files
#   python      python3 hashlib loop, 1 MiB readinto() reads (stdlib only)
#   read-only   bench_chunk --algo none: the digest pool's loop (1 MiB read()s) without hashing —
#               the cost of read() alone (the copy out of the page cache), which every streaming
#               peer pays and `openssl speed` does not.
#               From it and openssl speed the script derives the read+hash ceiling for one
#               core, 1 / (1/openssl + 1/read-only), and compares modelpkg with it too.
#
# Warm cache (the main table): the files are read once before the rounds, so every peer reads
# from the page cache and the figures compare hashing, not the disk. When /proc/sys/vm/drop_caches
# is writable (root, not in an unprivileged container) a second, cold-cache table follows, with
# the caches dropped before every measurement (COLD=0 skips it).
#
# Every figure is the median over the rounds; ratios are medians of the per-round ratios (both
# peers of a ratio ran in the same round, seconds apart). MB = 10^6 bytes. Alongside each peer:
#   cpu/wall    its CPU time (user+sys, from /usr/bin/time) over its wall time: ~1 for one busy
#               thread, ~2 when two workers each had a core
#   MB/cpu-s    bytes per CPU-second: what it does with the CPU it got (insensitive to preemption
#               by other tenants — `openssl speed` without -elapsed reports this kind of figure)
#   other       cores busy with OTHER processes during the measurement (from /proc/stat): on a
#               2-core machine, other > 0 means the peer could not have had both cores
#               (approximate: /proc/stat counts in 10 ms ticks)
#   steal       cores' worth of time the hypervisor gave to other guests (/proc/stat steal)
#   RSS         peak resident set (/usr/bin/time %M; for modelpkg also getrusage in-process)
# Finally one sparse file of RSS_GIB GiB is hashed (SHA-256, 2 workers) to show that peak RSS
# does not grow with the package (RSS_GIB=0 skips it).
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_digest}
CHUNK_BENCH=${CHUNK_BENCH:-$BUILD_DIR/bench/bench_chunk}
NFILES=${NFILES:-4}
SIZE_MIB=${SIZE_MIB:-256}
REPEAT=${REPEAT:-5}
COLD=${COLD:-1}
COLD_REPEAT=${COLD_REPEAT:-3}
SPEED_SECONDS=${SPEED_SECONDS:-2}
ALGOS=${ALGOS:-md5 sha256}
RSS_GIB=${RSS_GIB:-4}
# The interpreter itself, not a pyenv/asdf shim: a shim's own start-up (~0.1-0.3 s) would be
# charged to Python's hashing.
PYTHON=${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}
TIME=/usr/bin/time

for tool in "$BENCH" "$CHUNK_BENCH" "$TIME" openssl md5sum sha256sum "$PYTHON"; do
  command -v "$tool" >/dev/null || { echo "run_digest.sh: missing $tool (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build-bench bench_digest bench_chunk)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-digest.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
DATA=$WORK/data
mkdir -p "$DATA"
RES=$WORK/results.txt   # algo mode peer round wall_s cpu_s rss_kib other_cores bytes steal_cores
: >"$RES"

HZ=$(getconf CLK_TCK)
# "busy steal" jiffies of all CPUs: user nice system irq softirq, and steal.
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8, $9; exit}' /proc/stat; }
now_ns() { date +%s%N; }

echo "== machine"
echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   openssl: $(openssl version | cut -d' ' -f2)   coreutils: $(md5sum --version | awk 'NR == 1 {print $NF}')   python: $($PYTHON -c 'import sys;print(sys.version.split()[0])')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "files: $NFILES x $SIZE_MIB MiB in $DATA   rounds: $REPEAT (cold: $COLD_REPEAT)   openssl speed: ${SPEED_SECONDS}s"

echo "== creating files"
FILES=()
for ((i = 0; i < NFILES; i++)); do
  f=$DATA/params_shard_$i.bin
  head -c $((SIZE_MIB << 20)) /dev/urandom >"$f"
  FILES+=("$f")
done
BYTES=$((NFILES * (SIZE_MIB << 20)))
sync

PY_HASH='
import hashlib, sys
algo = sys.argv[1]
buf = bytearray(1 << 20)
view = memoryview(buf)
for path in sys.argv[2:]:
    h = hashlib.new(algo)
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    print(h.hexdigest() + "  " + path)
'

drop_caches() { sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; }

# measure ALGO MODE PEER ROUND: run one peer once, append one line to $RES.
measure() {
  local algo=$1 mode=$2 peer=$3 round=$4
  local out=$WORK/out.$peer tf=$WORK/time.txt
  local -a cmd
  case $peer in
    openssl)   cmd=(openssl speed -evp "$algo" -seconds "$SPEED_SECONDS" -bytes 1048576 -elapsed) ;;
    mpk-1w)    cmd=("$BENCH" --algo "$algo" --workers 1 "${FILES[@]}") ;;
    mpk-2w)    cmd=("$BENCH" --algo "$algo" --workers 2 "${FILES[@]}") ;;
    coreutils) cmd=("${algo}sum" "${FILES[@]}") ;;
    python)    cmd=("$PYTHON" -c "$PY_HASH" "$algo" "${FILES[@]}") ;;
    read-only) cmd=("$CHUNK_BENCH" --algo none --chunk-kib 1024 "${FILES[@]}") ;;
  esac
  [[ $mode == cold ]] && drop_caches
  local j0 t0 t1 j1 s0 s1
  read -r j0 s0 < <(busy_jiffies); t0=$(now_ns)
  "$TIME" -f '%U %S %M' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.$peer" || {
    echo "run_digest.sh: $peer failed:" >&2; cat "$WORK/err.$peer" "$tf" >&2; exit 1; }
  t1=$(now_ns); read -r j1 s1 < <(busy_jiffies)
  local wall cpu rss bg steal bytes=$BYTES
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", (b-a)/1e9}')
  read -r u s rss < <(tail -1 "$tf")
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  if [[ $peer == openssl ]]; then
    # "md5   663255.90k": thousands of bytes per second over SPEED_SECONDS of wall time.
    local rate
    rate=$(awk -v a="$algo" 'tolower($1)==a && $2 ~ /k$/ {sub(/k$/,"",$2); print $2*1000}' "$out")
    [[ -n $rate ]] || { echo "run_digest.sh: cannot parse openssl speed output" >&2; cat "$out" >&2; exit 1; }
    bytes=$(awk -v r="$rate" -v s="$SPEED_SECONDS" 'BEGIN{printf "%.0f", r*s}')
    wall=$SPEED_SECONDS.000000
  fi
  if [[ $peer == read-only ]]; then
    # In-process figures (microsecond CPU times; /usr/bin/time has 10 ms steps).
    cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' "$out")
    wall=$(sed -n 's/.* wall_s=\([0-9.]*\).*/\1/p' "$out")
  fi
  if [[ $peer == mpk-* ]]; then
    rss=$(sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p' "$out")
    grep '^DIGEST ' "$out" | sed 's/^DIGEST //' >"$out.sums"
  elif [[ $peer != openssl && $peer != read-only ]]; then
    cp "$out" "$out.sums"
  fi
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v w="$wall" -v c="$cpu" -v t0="$t0" -v t1="$t1" \
    'BEGIN{ww=(t1-t0)/1e9; b=j/hz/ww - c/ww; if (b<0) b=0; printf "%.2f", b}')
  steal=$(awk -v j="$((s1 - s0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" 'BEGIN{printf "%.2f", j/hz/((t1-t0)/1e9)}')
  echo "$algo $mode $peer $round $wall $cpu $rss $bg $bytes $steal" >>"$RES"
}

check_digests() {
  local ref=$WORK/out.mpk-1w.sums p
  for p in mpk-2w coreutils python; do
    [[ -f $WORK/out.$p.sums ]] || continue
    if ! diff -q <(sort "$ref") <(sort "$WORK/out.$p.sums") >/dev/null; then
      echo "run_digest.sh: $p and mpk-1w disagree on the digests ($1):" >&2
      diff <(sort "$ref") <(sort "$WORK/out.$p.sums") >&2 || true
      exit 1
    fi
  done
}

# rounds MODE REPEAT PEER...: interleaved rounds, the peer order rotated every round.
rounds() {
  local mode=$1 n=$2; shift 2
  local -a peers=("$@")
  local r algo k np=${#peers[@]}
  for ((r = 1; r <= n; r++)); do
    for algo in $ALGOS; do
      rm -f "$WORK"/out.*.sums
      for ((k = 0; k < np; k++)); do
        measure "$algo" "$mode" "${peers[$(((k + r - 1) % np))]}" "$r"
      done
      check_digests "$algo round $r"
    done
    echo "   round $r/$n done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
}

# summary MODE: the table and the ratios for each algorithm.
summary() {
  local mode=$1 algo
  for algo in $ALGOS; do
    awk -v algo="$algo" -v mode="$mode" '
      function median(arr, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
        return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
      }
      function med_of(peer, field,   i, n, a) {
        n = 0
        for (i = 1; i <= nr; i++) if (P[i] == peer) a[++n] = V[i, field]
        return n ? median(a, n) : -1
      }
      function med_ratio(p1, p2, field,   r, n, a) {   # median over rounds of p1/p2
        n = 0
        for (r in R) if ((p1, r) in IDX && (p2, r) in IDX && V[IDX[p2, r], field] > 0)
          a[++n] = V[IDX[p1, r], field] / V[IDX[p2, r], field]
        return n ? median(a, n) : -1
      }
      $1 == algo && $2 == mode {
        nr++; P[nr] = $3; if (!($4 in R)) nrounds++; R[$4] = 1; IDX[$3, $4] = nr
        V[nr, "mbps"] = $9 / $5 / 1e6
        V[nr, "cpumbps"] = $6 > 0 ? $9 / $6 / 1e6 : 0
        V[nr, "cpuwall"] = $6 / $5
        V[nr, "rss"] = $7 / 1024
        V[nr, "bg"] = $8
        V[nr, "steal"] = $10
        if (!($3 in seen)) { seen[$3] = 1; order[++np] = $3 }
        if ($7 / 1024 > maxrss[$3]) maxrss[$3] = $7 / 1024
      }
      END {
        if (!nr) exit
        names["openssl"] = "openssl speed (1 core, in memory)"
        names["mpk-1w"] = "modelpkg mpk_digest_files, 1 worker"
        names["mpk-2w"] = "modelpkg mpk_digest_files, 2 workers"
        names["coreutils"] = algo "sum"
        names["python"] = "python3 hashlib, 1 MiB reads"
        names["read-only"] = "read() alone, 1 MiB (no hashing)"
        split("openssl mpk-1w mpk-2w coreutils python read-only", want, " ")
        printf "\n-- %s, %s cache (median of %d rounds)\n", toupper(algo), mode, nrounds
        printf "%-40s %9s %10s %8s %6s %6s %10s\n", "peer", "MB/s", "MB/cpu-s", "cpu/wall", "other", "steal", "peak RSS"
        for (i = 1; i <= 6; i++) {
          p = want[i]; if (!(p in seen)) continue
          printf "%-40s %9.0f %10.0f %8.2f %6.2f %6.2f %7.1f MiB\n", names[p], med_of(p, "mbps"),
                 med_of(p, "cpumbps"), med_of(p, "cpuwall"), med_of(p, "bg"), med_of(p, "steal"), maxrss[p]
        }
        if (("openssl" in seen) && ("read-only" in seen)) {
          # The one-core ceiling of any read()-then-hash loop, per round, from the same round.
          n = 0
          for (r in R) if (("openssl", r) in IDX && ("read-only", r) in IDX && ("mpk-1w", r) in IDX) {
            h = V[IDX["openssl", r], "cpumbps"]; rd = V[IDX["read-only", r], "cpumbps"]
            ceil_r = 1 / (1 / h + 1 / rd)
            c[++n] = ceil_r; q[n] = V[IDX["mpk-1w", r], "cpumbps"] / ceil_r
          }
          if (n) printf "%-40s %9s %10.0f   (1 / (1/openssl + 1/read-only), per CPU-s)\n", "read+hash ceiling, one core", "", median(c, n)
        }
        print "ratios (median of per-round ratios)                     value   target"
        if ("openssl" in seen) {
          x = med_ratio("mpk-1w", "openssl", "mbps")
          printf "  modelpkg 1 worker / openssl speed, MB/s            %6.3f   >= 0.90 %s\n", x, (x >= 0.90 ? "met" : "MISSED")
          x = med_ratio("mpk-1w", "openssl", "cpumbps")
          printf "  modelpkg 1 worker / openssl speed, MB per CPU-s    %6.3f   (same, preemption factored out)\n", x
          if (n) printf "  modelpkg 1 worker / read+hash ceiling, per CPU-s   %6.3f   (how much of what read() leaves)\n", median(q, n)
        }
        x = med_ratio("mpk-2w", "mpk-1w", "mbps")
        printf "  modelpkg 2 workers / 1 worker, MB/s                %6.3f   >= 1.80 %s\n", x, (x >= 1.80 ? "met" : "MISSED")
        printf "  modelpkg 1 worker / %-9s                      %6.3f\n", algo "sum", med_ratio("mpk-1w", "coreutils", "mbps")
        printf "  modelpkg 2 workers / %-9s                     %6.3f\n", algo "sum", med_ratio("mpk-2w", "coreutils", "mbps")
        if ("python" in seen) {
          printf "  modelpkg 1 worker / python hashlib                 %6.3f\n", med_ratio("mpk-1w", "python", "mbps")
          printf "  modelpkg 2 workers / python hashlib                %6.3f\n", med_ratio("mpk-2w", "python", "mbps")
        }
        m = maxrss["mpk-1w"] > maxrss["mpk-2w"] ? maxrss["mpk-1w"] : maxrss["mpk-2w"]
        printf "  modelpkg peak RSS (any run)                        %6.1f MiB   < 64 MiB %s\n", m, (m < 64 ? "met" : "MISSED")
      }' "$RES"
  done
}

echo "== warm cache: reading every file once first"
cat "${FILES[@]}" >/dev/null
rounds warm "$REPEAT" openssl mpk-1w mpk-2w coreutils python read-only
summary warm

if [[ $COLD == 1 ]]; then
  if drop_caches; then
    echo
    echo "== cold cache: page cache dropped before every measurement"
    rounds cold "$COLD_REPEAT" mpk-1w mpk-2w coreutils python
    summary cold
  else
    echo
    echo "== cold cache: skipped (cannot write /proc/sys/vm/drop_caches)"
  fi
fi

if [[ $RSS_GIB != 0 ]]; then
  echo
  echo "== peak RSS against package size (SHA-256, 2 workers, getrusage in bench_digest)"
  rm -f "$DATA"/*.bin    # free the page cache the shards hold
  big=$DATA/sparse_${RSS_GIB}GiB.bin
  truncate -s "${RSS_GIB}G" "$big"
  head -c $((SIZE_MIB << 20)) /dev/zero >"$DATA/small.bin"
  for f in "$DATA/small.bin" "$big"; do
    line=$("$BENCH" --algo sha256 --workers 2 --quiet "$f" "$f" | grep '^RESULT')
    rss=$(sed -n 's/.*maxrss_kib=\([0-9]*\).*/\1/p' <<<"$line")
    before=$(sed -n 's/.*rss_before_kib=\([0-9]*\).*/\1/p' <<<"$line")
    printf "  2 x %-10s hashed: peak RSS %6.1f MiB (%.1f MiB before hashing)\n" \
      "$(du -h --apparent-size "$f" | cut -f1)" "$(awk -v k="$rss" 'BEGIN{print k/1024}')" \
      "$(awk -v k="$before" 'BEGIN{print k/1024}')"
  done
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
