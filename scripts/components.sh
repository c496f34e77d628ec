#!/usr/bin/env bash
# One build configuration of the components (docs/components.md): configure build-<config>, build
# it, run its ctest subset; for minimal also show readelf -d (test_minimal_deps checks it).
# usage: scripts/components.sh minimal | no-<component> | all
#   no-<component>: one of no-mlc no-mt no-fetch no-audio no-image no-onnx
#   all: minimal, then each no-<component> in turn (slow: seven builds and test runs)
# Environment: MPK_JOBS (or JOBS; default: nproc), CTEST_ARGS (extra ctest arguments, e.g. "-LE slow").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${MPK_JOBS:-${JOBS:-$(nproc)}}"
comps=(mlc mt fetch audio image onnx)

one() {
  local config="$1" opts=()
  case "$config" in
    minimal) opts=(-DMPK_MINIMAL=ON) ;;
    no-*)
      local c="${config#no-}" ok=0
      for k in "${comps[@]}"; do [ "$k" = "$c" ] && ok=1; done
      [ $ok = 1 ] || { echo "components: unknown component \"$c\" (one of: ${comps[*]})" >&2; exit 2; }
      opts=("-DMPK_WITH_${c^^}=OFF") ;;
    *) echo "usage: $0 minimal | no-<component> | all" >&2; exit 2 ;;
  esac
  local dir="build-$config" t0 t1
  echo "== $config: $dir (${opts[*]})"
  t0=$(date +%s)
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPK_BUILD_BENCH=OFF "${opts[@]}" \
    | grep -E "^-- (components|tests not registered)" || true
  cmake --build "$dir" -- -j"$jobs"
  t1=$(date +%s)
  echo "== $config: built in $((t1 - t0)) s"
  if [ "$config" = minimal ]; then
    readelf -d "$dir/libmodelpkg.so" | grep NEEDED
    ls -l "$(readlink -f "$dir/libmodelpkg.so")"
  fi
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" ${CTEST_ARGS:-}
  echo "== $config: tests done in $(( $(date +%s) - t1 )) s"
}

case "${1:-}" in
  all) one minimal; for c in "${comps[@]}"; do one "no-$c"; done ;;
  minimal|no-*) one "$1" ;;
  *) echo "usage: $0 minimal | no-<component> | all" >&2; exit 2 ;;
esac
