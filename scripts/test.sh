#!/usr/bin/env bash
# The whole test suite: install what is missing, build the WebAssembly module (scripts/wasm.sh), then
# build and run every test twice, plainly and under AddressSanitizer + UndefinedBehaviorSanitizer,
# then the unit and conformance tests of an AArch64 cross build under qemu. Needs ../shared next to the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
if [ ! -d ../shared/conformance ] && [ -z "${MPK_SHARED_DIR:-}" ]; then
  echo "test: ../shared (conformance vectors) not found next to the checkout; set MPK_SHARED_DIR" >&2
  exit 1
fi
python3 scripts/gen_examples.py >/dev/null
# The JavaScript package's WebAssembly module (js/dist/), which test_js runs in the release ctest.
scripts/wasm.sh
for flavour in release sanitize; do
  scripts/build.sh "$flavour"
  dir=build; [ "$flavour" = sanitize ] && dir=build-sanitize
  echo "== ctest ($flavour)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
done

# ---- components (docs/components.md): the minimal build (core + mt) and its test subset, readelf -d
# checked by test_minimal_deps. Each one-component-off build is scripts/components.sh all (not here:
# it is six more builds). MPK_TEST_COMPONENTS=none skips this block.
if [ "${MPK_TEST_COMPONENTS:-minimal}" = minimal ]; then
  scripts/components.sh minimal
fi

# AArch64, run under emulation (docs/cross.md): a cross build's unit and conformance tests under
# qemu-aarch64-static (scripts/cross.sh aarch64 alone runs the whole suite).
echo "== ctest (aarch64 under qemu: unit, conformance)"
scripts/cross.sh aarch64 -L 'unit|conformance'
