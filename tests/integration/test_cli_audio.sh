#!/usr/bin/env bash
# modelpkg audio end to end: a stereo 44.1 kHz WAV through the gemma4-audio example's processor,
# the raw float32 output, the JSON report, a refusal with WebLLM's message, the base64 text input.
set -euo pipefail
CLI=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1 s of 44.1 kHz stereo 16-bit (a 440 Hz tone left, silence right), written with printf.
/usr/bin/python3 - "$T/st.wav" <<'PY'
import math, struct, sys
sr, n = 44100, 44100
pcm = b"".join(struct.pack("<hh", int(16384 * math.sin(2 * math.pi * 440 * i / sr)), 0) for i in range(n))
hdr = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE" + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 2, sr, sr * 4, 4, 16)
open(sys.argv[1], "wb").write(hdr + b"data" + struct.pack("<I", len(pcm)) + pcm)
PY

out=$("$CLI" audio "$T/st.wav" --package "$SRC/examples/gemma4-audio" -o "$T/out.f32")
echo "$out"
echo "$out" | grep -q "WAV pcm 16-bit, 44100 Hz, 2 channels, 44100 frames" || fail "source line"
echo "$out" | grep -q "16000 samples, mono float32 at 16000 Hz" || fail "output line"
[ "$(stat -c %s "$T/out.f32")" = 64000 ] || fail "output size"
# The mean of the two channels: a 440 Hz tone at amplitude 0.25; check it from the file.
/usr/bin/python3 - "$T/out.f32" <<'PY'
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype="<f4")
m = x[4000:12000]
t = np.arange(4000, 12000) / 16000
a = 2 * abs(np.sum(m * np.exp(-2j * np.pi * 440 * t))) / len(m)
assert abs(a - 0.25) < 1e-3, a
PY

"$CLI" audio "$T/st.wav" --package "$SRC/examples/gemma4-audio" --json >"$T/r.json"
/usr/bin/python3 -c "
import json,sys; r=json.load(open('$T/r.json'))
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
"$CLI" audio "$T/st.txt" --base64 --rate 16000 --max-samples 480000 | grep -q "16000 samples" || fail "data URL"

# Usage errors exit 2.
set +e
"$CLI" audio "$T/st.wav" >/dev/null 2>&1; rc=$?
set -e
[ $rc = 2 ] || fail "no processor: exit $rc"
echo "ok"
