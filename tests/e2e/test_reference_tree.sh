#!/usr/bin/env bash
# Interoperability with the reference runtime's cache (issue 18, acceptance 2).
#  1. A tree in the layout the reference installer writes (ModelPackageInstaller.kt), made by hand
#     here: <cache>/<sanitized>/{inference,train,tokenizer}/ + mobiletransformers_manifest.json +
#     checksums.json (keys are hub paths variants/<id>/...) + install_record.json exactly as Gson
#     writes it (InstallRecord.kt) — and nothing else (the reference drops shared/config.json & co.).
#     The package has two variants; the default (cpu-int8, first) is NOT the installed one
#     (cpu-int4): modelpkg must use the recorded variant. It is checked, gated, merged, gated and
#     checked again; ONNX Runtime runs the merged tree (when node + onnxruntime-node are there).
#     Hostile twins: a record naming the other variant, a flipped byte in a non-tensor file.
#  2. A tree modelpkg installed carries an install_record.json the reference reader accepts: Gson's
#     InstallRecord shape (repoId non-blank string, variantId string, features strings,
#     installedAtEpochMs a long), byte for byte Gson's compact form, and CacheIndex's walk finds it
#     under the repo id; its stage files equal the hand-made reference tree's.
# usage: test_reference_tree.sh MODELPKG SOURCE_DIR   (needs /usr/bin/python3 with numpy + onnx)
set -uo pipefail
MPK="$1"; SRC="$2"
E2E="$SRC/tests/e2e"
PY=/usr/bin/python3
. "$SRC/tests/integration/expect.sh"
need_py numpy onnx
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
. "$E2E/lifecycle_lib.sh"

"$PY" "$E2E/make_lifecycle_packages.py" "$T/gen" "$MPK" ref >/dev/null || { echo "FAIL: make_lifecycle_packages.py"; exit 1; }
REF="$T/gen/ref"; PKG="$REF/pkg"; V=cpu-int4
OUT="$T/out"
RECORD='{"repoId":"org/Tiny","variantId":"cpu-int4","features":["inference"],"installedAtEpochMs":1764633600000}'

# ref_tree CACHE RECORD: what ModelPackageInstaller.install(pkg, CACHE, "org/Tiny", "cpu-int4") leaves,
# with RECORD as its install_record.json (written inside the staging tree before publish).
ref_tree() {
  local d="$1/org__Tiny" s
  mkdir -p "$d"
  for s in train inference embedding; do  # PackageFormat.VARIANT_SUBDIRS, when present
    [ -d "$PKG/variants/$V/$s" ] && cp -r "$PKG/variants/$V/$s" "$d/$s"
  done
  cp -r "$PKG/shared/tokenizer" "$d/tokenizer"
  cp "$PKG/mobiletransformers_manifest.json" "$d/"
  cp "$PKG/variants/$V/checksums.json" "$d/checksums.json"
  printf '%s' "$2" >"$d/install_record.json"
}
D="$T/c/org__Tiny"
ref_tree "$T/c" "$RECORD"
check "the hand-made record is Gson's own form (the checker itself)" gson_exact "$D/install_record.json"
check "the package's default variant is not the installed one (cpu-int8 is)" \
  test "$(jq_py "$PKG/mobiletransformers_manifest.json" 'd["defaultVariant"]')" = cpu-int8

# ---- checked, gated, merged
expect "reference tree: check passes" 0 'OK' -- "$MPK" check "$D"
"$MPK" check "$D" --json >"$OUT" 2>&1
check "reference tree: check --json reports ok" test "$(jq_py "$OUT" 'd.get("ok")')" = true
gate_json() { "$MPK" mt tensors "$D" --json >"$OUT" 2>&1; local rc=$?; [ $rc -eq 0 ] && [ "$(jq_py "$OUT" 'd.get("variant")')" = "$V" ] && [ "$(jq_py "$OUT" 'd.get("verified")')" = 3 ]; }
if gate_json; then ok "reference tree: the gate uses the recorded variant cpu-int4 and verifies its 3 tensors"
else bad "reference tree: the gate (want exit 0, variant cpu-int4, 3 verified)"; first_lines 12 "$(cat "$OUT")"; fi
expect "reference tree: mt graph reads the installed graph" 0 'model\.layers\.0\.mlp\.proj\.MatMul\.weight' -- "$MPK" mt graph "$D"
expect "reference tree: mt merge" 0 '' -- "$MPK" mt merge "$D" --adapter "$REF/adapter.safetensors"
check "reference tree: the merge record is in inference/" test -f "$D/inference/.modelpkg-merge-record.json"
# The same merge on the package's cpu-int4 variant gives the same bytes.
cp -r "$PKG" "$T/mref"
"$MPK" mt merge "$T/mref" --variant "$V" --adapter "$REF/adapter.safetensors" >/dev/null 2>&1 || bad "the merge of the package itself failed"
sums() { (cd "$1" && sha256sum ./*.bin ./*.bin.sha256); }
if diff <(sums "$T/mref/variants/$V/inference") <(sums "$D/inference") >"$OUT"; then ok "reference tree: merged bytes equal the merge of the package's cpu-int4"
else bad "reference tree: merged bytes differ from the merge of the package's cpu-int4"; first_lines 8 "$(cat "$OUT")"; fi
if gate_json; then ok "reference tree, merged: the gate verifies 3 tensors (through the merge record)"
else bad "reference tree, merged: the gate"; first_lines 12 "$(cat "$OUT")"; fi
expect "reference tree, merged: check passes" 0 'OK' -- "$MPK" check "$D"
check "reference tree, merged: install_record.json untouched" test "$(cat "$D/install_record.json")" = "$RECORD"
if have_tool node node "$E2E/run_onnx.js" --version; then
  if node "$E2E/run_onnx.js" "$D/inference/model.onnx" "$REF/inputs.json" "$T/ort.json" >"$OUT" 2>&1; then
    res="$("$PY" "$E2E/check_outputs.py" "$REF" after "$T/ort.json" "$D/inference" 2>&1)"; echo "$res"
    pass=$((pass + $(grep -c '^ok ' <<<"$res"))); fail=$((fail + $(grep -c '^FAIL ' <<<"$res")))
  else bad "reference tree, merged: ONNX Runtime could not run it"; first_lines 5 "$(cat "$OUT")"; fi
else
  skip_case "ONNX Runtime on the merged reference tree" "node with onnxruntime-node"
fi

# ---- the list reads the reference record
if "$MPK" mt list --cache "$T/c" --json >"$OUT" 2>&1 && grep -q 'org/Tiny' "$OUT" && grep -q 'cpu-int4' "$OUT" &&
  grep -Eq '1764633600000|2025-12-02T00:00:00' "$OUT"; then ok "mt list --cache reads the reference record: org/Tiny, cpu-int4, installed 2025-12-02T00:00:00Z"
else bad "mt list --cache on the reference tree (want exit 0 naming org/Tiny, cpu-int4 and the install time)"; first_lines 12 "$(cat "$OUT")"; fi

# ---- hostile twins: the record decides the variant; integrity covers every listed file
ref_tree "$T/wrongvar" '{"repoId":"org/Tiny","variantId":"cpu-int8","features":["inference"],"installedAtEpochMs":1764633600000}'
expect "a record naming cpu-int8 over cpu-int4's files: check fails" 1 '' -- "$MPK" check "$T/wrongvar/org__Tiny"
ref_tree "$T/flip" "$RECORD"
printf 'Z' | dd of="$T/flip/org__Tiny/train/training_config.json" bs=1 seek=3 conv=notrunc 2>/dev/null
expect "a flipped byte in train/training_config.json: check fails naming it" 1 'training_config\.json' -- "$MPK" check "$T/flip/org__Tiny"
ref_tree "$T/flip2" "$RECORD"
printf 'Z' | dd of="$T/flip2/org__Tiny/inference/model.onnx" bs=1 seek=3 conv=notrunc 2>/dev/null
expect "a flipped byte in inference/model.onnx: check fails naming it" 1 'model\.onnx' -- "$MPK" check "$T/flip2/org__Tiny"

# ---- modelpkg's install carries the reference's record
"$MPK" mt install "$PKG" --repo-id org/Tiny --cache "$T/m" --variant "$V" --features inference,train >"$OUT" 2>&1 ||
  { bad "mt install of the package"; first_lines 5 "$(cat "$OUT")"; }
R="$T/m/org__Tiny/install_record.json"
if [ -f "$R" ]; then
  ok "mt install wrote install_record.json"
  EXPECT_REPO=org/Tiny EXPECT_VARIANT="$V" EXPECT_FEATURES=inference,train EXPECT_RECENT=1 gson_record "$R" &&
    ok "install_record.json: the reference reader's shape (repoId, variantId, features sorted, installedAtEpochMs in ms)" ||
    bad "install_record.json: not the reference reader's shape"
  gson_exact "$R" && ok "install_record.json: byte for byte Gson's compact form" || bad "install_record.json: not Gson's compact form"
  cat "$R"; echo
else
  bad "mt install wrote no install_record.json"
fi
# CacheIndex.list: every child of the cache not starting with '.', its record's repoId the load key.
cache_index() {
  "$PY" - "$1" <<'PY'
import json, os, sys
c = sys.argv[1]
for name in sorted(os.listdir(c)):
    d = os.path.join(c, name)
    if not os.path.isdir(d) or name.startswith("."):
        continue
    try:
        r = json.load(open(os.path.join(d, "install_record.json")))
        repo = r["repoId"] if isinstance(r.get("repoId"), str) and r["repoId"].strip() else None
    except Exception:
        r, repo = {}, None
    print("%s %s %s" % (name, repo or name.replace("__", "/"), r.get("variantId") or "-"))
PY
}
check "the reference CacheIndex walk finds modelpkg's install as org/Tiny, variant cpu-int4 (and nothing else)" \
  test "$(cache_index "$T/m")" = "org__Tiny org/Tiny cpu-int4"
# Both installers put the same bytes at the same paths (modelpkg also keeps shared/*.json and its own record).
stage_files() { (cd "$1" && find inference train tokenizer checksums.json mobiletransformers_manifest.json -type f ! -name '.*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
if diff <(stage_files "$T/m/org__Tiny") <(stage_files "$T/wrongvar/org__Tiny") >"$OUT"; then ok "modelpkg's tree and the reference layout hold the same files at the same paths"
else bad "modelpkg's tree and the reference layout differ"; first_lines 10 "$(cat "$OUT")"; fi
finish
