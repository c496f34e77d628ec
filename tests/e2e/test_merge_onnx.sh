#!/usr/bin/env bash
# A real client proves the merge (issue 6): ONNX models whose MatMul weights are external
# initializers in per-tensor .bin files run in ONNX Runtime (npm onnxruntime-node) before and after
# `modelpkg mt merge`; after it their outputs equal a float64 computation of x @ (W + scale·BA)ᵀ,
# for float32 and float16 weights stored either way round. Then `modelpkg check` passes (the load
# gate sees the new sidecars) and a second merge of the same adapter is refused, changing nothing.
# The packages, the adapters and the expected values are made by make_onnx_package.py (numpy +
# onnx); the comparisons and their tolerances are in check_outputs.py. docs/mt-merge-e2e.md.
#
# usage: test_merge_onnx.sh MODELPKG SOURCE_DIR [CASE...]
# Needs node with onnxruntime-node (scripts/deps_node.sh installs it in SOURCE_DIR/.deps; or set
# MPK_NODE_MODULES) and Debian's python3-numpy + python3-onnx for /usr/bin/python3. A missing one
# skips the test (exit 77, ctest's SKIP_RETURN_CODE) with a line naming it and how to install it:
# a skip, never a pass.
set -uo pipefail
MPK="$1"; SRC="$2"; shift 2
E2E="$SRC/tests/e2e"
PY=/usr/bin/python3
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/integration/expect.sh"

# ---- what the test needs: missing is a skip naming it (scripts/setup.sh --test installs them all)
need_tool node
need_py numpy onnx
have_tool node node "$E2E/run_onnx.js" --version || skip_test "onnxruntime-node (npm, in $SRC/.deps or \$MPK_NODE_MODULES)"
node "$E2E/run_onnx.js" --version
need() { echo "FAIL: $*"; echo "0 passed, 1 failed"; exit 1; }

# ---- the packages (each sealed by `modelpkg mt build`) and their expected values
"$PY" "$E2E/make_onnx_package.py" "$TMP" "$MPK" "$@" >"$TMP/cases.txt" || need "make_onnx_package.py failed"

# Run check_outputs.py and count each of its ok/FAIL lines as one check.
checks() {
  local out
  out="$("$PY" "$E2E/check_outputs.py" "$@" 2>&1)"
  echo "$out"
  pass=$((pass + $(grep -c '^ok ' <<<"$out")))
  fail=$((fail + $(grep -c '^FAIL ' <<<"$out")))
  # a crash prints no FAIL line: count it
  case "$out" in *Traceback*) bad "check_outputs.py crashed: $*" ;; esac
}

while read -r dir; do
  case_name="$(basename "$dir")"
  pkg="$dir/pkg"
  inf="$pkg/variants/cpu/inference"
  layout="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["layout"])' "$dir/expected.json")"
  echo "== $case_name (weights stored ${layout})"

  if "$MPK" check "$pkg" >"$TMP/out" 2>&1; then ok; else bad "$case_name: check before the merge"; cat "$TMP/out"; fi
  ls -A "$inf" >"$TMP/files.before"
  rm -rf "$TMP/pristine"; cp -a "$pkg" "$TMP/pristine" # the install source mt restore re-fetches from

  # Before: ONNX Runtime on the shipped weights equals x @ W_baseᵀ (the harness itself works).
  if node "$E2E/run_onnx.js" "$inf/model.onnx" "$dir/inputs.json" "$dir/before.json"; then
    ok; checks "$dir" before "$dir/before.json"
  else
    bad "$case_name: ONNX Runtime could not run the unmerged model"
  fi

  # The merge. The transposed cases name the variant, the others take the default one.
  variant=(); [ "$layout" = already_transposed_for_inference ] && variant=(--variant cpu)
  echo "\$ modelpkg mt merge $case_name/pkg --adapter adapter.safetensors ${variant[*]}"
  if "$MPK" mt merge "$pkg" --adapter "$dir/adapter.safetensors" "${variant[@]}" >"$TMP/out" 2>&1; then
    ok; cat "$TMP/out"
    # The decision is reported; every map declares no_transpose, so the word must come from observation.
    grep -q -- "$layout" "$TMP/out" && ok || bad "$case_name: the merge report does not name the observed orientation $layout"
  else
    bad "$case_name: modelpkg mt merge failed (exit $?)"; cat "$TMP/out"
  fi

  # After: ONNX Runtime on the merged weights equals x @ (W + scale·BA)ᵀ.
  if node "$E2E/run_onnx.js" "$inf/model.onnx" "$dir/inputs.json" "$dir/after.json"; then
    ok; checks "$dir" after "$dir/after.json"
  else
    bad "$case_name: ONNX Runtime could not run the merged model"
  fi

  # Same file names as before plus modelpkg's merge record, the adapter membership and the copy of
  # the adapter (named by its SHA-256): no journal or temporary file is left behind.
  adapter_sha="$(sha256sum "$dir/adapter.safetensors" | cut -d' ' -f1)"
  (cat "$TMP/files.before"; echo .modelpkg-merge-record.json; echo .modelpkg-adapters.json
   echo ".modelpkg-adapter.$adapter_sha.safetensors") | sort >"$TMP/files.after"
  ls -A "$inf" | sort | diff "$TMP/files.after" - && ok || bad "$case_name: the merge left the file list above changed"

  # The package still checks, and its load gate verified every merged tensor (against the merge
  # record written in the merge's transaction: the map keeps the shipped digests).
  if "$MPK" check "$pkg" --json >"$TMP/out" 2>&1; then ok; else bad "$case_name: check after the merge"; cat "$TMP/out"; fi
  verified="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["tensors"]["verified"])' "$TMP/out" 2>/dev/null)"
  [ "$verified" = 3 ] && ok || bad "$case_name: check after the merge: the load gate verified '$verified' tensors, not 3"

  # A second merge of the same adapter is refused (exit 1, saying the base was merged) and
  # changes no byte.
  (cd "$inf" && sha256sum ./*.bin ./*.bin.sha256 ./.modelpkg-merge-record.json) >"$TMP/merged.sums"
  "$MPK" mt merge "$pkg" --adapter "$dir/adapter.safetensors" >"$TMP/out" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -qi merged "$TMP/out"; then ok; else bad "$case_name: a second merge exited $rc, not refused as already merged"; fi
  sed 's/^/  /' "$TMP/out"
  (cd "$inf" && sha256sum --quiet -c "$TMP/merged.sums") && ok || bad "$case_name: the refused merge changed files"
  ls -A "$inf" | sort | diff "$TMP/files.after" - && ok || bad "$case_name: the refused merge left the file list above changed"

  # mt restore: the shipped bytes back (re-fetched from the pristine source, verified), the file
  # list as before the merge, and ONNX Runtime computes x @ W_baseᵀ again.
  echo "\$ modelpkg mt restore $case_name/pkg --source pristine ${variant[*]} --json"
  if "$MPK" mt restore "$pkg" --source "$TMP/pristine" "${variant[@]}" --json >"$TMP/out" 2>&1; then ok; else bad "$case_name: mt restore failed"; cat "$TMP/out"; fi
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["ok"] and d["was_merged"] and d["written"] and d["command"] == "mt restore", d' "$TMP/out" && ok || bad "$case_name: mt restore --json"
  (cd "$TMP/pristine/variants/cpu/inference" && sha256sum ./*.bin ./*.bin.sha256) >"$TMP/shipped.sums"
  (cd "$inf" && sha256sum --quiet -c "$TMP/shipped.sums") && ok || bad "$case_name: mt restore did not give the shipped bytes"
  ls -A "$inf" | sort | diff <(sort "$TMP/files.before") - && ok || bad "$case_name: the file list after mt restore is not the one before the merge"
  if node "$E2E/run_onnx.js" "$inf/model.onnx" "$dir/inputs.json" "$dir/restored.json"; then
    ok; checks "$dir" before "$dir/restored.json"
  else
    bad "$case_name: ONNX Runtime could not run the restored model"
  fi
  "$MPK" mt restore "$pkg" "${variant[@]}" >"$TMP/out" 2>&1 && grep -q "nothing to restore" "$TMP/out" && ok || bad "$case_name: a second mt restore is not a no-op"
done <"$TMP/cases.txt"

[ "$(wc -l <"$TMP/cases.txt")" -gt 0 ] && ok || bad "no case was made"
finish
