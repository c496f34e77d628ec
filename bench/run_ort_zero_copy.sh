#!/usr/bin/env bash
# run_ort_zero_copy.sh — handoff tensors handed to ONNX Runtime without a copy (issue 21), measured.
#
#   bench/run_ort_zero_copy.sh [BUILD_DIR]          # default build-bench, else build
#   MIB=1024 DIM=4096 REPEAT=3 bench/run_ort_zero_copy.sh
#
# bench/ort_zero_copy_package.py writes, in a temporary directory removed at the end (also on
# failure), a package whose variant's handoff tensors total MIB MiB (float32 [DIM, DIM] each, the
# inference graph a language model over them), sealed by `modelpkg mt build --describe`. Then,
# REPEAT rounds, each mode in its own process (bench_ort_zero_copy, public API only):
#   views          the load gate verifies every tensor's bytes, mpk_mt_tensor_open maps them,
#                  mpk_ort_session_open hands the views over (AddInitializer: no copy), run
#   files          mpk_ort_session_open from the files (ONNX Runtime reads the external data
#                  itself), no_copies as for the views (the same kernels), run
#   files-default  the same with ONNX Runtime's default session options (optimization, prepacking)
# and prints VmRSS / RssAnon / RssFile (kB) after each step, their growth from `ort_loaded` to
# `run`, and whether the logits of views and files are the same bytes (their SHA-256).
# Needs: /usr/bin/python3 with numpy + onnx, ONNX Runtime ($MPK_ORT_LIBRARY, default: npm
# onnxruntime-node's library under .deps/ — scripts/deps_node.sh), MIB*1.1 of free disk.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-}"
if [ -z "$build" ]; then
  if [ -x "$src/build-bench/bench/bench_ort_zero_copy" ]; then build="$src/build-bench"; else build="$src/build"; fi
fi
bench="$build/bench/bench_ort_zero_copy"
mpk="$build/modelpkg"
[ -x "$bench" ] || { echo "run_ort_zero_copy: $bench not built (ninja -C $build bench_ort_zero_copy)" >&2; exit 2; }
export MPK_ORT_LIBRARY="${MPK_ORT_LIBRARY:-$src/.deps/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1}"
[ -r "$MPK_ORT_LIBRARY" ] || { echo "run_ort_zero_copy: ONNX Runtime not found at $MPK_ORT_LIBRARY (scripts/deps_node.sh)" >&2; exit 2; }
MIB="${MIB:-1024}" DIM="${DIM:-4096}" REPEAT="${REPEAT:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)
/usr/bin/python3 "$src/bench/ort_zero_copy_package.py" "$tmp" "$mpk" --mib "$MIB" --dim "$DIM"
echo "package written and sealed in $(( $(date +%s) - t0 )) s; ONNX Runtime: $MPK_ORT_LIBRARY"
for r in $(seq 1 "$REPEAT"); do
  for mode in views files files-default; do
    "$bench" "$tmp/pkg" "$mode" > "$tmp/$mode.$r.json"
  done
done
/usr/bin/python3 - "$tmp" "$REPEAT" "$MIB" <<'PY'
import json, sys
tmp, repeat, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(f"\nhandoff tensors: {mib} MiB = {mib * 1024} kB; growth = value after `run` - value after `ort_loaded` (kB)")
print(f"{'round':>5} {'mode':<14} {'dVmRSS':>9} {'dRssAnon':>9} {'dRssFile':>9}  {'session_open dRssAnon':>21}  logits sha256")
hashes = {}
for r in range(1, repeat + 1):
    for mode in ("views", "files", "files-default"):
        d = json.load(open(f"{tmp}/{mode}.{r}.json"))
        st = {s["step"]: s for s in d["steps"]}
        a, b, so = st["ort_loaded"], st["run"], st["session_open"]
        prev = st.get("views_open", a)
        g = lambda k: b[k] - a[k]
        print(f"{r:>5} {mode:<14} {g('VmRSS_kB'):>9} {g('RssAnon_kB'):>9} {g('RssFile_kB'):>9}  "
              f"{so['RssAnon_kB'] - prev['RssAnon_kB']:>21}  {d['logits_sha256'][:16]}  ce {d['cross_entropy']:.9f}")
        hashes.setdefault(mode, set()).add(d["logits_sha256"])
same = hashes["views"] == hashes["files"] and len(hashes["views"]) == 1
print(f"\nviews and files give the same logits bit for bit: {'yes' if same else 'NO'}"
      f" (files-default: {'same' if hashes['files-default'] == hashes['views'] else 'different bytes (other kernels)'})")
sys.exit(0 if same else 1)
PY
