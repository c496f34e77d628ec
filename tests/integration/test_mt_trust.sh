#!/usr/bin/env bash
# The MobileTransformers trust model (issue 16, docs/mt.md "Shipped bytes", docs/mt-merge.md): hostile
# packages against check, check --no-hash, the load gate (mt tensors) and mt merge. Each case runs
# under a timeout; every refusal must name the file and the rule, and nothing may be written outside
# the package (checksummed before and after). usage: test_mt_trust.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
EX="$SRC/examples"; AD="$EX/mt-tiny.adapter.safetensors"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
INF=variants/cpu-fp16/inference
W=model.layers.0.attn.q_proj.MatMul.weight.bin
V=model.layers.0.attn.v_proj.MatMul.weight.bin

EXPECT_TIMEOUT=10; . "$(dirname "$0")/expect.sh"
fresh() { rm -rf "$1" && cp -r "$EX/mt-tiny" "$1" && chmod -R u+w "$1"; }
# Every file under a directory (names, types, link targets and contents), for before/after comparisons.
sums() { (cd "$1" && find . -printf '%p %y %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r sha256sum); }
same() { diff <(sums "$2") "$1" >/dev/null && ok || bad "$3: files changed"; }
# A merge journal as core/txn.c writes it (canonical JSON + its sha256 line), committing new bytes for
# $2 from the temporary $3 in directory $1.
journal() {
  python3 - "$1" "$2" "$3" <<'EOF'
import hashlib, json, os, sys
d, final, temp = sys.argv[1:]
data = open(os.path.join(d, temp), "rb").read()
body = json.dumps({"entries": [{"final": final, "sha256": "sha256:" + hashlib.sha256(data).hexdigest(),
                                "size": len(data), "temp": temp}],
                   "format": "modelpkg-txn-journal", "name": "merge", "version": 1},
                  sort_keys=True, separators=(",", ":")) + "\n"
open(os.path.join(d, ".merge.txn-journal"), "w").write(body + "sha256:" + hashlib.sha256(body.encode()).hexdigest() + "\n")
EOF
}

# ---- 1. swapped weights: a tensor's bytes replaced in the package as shipped, its sidecar rewritten.
P="$TMP/swapped"; fresh "$P"
cp "$P/$INF/$V" "$P/$INF/$W"                       # other bytes of the same size
sha256sum "$P/$INF/$W" | cut -c1-64 > "$P/$INF/$W.sha256"
SHIPPED="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["sha256"]["'"$INF/$W"'"])' "$P/mobiletransformers_manifest.json")"
expect swapped_check 1 "$W: layer .* does not equal the shipped digest $SHIPPED \(the map.s sha256\): its sidecar agrees with the bytes, which does not make them shipped; a tensor must hold the shipped bytes .*merge record" \
  -- "$MPK" check "$P"
expect swapped_check_not_merged 1 'FAILED' -- "$MPK" check "$P"
out="$(timeout 10 "$MPK" check "$P" 2>&1)"; grep -q 'merged on device' <<<"$out" && bad "swapped: check says merged on device" || ok
expect swapped_no_hash 1 "$W: layer .* its sidecar says [0-9a-f]{64}, not the shipped digest $SHIPPED .*no merge record names it" \
  -- "$MPK" check "$P" --no-hash
expect swapped_gate 1 "$W: layer .* does not equal the shipped digest $SHIPPED" -- "$MPK" mt tensors "$P"
# the gate as a library caller runs it (mpk_mt_load_gate) is unit-tested in test_mt_tensor
"$MPK" mt reseal "$P" >/dev/null 2>&1                # even a resealed manifest: the map keeps the shipped digest
expect swapped_resealed 1 "does not equal the shipped digest $SHIPPED" -- "$MPK" check "$P"

# ---- 2. a package shipping its own merge journal and record (listed by its manifest): refused, never
# replayed, never trusted; the tensor bytes are unchanged afterwards.
P="$TMP/shipsjournal"; fresh "$P"
head -c 48 /dev/urandom > "$P/$INF/$W.merge-txn.AbC123"
journal "$P/$INF" "$W" "$W.merge-txn.AbC123"
EVIL="$(sha256sum "$P/$INF/$W.merge-txn.AbC123" | cut -c1-64)"
printf '{"format": "modelpkg-merge-record", "tensors": {"%s": {"sha256": "%s", "shipped_sha256": null}}, "version": 1}\n' \
  "$W" "$EVIL" > "$P/$INF/.modelpkg-merge-record.json"
# mt reseal refuses to seal these (section 9), so the fixture lists them in the manifest by hand
python3 - "$P" "$INF" <<'EOF2'
import hashlib, json, os, sys
pkg, inf = sys.argv[1:]
path = os.path.join(pkg, "mobiletransformers_manifest.json")
m = json.load(open(path))
for name in sorted(os.listdir(os.path.join(pkg, inf))):
    if name.startswith(".") or "merge-txn" in name:
        data = open(os.path.join(pkg, inf, name), "rb").read()
        m["fileSizes"][inf + "/" + name] = len(data)
        m["sha256"][inf + "/" + name] = hashlib.sha256(data).hexdigest()
json.dump(m, open(path, "w"), indent=2, sort_keys=True)
EOF2
grep -q 'merge.txn-journal' "$P/mobiletransformers_manifest.json" && ok || bad "shipsjournal: the fixture's manifest does not list the journal"
sums "$P" > "$TMP/before"
expect ships_check 1 'the manifest lists "variants/cpu-fp16/inference/\.(merge\.txn-journal|modelpkg-merge-record\.json|.*merge-txn.*)", a file only modelpkg writes on the device .* refused; it is never replayed or trusted' \
  -- "$MPK" check "$P"
expect ships_check_no_hash 1 'a package that ships one is refused' -- "$MPK" check "$P" --no-hash
expect ships_tensors 1 'a package that ships one is refused' -- "$MPK" mt tensors "$P"
expect ships_merge 1 'a package that ships one is refused' -- "$MPK" mt merge "$P" --adapter "$AD"
same "$TMP/before" "$P" "shipsjournal"

# ---- 3. check never writes: an interrupted merge's journal (not listed) is reported with the next
# step; the load gate (mt tensors) finishes it — and a tensor so replaced without a record is refused.
P="$TMP/pending"; fresh "$P"
head -c 48 /dev/urandom > "$P/$INF/$W.merge-txn.XyZ789"
journal "$P/$INF" "$W" "$W.merge-txn.XyZ789"
NEW="$(sha256sum "$P/$INF/$W.merge-txn.XyZ789" | cut -c1-64)"
sums "$P" > "$TMP/before"
expect pending_check 1 "\.merge\.txn-journal: an interrupted merge transaction is pending \(committed, 1 files to put in place\); check never writes: .modelpkg mt tensors $P --variant cpu-fp16. \(the load gate\) finishes it" \
  -- "$MPK" check "$P"
expect pending_check_no_hash 1 'an interrupted merge transaction is pending' -- "$MPK" check "$P" --no-hash
same "$TMP/before" "$P" "pending: check"
expect pending_gate_finishes 1 "$W: layer .* does not equal the shipped digest" -- "$MPK" mt tensors "$P"
[ ! -e "$P/$INF/.merge.txn-journal" ] && [ "$(sha256sum "$P/$INF/$W" | cut -c1-64)" = "$NEW" ] && ok || bad "pending: the gate did not finish the transaction"

# ---- 4. a linked-out inference directory: mt merge, mt tensors and check refuse it; nothing outside
# is written.
P="$TMP/linked"; fresh "$P"
mv "$P/$INF" "$TMP/outside" && ln -s "$TMP/outside" "$P/$INF"
sums "$TMP/outside" > "$TMP/before"
expect linked_merge 1 "inference: .inference. is a symbolic link: refused \(never followed by a writer\)" -- "$MPK" mt merge "$P" --adapter "$AD"
expect linked_merge_unchanged 1 'nothing was changed' -- "$MPK" mt merge "$P" --adapter "$AD"
expect linked_tensors 1 'weight_handoff_map.json: resolves outside the package directory' -- "$MPK" mt tensors "$P"
expect linked_check 1 'FAILED' -- "$MPK" check "$P"
expect linked_check_no_hash 1 'symbolic link' -- "$MPK" check "$P" --no-hash
same "$TMP/before" "$TMP/outside" "linked: the directory outside the package"
# a link higher up (variants/cpu-fp16) as well
P="$TMP/linked2"; fresh "$P"
mv "$P/variants/cpu-fp16" "$TMP/outside2" && ln -s "$TMP/outside2" "$P/variants/cpu-fp16"
sums "$TMP/outside2" > "$TMP/before"
expect linked_parent_merge 1 '.cpu-fp16. is a symbolic link: refused' -- "$MPK" mt merge "$P" --adapter "$AD"
same "$TMP/before" "$TMP/outside2" "linked2: the directory outside the package"

# ---- 5. a tensor that is a symbolic link to a file outside the package.
P="$TMP/tlink"; fresh "$P"
cp "$P/$INF/$W" "$TMP/outside.bin" && rm "$P/$INF/$W" && ln -s "$TMP/outside.bin" "$P/$INF/$W"
sha256sum "$TMP/outside.bin" > "$TMP/outside.sum"
expect tlink_check 1 "$W: .*resolves outside the package directory" -- "$MPK" check "$P"
expect tlink_tensors 1 "$W: merged weight of layer .* is refused: .*resolves outside the inference directory" -- "$MPK" mt tensors "$P"
expect tlink_merge 1 "$W: .*resolves outside the inference directory" -- "$MPK" mt merge "$P" --adapter "$AD"
sha256sum --quiet -c "$TMP/outside.sum" && [ -L "$P/$INF/$W" ] && ok || bad "tlink: the file outside changed"
rm "$P/$INF/$W" && ln -s /etc/hostname "$P/$INF/$W"
expect tlink_hostname_tensors 1 'resolves outside the inference directory' -- "$MPK" mt tensors "$P"

# ---- 6. FIFOs: an adapter and a tensor that are FIFOs are refused at once, never waited on.
P="$TMP/fifo"; fresh "$P"
mkfifo "$TMP/adapter.fifo"
expect fifo_adapter 1 'adapter.fifo: is a FIFO, not a regular file' -- "$MPK" mt merge "$P" --adapter "$TMP/adapter.fifo"
rm "$P/$INF/$W" && mkfifo "$P/$INF/$W"
expect fifo_tensor_check 1 "$W: .*not a regular file" -- "$MPK" check "$P"
expect fifo_tensor_no_hash 1 "$W: .*not a regular file" -- "$MPK" check "$P" --no-hash
expect fifo_tensor_tensors 1 "$W: .*is a FIFO, not a regular file" -- "$MPK" mt tensors "$P"
expect fifo_tensor_merge 1 "$W: .*is a FIFO, not a regular file" -- "$MPK" mt merge "$P" --adapter "$AD"

# ---- 7. merge, then check: OK through the merge record, which is deterministic and names each
# replaced tensor with its shipped and merged digests; a second merge is refused and changes nothing.
P="$TMP/merged"; fresh "$P"; Q="$TMP/merged2"; fresh "$Q"
expect merge_ok 0 'OK: merged 2 entries' -- "$MPK" mt merge "$P" --adapter "$AD"
expect merge_ok2 0 'OK: merged 2 entries' -- "$MPK" mt merge "$Q" --adapter "$AD"
cmp -s "$P/$INF/.modelpkg-merge-record.json" "$Q/$INF/.modelpkg-merge-record.json" && ok || bad "merge record not deterministic"
expect merge_record_schema 0 '^ok$' -- python3 -c '
import hashlib, json, sys
inf, m = sys.argv[1], json.load(open(sys.argv[2]))
r = json.load(open(inf + "/.modelpkg-merge-record.json"))
assert sorted(r) == ["format", "tensors", "version"] and r["format"] == "modelpkg-merge-record" and r["version"] == 1, r
assert sorted(r["tensors"]) == [sys.argv[3], sys.argv[4]], r
for name, t in r["tensors"].items():
    assert t["sha256"] == hashlib.sha256(open(inf + "/" + name, "rb").read()).hexdigest(), (name, t)
    assert t["shipped_sha256"] == m["sha256"]["variants/cpu-fp16/inference/" + name] != t["sha256"], (name, t)
print("ok")' "$P/$INF" "$P/mobiletransformers_manifest.json" "$W" "$V"
expect merge_check 0 'OK: all checks hold' -- "$MPK" check "$P"
expect merge_check_record 0 "$W \(layer .*\) was merged on device: modelpkg.s merge record" -- "$MPK" check "$P"
expect merge_check_no_hash 0 'OK: all checks hold' -- "$MPK" check "$P" --no-hash
expect merge_tensors 0 'checksum verified \(merge record\)' -- "$MPK" mt tensors "$P"
sums "$P" > "$TMP/before"
expect merge_twice 1 "already merged: its bytes .* are the merged ones modelpkg.s merge record lists" -- "$MPK" mt merge "$P" --adapter "$AD"
same "$TMP/before" "$P" "merge twice"
# the merged bytes changed afterwards: refused, naming the record's digest
printf '\x01' | dd of="$P/$INF/$W" bs=1 seek=3 conv=notrunc status=none
expect merge_then_flipped 1 "$W: layer .* does not equal the post-merge digest [0-9a-f]{64} that the merge record lists for it" -- "$MPK" check "$P"
# without the record, merged bytes are swapped bytes
P="$Q"; rm "$P/$INF/.modelpkg-merge-record.json"
expect merge_record_removed 1 "does not equal the shipped digest" -- "$MPK" check "$P"

# ---- 8. mt merge --json: the one envelope, on success and on refusal (and usage errors once --json is seen).
P="$TMP/json"; fresh "$P"
"$MPK" mt merge "$P" --adapter "$AD" --dry-run --json > "$TMP/ok.json" 2>/dev/null
"$MPK" mt merge "$TMP/linked" --adapter "$AD" --json > "$TMP/refused.json" 2>/dev/null; rc_refused=$?
"$MPK" mt merge "$P" --adapter "$AD" --json --orientation sideways > "$TMP/usage.json" 2>/dev/null; rc_usage=$?
[ "$rc_refused" -eq 1 ] && [ "$rc_usage" -eq 2 ] && ok || bad "merge --json exit statuses $rc_refused $rc_usage"
expect merge_json 0 '^ok$' -- python3 -c '
import json, sys
docs = [json.load(open(f)) for f in sys.argv[1:]]
keys = ["modelpkg_version", "command", "ok", "variant", "inference_dir", "orientation", "evidence", "written", "entries", "verify", "problems", "notes"]
for d in docs:
    assert list(d) == keys, list(d)
    assert d["command"] == "mt merge", d
    assert d["verify"] is None, d  # no --verify: no post-merge check (docs/mt-numeric.md)
ok, refused, usage = docs
assert ok["ok"] is True and ok["written"] is False and len(ok["entries"]) == 2 and ok["problems"] == [], ok
assert refused["ok"] is False and refused["entries"] is None and "symbolic link" in refused["problems"][0]["message"], refused
assert usage["ok"] is False and "orientation" in usage["problems"][0]["message"], usage
print("ok")' "$TMP/ok.json" "$TMP/refused.json" "$TMP/usage.json"

# ---- 9. the adapter reader's memory budget: a 78 MB safetensors header (1.3 million tensors), which
# took 1.24 GB to parse, is refused before it is parsed, under a 1 GiB address-space limit, naming the
# budget; raising the header budget meets the tensor-count budget.
P="$TMP/budget"; fresh "$P"
python3 - "$TMP/big.safetensors" <<'EOF2'
import struct, sys
parts, size, i = [], 0, 0
while size < 78_000_000:
    s = '"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}' % i
    parts.append(s); size += len(s) + 1; i += 1
h = ("{" + ",".join(parts) + "}").encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h)
EOF2
# A sanitizer build reserves terabytes of shadow memory and cannot start under an address-space
# limit: there the cases run without it (the release build runs them under the limit).
AS=()
if as_limit "$MPK" --version; then AS=("${AS_LIMIT[@]}"); fi
expect budget_header 1 'big.safetensors@0: the header is 78[0-9]{6} bytes, over the safetensors reader.s memory budget of 16777216 header bytes \(mt merge --max-adapter-header'   -- "${AS[@]}" "$MPK" mt merge "$P" --adapter "$TMP/big.safetensors"
expect budget_tensors 1 'big.safetensors@8: the header declares more than 100000 tensors, over the safetensors reader.s memory budget of 100000 tensors \(mt merge --max-adapter-tensors'   -- "${AS[@]}" "$MPK" mt merge "$P" --adapter "$TMP/big.safetensors" --max-adapter-header 100000000
expect budget_json 1 '"message": "the header is' -- "${AS[@]}" "$MPK" mt merge "$P" --adapter "$TMP/big.safetensors" --json
expect budget_usage 2 '--max-adapter-header needs a positive integer' -- "$MPK" mt merge "$P" --adapter "$AD" --max-adapter-header 0
expect budget_small_ok 0 'DRY RUN: 2 entries would be merged' -- "$MPK" mt merge "$P" --adapter "$AD" --dry-run --max-adapter-tensors 8
expect budget_small_refused 1 'more than 2 tensors, over the safetensors reader.s memory budget of 2 tensors' \
  -- "$MPK" mt merge "$P" --adapter "$AD" --dry-run --max-adapter-tensors 2

# ---- 9. mt reseal of a tree a device merged: the record is device state and is not listed; a
# pending transaction (journal or temporaries) must be finished before sealing.
P="$TMP/reseal"; fresh "$P"
expect reseal_merge 0 'OK: merged 2 entries' -- "$MPK" mt merge "$P" --adapter "$AD"
expect reseal_merged 0 '' -- "$MPK" mt reseal "$P"
grep -q 'modelpkg-merge-record' "$P/mobiletransformers_manifest.json" && bad "reseal listed the merge record" || ok
expect reseal_merged_check 0 'OK: all checks hold' -- "$MPK" check "$P"
head -c 48 /dev/urandom > "$P/$INF/$V.merge-txn.QwE456"
journal "$P/$INF" "$V" "$V.merge-txn.QwE456"
sums "$P" > "$TMP/before"
expect reseal_pending 1 'belongs to an interrupted merge transaction: finish it with the load gate' -- "$MPK" mt reseal "$P"
same "$TMP/before" "$P" "reseal pending"

finish
