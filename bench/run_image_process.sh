#!/usr/bin/env bash
# run_image_process.sh — `modelpkg image` as a process against `djpeg` as a process (issue 22's
# Benchmark): each input JPEG to a 336 x 336 center_crop tensor, beside djpeg decoding the same file
# at the DCT scale modelpkg's plan chooses, in one run, interleaved.
#
#   bench/run_image_process.sh [MODELPKG]        # default: build/modelpkg
#   ROUNDS=5 ITERS=11 IMG_DIR=/tmp/imgs SIZES="1 3 12 48" INSTR=1 bench/run_image_process.sh build/modelpkg
#   ROUNDS=0 bench/run_image_process.sh OTHER/modelpkg   # instruction counts only
#
# Inputs (scripts/gen_images.sh DIR --process, ImageMagick; IMG_DIR keeps them between runs):
# photo_WxH_q90.jpg (textured and noisy: entropy decoding dominates) and smooth_WxH_q90.jpg
# (gradients: little entropy, so fixed per-process costs weigh most) at 1, 3, 12 and 48 MP, quality
# 90, 4:2:0.
#
# Peers, per image, each run as its own process (posix_spawn + wait4):
#   djpeg      djpeg -scale M/8 -outfile /dev/null FILE       M: the scale modelpkg's plan chose
#   modelpkg   modelpkg image FILE --mode center_crop --width 336 --height 336 -o /dev/null
# Both write their pixels to /dev/null: djpeg the decoded PPM, modelpkg the [1, 336, 336, 3] tensor
# (its report goes to stdout, /dev/null as djpeg's is). That is the like-for-like pair: each decodes
# the file at the same DCT scale and writes its result.
# Start-up baselines, the same way, beside every image: `djpeg -version` and `modelpkg --version`.
# A round runs each of the four commands ITERS times per image, interleaved (A B C D D C B A ...);
# a round's figure for a command is its median. Reported: the median over rounds of those figures
# and of the per-round ratios, plus the ratio with start-up taken out: (modelpkg - modelpkg
# --version) / (djpeg - djpeg -version), each peer minus its own start-up (issue 22's start-up
# work is another part). Verdict per image: modelpkg / djpeg <= 1.15. Wall clock and CPU time (user
# + sys of the process, from wait4: steadier on a loaded machine) are both given, and with INSTR=1
# (the default, when valgrind is there) each command's instruction count under callgrind, which
# does not depend on the load at all. `load` is /proc/loadavg's 1-minute figure before and after:
# the machine is shared, 2 cores.
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
"$PY" - "$MPK" "$ROUNDS" "$ITERS" "${INSTR:-1}" "${files[@]}" <<'EOF'
import json, os, re, shutil, statistics, subprocess, sys, time
mpk, rounds, iters, instr, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5:]
null = os.open(os.devnull, os.O_WRONLY)

def run(argv):
    """(wall ms, CPU ms) of one process: spawn, run, reap (stdout and stderr to /dev/null)."""
    fa = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
    _, st, ru = os.wait4(pid, 0)
    t = (time.perf_counter() - t0) * 1e3
    if st != 0: sys.exit(f"{' '.join(argv)}: exit status {st}")
    return t, (ru.ru_utime + ru.ru_stime) * 1e3

djpeg = shutil.which("djpeg")
crop = ["--mode", "center_crop", "--width", "336", "--height", "336"]
cases = []
for f in files:
    rep = json.loads(subprocess.run([mpk, "image", f, *crop, "--json"], check=True, capture_output=True).stdout)
    m = rep["decoded"]["jpeg_scale_num"]
    cases.append((f, m, rep["source"]["width"] * rep["source"]["height"],
                  [djpeg, "-scale", f"{m}/8", "-outfile", "/dev/null", f], [mpk, "image", f, *crop, "-o", "/dev/null"]))
dv, mv = [djpeg, "-version"], [mpk, "--version"]

res = []  # per round: {(case, peer): (wall median, cpu median)}
for r in range(rounds):
    got = {}
    for i, (f, m, px, dj, mp) in enumerate(cases):
        cmds = {"djpeg": dj, "modelpkg": mp, "djpeg-version": dv, "modelpkg-version": mv}
        t = {k: [] for k in cmds}
        for it in range(iters):
            for k in (list(cmds) if it % 2 == 0 else list(reversed(cmds))): t[k].append(run(cmds[k]))
        for k, v in t.items(): got[(i, k)] = tuple(statistics.median(x[j] for x in v) for j in (0, 1))
    res.append(got)

def med(i, k, j): return statistics.median(g[(i, k)][j] for g in res)
def ratio(i, j, su):
    def one(g):
        a, b = g[(i, "modelpkg")][j], g[(i, "djpeg")][j]
        if su: a, b = a - g[(i, "modelpkg-version")][j], b - g[(i, "djpeg-version")][j]
        return a / b if b > 0 else float("inf")
    return statistics.median(one(g) for g in res)
def verdict(x): return "ok" if x <= 1.15 else "NOT MET"
def su(k, j): return statistics.median(med(i, k, j) for i in range(len(cases)))

if rounds:  # ROUNDS=0: instruction counts only
  print(f"\n{rounds} rounds x {iters} runs of each command per image, interleaved; medians in ms")
  print(f"start-up: djpeg -version wall {su('djpeg-version', 0):.2f} cpu {su('djpeg-version', 1):.2f}, "
        f"modelpkg --version wall {su('modelpkg-version', 0):.2f} cpu {su('modelpkg-version', 1):.2f}")
  for j, what in ((0, "wall clock"), (1, "CPU time (user + sys of the process)")):
      print(f"\n{what}:")
      print(f"{'image':26} {'MP':>5} {'scale':>5} {'djpeg':>8} {'modelpkg':>9} {'ratio':>6} {'verdict':>8} {'ratio-su':>9} {'verdict':>8}")
      for i, (f, m, px, dj, mp) in enumerate(cases):
          r, rs = ratio(i, j, False), ratio(i, j, True)
          print(f"{os.path.basename(f):26} {px / 1e6:5.1f} {m:>3}/8 {med(i, 'djpeg', j):8.2f} {med(i, 'modelpkg', j):9.2f} "
                f"{r:6.3f} {verdict(r):>8} {rs:9.3f} {verdict(rs):>8}")
  print("\nratio: modelpkg / djpeg (target <= 1.15); ratio-su: start-up taken out, each peer minus its own\n"
        "--version / -version process measured in the same round")

if instr and shutil.which("valgrind"):
    def ir(argv):
        p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                           capture_output=True, text=True)
        return int(re.search(r"Collected : (\d+)", p.stderr).group(1))
    idv, imv = ir(dv), ir(mv)
    print(f"\ninstructions (callgrind): djpeg -version {idv / 1e6:.2f} M, modelpkg --version {imv / 1e6:.2f} M")
    print(f"{'image':26} {'djpeg M':>9} {'modelpkg M':>11} {'ratio':>6} {'verdict':>8} {'ratio-su':>9} {'verdict':>8}")
    for f, m, px, dj, mp in cases:
        a, b = ir(mp), ir(dj)
        r, rs = a / b, (a - imv) / (b - idv)
        print(f"{os.path.basename(f):26} {b / 1e6:9.2f} {a / 1e6:11.2f} {r:6.3f} {verdict(r):>8} {rs:9.3f} {verdict(rs):>8}")
EOF
echo "load after:  $(cut -d' ' -f1 /proc/loadavg)"
