#!/usr/bin/env bash
# The post-merge check (issue 21, docs/mt-numeric.md "The post-merge check"): `modelpkg mt merge
# --verify PROBE.json` runs the probe through the variant's inference graph in ONNX Runtime before
# and after the merge, inside the merge's transaction. On make_decoder.py's "damaged" decoder:
#   - the improving adapter (it repairs the damaged layer) passes: ratio < 1, committed, the tensor
#     changed, check and mt tensors pass; its cross-entropies agree with numpy's and, within 1e-5,
#     with onnxruntime-node's (lm_cross_entropy.js) on the graph before and after the merge;
#   - the destructive adapter (huge factors) is rolled back: exit 1, the report says why, and the
#     package tree is byte-identical (every file's bytes, mode, size and mtime; the list of names);
#   - --force commits it, and the committed graph's cross-entropy in onnxruntime-node equals the
#     rolled-back run's "after" within 1e-5 (the check ran on exactly the bytes that are committed);
#   - --dry-run computes both and writes nothing;
#   - a bad PROBE.json, a FIFO, an id outside the vocabulary, and a missing ONNX Runtime are refused
#     before anything changes; option misuse is a usage error.
#
# usage: test_merge_verify.sh MODELPKG SOURCE_DIR [sanitize|plain]
# sanitize (the ASan build): modelpkg runs with ONNX Runtime preloaded (LD_PRELOAD), so that its
# mpk_ort_close() (dlclose) does not unload it and LeakSanitizer can name it: ONNX Runtime leaks 14
# bytes of its own, suppressed by its module name (leak:libonnxruntime.so.1). Leak detection stays
# on for everything else.
# Needs ONNX Runtime's libonnxruntime.so.1 ($MPK_ORT_LIBRARY, else the one inside SOURCE_DIR/.deps'
# npm onnxruntime-node: scripts/deps_node.sh), node with onnxruntime-node, and Debian's
# python3-numpy + python3-onnx. A missing one skips the test (exit 77), naming it.
set -uo pipefail
MPK="$1"; SRC="$2"; FLAVOUR="${3:-plain}"
PY=/usr/bin/python3
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/integration/expect.sh"

# ---- what the test needs
ORT_DEFAULT="$SRC/.deps/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1" # ctest sets MPK_ORT_LIBRARY (tests/ort.cmake)
export MPK_ORT_LIBRARY="${MPK_ORT_LIBRARY:-$ORT_DEFAULT}"
[ -f "$MPK_ORT_LIBRARY" ] || skip_test "ONNX Runtime (libonnxruntime.so.1 from npm onnxruntime-node: scripts/deps_node.sh) at $MPK_ORT_LIBRARY"
need_tool node
need_py numpy onnx
have_tool node node "$SRC/tests/e2e/run_onnx.js" --version || skip_test "onnxruntime-node (npm, in $SRC/.deps or \$MPK_NODE_MODULES)"
if [ "$FLAVOUR" = sanitize ]; then
  echo "note: sanitizer build: modelpkg runs with ONNX Runtime preloaded and its own 14-byte leak suppressed (leak:libonnxruntime.so.1)"
  # ONNX Runtime's own allocation (14 bytes, malloc'ed inside libonnxruntime.so.1 and never freed
  # by it) is suppressed by its module name; every leak with no ONNX Runtime frame is still reported.
  printf 'leak:libonnxruntime.so.1\n' >"$TMP/lsan.supp"
  printf '#!/bin/sh\nLD_PRELOAD="%s" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=%s:print_suppressions=0" exec "%s" "$@"\n' \
    "$MPK_ORT_LIBRARY" "$TMP/lsan.supp" "$MPK" >"$TMP/modelpkg"
  chmod +x "$TMP/modelpkg"
  MPK="$TMP/modelpkg"
fi

"$PY" "$SRC/tests/tools/make_decoder.py" "$TMP/gen" "$MPK" damaged >"$TMP/cases.txt" || { bad "make_decoder.py failed"; finish; }
CASE="$TMP/gen/damaged"
PROBE="$TMP/gen/probe.json"
IMPROVE="$CASE/adapter-improve.safetensors"
DESTROY="$CASE/adapter-destroy.safetensors"
INF=variants/cpu/inference
ATTN=model.layers.0.self_attn.proj.MatMul.weight.bin
fresh() { rm -rf "$TMP/$1"; cp -a "$CASE/pkg" "$TMP/$1"; }

# The whole tree: each file's mode, size, mtime (ns) and SHA-256, and each name (directories too).
snapshot() {
  (cd "$1" && find . -printf '%y %p\n' | LC_ALL=C sort &&
     find . -type f -printf '%m %s %T@ %p\n' | LC_ALL=C sort -k4 &&
     find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
same_tree() { # NAME DIR SNAPSHOT
  if snapshot "$2" | diff "$3" - >"$TMP/diff"; then ok "$1"; else bad "$1: the package changed"; first_lines 20 "$(cat "$TMP/diff")"; fi
}
# jq-like: the value at a python expression over the --json document in FILE (d).
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
expected() { jget "$CASE/expected.json" "d['$1']"; }
close() { # NAME A B TOL [rel]: |A - B| <= TOL (rel: TOL * |B|)
  if "$PY" -c 'import sys; a,b,t=map(float,sys.argv[1:4]); t*=abs(b) if sys.argv[4:]==["rel"] else 1; sys.exit(0 if abs(a-b)<=t else 1)' "$2" "$3" "$4" "${@:5}"; then
    ok "$1 ($2 vs $3, within $4${5:+ relative})"
  else
    bad "$1: $2 vs $3 differ by more than $4${5:+ relative}"
  fi
}
# The probe's cross-entropy in onnxruntime-node, independent of modelpkg: each sequence through
# lm_cross_entropy.js, the mean over every predicted position (docs/mt-numeric.md).
node_ce() { # MODEL.onnx
  local n i out total=0
  n="$(jget "$PROBE" 'len(d["sequences"])')"
  : >"$TMP/node_ce.txt"
  for ((i = 0; i < n; i++)); do
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump({"tokens": d["sequences"][int(sys.argv[2])]}, open(sys.argv[3],"w"))' \
      "$PROBE" "$i" "$TMP/seq.json"
    out="$(node "$SRC/tests/e2e/lm_cross_entropy.js" "$1" "$TMP/seq.json")" || { echo nan; return; }
    printf '%s\n' "$out" >>"$TMP/node_ce.txt"
  done
  "$PY" -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print(repr(sum(r["cross_entropy"]*(r["n_tokens"]-1) for r in rows)/sum(r["n_tokens"]-1 for r in rows)))' "$TMP/node_ce.txt"
}

# ---- refused before anything: usage, a missing ONNX Runtime, bad probes
fresh bad; snapshot "$TMP/bad" >"$TMP/bad.snap"
expect "--force without --verify" 2 "belongs to the post-merge check" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --force
expect "--max-ratio without --verify" 2 "belongs to the post-merge check" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --max-ratio 3
expect "--max-ratio 0" 2 "positive finite" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$PROBE" --max-ratio 0
expect "--max-ratio nan" 2 "positive finite" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$PROBE" --max-ratio nan
expect "no ONNX Runtime" 1 "ONNX Runtime not available" -- \
  "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$PROBE" --ort-library "$TMP/absent/libonnxruntime.so.1"
expect "no ONNX Runtime: nothing changed" 1 "nothing was changed" -- \
  env MPK_ORT_LIBRARY="$TMP/absent.so" "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$PROBE"
expect "no ONNX Runtime --json" 1 '"ok": false' -- \
  "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$PROBE" --ort-library "$TMP/absent.so" --json
printf '{"sequences": [[1, 2], [3]]}' >"$TMP/short.json"
expect "a sequence of one id" 1 "short.json: /sequences/1: .*at least 2" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/short.json"
printf '{"sequences": [[1, 2]], "extra": 1}' >"$TMP/extra.json"
expect "an unknown key" 1 "extra.json: /extra: unknown key" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/extra.json"
printf '{"sequences": [[1, -2]]}' >"$TMP/neg.json"
expect "a negative id" 1 "neg.json: /sequences/0/1: expected a token id" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/neg.json"
printf '{"sequences": [[1, 2' >"$TMP/torn.json"
expect "torn JSON" 1 "torn.json.*invalid JSON" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/torn.json"
expect "a missing probe" 1 "nope.json" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/nope.json"
mkfifo "$TMP/fifo.json"
expect "a FIFO probe: refused at once" 1 "FIFO" -- "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/fifo.json"
# valid JSON, but token 64 is outside the graph's vocabulary (64): the graph's run refuses it
printf '{"sequences": [[1, 2, 64]]}' >"$TMP/vocab.json"
expect "an id outside the vocabulary" 1 "post-merge check \\(before the merge\\).*64" -- \
  "$MPK" mt merge "$TMP/bad" --adapter "$IMPROVE" --verify "$TMP/vocab.json"
same_tree "refusals changed nothing" "$TMP/bad" "$TMP/bad.snap"

# ---- the numbers before the merge: numpy (make_decoder.py) and onnxruntime-node on the shipped graph
ce_node_before="$(node_ce "$CASE/pkg/$INF/model.onnx")"
close "onnxruntime-node agrees with numpy before the merge" "$ce_node_before" "$(expected probe_ce_before)" 1e-4

# ---- an improving adapter: committed
fresh improve
cp "$TMP/improve/$INF/$ATTN" "$TMP/attn.before"
if timeout 120 "$MPK" mt merge "$TMP/improve" --adapter "$IMPROVE" --verify "$PROBE" --json >"$TMP/improve.json" 2>"$TMP/improve.err"; then
  ok "the improving adapter merges"
else
  bad "the improving adapter: exit $?"; cat "$TMP/improve.err" "$TMP/improve.json"
fi
[ "$(jget "$TMP/improve.json" 'd["ok"] and d["written"] and d["verify"]["rolled_back"] is False')" = True ] &&
  ok "improve: ok, written, not rolled back" || bad "improve: --json $(cat "$TMP/improve.json")"
ce_before="$(jget "$TMP/improve.json" 'repr(d["verify"]["ce_before"])')"
ce_after="$(jget "$TMP/improve.json" 'repr(d["verify"]["ce_after"])')"
ratio="$(jget "$TMP/improve.json" 'repr(d["verify"]["ratio"])')"
"$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 1 else 1)' "$ratio" && ok "improve: ratio $ratio < 1" || bad "improve: ratio $ratio"
[ "$(jget "$TMP/improve.json" 'd["verify"]["max_ratio"]')" = 2.0 ] && ok "the default bound is 2" || bad "the default bound"
close "improve: ce_before equals onnxruntime-node on the shipped graph" "$ce_before" "$ce_node_before" 1e-5
close "improve: ce_before equals numpy's" "$ce_before" "$(expected probe_ce_before)" 1e-4
close "improve: ce_after equals numpy's repaired model" "$ce_after" "$(expected probe_ce_repaired)" 1e-4
ce_node_after="$(node_ce "$TMP/improve/$INF/model.onnx")"
close "improve: ce_after equals onnxruntime-node on the merged graph" "$ce_after" "$ce_node_after" 1e-5
cmp -s "$TMP/attn.before" "$TMP/improve/$INF/$ATTN" && bad "improve: the attention weight did not change" || ok "improve: the attention weight changed"
expect "improve: check passes" 0 "" -- "$MPK" check "$TMP/improve"
expect "improve: mt tensors passes" 0 "" -- "$MPK" mt tensors "$TMP/improve"
# text report
fresh improve2
expect "improve: the text report" 0 "post-merge cross-entropy [0-9.]+ nats is 0\\.[0-9]+ times the pre-merge [0-9.]+ \\(bound 2\\): within the bound: committed" -- \
  "$MPK" mt merge "$TMP/improve2" --adapter "$IMPROVE" --verify "$PROBE"

# ---- a destructive adapter: rolled back, the tree byte-identical
fresh destroy; snapshot "$TMP/destroy" >"$TMP/destroy.snap"
timeout 120 "$MPK" mt merge "$TMP/destroy" --adapter "$DESTROY" --verify "$PROBE" >"$TMP/destroy.out" 2>&1
rc=$?; cat "$TMP/destroy.out"
[ "$rc" -eq 1 ] && ok "destroy: exit 1" || bad "destroy: exit $rc"
grep -Eq "times the pre-merge .* \(bound 2\): rolled back, nothing was changed; --force commits it" "$TMP/destroy.out" &&
  ok "destroy: the report says why" || bad "destroy: no reason given"
grep -q "ROLLED BACK" "$TMP/destroy.out" && ok "destroy: ROLLED BACK" || bad "destroy: no ROLLED BACK line"
same_tree "destroy: the package is byte-identical" "$TMP/destroy" "$TMP/destroy.snap"
timeout 120 "$MPK" mt merge "$TMP/destroy" --adapter "$DESTROY" --verify "$PROBE" --json >"$TMP/destroy.json" 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] && [ "$(jget "$TMP/destroy.json" 'd["ok"] is False and d["written"] is False and d["verify"]["rolled_back"] is True and d["verify"]["ratio"] > 2 and "rolled back" in d["problems"][0]["message"]')" = True ] &&
  ok "destroy --json: ok false, rolled_back, ratio > 2, the problem says why" || bad "destroy --json (exit $rc): $(cat "$TMP/destroy.json")"
destroy_after="$(jget "$TMP/destroy.json" 'repr(d["verify"]["ce_after"])')"
close "destroy: ce_after equals numpy's destroyed model" "$destroy_after" "$(expected probe_ce_destroyed)" 1e-4
close "destroy: ce_before is the same as the improving run's" "$(jget "$TMP/destroy.json" 'repr(d["verify"]["ce_before"])')" "$ce_before" 1e-12
same_tree "destroy --json: the package is byte-identical" "$TMP/destroy" "$TMP/destroy.snap"
# a looser bound lets it through
fresh loose
ratio="$(jget "$TMP/destroy.json" 'd["verify"]["ratio"]')"
bound="$("$PY" -c 'import sys; print(float(sys.argv[1]) * 1.01)' "$ratio")"
expect "destroy: --max-ratio above its ratio commits it" 0 "within the bound: committed" -- \
  "$MPK" mt merge "$TMP/loose" --adapter "$DESTROY" --verify "$PROBE" --max-ratio "$bound"

# ---- --force commits it, and the committed bytes are the ones the check ran
fresh force
expect "destroy --force: committed" 0 "above the bound: committed because of --force" -- \
  "$MPK" mt merge "$TMP/force" --adapter "$DESTROY" --verify "$PROBE" --force
expect "destroy --force: check passes" 0 "" -- "$MPK" check "$TMP/force"
close "destroy: the rolled-back ce_after equals onnxruntime-node on the forced, committed graph" \
  "$destroy_after" "$(node_ce "$TMP/force/$INF/model.onnx")" 1e-5

# ---- --dry-run: both numbers, nothing written
fresh dry; snapshot "$TMP/dry" >"$TMP/dry.snap"
timeout 120 "$MPK" mt merge "$TMP/dry" --adapter "$IMPROVE" --verify "$PROBE" --dry-run --json >"$TMP/dry.json" 2>"$TMP/dry.err"
rc=$?
[ "$rc" -eq 0 ] && ok "dry run (improve): exit 0" || bad "dry run (improve): exit $rc $(cat "$TMP/dry.json" "$TMP/dry.err")"
close "dry run: the same ce_after as the committed merge" "$(jget "$TMP/dry.json" 'repr(d["verify"]["ce_after"])')" "$ce_after" 1e-12
expect "dry run (destroy): would be rolled back" 1 "would be rolled back" -- \
  "$MPK" mt merge "$TMP/dry" --adapter "$DESTROY" --verify "$PROBE" --dry-run
same_tree "dry runs changed nothing" "$TMP/dry" "$TMP/dry.snap"
find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'modelpkg-merge-probe.*' -newer "$TMP/dry.snap" -print -quit >"$TMP/left"
[ -s "$TMP/left" ] && bad "the dry run left a temporary file: $(cat "$TMP/left")" || ok "the dry run left no temporary file"

finish
