#!/usr/bin/env bash
# Start-up (issue 22, docs/startup.md): `modelpkg --version` loads at most 5 shared objects (the
# dynamic loader's own count, LD_DEBUG=libs) and none of the dependencies opened on first use; a
# command that needs one (audio resampling: libsoxr) still works and loads it then; with that
# dependency unusable (a broken copy first on LD_LIBRARY_PATH) the command fails with the loader's
# clear message naming it, while --version and check still work.
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

# A dependency opened on first use: libsoxr, audio's resampler. In a build without the audio
# component (docs/components.md) there is none to open: that part is left out, saying so.
BROKEN=()
if has_component "$CLI" audio; then
  # A 0.1 s stereo 44.1 kHz WAV: resampling to 16 kHz needs libsoxr.
  python3 - "$T/a.wav" <<'EOF' || fail "cannot write the WAV"
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(44100)
    w.writeframes(b"".join(struct.pack("<hh", int(8000 * math.sin(i / 20)), 0) for i in range(4410)))
EOF
  AUDIO=(audio "$T/a.wav" --rate 16000 --max-samples 480000)
  LD_DEBUG=libs "$CLI" "${AUDIO[@]}" -o "$T/a.f32" >/dev/null 2>"$T/audio.ld" || fail "audio: exit $?: $(grep -v ': *\(find\|search\|trying\|calling\|init\|$\)' "$T/audio.ld" | tail -3)"
  [ "$(stat -c %s "$T/a.f32")" = $((1600 * 4)) ] || fail "audio wrote $(stat -c %s "$T/a.f32") bytes, not 1600 floats"
  loaded "$T/audio.ld" >"$T/audio.libs"
  soxr=$(grep -m1 'libsoxr' "$T/audio.libs") || fail "audio did not load libsoxr: $(loaded "$T/audio.ld")"
  echo "audio loads $(basename "$soxr") on first use"

  # A broken libsoxr of the same name, found first: dlopen refuses it.
  mkdir "$T/broken"
  echo "not an ELF object" >"$T/broken/$(basename "$soxr")"
  LD_LIBRARY_PATH="$T/broken" "$CLI" "${AUDIO[@]}" -o "$T/b.f32" >/dev/null 2>"$T/broken.err"
  rc=$?
  [ $rc = 1 ] || fail "audio with a broken libsoxr: exit $rc (want 1): $(cat "$T/broken.err")"
  grep -q "libsoxr is not available ($(basename "$soxr"))" "$T/broken.err" || fail "message: $(cat "$T/broken.err")"
  [ ! -e "$T/b.f32" ] || fail "a failed command left its output"
  echo "with it broken: $(head -1 "$T/broken.err")"
  LD_LIBRARY_PATH="$T/broken" "$CLI" --version >/dev/null || fail "--version with a broken libsoxr: exit $?"
  BROKEN=(env LD_LIBRARY_PATH="$T/broken")
else
  echo "audio is off (modelpkg --version): no first-use load of libsoxr to check"
fi
# check works meanwhile: an MT package, or an MLC one in a build without mt.
PKG="$SRC/examples/mt-tiny"
has_component "$CLI" mt || PKG="$SRC/examples/llava-image"
out=$("${BROKEN[@]}" "$CLI" check "$PKG" 2>&1) || fail "check ${BROKEN[*]}: $out"
case $out in *"all checks hold"*) ;; *) fail "check said: $out" ;; esac
echo "PASS"
