#!/usr/bin/env bash
# Cross-build modelpkg for another architecture and run the test suite under qemu-user.
#   scripts/cross.sh aarch64|s390x [--no-test] [CTEST ARGS...]
# Installs what is missing (scripts/setup.sh --cross ARCH: the cross gcc, qemu-user-static, the
# target's :arm64/:s390x development packages), configures build-ARCH with
# cmake/toolchain-ARCH.cmake, builds, runs ctest (every test program under the emulator; extra
# arguments go to ctest: -L unit, -R name, ...) and prints the time of each phase (docs/cross.md).
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${1:-}"
case "$arch" in
  aarch64|s390x) shift ;;
  *) echo "usage: $0 aarch64|s390x [--no-test] [ctest arguments, e.g. -L 'unit|conformance' or -R name]" >&2; exit 2 ;;
esac
run_tests=true
if [ "${1:-}" = --no-test ]; then run_tests=false; shift; fi
dir="build-$arch"
jobs="${MPK_JOBS:-$(nproc)}"
now() { date +%s; }
t0=$(now)
scripts/setup.sh --cross "$arch"
t1=$(now)
if [ ! -d ../shared/conformance ] && [ -z "${MPK_SHARED_DIR:-}" ]; then
  echo "cross: ../shared (conformance vectors) not found next to the checkout; set MPK_SHARED_DIR" >&2
  exit 1
fi
python3 scripts/gen_examples.py >/dev/null
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-$arch.cmake" -DMPK_BUILD_TESTS=ON >/dev/null
cmake --build "$dir" -- -j"$jobs"
t2=$(now)
status=0
if $run_tests; then
  echo "== ctest ($arch, under qemu-$arch-static)"
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" || status=$?
fi
t3=$(now)
echo "== cross $arch: install $((t1 - t0)) s, build $((t2 - t1)) s, ctest $((t3 - t2)) s$($run_tests || echo ' (not run)'), exit $status"
exit $status
