#!/usr/bin/env bash
# Configure and build one flavour of modelpkg. usage: scripts/build.sh [release|sanitize|fuzz]
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release)  dir=build;          opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  sanitize) dir=build-sanitize; opts=(-DCMAKE_BUILD_TYPE=Debug -DMPK_SANITIZE=ON) ;;
  fuzz)     dir=build-fuzz;     opts=(-DCMAKE_BUILD_TYPE=Debug -DMPK_FUZZ=ON -DCMAKE_C_COMPILER=clang) ;;
  *) echo "usage: $0 [release|sanitize|fuzz]" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -G Ninja "${opts[@]}" >/dev/null
cmake --build "$dir" -- -j"$(nproc)"
