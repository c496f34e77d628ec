#!/usr/bin/env bash
# Build the WebAssembly module of the JavaScript package (docs/wasm.md, js/README.md) with Debian's
# emscripten: the dependencies from Debian's source packages (scripts/wasm_deps.sh, into
# .deps/wasm/prefix), the library and js/wasm/api.c into build-wasm/, the module copied to js/dist/.
#   scripts/wasm.sh           the contract module (no media): js/dist/modelpkg-core.{mjs,wasm}, and
#                             the media module (audio, image), loaded on first use: modelpkg-media
#   scripts/wasm.sh core      the contract module alone
# Needs what scripts/setup.sh --wasm installs (emscripten, dpkg-dev, a deb-src line).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v emcc >/dev/null ||
  { echo "wasm: emcc not found (Debian's emscripten): run scripts/setup.sh --wasm" >&2; exit 1; }
[ -r /usr/include/dlpack/dlpack.h ] ||
  { echo "wasm: /usr/include/dlpack/dlpack.h not found (libdlpack-dev): run scripts/setup.sh --wasm" >&2; exit 1; }
# Debian's emscripten runs its JS optimizer with Debian's node-acorn (see wasm_deps.sh).
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
jobs="${MPK_JOBS:-$(nproc)}"
prefix="$PWD/.deps/wasm/prefix"

which="${1:-all}"
case "$which" in core | all) ;; *) echo "usage: $0 [core|all]" >&2; exit 2 ;; esac
deps=(jansson yajl zlib)
[ "$which" = all ] && deps+=(libjpeg-turbo libspng libwebp libexif)
scripts/wasm_deps.sh "$prefix" "${deps[@]}"
# The audio component compiles libsoxr and musl's libm in from Debian's source (cmake/soxr.cmake),
# as the native build does.
[ "$which" = all ] && scripts/deps_source.sh >/dev/null
mkdir -p "$prefix/include/dlpack"
cp /usr/include/dlpack/dlpack.h "$prefix/include/dlpack/" # a header only: Debian's is the one

# build DIR NAME CMAKE_OPTION...: configure and build the module NAME (js/dist/NAME.mjs + .wasm).
build() {
  local dir="$1" name="$2"; shift 2
  mkdir -p "$dir"
  PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" emcmake cmake -S . -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=MinSizeRel -DMPK_BUILD_TESTS=OFF -DMPK_BUILD_BENCH=OFF -DMPK_JS_NAME="$name" \
    -DMPK_WITH_FETCH=OFF -DMPK_WITH_ONNX=OFF "$@" \
    -DCMAKE_FIND_ROOT_PATH="$prefix" -DCMAKE_C_FLAGS="-I$prefix/include" \
    -DCMAKE_EXE_LINKER_FLAGS="" >"$dir/wasm.log" 2>&1 || # link flags are per target (a cached value is reset)
    { echo "wasm: configuring $dir failed: $dir/wasm.log" >&2; exit 1; }
  cmake --build "$dir" -j"$jobs" --target modelpkg_js modelpkg_cli >>"$dir/wasm.log" 2>&1 ||
    { echo "wasm: building $dir failed: $dir/wasm.log" >&2; exit 1; }
  mkdir -p js/dist
  cp "$dir/$name.mjs" "$dir/$name.wasm" js/dist/
  echo "wasm: js/dist/$name.wasm $(stat -c %s "js/dist/$name.wasm") bytes, $(gzip -9c "js/dist/$name.wasm" | wc -c) gzipped" >&2
}

build build-wasm modelpkg-core -DMPK_WITH_AUDIO=OFF -DMPK_WITH_IMAGE=OFF
[ "$which" = all ] && build build-wasm-media modelpkg-media -DMPK_WITH_AUDIO=ON -DMPK_WITH_IMAGE=ON
exit 0
