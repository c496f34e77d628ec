#!/usr/bin/env bash
# modelpkg audio end to end: a stereo 44.1 kHz WAV through the gemma4-audio example's processor,
# the raw float32 output, the JSON report, a refusal with WebLLM's message, the base64 text input.
set -euo pipefail
CLI=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1 s of 44.1 kHz stereo 16-bit (a 440 Hz tone left, silence right), written with printf.
/usr/bin/python3 - "$T/st.wav" <<'PY'
import math, struct, sys
sr, n = 44100, 44100
pcm = b"".join(struct.pack("<hh", int(16384 * math.sin(2 * math.pi * 440 * i / sr)), 0) for i in range(n))
hdr = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE" + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 2, sr, sr * 4, 4, 16)
open(sys.argv[1], "wb").write(hdr + b"data" + struct.pack("<I", len(pcm)) + pcm)
PY

# The processor: the gemma4-audio example's, read from its MLC package. Built without the mlc
# component (docs/components.md) --package is refused naming it, and the same processor is given as
# options: every other case is the frontend's own.
PROC=(--package "$SRC/examples/gemma4-audio")
if ! has_component "$CLI" mlc; then
  refused_without mlc "$CLI" audio "$T/st.wav" "${PROC[@]}" -o "$T/out.f32" || fail "--package without mlc"
  [ ! -e "$T/out.f32" ] || fail "--package without mlc: output written"
  echo "mlc is off: --package refused naming it; the processor given as --rate 16000 --min-samples 161 --max-samples 480000"
  PROC=(--rate 16000 --min-samples 161 --max-samples 480000)
fi
out=$("$CLI" audio "$T/st.wav" "${PROC[@]}" -o "$T/out.f32")
echo "$out"
grep -q "WAV PCM integer (1) 16-bit, 44100 Hz, 2 channels, 44100 frames" <<<"$out" || fail "source line"
grep -q "16000 samples, mono float32 at 16000 Hz" <<<"$out" || fail "output line"
[ "$(stat -c %s "$T/out.f32")" = 64000 ] || fail "output size"
# The mean of the two channels: a 440 Hz tone at amplitude 0.25; check it from the file.
if case_needs_py numpy "the 440 Hz amplitude"; then
/usr/bin/python3 - "$T/out.f32" <<'PY' || fail "440 Hz amplitude"
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype="<f4")
m = x[4000:12000]
t = np.arange(4000, 12000) / 16000
a = 2 * abs(np.sum(m * np.exp(-2j * np.pi * 440 * t))) / len(m)
assert abs(a - 0.25) < 1e-3, a
PY
fi

"$CLI" audio "$T/st.wav" "${PROC[@]}" --json >"$T/r.json"
/usr/bin/python3 -c "
import json,sys; r=json.load(open('$T/r.json'))
assert list(r)==['modelpkg_version','command','ok','source','processor','output','problems','notes'], list(r)
assert r['command']=='audio' and r['ok'] is True and r['problems']==[] and r['notes']==[], r
assert r['source']['codec_name']=='PCM integer' and r['source']['codec_tag']==1 and r['source']['streaming'] is False, r
assert r['source']['channels']==2 and r['source']['frames']==44100, r
assert r['output']['samples']==16000 and r['output']['resampled'] is True, r
assert r['processor']['min_samples']==161 and r['processor']['max_samples']==480000, r
"

# Too long for the processor: WebLLM's message, exit 1.
set +e
"$CLI" audio "$T/st.wav" --rate 16000 --max-samples 100 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] || fail "exit $rc for a refused input"
grep -q "canonical audio must contain 1..100 samples; got 16000" "$T/err" || fail "message: $(cat "$T/err")"

# The same recording as a data URL.
{ printf 'data:audio/x-wav;base64,'; base64 -w0 "$T/st.wav"; } >"$T/st.txt"
out=$("$CLI" audio "$T/st.txt" --base64 --rate 16000 --max-samples 480000) || fail "data URL: exit $?"
grep -q "16000 samples" <<<"$out" || fail "data URL"

# ---- the output contract (docs/CLI.md "Output files"), private nodes only.
A=("$T/st.wav" --rate 16000 --max-samples 480000)
# -o - into a pipe: the same bytes as the file; the report on stderr.
timeout 10 "$CLI" audio "${A[@]}" -o - 2>"$T/rep" | cmp - "$T/out.f32" || fail "-o - | cmp"
grep -q "written: standard output (64000 bytes)" "$T/rep" || fail "-o - report: $(cat "$T/rep")"
# -o LINK-TO-STDOUT > file: the link stays, the file gets the samples only.
ln -s /proc/self/fd/1 "$T/stdout-link"
timeout 10 "$CLI" audio "${A[@]}" -o "$T/stdout-link" >"$T/t.f32" 2>/dev/null
[ -L "$T/stdout-link" ] && cmp "$T/t.f32" "$T/out.f32" || fail "-o link to stdout"
# A FIFO with its reader.
mkfifo "$T/fifo"
timeout 10 cat "$T/fifo" >"$T/from_fifo" &
timeout 10 "$CLI" audio "${A[@]}" -o "$T/fifo" >/dev/null
wait
[ -p "$T/fifo" ] && cmp "$T/from_fifo" "$T/out.f32" || fail "FIFO output"
# --json with the samples on stdout: a usage error, and still one JSON document.
set +e
"$CLI" audio "${A[@]}" -o - --json >"$T/j.json" 2>"$T/err"; rc=$?
set -e
[ $rc = 2 ] && grep -q "prints its document on standard output" "$T/err" || fail "--json -o -: exit $rc"
/usr/bin/python3 -c "
import json; r=json.load(open('$T/j.json'))
assert r['command']=='audio' and r['ok'] is False and r['source'] is None and r['output'] is None, r
assert r['problems'][0]['code']=='invalid-argument', r
" || fail "--json -o - document"

# ---- streaming WAVs (data size 0xFFFFFFFF or 0, as ffmpeg and arecord write to a pipe): read to the
# end of the file, the samples those of the same file with its sizes filled in, with a note.
/usr/bin/python3 - "$T" <<'PY'
import struct, sys
d = sys.argv[1]
w = bytearray(open(f"{d}/st.wav", "rb").read())
k = w.find(b"data")
for name, size in (("ff", 0xFFFFFFFF), ("zero", 0)):
    v = bytearray(w)
    v[4:8] = struct.pack("<I", size)
    v[k + 4:k + 8] = struct.pack("<I", size)
    open(f"{d}/{name}.wav", "wb").write(v + (b"\x01\x02\x03" if size else b""))  # and a cut-off frame
# A-law, named; a data chunk of size 0 followed by a LIST chunk is read as samples, not skipped.
alaw = b"RIFF" + struct.pack("<I", 38) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 6, 1, 8000, 8000, 1, 8) + b"data" + struct.pack("<I", 2) + b"\x01\x02"
open(f"{d}/alaw.wav", "wb").write(alaw)
# A float WAV with a NaN in its last frame: refused before any sample reaches standard output.
n = 48000
pcm = struct.pack(f"<{n}f", *([0.25] * (n - 1) + [float("nan")]))
fl = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, 16000, 64000, 4, 32) + b"data" + struct.pack("<I", len(pcm)) + pcm
open(f"{d}/nan.wav", "wb").write(fl)
PY
for name in ff zero; do
  out=$(timeout 10 "$CLI" audio "$T/$name.wav" "${A[@]:1}" -o "$T/$name.f32")
  cmp "$T/$name.f32" "$T/out.f32" || fail "streaming WAV ($name): samples differ"
  grep -q "note:    streaming WAV: the data chunk declares $([ $name = ff ] && echo 0xFFFFFFFF || echo 0) bytes" <<<"$out" ||
    fail "streaming note ($name): $out"
  "$CLI" audio "$T/$name.wav" "${A[@]:1}" --json | /usr/bin/python3 -c "
import json,sys; r=json.load(sys.stdin)
assert r['ok'] and r['source']['streaming'] is True and r['notes'][0].startswith('streaming WAV'), r
" || fail "streaming JSON ($name)"
done
set +e
"$CLI" audio "$T/alaw.wav" "${A[@]:1}" --json >"$T/j.json" 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "WAV codec 6 is unsupported; use PCM integer or IEEE float WAV (the file's codec is A-law (6))" "$T/err" ||
  fail "A-law: exit $rc, $(cat "$T/err")"
/usr/bin/python3 -c "
import json; r=json.load(open('$T/j.json'))
assert list(r)==['modelpkg_version','command','ok','source','processor','output','problems','notes'], list(r)
assert r['ok'] is False and r['source'] is None and 'A-law (6)' in r['problems'][0]['message'], r
assert r['problems'][0]['file'].endswith('alaw.wav') and r['problems'][0]['code']=='unsupported', r
" || fail "A-law JSON refusal"
set +e
timeout 10 "$CLI" audio "$T/nan.wav" "${A[@]:1}" -o - >"$T/nan.f32" 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "non-finite sample" "$T/err" && [ ! -s "$T/nan.f32" ] || fail "NaN to stdout: exit $rc, $(stat -c %s "$T/nan.f32") bytes"
echo old >"$T/keep.f32"
set +e
"$CLI" audio "$T/nan.wav" "${A[@]:1}" -o "$T/keep.f32" 2>/dev/null; rc=$?
set -e
[ $rc = 1 ] && [ "$(cat "$T/keep.f32")" = old ] || fail "refusal replaced the output"
left=$(ls "$T"); grep -q '\.tmp\.' <<<"$left" && fail "temporary file left behind"

# ---- memory bounded by the work, not the input: 20 minutes of 22.05 kHz mono (53 MB in, 77 MB out)
# streamed to a file; the peak resident set stays well below the output (it was 100 MiB, the output
# held whole; streamed it is about 33 MiB: a batch of resampling segments and soxr's tables per
# thread). Not under AddressSanitizer, whose shadow and quarantine count too.
if ! grep -q __asan_init "$CLI" && case_needs_py numpy "20 minutes streamed in bounded memory"; then
/usr/bin/python3 - "$T/long.wav" <<'PY'
import struct, sys
import numpy as np
sr, secs = 22050, 1200
one = (np.sin(np.arange(sr) * 2 * np.pi * 440 / sr) * 8000 + np.random.default_rng(1).integers(-500, 500, sr)).astype("<i2").tobytes()
with open(sys.argv[1], "wb") as f:
    n = len(one) * secs
    f.write(b"RIFF" + struct.pack("<I", 36 + n) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, sr, sr * 2, 2, 16) + b"data" + struct.pack("<I", n))
    for _ in range(secs): f.write(one)
PY
/usr/bin/python3 - "$CLI" "$T" <<'PY' || fail "memory"
import os, subprocess, sys
cli, d = sys.argv[1], sys.argv[2]
def peak_mib(args):  # one child's own peak resident set
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0, (args, st)
    return ru.ru_maxrss // 1024
peak = peak_mib([cli, "audio", f"{d}/long.wav", "--rate", "16000", "--max-samples", "100000000", "-o", f"{d}/long.f32"])
out = 1200 * 16000 * 4 // (1 << 20)
print(f"20 min to a file: peak RSS {peak} MiB, output {out} MiB")
# Under a cross build's emulator (tests/cross.cmake) qemu's own resident set (itself, translated
# code) counts too: take away what it holds for `--version`.
if os.environ.get("MPK_TEST_EMULATOR"):
    base = peak_mib([cli, "--version"])
    peak -= base
    print(f"  less the emulator's {base} MiB for --version: {peak} MiB")
assert peak < out * 2 // 3, (peak, out)
PY
rm -f "$T/long.wav" "$T/long.f32"
fi

# A FIFO as the input (no writer): refused at once, never waited on (WAV and --base64 text).
mkfifo "$T/in-fifo"
for extra in "" --base64; do
  set +e
  # shellcheck disable=SC2086
  timeout 10 "$CLI" audio "$T/in-fifo" $extra "${A[@]:1}" 2>"$T/err"; rc=$?
  set -e
  [ $rc = 1 ] && grep -q "in-fifo: is a FIFO, not a regular file" "$T/err" || fail "FIFO input $extra: exit $rc, $(cat "$T/err")"
done

# Usage errors exit 2.
set +e
"$CLI" audio "$T/st.wav" >/dev/null 2>&1; rc=$?
set -e
[ $rc = 2 ] || fail "no processor: exit $rc"
# With --json a usage error is a refusal document on stdout too.
set +e
"$CLI" audio "$T/st.wav" --frobnicate --json >"$T/j.json" 2>/dev/null; rc=$?
set -e
[ $rc = 2 ] || fail "usage --json: exit $rc"
/usr/bin/python3 -c "
import json; r=json.load(open('$T/j.json'))
assert r['ok'] is False and r['problems'][0]['code']=='invalid-argument' and 'frobnicate' in r['problems'][0]['message'], r
" || fail "usage --json document"
echo "ok"
