#!/usr/bin/env bash
# Build the WebAssembly build's dependencies from Debian's source packages with Debian's emscripten
# (docs/wasm.md): the source from scripts/deps_source.sh (`apt-get source`, Debian's patches and
# ours), then CMake under emcmake, static libraries installed into PREFIX. No network but Debian's
# archive; nothing vendored.
#   scripts/wasm_deps.sh PREFIX PACKAGE...
# PACKAGE, Debian's source package names: jansson yajl zlib (core), libjpeg-turbo libspng libwebp
# libexif (image); libspng needs zlib first. libexif's source has no configure: autoreconf
# (Debian's autoconf, automake, libtool, autopoint) makes it. (libsoxr is not one of them: the
# audio component compiles it in from .deps/src on every target, cmake/soxr.cmake.)
# Idempotent: PREFIX/.built-PACKAGE marks one done (delete it, or PREFIX, to rebuild).
set -euo pipefail
prefix="$1"; shift
src="$prefix/../src"
mkdir -p "$prefix" "$src"
jobs="${MPK_JOBS:-$(nproc)}"
# Debian's emscripten runs its JS tools (acorn-optimizer) with node and Debian's node-acorn: a node
# from another repository does not search Debian's module directory on its own.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

# One CMake project under emcmake, static: configure, then build (TARGET, or all and install).
build_cmake() {
  local name="$1" dir="$2" target="$3"; shift 3
  local b="$src/build-$name"
  # A fresh build tree (a cache from a failed run keeps its checks). Configure-time checks run
  # programs under node (emscripten's check_type_size returns the size as the exit status); emcmake
  # 3.1.6 passes `--experimental-wasm-threads`, which node 20 rejects (exit 9), and its loader then
  # fetches the .wasm with node's fetch(), which fails on a path (exit 7): libjpeg-turbo's size_t
  # came out "9", then "7" bytes. Node without its fetch reads the file.
  rm -rf "$b"
  emcmake cmake -S "$dir" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    "-DCMAKE_CROSSCOMPILING_EMULATOR=$(command -v node);--no-experimental-fetch" \
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
  dir=$("$(dirname "$0")/deps_source.sh" "$src" "$pkg")
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
    libjpeg-turbo)
      # The libjpeg (v6b) API only, as Debian's libjpeg62-turbo: no SIMD (its x86/Arm assembly), no
      # TurboJPEG API. Its cjpeg/djpeg/jpegtran are built and installed too (no option skips them).
      # Its own GNUInstallDirs takes a relative libdir/includedir as relative to the working
      # directory, not the prefix: absolute ones.
      build_cmake libjpeg-turbo "$dir" "" -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_SIMD=0 \
        -DWITH_TURBOJPEG=0 -DWITH_JAVA=0 -DCMAKE_INSTALL_LIBDIR="$prefix/lib" \
        -DCMAKE_INSTALL_INCLUDEDIR="$prefix/include" ;;
    libspng)
      # Its CMake (Debian builds with meson, which writes spng.pc; CMake writes libspng.pc): the
      # static library only (SPNG_SHARED stays on: off, its CMakeLists fails), without its SSE filters (as Debian: enable_opt=false), against the zlib
      # in PREFIX; installed under Debian's names (libspng.a, spng.pc).
      build_cmake libspng "$dir" spng_static -DSPNG_STATIC=ON -DENABLE_OPT=OFF \
        -DBUILD_EXAMPLES=OFF -DZLIB_INCLUDE_DIR="$prefix/include" -DZLIB_LIBRARY="$prefix/lib/libz.a"
      ver=$(sed -n "s/.*version *: *'\([0-9.]*\)'.*/\1/p;T;q" "$dir/meson.build")
      mkdir -p "$prefix/include" "$prefix/lib/pkgconfig"
      cp "$dir/spng/spng.h" "$prefix/include/"
      cp "$src/build-libspng/libspng_static.a" "$prefix/lib/libspng.a"
      printf '%s\n' "prefix=$prefix" 'includedir=${prefix}/include' 'libdir=${prefix}/lib' '' \
        'Name: spng' 'Description: PNG decoding and encoding library' "Version: $ver" \
        'Requires.private: zlib' 'Libs: -L${libdir} -lspng' 'Libs.private: -lm' \
        'Cflags: -I${includedir}' >"$prefix/lib/pkgconfig/spng.pc" ;;
    libwebp)
      # The decoder and encoder library only: no tools, no SIMD (its CMake's default under
      # emscripten), no threads.
      build_cmake libwebp "$dir" "" -DWEBP_ENABLE_SIMD=OFF -DWEBP_USE_THREAD=OFF \
        -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF -DWEBP_BUILD_DWEBP=OFF \
        -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF -DWEBP_BUILD_VWEBP=OFF \
        -DWEBP_BUILD_WEBPINFO=OFF -DWEBP_BUILD_LIBWEBPMUX=OFF -DWEBP_BUILD_WEBPMUX=OFF \
        -DWEBP_BUILD_EXTRAS=OFF -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_INCLUDEDIR=include ;;
    libexif)
      # Autotools only, and Debian's source has no configure (dh_autoreconf makes it): autoreconf,
      # then its configure under emconfigure (a cross build: its own run test cannot run), static,
      # no NLS, no docs.
      (cd "$dir" && { [ -x configure ] || autoreconf -fi >"$src/libexif-autoreconf.log" 2>&1; } &&
        emconfigure ./configure --host=wasm32-unknown-emscripten --prefix="$prefix" --disable-shared --enable-static --disable-nls \
          --disable-docs >"$src/libexif-configure.log" 2>&1 &&
        emmake make -j"$jobs" -C libexif >"$src/libexif-build.log" 2>&1 &&
        emmake make -C libexif install >>"$src/libexif-build.log" 2>&1 &&
        mkdir -p "$prefix/lib/pkgconfig" && cp libexif.pc "$prefix/lib/pkgconfig/") ||
        { echo "wasm: building libexif failed: $src/libexif-*.log" >&2; exit 1; } ;;
    *) echo "wasm: no recipe for $pkg" >&2; exit 2 ;;
  esac
  touch "$prefix/.built-$pkg"
done
