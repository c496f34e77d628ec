#!/usr/bin/python3
"""Pillow's side of bench/run_image.sh: a photo to the plan's window, timed in-process.

    image_pillow.py FILE MODE W H ITERS nodraft|draft

Per iteration, from the file's bytes already in memory: Image.open, draft() when asked (JPEG: the
decoder's DCT scaling to the smallest scale still covering the plan's size), exif_transpose, RGB
(alpha dropped), resize to the plan's size with antialiased bicubic, crop the window -- what
modelpkg's mpk_image_from_bytes does. Prints one JSON line: median and fastest iteration (ms) and
the peak resident set of this process (KiB).
"""
import io
import json
import math
import resource
import sys
import time

from PIL import Image, ImageOps


def js_round(x):
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def plan(sw, sh, mode, w, h):
    if mode == "stretch":
        return (w, h, 0, 0)
    s = max(h / sh, w / sw)
    pw, ph = js_round(sw * s), js_round(sh * s)
    return (pw, ph, math.floor((pw - w) / 2), math.floor((ph - h) / 2))


def once(data, mode, w, h, draft):
    im = Image.open(io.BytesIO(data))
    o = im.getexif().get(274, 1)
    uw, uh = (im.height, im.width) if o in (5, 6, 7, 8) else im.size
    p = plan(uw, uh, mode, w, h)
    if draft:
        im.draft("RGB", (p[1], p[0]) if o in (5, 6, 7, 8) else (p[0], p[1]))
    im = ImageOps.exif_transpose(im)
    if im.mode != "RGB":
        im = im.convert("RGB")
    return im.resize((p[0], p[1]), Image.BICUBIC).crop((p[2], p[3], p[2] + w, p[3] + h))


def main():
    f, mode, w, h, iters, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    data = open(f, "rb").read()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        out = once(data, mode, w, h, how == "draft")
        t.append((time.perf_counter() - t0) * 1e3)
    assert out.size == (w, h)
    t.sort()
    print(json.dumps({"what": "pillow-" + how, "median_ms": round(t[len(t) // 2], 3), "min_ms": round(t[0], 3),
                      "iters": iters, "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


if __name__ == "__main__":
    main()
