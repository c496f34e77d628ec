#!/usr/bin/env bash
# Crash safety, tested by crashing: kill -9 the package writer at random points. Every document
# must then hold the old bytes or the new bytes, never a mix, and the next run must seal the package
# as if nothing had happened (no leftover temporary file taken for package content).
# usage: test_crash.sh MODELPKG SOURCE_DIR [ROUNDS]
set -uo pipefail
MPK="$1"; SRC="$2"; ROUNDS="${3:-25}"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/expect.sh"

pkg="$TMP/pkg"
cp -r "$SRC/examples/mt-tiny" "$pkg"
# A large tensor makes a reseal long enough to be killed while hashing and while writing. Zeros, so
# that the one-byte change below always changes it.
head -c 48000000 /dev/zero > "$pkg/variants/cpu-int4/inference/large.bin"
"$MPK" mt reseal "$pkg" >/dev/null 2>&1 || { echo "FAIL: first seal"; exit 1; }
docs=(mobiletransformers_manifest.json variants/cpu-int4/checksums.json variants/cpu-fp16/checksums.json)
mkdir -p "$TMP/old" "$TMP/new"
for d in "${docs[@]}"; do mkdir -p "$TMP/old/$(dirname "$d")"; cp "$pkg/$d" "$TMP/old/$d"; done

# The change the writer will seal: one byte of the large tensor. The reference result comes from
# an uninterrupted run on a copy.
printf '\x5a' | dd of="$pkg/variants/cpu-int4/inference/large.bin" bs=1 seek=1000 conv=notrunc status=none
cp -r "$pkg" "$TMP/ref"
"$MPK" mt reseal "$TMP/ref" >/dev/null 2>&1 || { echo "FAIL: reference seal"; exit 1; }
for d in "${docs[@]}"; do mkdir -p "$TMP/new/$(dirname "$d")"; cp "$TMP/ref/$d" "$TMP/new/$d"; done
cmp -s "$TMP/old/${docs[0]}" "$TMP/new/${docs[0]}" && { echo "FAIL: the change changed nothing"; exit 1; }

for i in $(seq 1 "$ROUNDS"); do
  for d in "${docs[@]}"; do cp "$TMP/old/$d" "$pkg/$d"; done # back to the old seal
  "$MPK" mt reseal "$pkg" >/dev/null 2>&1 &
  writer=$!
  sleep "$(printf '0.%03d' $((RANDOM % 150)))"
  kill -9 "$writer" 2>/dev/null
  wait "$writer" 2>/dev/null
  for d in "${docs[@]}"; do
    if cmp -s "$pkg/$d" "$TMP/old/$d" || cmp -s "$pkg/$d" "$TMP/new/$d"; then ok; else bad "round $i: $d is neither the old nor the new bytes"; fi
  done
done

# After all the interruptions, one full run gives exactly the uninterrupted result.
"$MPK" mt reseal "$pkg" >/dev/null 2>&1 && ok || bad "final reseal failed"
for d in "${docs[@]}"; do cmp -s "$pkg/$d" "$TMP/new/$d" && ok || bad "final $d differs from an uninterrupted run"; done
left="$(find "$pkg" -name '*.tmp.??????' | wc -l)"
[ "$left" -eq 0 ] && ok || bad "$left temporary files left after the final run"
"$MPK" check "$pkg" --all-variants >/dev/null 2>&1 && ok || bad "check after the final run"

finish
