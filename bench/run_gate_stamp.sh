#!/usr/bin/env bash
# run_gate_stamp.sh — the load gate with a valid verification stamp against a full hashing pass,
# side by side in one run (issue 18: "verified once, gated always"; docs/mt.md "The verification
# stamp").
#
#   bench/run_gate_stamp.sh                            # from the source tree, after building build-bench
#   NTENSORS=64 TENSOR_MIB=32 REPEAT=7 WORKERS=0 bench/run_gate_stamp.sh
#
# bench_gate_stamp generates an installed-tree-like variant in a temporary directory ON DISK
# (${TMPDIR:-/var/tmp}; removed at the end, also on failure): inference/ with NTENSORS .bin tensors
# of TENSOR_MIB MiB of pseudo-random bytes (default 64 x 32 MiB = 2 GiB) and a handoff map with
# their SHA-256. After one stamped gate that hashes everything and writes the stamp, REPEAT
# interleaved rounds time, each as a runtime pays it (map read + mpk_mt_load_gate + report free):
#   full    the gate without the stamp: every tensor hashed (WORKERS threads; 0: one per CPU, <= 8)
#   stamp   the gate with the valid stamp: nothing hashed (asserted: every tensor accepted by it)
# then changes one tensor (the same bytes rewritten in place; then one byte flipped with size and
# mtime restored, as `touch -d` does) and asserts the stamped gate hashes exactly that tensor.
# Prints medians (a ratio is the median of per-round ratios) and the two criteria of issue 18:
# stamp/full <= 1/200 and stamp <= 5 ms. Exit status 1 when a criterion or an assertion fails.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_gate_stamp}
NTENSORS=${NTENSORS:-64}
TENSOR_MIB=${TENSOR_MIB:-32}
REPEAT=${REPEAT:-7}
WORKERS=${WORKERS:-0}

command -v "$BENCH" >/dev/null || { echo "run_gate_stamp.sh: missing $BENCH (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench bench_gate_stamp)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/mpk-bench-stamp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
need_mib=$((NTENSORS * TENSOR_MIB))
avail_mib=$(df -Pm "$WORK" | awk 'NR==2{print $4}')
if (( avail_mib < need_mib + 1024 )); then
  echo "run_gate_stamp.sh: $WORK has $avail_mib MiB free, needs $need_mib MiB (+1 GiB margin)" >&2; exit 2
fi

echo "== machine"
echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   file system: $(df -PT "$WORK" | awk 'NR==2{print $2}') ($WORK)   memory available: $(awk '/^MemAvailable:/{print int($2/1024)}' /proc/meminfo) MiB"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "variant: $NTENSORS x $TENSOR_MIB MiB   rounds: $REPEAT   workers: $WORKERS (0: one per CPU, at most 8)"
echo "== bench_gate_stamp"
"$BENCH" --tensors "$NTENSORS" --mib "$TENSOR_MIB" --repeat "$REPEAT" --workers "$WORKERS" "$WORK/variant"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
