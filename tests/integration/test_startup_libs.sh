#!/usr/bin/env bash
# Start-up (issue 22, docs/startup.md): `modelpkg --version` loads at most 5 shared objects (the
# dynamic loader's own count, LD_DEBUG=libs) and none of the dependencies opened on first use; a
# command that needs one (a PNG: libspng) still works and loads it then; with that dependency
# unusable (a broken copy first on LD_LIBRARY_PATH) the command fails with the loader's clear
# message naming it, while --version and check still work. `check --help` and a check that neither
# hashes nor reads graphs load what --version loads; a hashing check opens libcrypto only in an
# OpenSSL build. Audio resampling loads nothing: libsoxr is built in.
# usage: test_startup_libs.sh MODELPKG SOURCE_DIR [LIBMODELPKG]
set -uo pipefail
CLI=$1
SRC=$2
LIB=${3:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# loaded FILE: the objects whose initialisers the dynamic loader ran (one per shared object).
loaded() { sed -n 's/.*calling init: //p' "$1"; }

# The budget is 5 (issue 22; ld.so, libc, libm where it is linked (docs/startup.md, "libm"), and
# libmodelpkg unless the CLI links it in). jansson and yajl are the
# components part's to link statically (docs/components.md); while the library still needs either
# as a shared object, each one it needs is counted on top, and said so.
budget=5
if [ -n "$LIB" ] && command -v readelf >/dev/null; then
  readelf -d "$LIB" >"$T/dynamic" || fail "readelf -d $LIB"
  for j in libjansson libyajl; do
    if grep -q "NEEDED.*\[$j\.so" "$T/dynamic"; then
      budget=$((budget + 1))
      echo "note: libmodelpkg still needs $j as a shared object: budget $budget"
    fi
  done
fi

LD_DEBUG=libs "$CLI" --version >"$T/version.out" 2>"$T/version.ld" || fail "--version: exit $?"
grep -q '^modelpkg ' "$T/version.out" || fail "--version printed: $(cat "$T/version.out")"
loaded "$T/version.ld" >"$T/version.libs"
n=$(wc -l <"$T/version.libs")
[ "$n" -gt 0 ] || fail "LD_DEBUG=libs reported nothing (is this a dynamic build?): $(head -5 "$T/version.ld")"
echo "modelpkg --version loads $n shared objects:"
sed 's/^/  /' "$T/version.libs"
[ "$n" -le "$budget" ] || fail "--version loads $n shared objects, more than $budget"
lazy='libcurl|libsoxr|libjpeg|libspng|libwebp|libexif|libz\.|libprotobuf-c|libgnutls|libssh|libldap|libkrb5'
if grep -E "$lazy" "$T/version.libs"; then fail "--version loads a dependency that is opened on first use"; fi

# The start of `check` is --version's (docs/startup.md, "check"): the command, its options and a
# check that neither hashes nor reads graphs load nothing more; hashing opens the hash library on
# first use (libcrypto under the default OpenSSL, nothing with the built-in code).
LD_DEBUG=libs "$CLI" check --help >/dev/null 2>"$T/help.ld" || fail "check --help: exit $?"
loaded "$T/help.ld" >"$T/help.libs"
cmp -s "$T/help.libs" "$T/version.libs" || fail "check --help loads $(tr '\n' ' ' <"$T/help.libs"), not --version's"
if has_component "$CLI" mt; then
  CPKG="$SRC/examples/mt-tiny"
  LD_DEBUG=libs "$CLI" check "$CPKG" --no-hash --no-graph >/dev/null 2>"$T/nohash.ld" || fail "check --no-hash --no-graph: exit $?"
  loaded "$T/nohash.ld" >"$T/nohash.libs"
  if grep -E "libcrypto|$lazy" "$T/nohash.libs"; then fail "check --no-hash --no-graph loads a dependency it does not use"; fi
  echo "check --help and check --no-hash --no-graph load what --version does ($(wc -l <"$T/nohash.libs") shared objects)"
else
  CPKG="$SRC/examples/llava-image" # an MLC check always hashes (its identities are sha256: ids)
  echo "mt is off (modelpkg --version): check --help loads what --version does; no check without hashing to look at"
fi
LD_DEBUG=libs "$CLI" check "$CPKG" >/dev/null 2>"$T/hash.ld" || fail "check: exit $?"
hash_libs=$(loaded "$T/hash.ld")
version=$("$CLI" --version)
if [[ $version == *$'\nhashing: openssl'* ]]; then
  [[ $hash_libs == *libcrypto* ]] || fail "check hashed without opening libcrypto, yet --version says openssl"
  echo "check opens libcrypto when it hashes"
elif [[ $hash_libs == *libcrypto* ]]; then
  fail "check opened libcrypto in a build hashing with its own code: $hash_libs"
fi

# Audio's resampler, libsoxr, is compiled into the library (cmake/soxr.cmake): resampling works
# and loads no shared object for it. In a build without the audio component (docs/components.md)
# that part is left out, saying so.
if has_component "$CLI" audio; then
  # A 0.1 s stereo 44.1 kHz WAV, resampled to 16 kHz.
  python3 - "$T/a.wav" <<'EOF' || fail "cannot write the WAV"
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(44100)
    w.writeframes(b"".join(struct.pack("<hh", int(8000 * math.sin(i / 20)), 0) for i in range(4410)))
EOF
  LD_DEBUG=libs "$CLI" audio "$T/a.wav" --rate 16000 --max-samples 480000 -o "$T/a.f32" >/dev/null 2>"$T/audio.ld" ||
    fail "audio: exit $?: $(grep -v ': *\(find\|search\|trying\|calling\|init\|$\)' "$T/audio.ld" | tail -3)"
  [ "$(stat -c %s "$T/a.f32")" = $((1600 * 4)) ] || fail "audio wrote $(stat -c %s "$T/a.f32") bytes, not 1600 floats"
  loaded "$T/audio.ld" >"$T/audio.libs"
  if grep 'libsoxr' "$T/audio.libs"; then fail "audio loaded a libsoxr: it is built in"; fi
  echo "audio resamples with the built-in libsoxr ($(wc -l <"$T/audio.libs") shared objects loaded in all)"
else
  echo "audio is off (modelpkg --version): no resampling to check"
fi

# A dependency opened on first use: libspng, the image component's PNG decoder. Without the image
# component there is none to open: that part is left out, saying so.
BROKEN=()
if has_component "$CLI" image; then
  # An 8x8 RGB PNG, written with the standard library.
  python3 - "$T/a.png" <<'EOF' || fail "cannot write the PNG"
import struct, sys, zlib
def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = b"".join(b"\x00" + bytes(v for x in range(8) for v in (x * 30, y * 30, 128)) for y in range(8))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
                               + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
EOF
  IMAGE=(image "$T/a.png" --mode stretch --width 4 --height 4)
  LD_DEBUG=libs "$CLI" "${IMAGE[@]}" -o "$T/a.raw" >/dev/null 2>"$T/image.ld" ||
    fail "image: exit $?: $(grep -v ': *\(find\|search\|trying\|calling\|init\|$\)' "$T/image.ld" | tail -3)"
  [ "$(stat -c %s "$T/a.raw")" = 48 ] || fail "image wrote $(stat -c %s "$T/a.raw") bytes, not 4x4x3"
  loaded "$T/image.ld" >"$T/image.libs"
  spng=$(grep -m1 'libspng' "$T/image.libs") || fail "image did not load libspng: $(loaded "$T/image.ld")"
  echo "image loads $(basename "$spng") on first use"

  # A broken libspng of the same name, found first: dlopen refuses it.
  mkdir "$T/broken"
  echo "not an ELF object" >"$T/broken/$(basename "$spng")"
  LD_LIBRARY_PATH="$T/broken" "$CLI" "${IMAGE[@]}" -o "$T/b.raw" >/dev/null 2>"$T/broken.err"
  rc=$?
  [ $rc = 1 ] || fail "image with a broken libspng: exit $rc (want 1): $(cat "$T/broken.err")"
  grep -q "libspng is not available ($(basename "$spng"))" "$T/broken.err" || fail "message: $(cat "$T/broken.err")"
  [ ! -e "$T/b.raw" ] || fail "a failed command left its output"
  echo "with it broken: $(head -1 "$T/broken.err")"
  LD_LIBRARY_PATH="$T/broken" "$CLI" --version >/dev/null || fail "--version with a broken libspng: exit $?"
  BROKEN=(env LD_LIBRARY_PATH="$T/broken")
else
  echo "image is off (modelpkg --version): no first-use load of libspng to check"
fi

# check works meanwhile: an MT package, or an MLC one in a build without mt.
out=$("${BROKEN[@]}" "$CLI" check "$CPKG" 2>&1) || fail "check ${BROKEN[*]}: $out"
case $out in *"all checks hold"*) ;; *) fail "check said: $out" ;; esac
echo "PASS"
