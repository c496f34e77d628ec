#!/usr/bin/env bash
# Install into a temporary prefix, then build and run a consumer through pkg-config and through
# CMake's find_package: what the packaging promises. usage: test_install.sh BUILD_DIR
set -euo pipefail
BUILD="$1"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" >/dev/null
PCPREFIX="$TMP/prefix"
# A cross build against a target root (PKG_CONFIG_SYSROOT_DIR, tests/cross.cmake): pkg-config prefixes
# the root to every -I/-L (pkgconf leaves a path already inside it alone), so the pkg-config
# consumers get a copy installed inside the root, as one stages a package for it. (CMake's consumer
# keeps the prefix outside: CMake strips the root from RPATH entries inside it, which then name
# nothing on this host.)
if [ -n "${PKG_CONFIG_SYSROOT_DIR:-}" ]; then
  mkdir -p "$PKG_CONFIG_SYSROOT_DIR/tmp"
  INROOT="$(mktemp -d -p "$PKG_CONFIG_SYSROOT_DIR/tmp")"
  trap 'rm -rf "$TMP" "$INROOT"' EXIT
  PCPREFIX="$INROOT/prefix"
  cmake --install "$BUILD" --prefix "$PCPREFIX" >/dev/null
fi
mapfile -t LIBS < <(find "$PCPREFIX" -name 'libmodelpkg.so')
LIBDIR="$(dirname "${LIBS[0]}")"
pass=0
# A cross build (tests/cross.cmake) sets CC, CMAKE_TOOLCHAIN_FILE (read by cmake), PKG_CONFIG_LIBDIR
# and the emulator the consumers run under; natively these are empty or defaults.
# CC may carry options (a target root's --sysroot=...): split into words.
read -r -a CC <<<"${CC:-cc}"
read -r -a EMU <<<"${MPK_TEST_EMULATOR:-}"

cat > "$TMP/consumer.c" <<'C'
#include <modelpkg.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  char id[MPK_SHA256_ID_SIZE];
  const char *tasks = "{\"chat.completions\":{\"executor\":\"g\",\"inputs\":{\"text\":{\"processor\":\"tokenizer\"}},\"output\":\"text\"}}";
  mpk_error err;
  if (mpk_mlc_interface_id(tasks, strlen(tasks), id, &err)) return 1;
  printf("%s %s\n", mpk_version(), id);
  return strcmp(mpk_version(), MPK_VERSION_STRING) != 0;
}
C
# pkg-config, shared library
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
"${CC[@]}" -o "$TMP/c1" "$TMP/consumer.c" $(pkg-config --cflags --libs modelpkg) -Wl,-rpath,"$LIBDIR"
out="$("${EMU[@]}" "$TMP/c1")" && grep -q '^0\.1\.0 sha256:[0-9a-f]\{64\}$' <<<"$out" && pass=$((pass + 1))
# pkg-config, static library
# The archive, with its dependencies as the .pc's Requires.private names them (so that list must be
# complete), linked as shared libraries: `--static` would ask for libcurl's own static dependencies.
PRIVATE=$(pkg-config --print-requires-private modelpkg | awk '{print $1}')
"${CC[@]}" -o "$TMP/c2" "$TMP/consumer.c" $(pkg-config --cflags modelpkg) "$LIBDIR/libmodelpkg.a" \
  $(pkg-config --libs $PRIVATE) -lpthread -lm
"${EMU[@]}" "$TMP/c2" >/dev/null && pass=$((pass + 1))
# CMake package config
mkdir -p "$TMP/cm"
cat > "$TMP/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(modelpkg 0.1 REQUIRED)
add_executable(consumer ../consumer.c)
target_link_libraries(consumer PRIVATE modelpkg::modelpkg)
CM
cmake -S "$TMP/cm" -B "$TMP/cm/b" -DCMAKE_PREFIX_PATH="$TMP/prefix" >/dev/null
cmake --build "$TMP/cm/b" >/dev/null
"${EMU[@]}" "$TMP/cm/b/consumer" >/dev/null && pass=$((pass + 1))
# The installed CLI runs.
out="$("${EMU[@]}" "$TMP/prefix/bin/modelpkg" --version)" && grep -q '^modelpkg 0\.1\.0$' <<<"$out" && pass=$((pass + 1))
echo "$pass passed, $((4 - pass)) failed"
[ "$pass" -eq 4 ]
