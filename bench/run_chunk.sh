#!/usr/bin/env bash
# run_chunk.sh — the experiment behind the read-size recommendation in docs/PERFORMANCE.md.
#
#   bench/run_chunk.sh
#   CHUNKS="1024 256 128" WORKERS="1 2" REPEAT=5 bench/run_chunk.sh
#
# Warm page cache, NFILES x SIZE_MIB MiB of random bytes (removed at the end). In each round, for
# each algorithm and worker count, runs side by side (order rotated every round):
#   openssl     `openssl speed -evp ALGO -bytes 1048576` (1 worker only): the one-core ceiling
#   library     mpk_digest_files() as built (CHUNK = 1 MiB in src/core/digest_pool.c)
#   chunk-K     bench_chunk's copy of the same loop reading K KiB at a time
#   chunk-K-thp the same into a 2 MiB-aligned MADV_HUGEPAGE buffer  (CHUNKS entry "Kthp")
#   mmap-K      no read(): K KiB windows mmap'ed, MADV_POPULATE_READ, hashed in place, unmapped
#               (CHUNKS entry "mmapK")
# and prints medians of MB/s (wall) and MB per CPU-second, and each variant's ratio to the
# library and to openssl speed (medians of per-round ratios).
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_chunk}
NFILES=${NFILES:-4}
SIZE_MIB=${SIZE_MIB:-256}
REPEAT=${REPEAT:-5}
CHUNKS=${CHUNKS:-1024 512 256 128 64}
WORKERS=${WORKERS:-1 2}
ALGOS=${ALGOS:-md5 sha256}
SPEED_SECONDS=${SPEED_SECONDS:-2}

[[ -x $BENCH ]] || { echo "run_chunk.sh: build $BENCH first (ninja -C build-bench bench_chunk)" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-chunk.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FILES=()
for ((i = 0; i < NFILES; i++)); do
  head -c $((SIZE_MIB << 20)) /dev/urandom >"$WORK/shard_$i.bin"
  FILES+=("$WORK/shard_$i.bin")
done
cat "${FILES[@]}" >/dev/null
RES=$WORK/results.txt   # algo workers variant round mbps mbps_cpu rss_kib
: >"$RES"

echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "files: $NFILES x $SIZE_MIB MiB (warm cache)   chunks (KiB): $CHUNKS   workers: $WORKERS   rounds: $REPEAT"

for ((r = 1; r <= REPEAT; r++)); do
  for algo in $ALGOS; do
    for w in $WORKERS; do
      variants=(library)
      [[ $w == 1 ]] && variants+=(openssl)
      for c in $CHUNKS; do variants+=("$c"); done
      nv=${#variants[@]}
      for ((k = 0; k < nv; k++)); do
        v=${variants[$(((k + r - 1) % nv))]}
        case $v in
          openssl)
            # Default (no -elapsed): openssl divides by its CPU user time; report it as both figures.
            rate=$(openssl speed -evp "$algo" -seconds "$SPEED_SECONDS" -bytes 1048576 2>/dev/null |
              awk -v a="$algo" 'tolower($1)==a && $2 ~ /k$/ {sub(/k$/,"",$2); print $2/1000}')
            echo "$algo $w openssl $r $rate $rate 0" >>"$RES" ;;
          library)
            line=$("$BENCH" --algo "$algo" --workers "$w" --library "${FILES[@]}")
            echo "$algo $w library $r $(sed 's/.* mbps=\([0-9.]*\) mbps_cpu=\([0-9.]*\) maxrss_kib=\([0-9]*\).*/\1 \2 \3/' <<<"$line")" >>"$RES" ;;
          *)
            case $v in
              mmap*) opts=(--mmap-kib "${v#mmap}"); name=mmap-${v#mmap}k ;;
              *thp) opts=(--chunk-kib "${v%thp}" --thp); name=chunk-${v%thp}k-thp ;;
              *) opts=(--chunk-kib "$v"); name=chunk-${v}k ;;
            esac
            line=$("$BENCH" --algo "$algo" --workers "$w" "${opts[@]}" "${FILES[@]}")
            echo "$algo $w $name $r $(sed 's/.* mbps=\([0-9.]*\) mbps_cpu=\([0-9.]*\) maxrss_kib=\([0-9]*\).*/\1 \2 \3/' <<<"$line")" >>"$RES" ;;
        esac
      done
    done
  done
  echo "   round $r/$REPEAT done (load average $(cut -d' ' -f1 /proc/loadavg))"
done

for algo in $ALGOS; do
  for w in $WORKERS; do
    awk -v algo="$algo" -v w="$w" '
      function median(arr, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
        return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
      }
      function med(v, f,   r, n, a) { n = 0; for (r in RR) if ((v, r) in X) a[++n] = X[v, r, f]; return n ? median(a, n) : -1 }
      function ratio(v1, v2, f,   r, n, a) {
        n = 0
        for (r in RR) if ((v1, r) in X && (v2, r) in X && X[v2, r, f] > 0) a[++n] = X[v1, r, f] / X[v2, r, f]
        return n ? median(a, n) : -1
      }
      $1 == algo && $2 == w {
        X[$3, $4] = 1; X[$3, $4, 1] = $5; X[$3, $4, 2] = $6; RR[$4] = 1
        if ($7 > rss[$3]) rss[$3] = $7
        if (!($3 in seen)) { seen[$3] = 1; order[++nv] = $3 }
      }
      END {
        printf "\n-- %s, %s worker(s), warm cache\n", toupper(algo), w
        printf "%-12s %8s %10s %12s %14s %12s %10s\n", "variant", "MB/s", "MB/cpu-s", "/library", "/library cpu", "/openssl cpu", "peak RSS"
        for (i = 1; i <= nv; i++) {
          v = order[i]
          o = ("openssl" in seen) && v != "openssl" ? sprintf("%12.3f", ratio(v, "openssl", 2)) : sprintf("%12s", "")
          printf "%-12s %8.0f %10.0f %12.3f %14.3f %s %7.1f MiB\n", v, med(v, 1), med(v, 2),
                 ratio(v, "library", 1), ratio(v, "library", 2), o, rss[v] / 1024
        }
      }' "$RES"
  done
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
