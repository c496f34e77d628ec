#!/usr/bin/env bash
# Build configurations of the components (docs/components.md): configure build-<config>, build it,
# run its ctest subset; then a summary table (markdown) of every configuration run: build ok, tests
# passed/skipped/failed, the library's size and its readelf -d NEEDED entries (for minimal,
# test_minimal_deps checks them). Exits 1 when a build or a test failed, after running them all.
# usage: scripts/components.sh minimal | no-<component> | all
#   no-<component>: one of no-mlc no-mt no-fetch no-audio no-image no-onnx
#   all: minimal, then each no-<component> in turn (slow: seven builds and test runs; docs/components.md)
# Environment: MPK_JOBS (or JOBS; default: nproc), CTEST_ARGS (extra ctest arguments, e.g. "-LE slow").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${MPK_JOBS:-${JOBS:-$(nproc)}}"
comps=(mlc mt fetch audio image onnx)
rows=()
failed=0

# attr NAME FILE: the first NAME="..." attribute in FILE (ctest's JUnit report: the testsuite's counts).
attr() {
  awk -v k="$1" '/<testsuite/ { on = 1 }
    on && match($0, "[ \t]" k "=\"[0-9]+\"") { print substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 4); exit }
    on && />/ { exit }' "$2"
}

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
  local dir="build-$config" t0 t1 t2 built=yes
  echo "== $config: $dir (${opts[*]})"
  t0=$(date +%s)
  mkdir -p "$dir"
  if cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMPK_BUILD_BENCH=OFF "${opts[@]}" >"$dir/configure.log" 2>&1; then
    grep -E "^-- (components|tests not registered)" "$dir/configure.log" || true
    cmake --build "$dir" -- -j"$jobs" || built=no
  else
    cat "$dir/configure.log"
    built=no
  fi
  t1=$(date +%s)
  echo "== $config: built ($built) in $((t1 - t0)) s"
  if [ $built = no ]; then
    failed=1
    rows+=("| $config | **no** | $((t1 - t0)) | - | - | - | - |")
    return
  fi
  local so junit="$PWD/$dir/ctest-junit.xml" needed size
  so=$(readlink -f "$dir/libmodelpkg.so")
  needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' ')
  # The stripped size: what a runtime ships (the build carries debug information).
  strip -o "$dir/libmodelpkg.stripped" "$so"
  size=$(( ($(stat -c %s "$dir/libmodelpkg.stripped") + 1023) / 1024 ))
  rm -f "$dir/libmodelpkg.stripped" "$junit"
  echo "== $config: libmodelpkg.so $size KiB stripped; NEEDED: $needed"
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" --output-on-failure --output-junit "$junit" -j"$jobs" ${CTEST_ARGS:-} || failed=1
  t2=$(date +%s)
  echo "== $config: tests done in $((t2 - t1)) s"
  local n f s
  n=$(attr tests "$junit"); f=$(attr failures "$junit"); s=$(attr skipped "$junit")
  [ -n "$n" ] && [ -n "$f" ] && [ -n "$s" ] || { echo "components: no counts in $junit" >&2; failed=1; n=0; f='?'; s='?'; }
  [ "$f" = 0 ] || failed=1
  rows+=("| $config | yes | $((t1 - t0)) | $((n - ${f/\?/0} - ${s/\?/0})) / $s / $f | $((t2 - t1)) | $size | ${needed% } |")
}

t_all=$(date +%s)
case "${1:-}" in
  all) one minimal; for c in "${comps[@]}"; do one "no-$c"; done ;;
  minimal|no-*) one "$1" ;;
  *) echo "usage: $0 minimal | no-<component> | all" >&2; exit 2 ;;
esac

echo
echo "scripts/components.sh ${1}${CTEST_ARGS:+ (CTEST_ARGS=$CTEST_ARGS)}: $(( $(date +%s) - t_all )) s, $jobs jobs"
echo
echo "| config | built | build s | tests passed / skipped / failed | tests s | libmodelpkg.so KiB (stripped) | NEEDED |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $failed
