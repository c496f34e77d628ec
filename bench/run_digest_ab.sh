#!/usr/bin/env bash
# run_digest_ab.sh — mpk_digest_files() of an older commit and of this tree, side by side: the same
# warm files, 1 worker, the two builds alternated ROUNDS times; prints each run and the medians.
#
#   bench/run_digest_ab.sh BASE_COMMIT              # e.g. 25445ab (before issue 17's pool and hasher)
#   NFILES=4 SIZE_MIB=256 ROUNDS=5 ALGOS="sha256 md5" bench/run_digest_ab.sh 25445ab
#
# Builds bench_digest of BASE_COMMIT in a temporary git worktree (Release) and of this tree in
# build-bench (Release), both removed or kept as they were. MB = 10^6 bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE="${1:?usage: bench/run_digest_ab.sh BASE_COMMIT}"
NFILES=${NFILES:-4}; SIZE_MIB=${SIZE_MIB:-256}; ROUNDS=${ROUNDS:-5}; ALGOS=${ALGOS:-sha256 md5}
TMP="$(mktemp -d)"
cleanup() { git worktree remove --force "$TMP/base" >/dev/null 2>&1 || true; rm -rf "$TMP"; }
trap cleanup EXIT
git worktree add --detach "$TMP/base" "$BASE" >/dev/null
[ -e .deps ] && ln -s "$PWD/.deps" "$TMP/base/.deps"
for tree in "$TMP/base" "$PWD"; do
  cmake -S "$tree" -B "$tree/build-bench" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF >/dev/null
  ninja -C "$tree/build-bench" bench_digest >/dev/null
done
OLD="$TMP/base/build-bench/bench/bench_digest"; NEW="$PWD/build-bench/bench/bench_digest"
files=()
for i in $(seq "$NFILES"); do
  head -c $((SIZE_MIB << 20)) /dev/urandom > "$TMP/f$i"; files+=("$TMP/f$i")
done
cat "${files[@]}" > /dev/null # warm: both read the page cache
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for algo in $ALGOS; do
  : > "$TMP/old.txt"; : > "$TMP/new.txt"
  for r in $(seq "$ROUNDS"); do
    for who in old new; do
      bin=$OLD; [ "$who" = new ] && bin=$NEW
      line="$("$bin" --algo "$algo" --workers 1 --quiet "${files[@]}")"
      mbps="$(sed -nE 's/.*mbps=([0-9.]+).*/\1/p' <<<"$line")"
      echo "$algo round $r $who: $mbps MB/s"
      echo "$mbps" >> "$TMP/$who.txt"
    done
  done
  o="$(median < "$TMP/old.txt")"; n="$(median < "$TMP/new.txt")"
  echo "$algo: median new $n MB/s, base $o MB/s, new / base $(awk -v n="$n" -v o="$o" 'BEGIN {printf "%.3f", n / o}')"
done
