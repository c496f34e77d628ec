#!/usr/bin/env bash
# run_image_process.sh — `modelpkg image` as a process against `djpeg` as a process (issue 22's
# Benchmark): each input JPEG to a 336 x 336 center_crop tensor, beside djpeg decoding the same file
# at the DCT scale modelpkg's plan chooses, in one run, interleaved.
#
#   bench/run_image_process.sh [MODELPKG]        # default: build/modelpkg
#   ROUNDS=5 ITERS=11 IMG_DIR=/tmp/imgs SIZES="1 3 12 48" bench/run_image_process.sh build/modelpkg
#
# Inputs (scripts/gen_images.sh DIR --process, ImageMagick; IMG_DIR keeps them between runs):
# photo_WxH_q90.jpg (textured and noisy: entropy decoding dominates) and smooth_WxH_q90.jpg
# (gradients: little entropy, so fixed per-process costs weigh most) at 1, 3, 12 and 48 MP, quality
# 90, 4:2:0.
#
# Peers, per image, each run as its own process (posix_spawn + wait, wall clock):
#   djpeg      djpeg -scale M/8 -outfile /dev/null FILE       M: the scale modelpkg's plan chose
#   modelpkg   modelpkg image FILE --mode center_crop --width 336 --height 336 -o /dev/null
# Both write their pixels to /dev/null: djpeg the decoded PPM, modelpkg the [1, 336, 336, 3] tensor
# (its report goes to stdout, which is /dev/null as djpeg's is). That is the like-for-like pair:
# each decodes the file at the same DCT scale and writes its result.
# Start-up baselines, the same way: `djpeg -version` and `modelpkg --version`.
# A round runs every command ITERS times, the commands interleaved (A B C D A B C D ...); a round's
# figure for a command is its median. Reported: the median over rounds of those figures and of the
# per-round ratios, plus the ratio with start-up taken out: (modelpkg - modelpkg --version) /
# (djpeg - djpeg -version), each peer minus its own start-up (the start-up work is issue 22's
# h-lazy part). Verdict per image: modelpkg / djpeg <= 1.15. `load` is /proc/loadavg's 1-minute
# figure before and after: the machine is shared, 2 cores.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
MPK=${1:-$SRC_DIR/build/modelpkg}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-11}
SIZES=${SIZES:-1 3 12 48}
PY=${PY:-python3}
[ -x "$MPK" ] || { echo "no modelpkg at $MPK: build it first (or give its path)" >&2; exit 2; }
command -v djpeg > /dev/null || { echo "djpeg (libjpeg-turbo-progs) is needed" >&2; exit 2; }

if [ -n "${IMG_DIR:-}" ]; then
  imgs=$IMG_DIR
else
  imgs=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-image-proc.XXXXXX")
  trap 'rm -rf "$imgs"' EXIT
fi
[ -f "$imgs/smooth_8064x6048_q90.jpg" ] || "$SRC_DIR/scripts/gen_images.sh" "$imgs" --process

files=()
for s in $SIZES; do
  case $s in
    1) wh=1152x864 ;; 3) wh=2016x1512 ;; 12) wh=4032x3024 ;; 48) wh=8064x6048 ;;
    *) echo "SIZES: 1, 3, 12 or 48 (got $s)" >&2; exit 2 ;;
  esac
  files+=("$imgs/photo_${wh}_q90.jpg" "$imgs/smooth_${wh}_q90.jpg")
done

echo "modelpkg: $MPK"
echo "load before: $(cut -d' ' -f1 /proc/loadavg)"
"$PY" - "$MPK" "$ROUNDS" "$ITERS" "${files[@]}" <<'EOF'
import json, os, statistics, subprocess, sys, time
mpk, rounds, iters, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
null = os.open(os.devnull, os.O_WRONLY)

def run(argv):
    """Wall ms of one process: spawn, run, reap (stdout and stderr to /dev/null)."""
    fa = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
    _, st = os.waitpid(pid, 0)
    t = (time.perf_counter() - t0) * 1e3
    if st != 0: sys.exit(f"{' '.join(argv)}: exit status {st}")
    return t

def which(p):
    for d in os.environ["PATH"].split(":"):
        if os.access(os.path.join(d, p), os.X_OK): return os.path.join(d, p)
    sys.exit(f"{p} not found")
djpeg = which("djpeg")
crop = ["--mode", "center_crop", "--width", "336", "--height", "336"]
cases = []
for f in files:
    rep = json.loads(subprocess.run([mpk, "image", f, *crop, "--json"], check=True, capture_output=True).stdout)
    m = rep["decoded"]["jpeg_scale_num"]
    cases.append((f, m, rep["source"]["width"], rep["source"]["height"], {
        "djpeg": [djpeg, "-scale", f"{m}/8", "-outfile", "/dev/null", f],
        "modelpkg": [mpk, "image", f, *crop, "-o", "/dev/null"]}))
base = {"djpeg -version": [djpeg, "-version"], "modelpkg --version": [mpk, "--version"]}
# per round: command -> median ms
res = []
for r in range(rounds):
    got = {}
    for f, m, w, h, cmds in cases:
        allc = {**{(f, k): v for k, v in cmds.items()}, **{("", k): v for k, v in base.items()}}
        t = {k: [] for k in allc}
        for i in range(iters):
            ks = list(allc) if i % 2 == 0 else list(reversed(allc))
            for k in ks: t[k].append(run(allc[k]))
        for k, v in t.items(): got.setdefault(k, []).extend(v) if k[0] == "" else got.__setitem__(k, statistics.median(v))
    for k in list(got):
        if k[0] == "": got[k] = statistics.median(got[k])
    res.append(got)

def med(k): return statistics.median(g[k] for g in res)
def rmed(fn): return statistics.median(fn(g) for g in res)
dv, mv = ("", "djpeg -version"), ("", "modelpkg --version")
print(f"\n{rounds} rounds x {iters} runs per command, interleaved; wall ms, medians")
print(f"start-up: djpeg -version {med(dv):.2f} ms, modelpkg --version {med(mv):.2f} ms, "
      f"ratio {rmed(lambda g: g[mv] / g[dv]):.2f}")
print(f"\n{'image':30} {'MP':>5} {'scale':>5} {'djpeg':>8} {'modelpkg':>9} {'ratio':>6} {'verdict':>8} "
      f"{'djpeg-su':>9} {'mpk-su':>8} {'ratio-su':>9} {'verdict':>8}")
for f, m, w, h, cmds in cases:
    d, k = (f, "djpeg"), (f, "modelpkg")
    ratio = rmed(lambda g: g[k] / g[d])
    rsu = rmed(lambda g: (g[k] - g[mv]) / max(g[d] - g[dv], 1e-3))
    print(f"{os.path.basename(f):30} {w * h / 1e6:5.1f} {m:>3}/8 {med(d):8.2f} {med(k):9.2f} {ratio:6.3f} "
          f"{'ok' if ratio <= 1.15 else 'NOT MET':>8} {med(d) - med(dv):9.2f} {med(k) - med(mv):8.2f} {rsu:9.3f} "
          f"{'ok' if rsu <= 1.15 else 'NOT MET':>8}")
print("\nratio: modelpkg / djpeg (target <= 1.15); -su: start-up taken out (each minus its own --version/-version)")
EOF
echo "load after:  $(cut -d' ' -f1 /proc/loadavg)"
