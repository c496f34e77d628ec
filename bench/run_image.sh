#!/usr/bin/env bash
# run_image.sh — a 12-megapixel photo to a 336 x 336 center_crop tensor: modelpkg side by side with
# Pillow (without and with draft()) and with `djpeg -scale 1/8`, in one run; the same photo as an
# RGBA PNG beside Pillow.
#
#   bench/run_image.sh                    # from the source tree, after building build-bench:
#   cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF
#   ninja -C build-bench bench_image
#   ROUNDS=7 ITERS=9 IMG_DIR=/tmp/imgs bench/run_image.sh   # IMG_DIR: keep the generated inputs
#
# Inputs (scripts/gen_images.sh --bench, ImageMagick): photo_4032x3024_q90.jpg (photo-like content,
# quality 90, 4:2:0) and photo_4032x3024_rgba.png (the same pixels with an alpha ramp).
#
# Peers, ROUNDS interleaved rounds; each in-process peer is one process timing ITERS iterations
# and reporting its median (the file's bytes already in memory or mapped):
#   modelpkg        bench_image file: mpk_image_from_bytes (JPEG at DCT scale 1/8 here)
#   modelpkg-2/8    bench_image jpeg ... 2: libjpeg at 2/8 + the resampler (an experiment: the
#                   cost of decoding at twice the plan's size, see docs/image-resize.md)
#   pillow          /usr/bin/python3 + Pillow: open, exif_transpose, RGB, resize, crop
#   pillow-draft    the same with im.draft("RGB", plan size) first (JPEG only)
# and two one-shot processes, timed from outside (fork + exec + everything, ITERS runs, median):
#   djpeg-1/8       djpeg -scale 1/8 -outfile /dev/null FILE
#   modelpkg-proc   bench_image file ... 1
# Figures: the median over rounds; a ratio is the median of per-round ratios. Peak memory: each
# peer once more as its own process under /usr/bin/time (max RSS of the whole process, KiB).
# `load` is /proc/loadavg's 1-minute figure before and after: this machine is shared, 2 cores.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_image}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-9}
PY=/usr/bin/python3
[ -x "$BENCH" ] || { echo "build bench_image first (see the header of $0)" >&2; exit 2; }
command -v djpeg > /dev/null || { echo "djpeg (libjpeg-turbo-progs) is needed" >&2; exit 2; }

if [ -n "${IMG_DIR:-}" ]; then
  imgs=$IMG_DIR
else
  imgs=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-image.XXXXXX")
  trap 'rm -rf "$imgs"' EXIT
fi
[ -f "$imgs/photo_4032x3024_q90.jpg" ] && [ -f "$imgs/photo_4032x3024_rgba.png" ] || "$SRC_DIR/scripts/gen_images.sh" "$imgs" --bench
JPG=$imgs/photo_4032x3024_q90.jpg
PNG=$imgs/photo_4032x3024_rgba.png
res=$(mktemp "${TMPDIR:-/tmp}/mpk-bench-image-res.XXXXXX")
trap 'rm -f "$res"; [ -z "${IMG_DIR:-}" ] && rm -rf "$imgs"' EXIT

load() { cut -d' ' -f1 /proc/loadavg; }
# one-shot process wall time, median of ITERS runs, as a JSON line
proc_ms() {
  local what=$1; shift
  $PY - "$what" "$ITERS" "$@" <<'EOF'
import json, subprocess, sys, time
what, n, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
t = []
for _ in range(n):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    t.append((time.perf_counter() - t0) * 1e3)
t.sort()
print(json.dumps({"what": what, "median_ms": round(t[len(t) // 2], 3), "min_ms": round(t[0], 3)}))
EOF
}
tag() { sed "s|^{|{\"round\": $1, \"case\": \"$2\", \"peer\": \"$3\", |"; }

echo "load before: $(load)"
for r in $(seq 1 "$ROUNDS"); do
  "$BENCH" file "$JPG" center_crop 336 336 "$ITERS" | tag "$r" jpeg modelpkg >> "$res"
  $PY "$SRC_DIR/bench/image_pillow.py" "$JPG" center_crop 336 336 "$ITERS" nodraft | tag "$r" jpeg pillow >> "$res"
  $PY "$SRC_DIR/bench/image_pillow.py" "$JPG" center_crop 336 336 "$ITERS" draft | tag "$r" jpeg pillow-draft >> "$res"
  "$BENCH" jpeg "$JPG" center_crop 336 336 "$ITERS" 2 | tag "$r" jpeg modelpkg-2/8 >> "$res"
  proc_ms djpeg djpeg -scale 1/8 -outfile /dev/null "$JPG" | tag "$r" jpeg djpeg-1/8 >> "$res"
  proc_ms proc "$BENCH" file "$JPG" center_crop 336 336 1 | tag "$r" jpeg modelpkg-proc >> "$res"
  "$BENCH" file "$PNG" center_crop 336 336 "$((ITERS / 3 + 1))" | tag "$r" png modelpkg >> "$res"
  $PY "$SRC_DIR/bench/image_pillow.py" "$PNG" center_crop 336 336 "$((ITERS / 3 + 1))" nodraft | tag "$r" png pillow >> "$res"
done
echo "load after:  $(load)"

# Peak memory, each peer once as its own process.
rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
mem_jpeg_mpk=$(rss "$BENCH" file "$JPG" center_crop 336 336 1)
mem_jpeg_pil=$(rss $PY "$SRC_DIR/bench/image_pillow.py" "$JPG" center_crop 336 336 1 nodraft)
mem_jpeg_pild=$(rss $PY "$SRC_DIR/bench/image_pillow.py" "$JPG" center_crop 336 336 1 draft)
mem_djpeg=$(rss djpeg -scale 1/8 -outfile /dev/null "$JPG")
mem_png_mpk=$(rss "$BENCH" file "$PNG" center_crop 336 336 1)
mem_png_pil=$(rss $PY "$SRC_DIR/bench/image_pillow.py" "$PNG" center_crop 336 336 1 nodraft)
mem_py=$(rss $PY -c 'import PIL.Image, PIL.ImageOps, io, json')

$PY - "$res" <<EOF
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(case, peer): return statistics.median(r["median_ms"] for r in rows if r["case"] == case and r["peer"] == peer)
def ratio(case, a, b):
    by = {}
    for r in rows:
        if r["case"] == case: by.setdefault(r["round"], {})[r["peer"]] = r["median_ms"]
    return statistics.median(v[a] / v[b] for v in by.values())
mem = {("jpeg", "modelpkg"): $mem_jpeg_mpk, ("jpeg", "pillow"): $mem_jpeg_pil, ("jpeg", "pillow-draft"): $mem_jpeg_pild,
       ("jpeg", "djpeg-1/8"): $mem_djpeg, ("png", "modelpkg"): $mem_png_mpk, ("png", "pillow"): $mem_png_pil}
print("\n4032x3024 JPEG q90 -> 336x336 center_crop (plan 448x336+56+0), $ROUNDS rounds x $ITERS iterations")
print(f"{'peer':14} {'median ms':>10} {'modelpkg / peer':>16} {'peak RSS MiB':>13}")
for p in ["modelpkg", "pillow", "pillow-draft", "modelpkg-2/8"]:
    m = mem.get(("jpeg", p))
    print(f"{p:14} {med('jpeg', p):10.1f} {ratio('jpeg', 'modelpkg', p):16.3f} {(f'{m / 1024:.1f}' if m else '-'):>13}")
print("one-shot processes (fork + exec + all):")
for p in ["djpeg-1/8", "modelpkg-proc"]:
    m = mem.get(("jpeg", p))
    print(f"{p:14} {med('jpeg', p):10.1f} {ratio('jpeg', 'modelpkg-proc', p):16.3f} {(f'{m / 1024:.1f}' if m else '-'):>13}")
print(f"   (python3 + PIL imported, doing nothing: {$mem_py / 1024:.1f} MiB)")
print("\n4032x3024 RGBA PNG -> 336x336 center_crop")
for p in ["modelpkg", "pillow"]:
    print(f"{p:14} {med('png', p):10.1f} {ratio('png', 'modelpkg', p):16.3f} {mem[('png', p)] / 1024:13.1f}")
print(f"\ntargets: modelpkg/pillow <= 0.25, modelpkg/pillow-draft <= 1.0, modelpkg-proc/djpeg-1/8 <= 1.15,"
      f" PNG modelpkg/pillow <= 0.6, JPEG peak < 16 MiB")
EOF
