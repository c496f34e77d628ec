#!/usr/bin/env bash
# The CLI builds against the installed library alone: install the build into a temporary prefix,
# configure src/cli as an outside project through find_package(modelpkg), build it, run it.
# usage: test_cli_standalone.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
# Configured from a copy, outside the source tree: only the installed headers and library exist.
cp -r "$SRC/src/cli" "$TMP/cli"
cmake -S "$TMP/cli" -B "$TMP/b" -G Ninja -DCMAKE_PREFIX_PATH="$TMP/prefix" >"$TMP/configure.log" 2>&1 \
  || fail "configure: $(cat "$TMP/configure.log")"
cmake --build "$TMP/b" >"$TMP/build.log" 2>&1 || fail "build: $(tail -30 "$TMP/build.log")"
CLI="$TMP/b/modelpkg"
[ -x "$CLI" ] || fail "no $CLI"
# It links the installed shared library, not the build's.
# A cross build (tests/cross.cmake: CMAKE_TOOLCHAIN_FILE, read by cmake, and the emulator) asks the
# target's dynamic loader under the emulator what ldd would.
read -r -a EMU <<<"${MPK_TEST_EMULATOR:-}"
if [ ${#EMU[@]} -gt 0 ]; then
  LD_TRACE_LOADED_OBJECTS=1 "${EMU[@]}" "$CLI" >"$TMP/ldd"
else
  ldd "$CLI" >"$TMP/ldd"
fi
grep -q "$TMP/prefix/.*libmodelpkg\.so" "$TMP/ldd" || fail "not linked to the installed libmodelpkg.so: $(cat "$TMP/ldd")"
v=$("${EMU[@]}" "$CLI" --version | sed -n 1p)
[ "$v" = "modelpkg $(sed -n 's/^project(modelpkg VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")" ] || fail "--version: $v"
# One real command: the MLC example package checks clean.
set +e
out=$("${EMU[@]}" "$CLI" check "$SRC/examples/gemma4-audio" 2>&1)
rc=$?
set -e
[ $rc = 0 ] || fail "check exit $rc: $out"
case $out in *"all checks hold"*|*OK*) ;; *) fail "check said: $out" ;; esac
echo "ok: src/cli built alone against the installed modelpkg; --version and check run"
