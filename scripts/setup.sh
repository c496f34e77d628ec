#!/usr/bin/env bash
# Install the Debian 12 packages modelpkg needs, if any are missing.
#   scripts/setup.sh          what building the library and the tool needs (the Quick start), and the
#                             Debian sources the audio component compiles in (scripts/deps_source.sh:
#                             libsoxr and musl into .deps/src, with a deb-src line if none is configured)
#   scripts/setup.sh --test   that, plus every program and package the test suite uses, then the npm
#                             packages the tests need (scripts/deps_node.sh, into .deps/)
#   scripts/setup.sh --bench  the Quick start's, plus the peers and tools bench/ runs against
#                             (bench/README.md): nothing the library, the tool or the tests need
#   scripts/setup.sh --wasm   the Quick start's, plus what scripts/wasm.sh needs: Debian's emscripten
#                             (the WebAssembly build's dependencies are built from Debian's source
#                             packages), node (docs/wasm.md)
#   scripts/setup.sh --cross aarch64|s390x
#                             a cross toolchain, qemu-user-static and the target's development packages
#                             (multiarch :arm64/:s390x) for scripts/cross.sh (docs/cross.md)
# Idempotent: installs nothing when everything is there. Needs root (or sudo) only to install.
set -euo pipefail
cd "$(dirname "$0")/.."
want_tests=false
want_bench=false
want_wasm=false
cross_arch=""
case "${1:-}" in
  --test) want_tests=true ;;
  --bench) want_bench=true ;;
  --wasm) want_wasm=true ;;
  --cross) cross_arch="${2:-}" ;;
  "") ;;
  *) echo "usage: $0 [--test | --bench | --wasm | --cross aarch64|s390x]" >&2; exit 2 ;;
esac

PACKAGES=(
  gcc make cmake ninja-build pkg-config      # toolchain (CMake >= 3.25)
  libjansson-dev libssl-dev                  # JSON, SHA-256 (OpenSSL libcrypto)
  libyajl-dev                                # JSON lexer under core/json_scan.c (trees stay jansson's)
  libcurl4-openssl-dev                       # mt install: http(s) sources (libcurl)
  dpkg-dev                                   # apt-get source: libsoxr and musl's libm, compiled into the audio component (cmake/soxr.cmake)
  zlib1g-dev                                 # objfile: gzip-compressed library archives (MLC's .tar)
  libdlpack-dev                              # dlpack/dlpack.h (DLTensor export of tensor views)
  python3                                    # example generator (standard library only)
  libjpeg62-turbo-dev libspng-dev libwebp-dev # image: JPEG (DCT-domain scaling), PNG, WebP decoders
  libexif-dev                                # image: EXIF orientation
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev # mt graph: C reader generated from Debian's onnx.proto
)
TEST_PACKAGES=(
  libcmocka-dev                              # unit tests
  nginx curl                                 # mt install tests: a real HTTP server on 127.0.0.1, polled with curl
  chromium                                   # the JavaScript package in headless Chromium (js/test, puppeteer-core from npm)
  clang libclang-rt-14-dev                   # libFuzzer targets (optional build, MPK_FUZZ=ON)
  lld llvm                                   # test libraries in every container (tests/tools/make_tvm_lib.py: wasm-ld, ld.lld, ld64.lld, llvm-ar)
  python3-numpy python3-onnx                 # the merge's ONNX Runtime test: models and expected values
  python3-pytest python3-setuptools python3-wheel python3-pip python3-mypy # the Python binding (python/): its pytest suite, pip install --no-build-isolation ./python, mypy --strict
  imagemagick python3-pil libjpeg-turbo-progs # image tests and bench: synthetic images, Pillow, djpeg
  fonts-dejavu-core                          # the font ImageMagick draws the test images' text with
  sox espeak-ng                              # audio quality script and bench: speech, sox -v reference
  util-linux procps                          # prlimit and ps in the hostile-input tests
  wabt                                       # mlc embed test: wasm-validate checks the rewritten libraries
  llvm lld binutils tar gzip                 # objfile tests: llvm-ar, llvm-lipo, ld.lld, ld64.lld, GNU ar build test objects and archives
)
BENCH_PACKAGES=(
  nginx curl time                            # install benches: the server, curl the peer, /usr/bin/time for peak RSS
  aria2                                      # bench/run_mlc_install.sh: aria2c -x4 -s4, the multi-connection peer
  libjpeg-turbo-progs                        # djpeg: the peer of run_image.sh, run_image_process.sh, run_startup.sh
  imagemagick fonts-dejavu-core              # scripts/gen_images.sh: the image benches' inputs
  python3-pil python3-numpy sox              # the Python peers (Pillow, numpy) of the image and audio benches; sox
  valgrind                                   # run_image_process.sh: instruction counts under callgrind
)
# Cross builds (scripts/cross.sh): the host's build tools and test programs (protoc-c and onnx.proto,
# nginx, python3, node: the tests run them natively), the cross compiler, the emulator, and each
# library the build links as the target's multiarch development package.
if [ -n "$cross_arch" ]; then
  case "$cross_arch" in
    aarch64) debarch=arm64 ;;
    s390x) debarch=s390x ;;
    *) echo "setup: --cross aarch64|s390x (not '$cross_arch')" >&2; exit 2 ;;
  esac
  want_tests=true
  CROSS_PACKAGES=(gcc-$cross_arch-linux-gnu qemu-user-static)
  # s390x: a root unpacked from the .debs (scripts/cross_sysroot.sh, below) instead of multiarch.
  [ "$cross_arch" = s390x ] || for p in libjansson-dev libyajl-dev libcurl4-openssl-dev zlib1g-dev libssl-dev \
           libjpeg62-turbo-dev libspng-dev libwebp-dev libexif-dev libprotobuf-c-dev libcmocka-dev \
           libstdc++6; do # libstdc++6: ONNX Runtime's arm64 library (npm) needs it at run time
    CROSS_PACKAGES+=("$p:$debarch")
  done
fi
# The WebAssembly build (scripts/wasm.sh): the test suite builds and tests it too.
WASM_PACKAGES=(
  emscripten                                 # emcc (Debian's 3.1.6; builds offline)
  autoconf automake libtool autopoint        # libexif's source has no configure: autoreconf makes it
)
$want_tests && want_wasm=true
$want_tests && PACKAGES+=("${TEST_PACKAGES[@]}")
$want_wasm && PACKAGES+=("${WASM_PACKAGES[@]}")
[ -n "$cross_arch" ] && PACKAGES+=("${CROSS_PACKAGES[@]}")
$want_bench && PACKAGES+=("${BENCH_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  case "$status" in *"install ok installed"*) ;; *) missing+=("$p") ;; esac
done
# Node.js runs ONNX Runtime in the merge test. Asked for by command, not by package: a machine may
# have it from another repository (whose nodejs brings npm, and conflicts with Debian's npm).
if $want_tests || $want_wasm; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # A foreign architecture's packages need it added before the package lists are read.
  foreign=$(dpkg --print-foreign-architectures)
  if [ -n "$cross_arch" ] && ! grep -qx "$debarch" <<<"$foreign"; then
    $SUDO dpkg --add-architecture "$debarch"
  fi
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}"
fi
# apt-get source (scripts/deps_source.sh: the audio component's libsoxr and libm on every build; the
# WebAssembly build's dependencies) needs deb-src lines: mirrored from the deb ones into a file of
# our own when none is configured, then the package lists read again.
targets="$(apt-get indextargets --format '$(CREATED_BY)' 2>/dev/null || true)"
if ! grep -qx Sources <<<"$targets"; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    echo "setup: adding deb-src entries (/etc/apt/sources.list.d/modelpkg-deb-src.sources)" >&2
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
      $SUDO tee /etc/apt/sources.list.d/modelpkg-deb-src.sources >/dev/null
  else
    echo "setup: adding deb-src lines (/etc/apt/sources.list.d/modelpkg-deb-src.list)" >&2
    lists=()
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && lists+=("$f"); done
    [ ${#lists[@]} -gt 0 ] || { echo "setup: no apt sources found to mirror as deb-src" >&2; exit 1; }
    sed -n 's/^deb /deb-src /p' "${lists[@]}" | $SUDO tee /etc/apt/sources.list.d/modelpkg-deb-src.list >/dev/null
  fi
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -q
fi
if [ "$cross_arch" = s390x ]; then scripts/cross_sysroot.sh s390x "$PWD/.deps/sysroot-s390x"; fi
# The sources the audio component compiles in, for every build of it (native, cross, WebAssembly).
scripts/deps_source.sh >/dev/null
# The tests' npm packages: onnxruntime-node (the merge's ONNX Runtime check), WebLLM's bundle (the
# reference the URL differential test, test_url_diff, runs against) and TypeScript (js/test).
if $want_tests; then scripts/deps_node.sh && scripts/deps_node.sh webllm && scripts/deps_node.sh js; fi
