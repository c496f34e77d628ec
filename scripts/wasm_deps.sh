#!/usr/bin/env bash
# Build the WebAssembly build's dependencies from Debian's source packages with Debian's emscripten
# (docs/wasm.md): `apt-get source` (Debian's patches applied by dpkg-source), then CMake under
# emcmake, static libraries installed into PREFIX. No network but Debian's archive; nothing vendored.
#   scripts/wasm_deps.sh PREFIX PACKAGE...      (PACKAGE: jansson yajl zlib)
# Idempotent: PREFIX/.built-PACKAGE marks one done (delete it, or PREFIX, to rebuild).
set -euo pipefail
prefix="$1"; shift
src="$prefix/../src"
mkdir -p "$prefix" "$src"
jobs="${MPK_JOBS:-$(nproc)}"
# Debian's emscripten runs its JS tools (acorn-optimizer) with node and Debian's node-acorn: a node
# from another repository does not search Debian's module directory on its own.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

# Debian's source for PACKAGE into $src, its directory printed. The candidate's version first; a
# security update's source is not always on the mirror, so the release's own version is next.
fetch_source() {
  local pkg="$1" dir
  dir=$(find "$src" -maxdepth 1 -type d -name "$pkg-[0-9]*" -print -quit)
  if [ -z "$dir" ]; then
    (cd "$src" && { apt-get source -q "$pkg" >"$src/$pkg.log" 2>&1 ||
                    apt-get source -q "$pkg/bookworm" >>"$src/$pkg.log" 2>&1; }) || {
      echo "wasm: apt-get source $pkg failed (a deb-src line is needed: scripts/setup.sh --wasm adds one); see $src/$pkg.log" >&2
      exit 1
    }
    dir=$(find "$src" -maxdepth 1 -type d -name "$pkg-[0-9]*" -print -quit)
  fi
  [ -n "$dir" ] || { echo "wasm: no source directory for $pkg under $src" >&2; exit 1; }
  printf '%s\n' "$dir"
}

# One CMake project under emcmake, static: configure, then build (TARGET, or all and install).
build_cmake() {
  local name="$1" dir="$2" target="$3"; shift 3
  local b="$src/build-$name"
  emcmake cmake -S "$dir" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF "$@" >"$src/$name-configure.log" 2>&1 ||
    { echo "wasm: configuring $name failed: $src/$name-configure.log" >&2; exit 1; }
  if [ -n "$target" ]; then
    cmake --build "$b" -j"$jobs" --target "$target" >"$src/$name-build.log" 2>&1
  else
    cmake --build "$b" -j"$jobs" >"$src/$name-build.log" 2>&1 && cmake --install "$b" >>"$src/$name-build.log" 2>&1
  fi || { echo "wasm: building $name failed: $src/$name-build.log" >&2; exit 1; }
}

for pkg in "$@"; do
  [ -e "$prefix/.built-$pkg" ] && continue
  dir=$(fetch_source "$pkg")
  echo "wasm: building $pkg ($(basename "$dir")) with emscripten" >&2
  case "$pkg" in
    jansson)
      build_cmake jansson "$dir" "" -DJANSSON_BUILD_DOCS=OFF -DJANSSON_EXAMPLES=OFF -DJANSSON_WITHOUT_TESTS=ON ;;
    yajl)
      # Only its static library (its tools are not needed); yajl lays out headers and yajl.pc in
      # its build tree, copied from there (the .pc names -lyajl: the static yajl_s is what links).
      build_cmake yajl "$dir" yajl_s
      out="$src/build-yajl/yajl-$(sed -n 's/^Version: //p' "$src"/build-yajl/yajl-*/share/pkgconfig/yajl.pc)"
      mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
      cp -r "$out/include/yajl" "$prefix/include/"
      cp "$out/lib/libyajl_s.a" "$prefix/lib/"
      sed 's/-lyajl$/-lyajl_s/' "$out/share/pkgconfig/yajl.pc" >"$prefix/lib/pkgconfig/yajl.pc" ;;
    zlib)
      # Debian's dfsg source lacks the win32/ files its CMakeLists names: its own configure, static.
      (cd "$dir" && emconfigure ./configure --static --prefix="$prefix" >"$src/zlib-configure.log" 2>&1 &&
        emmake make -j"$jobs" libz.a >"$src/zlib-build.log" 2>&1 &&
        emmake make install >>"$src/zlib-build.log" 2>&1) ||
        { echo "wasm: building zlib failed: $src/zlib-configure.log, $src/zlib-build.log" >&2; exit 1; } ;;
    *) echo "wasm: no recipe for $pkg" >&2; exit 2 ;;
  esac
  touch "$prefix/.built-$pkg"
done
