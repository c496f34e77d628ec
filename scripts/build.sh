#!/usr/bin/env bash
# Configure and build one flavour of modelpkg. usage: scripts/build.sh [release|sanitize|fuzz|tool]
# (tool: the library and the CLI alone, into build/, as the Quick start needs them; release builds
# the tests and benchmarks into the same directory.)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release)  dir=build;          opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPK_BUILD_TESTS=ON -DMPK_BUILD_BENCH=ON) ;;
  tool)     dir=build;          opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPK_BUILD_TESTS=OFF -DMPK_BUILD_BENCH=OFF) ;;
  sanitize) dir=build-sanitize; opts=(-DCMAKE_BUILD_TYPE=Debug -DMPK_SANITIZE=ON) ;;
  fuzz)     dir=build-fuzz;     opts=(-DCMAKE_BUILD_TYPE=Debug -DMPK_FUZZ=ON -DCMAKE_C_COMPILER=clang) ;;
  *) echo "usage: $0 [release|sanitize|fuzz|tool]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${opts[@]}" >/dev/null
cmake --build "$dir" -- -j"$(nproc)"
