#!/bin/sh
# The synthetic image set for the image frontend's quality check (scripts/image_vs_pillow.py) and
# benchmark (bench/run_image.sh), made with ImageMagick (Debian imagemagick, IM6) into DIR.
# Generated at test time, never committed. Usage: scripts/gen_images.sh DIR [--bench|--process]
#   --bench: only the two benchmark inputs (4032x3024 JPEG q90 and the same as an RGBA PNG).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [--bench]" >&2; exit 2; }
out=$1
bench_only=${2:-}
mkdir -p "$out"
cd "$out"
# Deterministic: plasma and noise take -seed; nothing reads the clock into the pixels.
im() { convert -seed 7 "$@"; }
# Text is drawn with a font file setup.sh --test installs: ImageMagick's default (helvetica) needs
# Ghostscript fonts a fresh machine lacks.
FONT=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf

# Photo-like: plasma light, soft shapes with edges of several contrasts, a real photo (rose:)
# pasted in, text, then sensor-like noise. W x H. Large sizes are drawn at a quarter and scaled up
# before the noise (the plasma and the blur are the slow parts).
photo() {
  k=1
  [ "$1" -ge 3000 ] && k=4
  im -size "$(($1/k))x$(($2/k))" plasma:fractal -blur 0x2 -resize "$1x$2!" \
    -fill 'rgba(250,240,220,0.8)' -draw "circle $(($1/4)),$(($2/3)) $(($1/4+$1/10)),$(($2/3))" \
    -fill 'rgba(20,30,60,0.9)' -draw "rectangle $(($1/2)),$(($2/2)) $(($1*4/5)),$(($2*5/6))" \
    -fill 'rgb(200,40,30)' -draw "polygon $(($1/10)),$(($2*9/10)) $(($1/3)),$(($2*3/5)) $(($1*2/5)),$(($2*19/20))" \
    \( rose: -resize "$(($1/4))x" \) -geometry "+$(($1*3/5))+$(($2/10))" -composite \
    -fill black -font "$FONT" -pointsize "$(($2/20))" -annotate "+$(($1/20))+$(($2/8))" 'modelpkg 0123' \
    -blur 0x0.7 -attenuate 0.3 +noise Gaussian "$3"
}

if [ "$bench_only" = --bench ]; then
  photo 4032 3024 png24:photo_4032x3024.png
  im photo_4032x3024.png -quality 90 photo_4032x3024_q90.jpg
  # RGBA: an alpha ramp over the same photo (the colour channels are what is kept).
  im photo_4032x3024.png \( -size 3024x4032 gradient:white-gray30 -rotate 90 \) -alpha off \
    -compose CopyOpacity -composite png32:photo_4032x3024_rgba.png
  rm -f photo_4032x3024.png
  exit 0
fi
# --process: bench/run_image_process.sh's inputs, 1, 3, 12 and 48 MP (4:3), quality 90, 4:2:0
# (IM6 would pick 4:4:4 at quality 90): photo_WxH_q90.jpg (textured, noisy) and smooth_WxH_q90.jpg
# (gradients only, which entropy-decode far faster). Within Debian's ImageMagick policy (1 GiB of
# pixel cache): the 48 MP photo is the 12 MP one mirrored 2 x 2 (the same texture per pixel), the
# large gradients are drawn at a quarter and scaled up.
if [ "$bench_only" = --process ]; then
  for wh in 1152x864 2016x1512 4032x3024 8064x6048; do
    w=${wh%x*} h=${wh#*x} k=1
    [ "$w" -ge 3000 ] && k=4
    if [ "$w" -le 4032 ]; then
      photo "$w" "$h" png24:p.png
    else
      im p.png \( p.png -flop \) +append png24:row.png
      im row.png \( row.png -flip \) -append png24:p.png
      rm -f row.png
    fi
    im p.png -quality 90 -sampling-factor 2x2 "photo_${wh}_q90.jpg"
    im -size "$((w/k))x$((h/k))" gradient:'#1c3f94'-'#f2c48a' \
      \( -size "$((w/k))x$((h/k))" radial-gradient:'rgba(255,255,255,0.5)'-'rgba(0,0,0,0)' \) \
      -compose Over -composite -resize "${wh}!" -quality 90 -sampling-factor 2x2 "smooth_${wh}_q90.jpg"
  done
  rm -f p.png
  exit 0
fi

# ---- photographs and photo-like JPEGs
photo 4032 3024 photo_4032x3024_q90.jpg.png
im photo_4032x3024_q90.jpg.png -quality 90 photo_4032x3024_q90.jpg
rm -f photo_4032x3024_q90.jpg.png
photo 1921 1081 png24:p1921.png              # sides not multiples of 8: partial DCT blocks
im p1921.png -quality 90 photo_1921x1081.jpg
im p1921.png -quality 85 -interlace Plane photo_progressive.jpg
im p1921.png -quality 95 -sampling-factor 1x1 photo_444.jpg
im p1921.png -colorspace Gray -quality 90 grey.jpg
im rose: rose.png                            # ImageMagick's built-in photograph (70 x 46)
im rose: -quality 95 rose.jpg

# ---- EXIF orientation: a photo with an EXIF profile, then -orient rewrites the tag (IM6 only
# updates a profile that exists, so the seed gets a minimal big-endian EXIF APP1 with
# Orientation = 1, spliced in after SOI).
photo 640 480 png24:o.png
{ printf '\377\330\377\341\000\042Exif\000\000MM\000\052\000\000\000\010\000\001\001\022\000\003\000\000\000\001\000\001\000\000\000\000\000\000'
  im o.png -quality 92 jpg:- | tail -c +3; } > orient_seed.jpg
n=1
for o in TopLeft TopRight BottomRight BottomLeft LeftTop RightTop RightBottom LeftBottom; do
  im orient_seed.jpg -orient $o -quality 92 "orient_$n.jpg"
  n=$((n + 1))
done
im orient_seed.jpg -orient RightTop orient_6.png  # eXIf chunk (after IDAT)
im orient_seed.jpg -orient LeftBottom -quality 90 orient_8.webp
rm -f o.png orient_seed.jpg

# ---- synthetic PNGs
im -size 640x480 gradient:'#ff2000-#0030ff' gradient.png
im -size 800x600 radial-gradient:white-black -quality 92 radial.jpg
im -size 800x600 pattern:checkerboard checker_15px.png
im -size 512x512 pattern:gray50 -type TrueColor png24:checker_1px.png
im -size 800x600 xc:white -fill black -font "$FONT" -pointsize 28 \
  -annotate +20+60 'The quick brown fox jumps over the lazy dog' \
  -annotate +20+160 'Lorem ipsum dolor sit amet 0123456789' -pointsize 12 \
  -annotate +20+260 'small print: resampling must not alias this' png24:text.png
im p1921.png -resize 800x600! \( -size 800x600 gradient:white-black \) -alpha off \
  -compose CopyOpacity -composite png32:alpha.png
im p1921.png -resize 640x480! -colorspace Gray -type Grayscale png:grey.png
im p1921.png -resize 640x480! -colorspace Gray \( -size 640x480 gradient:white-gray20 \) -alpha off \
  -compose CopyOpacity -composite -type GrayscaleAlpha png:grey_alpha.png
im p1921.png -resize 640x480! -colors 64 png8:palette.png
im alpha.png -resize 640x480! -channel A -threshold 50% +channel png8:palette_trns.png
im p1921.png -resize 640x480! -depth 16 png48:rgb16.png
im p1921.png -resize 640x480! -colorspace Gray -depth 16 -type Grayscale png:grey16.png

# ---- WebP
im p1921.png -resize 800x450! -quality 90 photo.webp
im p1921.png -resize 640x360! -define webp:lossless=true photo_lossless.webp
im alpha.png -quality 90 alpha.webp
rm -f p1921.png
