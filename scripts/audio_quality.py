#!/usr/bin/python3
"""Audio frontend quality, side by side: modelpkg (libsoxr VHQ) and WebLLM 0.2.86's decodeAudioInput
against `sox ... rate -v` (very high quality) as the reference.

Usage: /usr/bin/python3 scripts/audio_quality.py MODELPKG [WEBLLM_INDEX_JS] [--long]
Needs Debian's espeak-ng and sox, numpy, and for the WebLLM column Node 20 with the npm bundle
(@mlc-ai/web-llm@0.2.86 lib/index.js; its private decodeAudioInput is lifted from the bundle text).

Signals: speech synthesised with espeak-ng, converted with sox to 44.1 kHz stereo 16-bit, 30 s
(and 10 min with --long); tones. Figures: SNR against sox -v over the whole band; gain at 7 kHz;
attenuation of a tone above the 8 kHz output Nyquist (tones are float32 WAV input, so that the residual
is the resampler's and not the 16-bit quantisation noise of the input).
"""
import json, math, os, struct, subprocess, sys, tempfile
import numpy as np

RATE = 16000
MODELPKG = WEBLLM = None  # set by main(); bench/audio_bench.py imports this file for speech() and the driver

NODE_DRIVER = r"""
const fs = require('fs');
const src = fs.readFileSync(process.argv[2], 'utf8');
const start = src.indexOf('function audioError(message)');
const end = src.indexOf('function isPCMInput(input)');
const tail = src.indexOf('/**\n * Based on `p_prob`');
if (start < 0 || end < 0 || tail < 0) throw new Error('decodeAudioInput not found in the bundle');
const code = 'class AudioInputError extends Error {}\n' + src.slice(start, tail) + '\nreturn decodeAudioInput;';
const decodeAudioInput = new Function(code)();
const wav = fs.readFileSync(process.argv[3]);
const t0 = process.hrtime.bigint();
const out = decodeAudioInput({format: 'wav', data: wav.toString('base64')},
  {kind: 'audio_decode', format: 'pcm_f32', sample_rate_hz: 16000, channels: 1, min_samples: 1, max_samples: 1e9});
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
fs.writeFileSync(process.argv[4], Buffer.from(out.buffer, out.byteOffset, out.byteLength));
console.log(JSON.stringify({ms}));
"""


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def f32(path):
    return np.fromfile(path, dtype="<f4").astype(np.float64)


def wav_f32_stereo(path, left, right, sr):
    """IEEE float stereo: a tone's residual is then the resampler's, not 16-bit quantisation noise."""
    pcm = np.stack([left, right], 1).astype("<f4").tobytes()
    hdr = b"RIFF" + struct.pack("<I", 36 + len(pcm)) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 3, 2, sr, sr * 8, 8, 32) + b"data" + struct.pack("<I", len(pcm))
    open(path, "wb").write(hdr + pcm)


def band_snr(ref, x, lo, hi):
    """SNR against the reference within [lo, hi) Hz, from the spectra of the reference and the error."""
    n = min(len(ref), len(x))
    f = np.fft.rfftfreq(n, 1 / RATE)
    sel = (f >= lo) & (f < hi)
    p_ref = np.sum(np.abs(np.fft.rfft(ref[:n]))[sel] ** 2)
    p_err = np.sum(np.abs(np.fft.rfft(x[:n] - ref[:n]))[sel] ** 2)
    return float("inf") if p_err == 0 else 10 * math.log10(p_ref / p_err)


def convert(tmp, wav):
    """Returns {name: samples} for sox -v, modelpkg, WebLLM (when available)."""
    out = {}
    sh("sox", wav, "-t", "raw", "-e", "floating-point", "-b", "32", "-c", "1", os.path.join(tmp, "sox.f32"),
       "rate", "-v", str(RATE))
    out["sox -v"] = f32(os.path.join(tmp, "sox.f32"))
    sh(MODELPKG, "audio", wav, "--rate", str(RATE), "--max-samples", "100000000", "-o", os.path.join(tmp, "mpk.f32"))
    out["modelpkg"] = f32(os.path.join(tmp, "mpk.f32"))
    if WEBLLM:
        drv = os.path.join(tmp, "drv.js")
        open(drv, "w").write(NODE_DRIVER)
        sh("node", drv, WEBLLM, wav, os.path.join(tmp, "wl.f32"))
        out["WebLLM"] = f32(os.path.join(tmp, "wl.f32"))
    return out


def snr_db(ref, x):
    n = min(len(ref), len(x))
    e = np.sum((x[:n] - ref[:n]) ** 2)
    return float("inf") if e == 0 else 10 * math.log10(np.sum(ref[:n] ** 2) / e)


def tone_db(x, f, amp):
    """Gain of a tone in the middle half; above the output Nyquist, its largest residual (-inf: exact zeros)."""
    m = x[len(x) // 4: 3 * len(x) // 4]
    t = np.arange(len(x) // 4, len(x) // 4 + len(m)) / RATE
    if f < RATE / 2:
        a = 2 * abs(np.sum(m * np.exp(-2j * np.pi * f * t))) / len(m)
    else:
        a = np.max(np.abs(m))
    return float("-inf") if a == 0 else 20 * math.log10(a / amp)


def speech(tmp, seconds):
    text = ("The quick brown fox jumps over the lazy dog. Speech recognition on device needs a frontend "
            "that turns every recording into exactly the samples the model expects. ") * 8
    raw = os.path.join(tmp, "espeak.wav")
    sh("espeak-ng", "-w", raw, text)
    wav = os.path.join(tmp, "speech_%d.wav" % seconds)
    # Loop the utterance to the length, then 44.1 kHz stereo 16-bit (sox's own very high quality).
    sh("sox", raw, "-r", "44100", "-c", "2", "-b", "16", wav, "repeat", "-", "trim", "0", str(seconds), "rate", "-v", "44100")
    return wav


def main():
    global MODELPKG, WEBLLM
    MODELPKG = sys.argv[1]
    WEBLLM = next((a for a in sys.argv[2:] if a.endswith(".js")), None)
    LONG = "--long" in sys.argv
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for secs in ([30, 600] if LONG else [30]):
            res = convert(tmp, speech(tmp, secs))
            ref = res["sox -v"]
            for name in ("modelpkg", "WebLLM"):
                if name in res:
                    rows.append(("speech %d s, SNR vs sox -v" % secs, name, "%.1f dB" % snr_db(ref, res[name]),
                                 "length %d (sox %d)" % (len(res[name]), len(ref))))
                    for lo, hi in ((0, 4000), (4000, 7000), (7000, 8001)):
                        rows.append(("  band %d-%d Hz" % (lo, min(hi, 8000)), name,
                                     "%.1f dB" % band_snr(ref, res[name], lo, hi), ""))
        sr, n = 44100, 44100 * 2
        t = np.arange(n) / sr
        for f in (1000, 7000, 9000, 12000):
            wav = os.path.join(tmp, "tone%d.wav" % f)
            x = 0.5 * np.sin(2 * np.pi * f * t)
            wav_f32_stereo(wav, x, x, sr)
            res = convert(tmp, wav)
            what = "gain at %d Hz" % f if f < RATE / 2 else "tone %d Hz (above Nyquist), residual" % f
            for name in ("sox -v", "modelpkg", "WebLLM"):
                if name in res:
                    rows.append((what, name, "%.3f dB" % tone_db(res[name], f, 0.5), ""))
    w = max(len(r[0]) for r in rows)
    for r in rows:
        print("%-*s  %-9s %12s  %s" % (w, r[0], r[1], r[2], r[3]))


if __name__ == "__main__":
    main()
