#!/usr/bin/env bash
# run_hash.sh — issue 22: the built-in SHA-256 (SHA-NI / ARMv8 / portable C) and MD5 (portable C)
# against OpenSSL's libcrypto, side by side in one run (bench/bench_hash.c).
#
#   bench/run_hash.sh                        # from the source tree, after building build-bench
#   SIZE_MIB=1024 ROUNDS=5 bench/run_hash.sh
#
# One buffer of SIZE_MIB MiB of pseudo-random bytes in memory (no I/O), hashed by every
# implementation this build and CPU have, through the library's one hasher in 1 MiB updates;
# ROUNDS interleaved rounds with the order rotated each round. Prints MB/s per round, medians, the
# median of per-round ratios built-in / OpenSSL, and one verdict per target (>= 0.9 for SHA-256
# with the CPU's SHA instructions, >= 0.9 for MD5). Needs a build with OpenSSL (MPK_HASH=openssl,
# the default where libssl-dev is installed).
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_hash}
SIZE_MIB=${SIZE_MIB:-1024}
ROUNDS=${ROUNDS:-5}

command -v "$BENCH" >/dev/null || { echo "run_hash.sh: missing $BENCH (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench bench_hash)" >&2; exit 2; }

echo "== machine"
echo "nproc: $(nproc)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')   sha_ni: $(grep -qw sha_ni /proc/cpuinfo && echo yes || echo no)"
echo "kernel: $(uname -r)   openssl: $(openssl version 2>/dev/null | cut -d' ' -f2 || echo '?')   cc: $(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null) $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$BENCH" "$SIZE_MIB" "$ROUNDS"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
