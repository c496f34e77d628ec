#!/usr/bin/python3
"""Regenerate the fuzz_image seed corpus: small valid and broken JPEG / PNG / WebP files.

Needs Debian's python3-pil (run with /usr/bin/python3), ImageMagick's convert and libjpeg-turbo's
jpegtran. Run from the repository root: /usr/bin/python3 tests/fuzz/make_image_seeds.py
The corpus is committed; rerun this only to change it. Each file is a few KB at most.
"""
import hashlib
import io
import os
import subprocess
import tempfile

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_image")


def write(data):
    os.makedirs(OUT, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def picture(w, h, mode="RGB"):
    im = Image.new("RGB", (w, h))
    im.putdata([((x * 8) % 256, (y * 10) % 256, ((x + y) * 5) % 256) for y in range(h) for x in range(w)])
    if mode == "RGBA":
        im.putalpha(Image.linear_gradient("L").resize((w, h)))
    elif mode != "RGB":
        im = im.convert(mode)
    return im


def save(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def exif(o):
    e = Image.Exif()
    e[0x0112] = o
    return e.tobytes()


def tool(args, data):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in")
        dst = os.path.join(d, "out")
        with open(src, "wb") as f:
            f.write(data)
        subprocess.run([a.replace("IN", src).replace("OUT", dst) for a in args], check=True)
        with open(dst, "rb") as f:
            return f.read()


seeds = []
rgb = picture(33, 21)
# JPEG: baseline 4:2:0 and 4:4:4, progressive, grey, CMYK, EXIF orientation 6, arithmetic, restarts
seeds.append(save(rgb, "JPEG", quality=85))
seeds.append(save(rgb, "JPEG", quality=95, subsampling=0))
seeds.append(save(rgb, "JPEG", quality=80, progressive=True))
seeds.append(save(rgb.convert("L"), "JPEG", quality=80))
seeds.append(save(rgb.convert("CMYK"), "JPEG", quality=80))
seeds.append(save(picture(20, 40), "JPEG", quality=80, exif=exif(6)))
seeds.append(tool(["jpegtran", "-arithmetic", "-outfile", "OUT", "IN"], seeds[0]))
seeds.append(tool(["jpegtran", "-restart", "1", "-outfile", "OUT", "IN"], seeds[0]))
# PNG: RGB, RGBA, grey 1-bit, palette + tRNS, 16-bit grey, interlaced, eXIf orientation 8
seeds.append(save(rgb, "PNG"))
seeds.append(save(picture(17, 13, "RGBA"), "PNG"))
seeds.append(save(rgb.convert("1"), "PNG"))
pal = rgb.convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
seeds.append(save(pal, "PNG", transparency=3))
seeds.append(save(Image.linear_gradient("L").resize((24, 10)).convert("I").point(lambda v: v * 257), "PNG"))
seeds.append(tool(["convert", "IN", "-interlace", "PNG", "-depth", "16", "PNG48:OUT"], save(rgb, "PNG")))
seeds.append(save(picture(12, 30), "PNG", exif=exif(8)))
# WebP: lossy, lossless with alpha, EXIF orientation 3
seeds.append(save(rgb, "WEBP", quality=70))
seeds.append(save(picture(17, 13, "RGBA"), "WEBP", lossless=True))
seeds.append(save(rgb, "WEBP", quality=70, exif=exif(3)))

broken = []
for s in seeds[:3] + seeds[8:10] + seeds[15:17]:
    broken.append(s[: len(s) * 2 // 3])  # truncated
png = bytearray(seeds[8])
png[50] ^= 0x20  # inside the IDAT data: the CRC no longer matches
broken.append(bytes(png))
for s in seeds + broken:
    assert len(s) < 8192, len(s)
    write(s)
print(f"{len(seeds)} valid and {len(broken)} broken seeds in {OUT}")
