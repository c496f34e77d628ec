#!/usr/bin/python3
"""The image frontend's pixels against Pillow's (Debian python3-pil; run with /usr/bin/python3).

For each image: Pillow decodes it fully, applies ImageOps.exif_transpose, drops alpha (the colour
channels as stored, no compositing), and draws it at the plan's size with its antialiased bicubic
filter, then keeps the plan's window -- WebLLM's canvas recipe with Pillow as the filter. modelpkg's
output must be within PSNR >= 35 dB and mean absolute difference <= 2 levels of that, for every
target size and both modes.

Two paths per image:
  raw   Pillow's decode (stored orientation, as RGB8) handed to modelpkg's resampler with the EXIF
        orientation: the resampler's quality, apart from any decoder.
  file  the whole frontend, mpk_image_from_bytes (JPEG at a reduced DCT scale, EXIF read by
        modelpkg).

Usage: image_vs_pillow.py --tool BUILD/tests/image_tool (--images DIR | --generate) [--data DIR]
                          [--paths raw,file]
Exit status 1 when any row misses a threshold (each failure is listed).
"""
import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from PIL import Image, ImageOps
except ImportError as e:  # a skip (ctest SKIP_RETURN_CODE 77) naming what is missing, never a pass
    print(f"SKIP: test_image_quality: {sys.executable} module {e.name or e} not found (scripts/setup.sh --test installs it)")
    sys.exit(77)

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # the font scripts/gen_images.sh draws with
PSNR_MIN = 35.0
MAD_MAX = 2.0
TARGETS = [("center_crop", 336, 336), ("stretch", 224, 224), ("center_crop", 896, 896), ("stretch", 512, 288)]
EXTS = (".jpg", ".jpeg", ".png", ".webp")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def js_round(x):
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def plan(sw, sh, mode, w, h):
    """WebLLM 0.2.86 planImageResize, in the same double arithmetic."""
    if mode == "stretch":
        return (w, h, 0, 0)
    scale = max(h / sh, w / sw)
    pw, ph = js_round(sw * scale), js_round(sh * scale)
    return (pw, ph, math.floor((pw - w) / 2), math.floor((ph - h) / 2))


def stored_rgb(im):
    """The decoded raster as RGB8 in stored orientation, alpha dropped, 16-bit rounded to 8."""
    if im.mode in ("I", "I;16", "I;16B", "I;16L"):  # 16-bit grey: Pillow's own convert clips
        a = np.asarray(im).astype(np.uint64)
        v = ((a * 255 + 32767) // 65535).astype(np.uint8)
        return np.repeat(v[:, :, None], 3, axis=2)
    return np.asarray(im.convert("RGB"))  # RGBA / LA / P drop alpha and tRNS without compositing


TRANSPOSE = {2: Image.FLIP_LEFT_RIGHT, 3: Image.ROTATE_180, 4: Image.FLIP_TOP_BOTTOM, 5: Image.TRANSPOSE,
             6: Image.ROTATE_270, 7: Image.TRANSVERSE, 8: Image.ROTATE_90}


def orientation_of(im):
    o = im.getexif().get(274, 1)
    return o if o in range(1, 9) else 1


def reference(rgb, orientation, mode, w, h):
    up = Image.fromarray(rgb)
    if orientation in TRANSPOSE:  # what ImageOps.exif_transpose does, on the converted raster
        up = up.transpose(TRANSPOSE[orientation])
    p = plan(up.width, up.height, mode, w, h)
    drawn = up.resize((p[0], p[1]), Image.BICUBIC)
    return np.asarray(drawn.crop((p[2], p[3], p[2] + w, p[3] + h))), p


def compare(a, b):
    d = a.astype(np.float64) - b.astype(np.float64)
    mse = float((d * d).mean())
    return (math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)), float(np.abs(d).mean()), int(np.abs(d).max())


def run_tool(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--images")
    ap.add_argument("--generate", action="store_true", help="make the synthetic set with scripts/gen_images.sh")
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "image"))
    ap.add_argument("--paths", default="raw,file")
    a = ap.parse_args()
    paths = a.paths.split(",")
    tmp = tempfile.TemporaryDirectory(prefix="mpk-image-")
    images_dir = a.images
    if a.generate:
        # scripts/gen_images.sh draws the set with ImageMagick's convert and the DejaVu font.
        # MPK_TEST_TOOL_PATH, when set, is where tools are looked for (tests/integration/test_skips.sh).
        if not shutil.which("convert", path=os.environ.get("MPK_TEST_TOOL_PATH")):
            print("SKIP: test_image_quality: ImageMagick convert not found (scripts/setup.sh --test installs it)")
            return 77
        if not os.path.isfile(FONT):
            print(f"SKIP: test_image_quality: {FONT} (fonts-dejavu-core) not found (scripts/setup.sh --test installs it)")
            return 77
        images_dir = os.path.join(tmp.name, "images")
        subprocess.run([os.path.join(ROOT, "scripts", "gen_images.sh"), images_dir], check=True)
    if not images_dir:
        ap.error("--images DIR or --generate")
    files = sorted(f for f in glob.glob(os.path.join(images_dir, "*")) if f.lower().endswith(EXTS))
    files += sorted(f for f in glob.glob(os.path.join(a.data, "*")) if f.lower().endswith(EXTS))
    if not files:
        print("no images found", file=sys.stderr)
        return 1

    raw_in, raw_out = os.path.join(tmp.name, "in.rgb"), os.path.join(tmp.name, "out.rgb")
    failures, rows = [], 0
    head = f"{'image':28} {'src':11} {'o':1} {'target':17} {'path':4} {'plan':21} {'decoded':9} {'PSNR dB':>7} {'MAD':>5} {'max':>3}"
    print(head)
    print("-" * len(head))
    worst_psnr, worst_mad = math.inf, 0.0
    for f in files:
        name = os.path.basename(f)
        im = Image.open(f)
        im.load()
        o = orientation_of(im)
        src = f"{im.format.lower()} {im.mode}"
        rgb = stored_rgb(im)
        rgb.tofile(raw_in)
        cases = [(mode, w, h, False) for (mode, w, h) in TARGETS]
        if o != 1:  # the stored pixels, as a frontend that ignores EXIF would take them
            cases.append(("center_crop", 336, 336, True))
        for mode, w, h, ignore in cases:
            want, p = reference(rgb, 1 if ignore else o, mode, w, h)
            for path in paths:
                if path == "raw":
                    info, e = run_tool([a.tool, "raw", raw_in, str(rgb.shape[1]), str(rgb.shape[0]),
                                        str(1 if ignore else o), mode, str(w), str(h), raw_out])
                else:
                    info, e = run_tool([a.tool, "file", f, mode, str(w), str(h), raw_out] +
                                       (["--ignore-orientation"] if ignore else []))
                target = f"{mode[:6]} {w}x{h}" + (" -o" if ignore else "")
                if info is None:
                    failures.append(f"{name} {target} {path}: {e}")
                    print(f"{name:28} {src:11} {o} {target:17} {path:4} refused: {e}")
                    continue
                if tuple(info["plan"]) != p:
                    failures.append(f"{name} {target} {path}: plan {info['plan']} != {list(p)}")
                got = np.fromfile(raw_out, dtype=np.uint8).reshape(h, w, 3)
                psnr, mad, mx = compare(got, want)
                rows += 1
                worst_psnr, worst_mad = min(worst_psnr, psnr), max(worst_mad, mad)
                dec = "x".join(map(str, info.get("decoded", []))) or "-"
                plan_s = f"{p[0]}x{p[1]}+{p[2]}+{p[3]}"
                flag = "" if psnr >= PSNR_MIN and mad <= MAD_MAX else "  <-- FAIL"
                print(f"{name:28} {src:11} {o} {target:17} {path:4} {plan_s:21} {dec:9} {psnr:7.2f} {mad:5.2f} {mx:3d}{flag}")
                if flag:
                    failures.append(f"{name} {target} {path}: PSNR {psnr:.2f} dB, MAD {mad:.2f}")
    print(f"\n{rows} comparisons over {len(files)} images; worst PSNR {worst_psnr:.2f} dB, worst MAD {worst_mad:.3f}"
          f" (thresholds: PSNR >= {PSNR_MIN}, MAD <= {MAD_MAX})")
    if failures:
        print(f"{len(failures)} FAILED:", *failures, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
