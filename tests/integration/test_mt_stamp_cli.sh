#!/usr/bin/env bash
# `modelpkg mt tensors DIR --stamp/--rehash` (the load gate's verification stamp, docs/mt.md): the
# per-file report ("hashed now" / "accepted by stamp (hashed at ...)") in human and --json form, a
# byte flipped in place with its mtime restored (`touch -d`) caught, --rehash hashing every file,
# a torn stamp ignored, check not calling the stamp unlisted and an install source that ships one
# refused, and an installed model stamped with no option. usage: test_mt_stamp_cli.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
P="$TMP/pkg"; INF="$P/variants/cpu-fp16/inference"
W=model.layers.0.attn.q_proj.MatMul.weight.bin
STAMP="$INF/.modelpkg-verified.json"
EXPECT_TIMEOUT=20; . "$(dirname "$0")/expect.sh"
need_tool python3

cp -r "$SRC/examples/mt-tiny" "$P" && chmod -R u+w "$P"
sleep 1.1 # the copies' ctimes lie in an earlier second than the stamp: not racy
NOW='hashed now'
STAMPED='accepted by stamp \(hashed at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\)'

expect first_hashes_all 0 "$W .*verified \(map\)  $NOW" -- "$MPK" mt tensors "$P" --stamp
check stamp_written test -f "$STAMP"
expect second_accepts 0 "$W .*verified \(map\)  $STAMPED" -- "$MPK" mt tensors "$P" --stamp
expect second_counts 0 "0 hashed now, 2 accepted by stamp" -- "$MPK" mt tensors "$P" --stamp
expect json_counts 0 '"accepted_by_stamp": 2' -- "$MPK" mt tensors "$P" --stamp --json
expect json_per_file 0 '"hashed": "stamp",' -- "$MPK" mt tensors "$P" --stamp --json
expect rehash_hashes_all 0 "2 hashed now, 0 accepted by stamp; stamp written" -- "$MPK" mt tensors "$P" --rehash
expect rehash_json 0 '"hashed_now": 2' -- "$MPK" mt tensors "$P" --rehash --json
# Without --stamp on a package directory, every file is hashed (an installed model keeps a stamp).
expect no_stamp_hashes 0 "$W .*verified \(map\)  $NOW" -- "$MPK" mt tensors "$P"
# check always hashes, and does not list the stamp as an unlisted file.
expect check_ok 0 "OK: all checks hold" -- "$MPK" check "$P"
out="$("$MPK" check "$P" 2>&1)"
if grep -q "modelpkg-verified" <<<"$out"; then bad "check mentions the stamp"; else ok; fi

# A byte flipped in place, size kept, mtime put back as `touch -d` does: caught (ctime).
sleep 1.1
"$MPK" mt tensors "$P" --stamp >/dev/null 2>&1
mtime="$(stat -c %y "$INF/$W")"
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(5); b=f.read(1); f.seek(5); f.write(bytes([b[0]^1]))' "$INF/$W"
touch -d "$mtime" "$INF/$W"
check mtime_restored test "$(stat -c %y "$INF/$W")" = "$mtime"
expect flipped_caught 1 "$W .*mismatch \(map\)  $NOW" -- "$MPK" mt tensors "$P" --stamp
expect flipped_json 1 '"status": "mismatch"' -- "$MPK" mt tensors "$P" --stamp --json
python3 -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(5); b=f.read(1); f.seek(5); f.write(bytes([b[0]^1]))' "$INF/$W"

# A torn stamp is ignored, said so, and replaced.
truncate -s 40 "$STAMP"
expect torn_ignored 0 "stamp was ignored \(.*torn or edited" -- "$MPK" mt tensors "$P" --stamp
expect torn_replaced 0 "[12] accepted by stamp" -- "$MPK" mt tensors "$P" --stamp

# An installed model keeps a stamp with no option; check on it still hashes and stays silent about it.
C="$TMP/cache"; T="$C/org__Tiny"
expect install 0 "" -- "$MPK" mt install "$SRC/examples/mt-tiny" --repo-id org/Tiny --cache "$C"
sleep 1.1
expect installed_first 0 "2 hashed now, 0 accepted by stamp; stamp written" -- "$MPK" mt tensors "$T"
check installed_stamp test -f "$T/inference/.modelpkg-verified.json"
expect installed_second 0 "0 hashed now, 2 accepted by stamp" -- "$MPK" mt tensors "$T"
expect installed_rehash 0 "2 hashed now, 0 accepted by stamp; stamp written" -- "$MPK" mt tensors "$T" --rehash
expect installed_check 0 "OK: all checks hold" -- "$MPK" check "$T"

# --help lists both options.
expect help 0 "--rehash" -- "$MPK" mt tensors --help

# A package (install source) that ships a stamp is refused.
S="$TMP/src"; cp -r "$SRC/examples/mt-tiny" "$S" && chmod -R u+w "$S"
python3 - "$S" <<'EOF'
import hashlib, json, os, sys
d = sys.argv[1]
rel = "variants/cpu-fp16/inference/.modelpkg-verified.json"
open(os.path.join(d, rel), "w").write("{}")
m = os.path.join(d, "mobiletransformers_manifest.json")
j = json.load(open(m))
j.setdefault("fileSizes", {})[rel] = 2
if "sha256" in j: j["sha256"][rel] = hashlib.sha256(b"{}").hexdigest()
json.dump(j, open(m, "w"), indent=2)
EOF
expect install_refuses 1 "verification stamp" -- "$MPK" mt install "$S" --repo-id org/Other --cache "$TMP/cache2"
expect tensors_refuses 1 "verification stamp" -- "$MPK" mt tensors "$S"
finish
