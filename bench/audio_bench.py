#!/usr/bin/python3
"""The audio frontend side by side (run by bench/run_audio.sh; docs/PERFORMANCE.md section 7).

Usage: /usr/bin/python3 bench/audio_bench.py MODELPKG [WEBLLM_INDEX_JS] [--rounds N] [--seconds S]

One input: speech synthesised with espeak-ng, looped to S seconds (600 by default) and converted by
sox to 44.1 kHz stereo 16-bit (scripts/audio_quality.py's speech()). ROUNDS interleaved rounds, the
order rotated every round, of:
  modelpkg   `modelpkg audio IN --rate 16000 --max-samples ... -o OUT.f32`, the whole process
  sox -v     `sox IN -c 1 -e floating-point OUT.wav rate -v 16000`: mono float32 at 16 kHz, very high
             quality, the whole process
  WebLLM     WebLLM 0.2.86's decodeAudioInput lifted from the npm bundle and run in Node 20: the
             whole process, and the call alone (timed inside Node: bundle load and start-up excluded)
Each run's wall time (from outside) and peak resident set (wait4's ru_maxrss). Printed: medians,
the ratios measured within each round and their medians, and the agreement of the outputs
(same length; SNR of modelpkg and of WebLLM against sox -v).
"""
import json, math, os, statistics, subprocess, sys, tempfile, time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import audio_quality  # noqa: E402  (speech(), the Node driver)


def run(argv, stdout=subprocess.DEVNULL):
    """Wall seconds, peak RSS in MiB, and stdout of one process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    out = p.stdout.read() if p.stdout else b""
    err = p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (argv[0], p.returncode, err.decode(errors="replace")))
    return wall, ru.ru_maxrss / 1024.0, out


def snr(ref, x):
    n = min(len(ref), len(x))
    e = np.sum((x[:n] - ref[:n]) ** 2)
    return float("inf") if e == 0 else 10 * math.log10(np.sum(ref[:n] ** 2) / e)


def main():
    args = sys.argv[1:]
    modelpkg = args[0]
    webllm = next((a for a in args[1:] if a.endswith(".js")), None)
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
    seconds = int(args[args.index("--seconds") + 1]) if "--seconds" in args else 600
    with tempfile.TemporaryDirectory() as tmp:
        wav = audio_quality.speech(tmp, seconds)
        mib = os.path.getsize(wav) / 2**20
        out = {k: os.path.join(tmp, k) for k in ("mpk.f32", "sox.wav", "wl.f32")}
        drv = os.path.join(tmp, "drv.js")
        open(drv, "w").write(audio_quality.NODE_DRIVER)
        peers = {
            "modelpkg": [modelpkg, "audio", wav, "--rate", "16000", "--max-samples", "1000000000",
                         "-o", out["mpk.f32"]],
            "sox -v": ["sox", wav, "-c", "1", "-e", "floating-point", out["sox.wav"], "rate", "-v", "16000"],
        }
        if webllm:
            peers["WebLLM"] = ["node", drv, webllm, wav, out["wl.f32"]]
        names = list(peers)
        times = {n: [] for n in names}
        rss = {n: [] for n in names}
        call_ms = []
        ratios = {"modelpkg / sox -v": [], "WebLLM call / modelpkg": [], "WebLLM process / modelpkg": []}
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            got = {}
            for n in order:
                wall, peak, stdout = run(peers[n], subprocess.PIPE if n == "WebLLM" else subprocess.DEVNULL)
                got[n] = wall
                times[n].append(wall)
                rss[n].append(peak)
                if n == "WebLLM":
                    call_ms.append(json.loads(stdout.decode().strip().splitlines()[-1])["ms"])
            ratios["modelpkg / sox -v"].append(got["modelpkg"] / got["sox -v"])
            if webllm:
                ratios["WebLLM call / modelpkg"].append(call_ms[-1] / 1000 / got["modelpkg"])
                ratios["WebLLM process / modelpkg"].append(got["WebLLM"] / got["modelpkg"])
            print("round %d: %s" % (r + 1, "  ".join("%s %.3f s" % (n, got[n]) for n in names)) +
                  ("  (WebLLM call %.3f s)" % (call_ms[-1] / 1000) if webllm else ""), flush=True)

        # sox's WAV: skip its header (float WAVs carry a fact chunk); the data chunk's size is known.
        raw = open(out["sox.wav"], "rb").read()
        d = raw.rfind(b"data")
        ref = np.frombuffer(raw[d + 8:], dtype="<f4").astype(np.float64)
        mpk = np.fromfile(out["mpk.f32"], dtype="<f4").astype(np.float64)
        print()
        print("input: %d s of 44.1 kHz stereo 16-bit speech, %.1f MiB; output %d samples (%.1f MiB)" %
              (seconds, mib, len(mpk), len(mpk) * 4 / 2**20))
        print("%-10s %10s %10s  %s" % ("peer", "median s", "peak MiB", "runs"))
        for n in names:
            print("%-10s %10.3f %10.1f  %s" % (n, statistics.median(times[n]), statistics.median(rss[n]),
                                               " ".join("%.3f" % t for t in times[n])))
        if webllm:
            print("%-10s %10.3f %10s  %s" % ("WebLLM call", statistics.median(call_ms) / 1000, "",
                                             " ".join("%.3f" % (m / 1000) for m in call_ms)))
        print()
        for k, v in ratios.items():
            if v:
                print("%-26s median %.3f  (rounds: %s)" % (k, statistics.median(v), " ".join("%.3f" % x for x in v)))
        print()
        print("agreement: length modelpkg %d, sox %d; SNR modelpkg vs sox -v %.1f dB" % (len(mpk), len(ref), snr(ref, mpk)))
        if webllm:
            wl = np.fromfile(out["wl.f32"], dtype="<f4").astype(np.float64)
            print("           length WebLLM %d; SNR WebLLM vs sox -v %.1f dB" % (len(wl), snr(ref, wl)))


if __name__ == "__main__":
    main()
