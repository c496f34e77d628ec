#!/usr/bin/env bash
# The device lifecycle, end to end, on the installed cache (issue 18, acceptance 1): a real nginx
# on 127.0.0.1 serves a package whose content moves from version 1 to version 2 under one URL;
#   install v1 -> gate (mt tensors) -> merge a LoRA adapter into the installed tree -> ONNX Runtime
#   (onnxruntime-node) runs the installed graph and shows the adapter's effect (vs numpy float64)
#   -> install v2 while a live reader holds the gate -> the recorded adapter is re-applied ->
#   ONNX Runtime again: the effect on v2's weights -> mt restore: byte-identical shipped tensors
#   (from the install source; then from a kept base with the source offline) -> an update whose
#   entry changed shape installs the base and names the entry -> mt remove -> mt gc leaves nothing.
# The packages are made by make_lifecycle_packages.py (numpy + onnx, sealed by `modelpkg mt build`);
# the numbers are compared by check_outputs.py; the merged bytes are also compared with a merge of
# the same adapter into the package itself (the merge that test_merge_onnx proves).
#
# usage: test_lifecycle.sh MODELPKG SOURCE_DIR
# Needs nginx, curl, node with onnxruntime-node, /usr/bin/python3 with numpy + onnx: a missing one
# skips the test (exit 77) naming it.
set -uo pipefail
MPK="$1"; SRC="$2"
E2E="$SRC/tests/e2e"
PY=/usr/bin/python3
. "$SRC/tests/integration/expect.sh"
need_tool nginx
need_tool curl
need_tool node
need_py numpy onnx
have_tool node node "$E2E/run_onnx.js" --version || skip_test "onnxruntime-node (npm, in $SRC/.deps or \$MPK_NODE_MODULES)"

T="$(mktemp -d)"
READER_PID=""
cleanup() {
  [ -z "$READER_PID" ] || kill "$READER_PID" 2>/dev/null
  stop_nginx
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$E2E/lifecycle_lib.sh"

# ---- the packages and the server
"$PY" "$E2E/make_lifecycle_packages.py" "$T/gen" "$MPK" >/dev/null || { echo "FAIL: make_lifecycle_packages.py"; exit 1; }
V1="$T/gen/v1"; V2="$T/gen/v2"; V2X="$T/gen/v2-reshaped"
ADAPTER="$V1/adapter.safetensors"
ADAPTER_SHA="$(sha256sum <"$ADAPTER" | cut -c1-64)"
WWW="$T/www"; mkdir -p "$WWW"
serve "$WWW" model "$V1/pkg"
start_nginx "$WWW"

REPO=org/Lifecycle
C="$T/cache"; D="$C/org__Lifecycle"; INF="$D/inference"
OUT="$T/out"
# Every modelpkg command of the journey, in one place, each under a timeout.
inst() { timeout 120 "$MPK" mt install "$BASE/model" --repo-id "$REPO" --cache "$C" --features inference,train --retry-delay-ms 20 "$@"; }
gate() { timeout 60 "$MPK" mt tensors "$D" --json "$@"; }
merge() { timeout 60 "$MPK" mt merge "$D" --adapter "$ADAPTER" "$@"; }
restore() { timeout 120 "$MPK" mt restore "$D" "$@"; }
list() { timeout 60 "$MPK" mt list --cache "$C" --json; }
remove() { timeout 60 "$MPK" mt remove --cache "$C" --repo-id "$REPO"; }
gc() { timeout 60 "$MPK" mt gc --cache "$C"; }

# run NAME CMD...: CMD exits 0 (ok NAME) or the failure shows its output. Output in $OUT.
run() { local what="$1"; shift; if "$@" >"$OUT" 2>&1; then ok "$what"; else bad "$what (exit $?)"; sed 's/^/    /' "$OUT"; fi; }
# gate_ok WHEN: the load gate (mt tensors --json) passes, on variant cpu, verifying all 3 tensors.
gate_ok() {
  gate >"$OUT" 2>&1; local rc=$?
  local v n
  v="$(jq_py "$OUT" 'd.get("variant")')"; n="$(jq_py "$OUT" 'd.get("verified")')"
  if [ $rc -eq 0 ] && [ "$v" = cpu ] && [ "$n" = 3 ]; then ok "$1: the gate passes on the installed tree (variant cpu, 3 tensors verified)"
  else bad "$1: the gate: exit $rc, variant '$v', verified '$n' (want 0, cpu, 3)"; first_lines 15 "$(cat "$OUT")"; fi
}
# ort CASE_DIR before|after WHEN: ONNX Runtime runs the INSTALLED graph (its external .bin files
# resolved beside it, as on a device); check_outputs.py compares with numpy. Each of its lines is a check.
ort() {
  local out="$T/ort-$RANDOM.json" res
  if ! node "$E2E/run_onnx.js" "$INF/model.onnx" "$1/inputs.json" "$out" >"$OUT" 2>&1; then
    bad "$3: ONNX Runtime could not run the installed model"; sed 's/^/    /' "$OUT"; return
  fi
  res="$("$PY" "$E2E/check_outputs.py" "$1" "$2" "$out" "$INF" 2>&1)"
  echo "$res"
  pass=$((pass + $(grep -c '^ok ' <<<"$res")))
  fail=$((fail + $(grep -c '^FAIL ' <<<"$res")))
  case "$res" in *Traceback*) bad "$3: check_outputs.py crashed" ;; esac
}
# is_payload PKG WHEN: the installed tree holds exactly PKG's files of variant cpu (inference, train,
# core, checksums), byte for byte (the records and dot-files aside).
is_payload() {
  if diff <(expected_payload "$1/pkg" cpu) <(payload "$D") >"$OUT"; then ok "$2"; else bad "$2"; sed 's/^/    /' "$OUT"; fi
}
# shipped_cmp PKG WHEN: every tensor and its sidecar cmp-identical to the package's.
shipped_cmp() {
  local f bad_files=""
  for f in "$1/pkg/variants/cpu/inference/"*.bin "$1/pkg/variants/cpu/inference/"*.bin.sha256; do
    cmp -s "$f" "$INF/$(basename "$f")" || bad_files="$bad_files $(basename "$f")"
  done
  if [ -z "$bad_files" ]; then ok "$2: every shipped tensor and sidecar is cmp-identical to the package's"
  else bad "$2: differ from the package:$bad_files"; fi
}
# merged_ref PKG_CASE: the .bin digests of the package merged with the adapter by `mt merge` on the
# package directory itself (test_merge_onnx proves that merge against ONNX Runtime and numpy).
merged_ref() {
  rm -rf "$T/mref"; cp -r "$1/pkg" "$T/mref"
  "$MPK" mt merge "$T/mref" --adapter "$ADAPTER" >/dev/null 2>&1 || { echo "merge of the package failed"; return; }
  (cd "$T/mref/variants/cpu/inference" && sha256sum ./*.bin ./*.bin.sha256)
}
tensor_sums() { (cd "$INF" && sha256sum ./*.bin ./*.bin.sha256); }
merged_as_package() {
  if diff <(merged_ref "$1") <(tensor_sums) >"$OUT"; then ok "$2: the merged tensors are byte-identical to the same merge done on the package"
  else bad "$2: the merged tensors differ from the merge of the package"; sed 's/^/    /' "$OUT"; fi
}
has_record() { [ -f "$INF/.modelpkg-merge-record.json" ]; }
no_record() { [ ! -e "$INF/.modelpkg-merge-record.json" ]; }
mentions() { grep -q -- "$1" "$OUT"; }
# list_mentions PATTERN: mt list --cache C --json succeeds and its output holds PATTERN.
list_mentions() { list >"$OUT" 2>&1 && mentions "$1"; }
# list_lacks PATTERN: mt list succeeds and its output does not hold PATTERN.
list_lacks() { list >"$OUT" 2>&1 && ! mentions "$1"; }
# is_merged: the tensors are not the shipped ones and the merge record is there.
is_merged() { has_record && ! diff -q <(expected_payload "$1/pkg" cpu | grep '\.bin$') <(payload "$D" | grep '\.bin$') >/dev/null; }

echo "== install v1 from $BASE/model"
run "install v1 over http" inst
is_payload "$V1" "install v1: the tree holds v1's files, byte for byte, in the installed layout"
check "install v1: install_record.json is there" test -f "$D/install_record.json"
if [ -f "$D/install_record.json" ]; then
  EXPECT_REPO="$REPO" EXPECT_VARIANT=cpu EXPECT_FEATURES=inference,train EXPECT_RECENT=1 gson_record "$D/install_record.json" \
    && ok "install v1: install_record.json is what the reference reader (Gson InstallRecord) accepts, with repo, variant, features, time"
  gson_exact "$D/install_record.json" && ok "install v1: install_record.json is byte for byte Gson's compact form" || bad "install v1: install_record.json is not Gson's form"
fi

echo "== gate, and ONNX Runtime on the shipped weights"
gate_ok "v1"
# The gate can fail: a copy of the cache with one byte of one tensor flipped is refused, naming it.
cp -a "$C" "$T/flipped"
printf 'Z' | dd of="$T/flipped/org__Lifecycle/inference/model.layers.1.mlp.proj.MatMul.weight.bin" bs=1 seek=5 conv=notrunc 2>/dev/null
expect "v1: the gate refuses a flipped byte in an installed tensor, naming it" 1 'model\.layers\.1\.mlp\.proj\.MatMul\.weight\.bin' -- \
  "$MPK" mt tensors "$T/flipped/org__Lifecycle"
rm -rf "$T/flipped"
ort "$V1" before "v1 unmerged"

echo "== merge the adapter into the installed tree"
run "merge into the installed v1" merge
check "merge v1: the merge record is in the installed inference/" has_record
ort "$V1" after "v1 merged"
merged_as_package "$V1" "merge v1"
gate_ok "v1 merged"
check "v1 merged: mt list --json names the merged adapter by its content digest" list_mentions "$ADAPTER_SHA"
# ... and when the model was last verified (the gate ran just above): a non-null member whose key
# says "verif" in the model's row.
last_verified() {
  list >"$OUT" 2>&1 || return 1
  [ -n "$(jq_py "$OUT" '[k for m in d.get("models", []) if m.get("repo_id") == "'"$REPO"'" for k, v in m.items() if "verif" in k and v not in (None, False, "", [], {})] or ""')" ]
}
check "v1 merged: mt list --json says when the model was last verified" last_verified
tensor_sums >"$T/v1m.sums"
expect "merge v1: a second merge of the same adapter is refused" 1 '[Mm]erged' -- "$MPK" mt merge "$D" --adapter "$ADAPTER"

echo "== install v2 over the merged v1 while a reader holds the gate"
rm -f "$T/ready" "$T/go" "$T/reader.sums"
"$PY" "$E2E/hold_gate.py" "$INF" "$T/ready" "$T/go" "$T/reader.sums" 120 2>"$T/reader.err" &
READER_PID=$!
for _ in $(seq 100); do [ -f "$T/ready" ] && break; sleep 0.05; done
check "reader: holds the installed inference directory (LOCK_SH, the gate's lock) with every tensor open" test -f "$T/ready"
serve "$WWW" model "$V2/pkg"
run "install v2 over the merged v1 while the reader holds the gate" inst
cat "$OUT"
is_payload_v2m() { [ "$(jq_py "$D/mobiletransformers_manifest.json" 'd.get("mobiletransformersVersion")')" = 2.0.0 ]; }
check "install v2: the installed manifest is version 2.0.0" is_payload_v2m
check "install v2: the recorded adapter was re-applied (a merge record in inference/)" has_record
merged_as_package "$V2" "install v2 (re-applied)"
# every non-tensor file is v2's
if diff <(expected_payload "$V2/pkg" cpu | grep -v '\.bin') <(payload "$D" | grep -v '\.bin') >"$OUT"; then ok "install v2: every other file is v2's"; else bad "install v2: other files differ from v2's"; sed 's/^/    /' "$OUT"; fi
# The old tree the reader holds: is it still there (on Linux its open files stay readable anyway)?
reader_deleted() { local l n=0; for l in /proc/"$READER_PID"/fd/*; do case "$(readlink "$l")" in *" (deleted)") n=$((n + 1)) ;; esac; done; echo "$n"; }
held_after_install="$(reader_deleted)"
echo "note: after the update, $held_after_install of the reader's open files/directories are unlinked"
run "gc while the reader still holds the old tree" gc
held_after_gc="$(reader_deleted)"
check "gc: removed nothing the live reader holds ($held_after_install unlinked before gc, $held_after_gc after)" test "$held_after_gc" -eq "$held_after_install"
touch "$T/go"; wait "$READER_PID"; rrc=$?; READER_PID=""
check "reader: finished (exit $rrc)" test "$rrc" -eq 0
(cd "$T" && sort -k2 reader.sums) >"$T/reader.sorted" 2>/dev/null
grep '\.bin$' "$T/v1m.sums" | sed 's#\./##' | sort -k2 >"$T/v1m.bins"
check "reader: read merged v1's bytes throughout the update, through the descriptors it opened before it" cmp -s "$T/reader.sorted" "$T/v1m.bins"
# The gate's promise: nothing replaces (or removes) the tensors of a directory a reader holds. A
# runtime that opens its tensors after the gate, by name beneath the directory it holds, gets them.
sort -k2 "$T/reader.sums.late" >"$T/reader.late" 2>/dev/null
if cmp -s "$T/reader.late" "$T/v1m.bins"; then ok "reader: opening the tensors by name beneath the held directory after the update still gives merged v1's bytes"
else bad "reader: opening the tensors by name beneath the held directory after the update:"; sed 's/^/    /' "$T/reader.late"; fi
ort "$V2" after "v2 with the re-applied adapter"
gate_ok "v2 merged"
check "v2 merged: mt list --json still names the adapter" list_mentions "$ADAPTER_SHA"

echo "== mt restore: the shipped bytes, from the install source"
run "restore v2 from the install source" restore
shipped_cmp "$V2" "restore"
is_payload "$V2" "restore: the tree is v2's package, byte for byte"
check "restore: no merge record" no_record
gate_ok "v2 restored"
ort "$V2" before "v2 restored"

echo "== --keep-base: restore with the source offline"
run "merge --keep-base into v2" merge --keep-base
check "merge --keep-base: the tensors are merged" is_merged "$V2"
mv "$WWW/model" "$WWW/model.off"
run "restore from the kept base, the source offline" restore
shipped_cmp "$V2" "restore from the kept base"
check "restore from the kept base: no merge record" no_record
run "merge again (no kept base)" merge
check "merge again: the tensors are merged" is_merged "$V2"
tensor_sums >"$T/v2m.sums"
restore >"$OUT" 2>&1; rc=$?
check "restore without a kept base, the source offline: refused (exit $rc)" test $rc -eq 1
first_lines 5 "$(cat "$OUT")"
check "... and nothing changed (still merged, same bytes)" cmp -s "$T/v2m.sums" <(tensor_sums)
check "... the merge record kept" has_record
mv "$WWW/model.off" "$WWW/model"

echo "== an update whose entry changed shape: the base is installed, the entry named"
check "before the update: v2 is merged" is_merged "$V2"
serve "$WWW" model "$V2X/pkg"
entry="$(jq_py "$V2X/reshaped.json" 'd["entry"]')"
inst >"$OUT" 2>&1; rc=$?
cat "$OUT"
check "install v2-reshaped over the merged v2: completes (exit $rc)" test $rc -eq 0
check "install v2-reshaped: names the entry that no longer fits ($entry)" grep -q 'model\.layers\.2\.mlp\.proj' "$OUT"
check "install v2-reshaped: does not name a fitting entry as not fitting" test "$(grep -c 'model\.layers\.[01]\.mlp\.proj' "$OUT")" -eq 0
is_payload "$V2X" "install v2-reshaped: the base of v2-reshaped, byte for byte"
check "install v2-reshaped: no merge record" no_record
gate_ok "v2-reshaped"

echo "== mt remove, mt gc"
run "remove" remove
check "remove: the tree is gone" test ! -e "$D"
check "remove: mt list (exit 0) no longer names $REPO" list_lacks "$REPO"
run "gc" gc
left="$(cd "$C" && find . -mindepth 1 | LC_ALL=C sort)"
if [ -z "$left" ]; then ok "gc: the cache directory is empty"; else bad "gc: the cache still holds:"; sed 's/^/    /' <<<"$left"; fi
finish
