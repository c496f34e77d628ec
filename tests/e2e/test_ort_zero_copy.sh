#!/usr/bin/env bash
# Zero-copy initializers (issue 21, docs/ort.md "Zero-copy, measured"): a package variant whose
# handoff tensors total 256 MiB goes through the load gate (its bytes verified), mpk_mt_tensor_open
# (read-only mappings) and an ONNX Runtime session given those views as initializers; running it
# must grow the anonymous resident set by less than 64 MiB (a copy of the weights would be 256),
# and its logits must be the same bytes as a session's that read the files itself. A control run
# with ONNX Runtime's default options (which prepack, i.e. copy, the MatMul weights) must show a
# growth of at least 200 MiB: the measurement can see a copy.
# The probe is bench/bench_ort_zero_copy.c built as a test program (public API only); the package
# is bench/ort_zero_copy_package.py's (numpy + onnx, sealed by `modelpkg mt build --describe`).
#
# usage: test_ort_zero_copy.sh MODELPKG PROBE SOURCE_DIR
# Needs ONNX Runtime ($MPK_ORT_LIBRARY: npm onnxruntime-node's libonnxruntime.so.1, scripts/deps_node.sh)
# and Debian's python3-numpy + python3-onnx; a missing one skips (exit 77) naming it.
set -uo pipefail
MPK="$1"; PROBE="$2"; SRC="$3"
TEST_NAME=test_ort_zero_copy
SKIP_HOW="scripts/setup.sh --test installs it"
. "$SRC/tests/integration/expect.sh"
skipped=0
PY=/usr/bin/python3
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

[ -n "${MPK_ORT_LIBRARY:-}" ] && [ -r "$MPK_ORT_LIBRARY" ] ||
  { echo "SKIP: $TEST_NAME: ONNX Runtime (libonnxruntime.so.1 from npm onnxruntime-node: scripts/deps_node.sh) not found${MPK_ORT_LIBRARY:+ at $MPK_ORT_LIBRARY}"; exit 77; }
need_py numpy onnx
if [ -n "${MPK_SANITIZE_BUILD:-}" ]; then
  # The resident set of a sanitizer build is its shadow memory's, not the weights': the property
  # cannot be measured there (the outputs are still compared).
  echo "note: $TEST_NAME: sanitizer build: the RssAnon bound is not asserted"
fi

timeout 300 "$PY" "$SRC/bench/ort_zero_copy_package.py" "$TMP" "$MPK" --mib 256 --dim 2048 ||
  { echo "FAIL: ort_zero_copy_package.py"; echo "0 passed, 1 failed"; exit 1; }
for mode in views files files-default; do
  if timeout 300 "$PROBE" "$TMP/pkg" "$mode" >"$TMP/$mode.json" 2>"$TMP/$mode.err"; then
    ok "$mode: gate + session + run"
  else
    bad "$mode: the probe failed"; cat "$TMP/$mode.err"
  fi
done

# One line per verdict, printed by python and counted here.
out="$("$PY" - "$TMP" "${MPK_SANITIZE_BUILD:-}" <<'PY' 2>&1
import json, sys
tmp, sanitize = sys.argv[1], sys.argv[2]
def load(m):
    d = json.load(open(f"{tmp}/{m}.json"))
    return d, {s["step"]: s for s in d["steps"]}
v, vs = load("views")
f, fs = load("files")
c, cs = load("files-default")
copied = cs["run"]["RssAnon_kB"] - cs["ort_loaded"]["RssAnon_kB"]
grow = vs["run"]["RssAnon_kB"] - vs["ort_loaded"]["RssAnon_kB"]
filegrow = vs["run"]["RssFile_kB"] - vs["ort_loaded"]["RssFile_kB"]
print(f"views: RssAnon +{grow} kB, RssFile +{filegrow} kB from ONNX Runtime loaded to the run (weights: 262144 kB)")
print(f"files: RssAnon +{fs['run']['RssAnon_kB'] - fs['ort_loaded']['RssAnon_kB']} kB")
if v["initializers"] != 16:
    print(f"FAIL views: {v['initializers']} initializers handed over, 16 expected")
else:
    print("ok views: 16 handoff tensors handed over as initializers")
if sanitize:
    print("note: RssAnon bound not asserted (sanitizer build)")
elif grow < 64 * 1024:
    print(f"ok views: RssAnon grew by {grow} kB < 65536 kB")
else:
    print(f"FAIL views: RssAnon grew by {grow} kB >= 65536 kB: the weights were copied")
# The control: ONNX Runtime's default options prepack (copy) every MatMul weight. The measurement
# must see that copy, or it could not see one in the views' session either.
if sanitize or copied >= 200 * 1024:
    print(f"ok control: with ONNX Runtime's default options (prepacking) RssAnon grew by {copied} kB: a copy is visible")
else:
    print(f"FAIL control: the default session grew RssAnon by only {copied} kB: the measurement cannot see a copy")
if filegrow >= 200 * 1024 or sanitize:
    print("ok views: the run read the weights through the file mappings (RssFile grew by them)")
else:
    print(f"FAIL views: RssFile grew by only {filegrow} kB: the mapped weights were not what ran")
if v["logits_sha256"] == f["logits_sha256"] and v["cross_entropy"] == f["cross_entropy"]:
    print(f"ok the logits of views and files are the same bytes ({v['logits_sha256'][:16]}..., ce {v['cross_entropy']:.9f})")
else:
    print(f"FAIL logits differ: views {v['logits_sha256']} {v['cross_entropy']!r}, files {f['logits_sha256']} {f['cross_entropy']!r}")
PY
)"
echo "$out"
while IFS= read -r line; do
  case "$line" in "ok "*) ok ;; "FAIL "*) bad "${line#FAIL }" ;; Traceback*) bad "the verdict script crashed" ;; esac
done <<<"$out"
finish "$TEST_NAME"
