#!/usr/bin/env bash
# modelpkg image end to end: ad-hoc and package resizes, EXIF orientation (applied and ignored),
# the llava-image example's processor and its library's adapter_dtypes (uint32), -o / --png / --json,
# refusals with their messages (exit 1), usage errors (exit 2), and outputs never half-written.
set -euo pipefail
CLI=$1
SRC=$2
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Every input is written, and every tensor read back, with Debian's Pillow and numpy.
need_py PIL numpy
PKG="$SRC/examples/llava-image"
LIB="$PKG/lib/llava-image-webgpu.wasm"

# Inputs, written with Pillow: an upright 64x48 picture (left half red, right half blue, a green
# top-left corner block), the same stored rotated with EXIF orientation 6 (JPEG APP1, PNG eXIf,
# WebP EXIF), a palette GIF, a text file named .jpg, a truncated JPEG.
$PY - "$T" <<'PY'
import sys
from PIL import Image
d = sys.argv[1]
up = Image.new("RGB", (64, 48), (220, 30, 30))
up.paste((30, 30, 220), (32, 0, 64, 48))
up.paste((30, 200, 30), (0, 0, 16, 16))
up.save(f"{d}/up.png")
up.save(f"{d}/up.jpg", quality=95, subsampling=0)
stored = up.transpose(Image.Transpose.ROTATE_90)  # counter-clockwise: orientation 6 turns it back
ex = Image.Exif()
ex[0x0112] = 6
stored.save(f"{d}/rot6.jpg", quality=95, subsampling=0, exif=ex.tobytes())
stored.save(f"{d}/rot6.png", exif=ex.tobytes())
stored.save(f"{d}/rot6.webp", lossless=True, exif=ex.tobytes())
Image.new("P", (4, 4)).save(f"{d}/x.gif")
open(f"{d}/notes.jpg", "w").write("not a photo\n")
data = open(f"{d}/up.jpg", "rb").read()
open(f"{d}/cut.jpg", "wb").write(data[: len(data) // 2])
PY

# Checks a raw uint8 tensor: the upright picture's three regions at their places.
check_upright() { # FILE W H
  $PY - "$1" "$2" "$3" <<'PY' || fail "not upright: $1"
import sys, numpy as np
f, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
x = np.fromfile(f, dtype=np.uint8).reshape(h, w, 3).astype(int)
def near(p, c): return all(abs(a - b) <= 12 for a, b in zip(p, c))
assert near(x[h * 3 // 4, w // 8], (220, 30, 30)), x[h * 3 // 4, w // 8]
assert near(x[h // 2, w * 7 // 8], (30, 30, 220)), x[h // 2, w * 7 // 8]
assert near(x[h // 8, w // 16], (30, 200, 30)), x[h // 8, w // 16]
PY
}

# ---- ad-hoc size, all three formats, orientation 6 applied
out=$("$CLI" image "$T/up.png" --mode stretch --width 64 --height 48 -o "$T/a.raw")
echo "$out"
grep -q "source:  $T/up.png: png 64x48, 3 channels, 8-bit" <<<"$out" || fail "source line"
grep -q "plan:    stretch to 64x48: drawn at 64x48, window at (0, 0)" <<<"$out" || fail "plan line"
grep -q "output:  \[1, 48, 64, 3\] uint8, 9216 bytes" <<<"$out" || fail "output line"
[ "$(stat -c %s "$T/a.raw")" = 9216 ] || fail "output size"
check_upright "$T/a.raw" 64 48
for f in rot6.jpg rot6.png rot6.webp; do
  out=$("$CLI" image "$T/$f" --mode stretch --width 64 --height 48 -o "$T/r.raw")
  grep -q "orient:  EXIF 6 (rotated 90 CW), applied" <<<"$out" || fail "$f: orientation line: $out"
  check_upright "$T/r.raw" 64 48
  # ignored: the stored (sideways) raster, 48 wide and 64 high
  out=$("$CLI" image "$T/$f" --mode stretch --width 48 --height 64 --ignore-orientation -o "$T/s.raw")
  grep -q "EXIF 6 (rotated 90 CW), ignored" <<<"$out" || fail "$f: ignored line"
  $PY -c "
import numpy as np; x = np.fromfile('$T/s.raw', dtype=np.uint8).reshape(64, 48, 3).astype(int)
assert abs(x[60, 24][0] - 220) <= 12 and abs(x[4, 24][2] - 220) <= 12, (x[60, 24], x[4, 24])  # red bottom, blue top
" || fail "$f: not as stored"
done

# ---- the llava-image example: center_crop 336 from the package, uint32 from the library
# (its processor is read from an MLC package: built without the mlc component, docs/components.md,
# --package is refused naming it, and the ad-hoc cases above and below are the frontend's own)
if has_component "$CLI" mlc; then
  out=$("$CLI" image "$T/up.jpg" --package "$PKG" -o "$T/p8.raw" --png "$T/prev.png")
  echo "$out"
  grep -q "decoded: 64x48 (JPEG DCT scale 8/8)" <<<"$out" || fail "decoded line"
  grep -q "plan:    center_crop to 336x336: drawn at 448x336, window at (56, 0)" <<<"$out" || fail "package plan"
  grep -q "for input image" <<<"$out" || fail "input name"
  [ "$(stat -c %s "$T/p8.raw")" = 338688 ] || fail "uint8 size"
  "$CLI" image "$T/up.jpg" --package "$PKG" --lib "$LIB" -o "$T/p32.raw" --json >"$T/r.json"
  [ "$(stat -c %s "$T/p32.raw")" = 1354752 ] || fail "uint32 size"
  $PY - "$T" <<'PY' || fail "json / uint32 / preview"
import json, sys, numpy as np
from PIL import Image
d = sys.argv[1]
r = json.load(open(f"{d}/r.json"))
assert r["source"]["format"] == "jpeg" and r["source"]["width"] == 64 and r["source"]["height"] == 48, r
assert r["decoded"] == {"width": 64, "height": 48, "jpeg_scale_num": 8}, r["decoded"]
assert r["processor"] == {"input": "image", "mode": "center_crop", "width": 336, "height": 336}, r
assert r["plan"] == {"width": 448, "height": 336, "left": 56, "top": 0}, r["plan"]
o = r["output"]
assert o["shape"] == [1, 336, 336, 3] and o["dtype"] == "uint32" and o["dtype_from"] == "lib", o
assert o["bytes"] == 1354752 and o["file"].endswith("p32.raw") and o["preview"] is None, o
u8 = np.fromfile(f"{d}/p8.raw", dtype=np.uint8)
u32 = np.fromfile(f"{d}/p32.raw", dtype="<u4")
assert (u32 == u8).all(), "uint32 is not the zero-extended uint8"
prev = np.asarray(Image.open(f"{d}/prev.png"))
assert prev.shape == (336, 336, 3) and (prev.reshape(-1) == u8).all(), "preview differs from the tensor"
PY

  # --dtype against the library's adapter_dtypes: refused (exit 1); alone it is obeyed.
  set +e
  "$CLI" image "$T/up.jpg" --package "$PKG" --lib "$LIB" --dtype uint8 -o "$T/x.raw" 2>"$T/err"; rc=$?
  set -e
  [ $rc = 1 ] || fail "dtype conflict: exit $rc"
  grep -q "adapter_dtypes gives the image adapter uint32; --dtype says uint8" "$T/err" || fail "dtype message: $(cat "$T/err")"
  [ ! -e "$T/x.raw" ] || fail "output written after a refusal"
  "$CLI" image "$T/up.jpg" --package "$PKG" --dtype uint32 --width 10 --height 10 -o "$T/d.raw" >/dev/null
  [ "$(stat -c %s "$T/d.raw")" = 1200 ] || fail "--dtype uint32 with overridden size"
else
  refused_without mlc "$CLI" image "$T/up.jpg" --package "$PKG" -o "$T/p8.raw" || fail "--package without mlc"
  [ ! -e "$T/p8.raw" ] || fail "--package without mlc: output written"
  echo "mlc is off: --package refused naming it"
fi

# ---- refusals: exit 1, the reason on stderr, an existing output left as it was, no temp files
echo old >"$T/keep.raw"
refuse() { # FILE MESSAGE
  set +e
  "$CLI" image "$1" --mode center_crop --width 32 --height 32 -o "$T/keep.raw" --png "$T/keep.png" 2>"$T/err"
  local rc=$?
  set -e
  [ $rc = 1 ] || fail "$1: exit $rc"
  grep -qF "$2" "$T/err" || fail "$1: message: $(cat "$T/err")"
  [ "$(cat "$T/keep.raw")" = old ] || fail "$1: output changed"
  [ ! -e "$T/keep.png" ] || fail "$1: preview written"
}
refuse "$T/x.gif" "not a JPEG, PNG or WebP image: a GIF image"
refuse "$T/notes.jpg" "not a JPEG, PNG or WebP image: not an image"
refuse "$T/cut.jpg" "JPEG is truncated: its image data ends early"
refuse "$T/missing.png" "missing.png"
# Without --png the rows are written while the file decodes (mpk_image_options.rows): a JPEG cut
# half-way fails after rows went out, and still leaves the old output whole and no temporary; to
# standard output redirected into a file, nothing is written before the image is done.
set +e
"$CLI" image "$T/cut.jpg" --mode center_crop --width 32 --height 32 -o "$T/keep.raw" 2>"$T/err"; rc=$?
"$CLI" image "$T/cut.jpg" --mode center_crop --width 32 --height 32 -o - >"$T/cut.stdout" 2>/dev/null; rc2=$?
set -e
[ $rc = 1 ] && [ $rc2 = 1 ] || fail "cut.jpg, rows written as made: exit $rc / $rc2"
grep -qF "JPEG is truncated" "$T/err" || fail "cut.jpg, rows written as made: message: $(cat "$T/err")"
[ "$(cat "$T/keep.raw")" = old ] || fail "cut.jpg, rows written as made: output changed"
[ ! -s "$T/cut.stdout" ] || fail "cut.jpg to standard output (a file): $(stat -c %s "$T/cut.stdout") bytes written"
left=$(ls -a "$T"); grep -q '\.tmp\.' <<<"$left" && fail "cut.jpg, rows written as made: temporary file left behind"
set +e
"$CLI" image "$T/up.png" --mode stretch --width 8 --height 8 --max-pixels 100 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "64x48 = 3072 pixels, above the limit of 100" "$T/err" || fail "max-pixels: $(cat "$T/err")"
# An output directory that does not exist: refused, nothing left behind.
set +e
"$CLI" image "$T/up.png" --mode stretch --width 8 --height 8 -o "$T/nodir/o.raw" 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] || fail "bad output path: exit $rc"
left=$(ls "$T"); grep -q '\.tmp\.' <<<"$left" && fail "temporary file left behind"

# A FIFO (like /dev/null or /dev/stdout) is written into, not replaced by a renamed file.
mkfifo "$T/fifo"
cat "$T/fifo" >"$T/from_fifo" &
"$CLI" image "$T/up.png" --mode stretch --width 8 --height 8 -o "$T/fifo" >/dev/null
wait
[ -p "$T/fifo" ] || fail "the FIFO was replaced"
[ "$(stat -c %s "$T/from_fifo")" = 192 ] || fail "FIFO output size"

# ---- the output contract (docs/CLI.md "Output files"), on private nodes only: never the system's
# /dev/stdout or /dev/null. The reference tensor first, written to a plain file.
A=("$T/up.jpg" --mode center_crop --width 336 --height 336)
"$CLI" image "${A[@]}" -o "$T/expected.raw" >/dev/null
# `-o /dev/stdout > t.raw`, with a private link to /proc/self/fd/1 in place of /dev/stdout: the link
# stays a link, t.raw gets the tensor and nothing else, the report goes to stderr.
ln -s /proc/self/fd/1 "$T/stdout-link"
timeout 10 "$CLI" image "${A[@]}" -o "$T/stdout-link" >"$T/t.raw" 2>"$T/rep"
[ -L "$T/stdout-link" ] || fail "the stdout link was replaced"
cmp "$T/t.raw" "$T/expected.raw" || fail "-o link-to-stdout: t.raw is not the tensor"
grep -q "written: $T/stdout-link (338688 bytes)" "$T/rep" || fail "report not on stderr: $(cat "$T/rep")"
# -o - into a pipe
timeout 10 "$CLI" image "${A[@]}" -o - 2>"$T/rep" | cmp - "$T/expected.raw" || fail "-o - | cmp"
grep -q "written: standard output" "$T/rep" || fail "-o - report: $(cat "$T/rep")"
[ ! -e ./- ] && [ ! -e "$T/-" ] || fail "a file named - was created"
# --png - too
timeout 10 "$CLI" image "${A[@]}" --png - 2>/dev/null | cat >"$T/dash.png"
magic=$(od -An -tx1 -N4 "$T/dash.png")
grep -q "89 50 4e 47" <<<"$magic" || fail "--png -"
# A private character device (the null device, c 1 3) stays a device, directly and through a link.
if mknod "$T/null" c 1 3 2>/dev/null; then
  ln -s "$T/null" "$T/null-link"
  timeout 10 "$CLI" image "${A[@]}" -o "$T/null" >/dev/null
  timeout 10 "$CLI" image "${A[@]}" -o "$T/null-link" >/dev/null
  [ -c "$T/null" ] && [ -L "$T/null-link" ] || fail "the device or its link was replaced"
fi
# A link to a regular file stays a link; its target is replaced atomically.
echo old >"$T/target.raw"
ln -s target.raw "$T/file-link"
"$CLI" image "${A[@]}" -o "$T/file-link" >/dev/null
[ -L "$T/file-link" ] && cmp "$T/target.raw" "$T/expected.raw" || fail "link to a regular file"
# A FIFO with its reader, timed out rather than hung.
mkfifo "$T/fifo2"
timeout 10 cat "$T/fifo2" >"$T/from_fifo2" &
timeout 10 "$CLI" image "${A[@]}" -o "$T/fifo2" >/dev/null
wait
cmp "$T/from_fifo2" "$T/expected.raw" && [ -p "$T/fifo2" ] || fail "FIFO output"
# A directory is refused, exit 1.
mkdir "$T/outdir"
set +e
"$CLI" image "${A[@]}" -o "$T/outdir" >/dev/null 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "is a directory" "$T/err" || fail "directory output: exit $rc, $(cat "$T/err")"
# --json with the data on standard output: a usage error (exit 2), still one JSON document on stdout.
for o in "-o -" "-o $T/stdout-link" "--png -"; do
  set +e
  # shellcheck disable=SC2086
  "$CLI" image "${A[@]}" $o --json >"$T/j.json" 2>"$T/err"; rc=$?
  set -e
  [ $rc = 2 ] || fail "--json $o: exit $rc"
  grep -q "prints its document on standard output" "$T/err" || fail "--json $o message: $(cat "$T/err")"
  $PY -c "
import json,sys; r=json.load(open('$T/j.json'))
assert r['command']=='image' and r['ok'] is False and r['problems'][0]['code']=='invalid-argument', r
assert all(r[k] is None for k in ('source','decoded','processor','plan','output')), r
" || fail "--json $o document"
done

# ---- decompression bombs, refused from the header within the memory budget (1 GiB address space,
# under a second): a 38-byte lossless WebP declaring 16383x16383, a 500-byte progressive JPEG
# declaring 16384x16384 (4:4:4: 1.5 GiB of coefficients). The budget is named in the message.
$PY - "$T" <<'PY'
import io, struct, sys
from PIL import Image
d = sys.argv[1]
b = io.BytesIO(); Image.new("RGB", (16, 16), (9, 9, 9)).save(b, "WEBP", lossless=True)
w = bytearray(b.getvalue())
assert w[12:16] == b"VP8L" and w[20] == 0x2F
bits = struct.unpack("<I", w[21:25])[0]
w[21:25] = struct.pack("<I", (bits & ~((1 << 28) - 1)) | 16382 | (16382 << 14))  # width-1, height-1
open(f"{d}/bomb.webp", "wb").write(w)
b = io.BytesIO(); Image.new("RGB", (16, 16), (9, 9, 9)).save(b, "JPEG", progressive=True, subsampling=0)
j = bytearray(b.getvalue())
k = j.find(b"\xff\xc2")
j[k + 5:k + 9] = struct.pack(">HH", 16384, 16384)
open(f"{d}/bomb.jpg", "wb").write(j)
PY
# (AddressSanitizer reserves terabytes of shadow address space: no address-space limit under it.)
LIMIT=()
if ! grep -q __asan_init "$CLI" && as_limit "$CLI" --version; then LIMIT=("${AS_LIMIT[@]}"); fi
for f in bomb.webp:"16383x16383 pixels at 3 bytes + 1023.9 MiB of lossless WebP ARGB plane" \
         bomb.jpg:"2048x2048 pixels at 3 bytes + 1536.0 MiB of progressive JPEG coefficients"; do
  set +e
  TIMEFORMAT='%3U %3S' # CPU time (user, sys) of the refusal: wall time measures the machine's load
  { time "${LIMIT[@]}" timeout 10 "$CLI" image "$T/${f%%:*}" "${A[@]:1}" -o "$T/bomb.raw" 2>"$T/err"; } 2>"$T/time"
  rc=$?
  ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$T/time")
  set -e
  [ $rc = 1 ] || fail "${f%%:*}: exit $rc"
  grep -qF "${f#*:}), above the memory budget of 512.0 MiB (max_decode_bytes; modelpkg image --max-decode-mib)" "$T/err" ||
    fail "${f%%:*}: $(cat "$T/err")"
  # A bound, not a benchmark: decoding would take tens of seconds; refusing from the header takes
  # milliseconds. 3 s of CPU leaves room for a sanitizer build (3.6 s of wall time was seen at load 25).
  [ "$ms" -lt 3000 ] || fail "${f%%:*}: refused after $ms ms of CPU time"
  [ ! -e "$T/bomb.raw" ] || fail "${f%%:*}: output written"
done
# The budget is an option: a smaller one refuses an ordinary photo, naming it.
set +e
"$CLI" image "$T/up.png" --mode stretch --width 8 --height 8 --max-decode-mib 1 >/dev/null 2>&1; rc1=$?
set -e
[ $rc1 = 0 ] || fail "--max-decode-mib 1 on 64x48: exit $rc1"

# ---- libjpeg warnings: fail closed (corrupt entropy data refused), except bytes between markers,
# which leave every pixel whole: accepted, and said in the report and the --json notes.
$PY - "$T" <<'PY'
import sys
d = sys.argv[1]
j = open(f"{d}/up.jpg", "rb").read()
k = j.find(b"\xff\xdb")
open(f"{d}/stray.jpg", "wb").write(j[:k] + b"\x00\x12" + j[k:])
s = j.find(b"\xff\xda")
s += 2 + int.from_bytes(j[s + 2:s + 4], "big")
bad = bytearray(j)
mid = (s + len(j)) // 2
bad[mid:mid + 2] = b"\xff\xd5"  # a restart marker in the middle of the entropy-coded data
open(f"{d}/corrupt.jpg", "wb").write(bytes(bad))
PY
"$CLI" image "$T/stray.jpg" --mode stretch --width 8 --height 8 >"$T/rep"
grep -q "note:    libjpeg warning: Corrupt JPEG data: 2 extraneous bytes before marker 0xdb (the pixels are whole)" "$T/rep" ||
  fail "stray-bytes note: $(cat "$T/rep")"
"$CLI" image "$T/stray.jpg" --mode stretch --width 8 --height 8 --json >"$T/j.json"
$PY -c "
import json; r=json.load(open('$T/j.json'))
assert r['ok'] is True and r['problems']==[] and 'extraneous bytes' in r['notes'][0], r
assert list(r)[:3]==['modelpkg_version','command','ok'] and list(r)[-2:]==['problems','notes'], list(r)
" || fail "stray-bytes JSON"
set +e
timeout 10 "$CLI" image "$T/corrupt.jpg" --mode stretch --width 8 --height 8 --json >"$T/j.json" 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "corrupt.jpg: JPEG data is corrupt: premature end of data segment" "$T/err" || fail "corrupt JPEG: exit $rc, $(cat "$T/err")"
$PY -c "
import json; r=json.load(open('$T/j.json'))
assert r['ok'] is False and r['source'] is None and r['problems'][0]['file'].endswith('corrupt.jpg'), r
" || fail "corrupt JPEG JSON refusal"

# A FIFO as the input (no writer): refused at once, never waited on.
mkfifo "$T/in-fifo"
set +e
timeout 10 "$CLI" image "$T/in-fifo" --mode stretch --width 8 --height 8 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "in-fifo: is a FIFO, not a regular file" "$T/err" || fail "FIFO input: exit $rc, $(cat "$T/err")"

# ---- usage errors: exit 2
usage() {
  set +e
  "$CLI" image "$@" >/dev/null 2>&1
  local rc=$?
  set -e
  [ $rc = 2 ] || fail "usage '$*': exit $rc"
}
usage
usage "$T/up.png"
usage "$T/up.png" --mode stretch --width 8
usage "$T/up.png" --mode squash --width 8 --height 8
usage "$T/up.png" --mode stretch --width 0 --height 8
usage "$T/up.png" --mode stretch --width 70000 --height 8
usage "$T/up.png" --mode stretch --width 8 --height 8 --dtype float32
usage "$T/up.png" --mode stretch --width 8 --height 8 --lib "$LIB"
usage "$T/up.png" "$T/up.jpg" --mode stretch --width 8 --height 8
usage "$T/up.png" --frobnicate
usage "$T/up.png" --package
usage "$T/up.png" --mode stretch --width 8 --height 8 --max-decode-mib 0
out=$("$CLI" image --help) || fail "help: exit $?"
grep -q "usage: modelpkg image IN" <<<"$out" || fail "help"
out=$("$CLI" --help) || fail "top-level help: exit $?"
grep -q "image IN --package DIR" <<<"$out" || fail "top-level help"
echo "ok"
