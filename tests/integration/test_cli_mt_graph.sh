#!/usr/bin/env bash
# modelpkg mt graph / mt inspect / mt handoff build end to end, on examples/mt-tiny with its
# cpu-fp16 variant replaced by the generated reference layout (scripts/gen_onnx_graphs.py output in
# GRAPHS): the listing and its JSON, the map built byte-identical to the reference codec's, naming
# drift refused with nothing written, precision per variant beside the training quantization, the
# check hook, a hostile external location, usage errors.
set -euo pipefail
CLI=$1
SRC=$2
GRAPHS=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/expect.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
# GRAPHS is scripts/gen_onnx_graphs.py's output (the gen_onnx_graphs fixture), written with Debian's
# python3-onnx and numpy: without them there is none, and nothing here can run.
[ -d "$GRAPHS/ref" ] || need_py onnx numpy
P="$T/pkg"
INF="$P/variants/cpu-fp16/inference"
cp -r "$SRC/examples/mt-tiny" "$P"
rm -f "$INF"/* "$P"/variants/cpu-fp16/train/*
cp "$GRAPHS"/ref/inference/* "$INF/"
cp "$GRAPHS"/ref/train/* "$P/variants/cpu-fp16/train/"

# handoff build: the reference codec's bytes; then unchanged; then the package reseals and checks.
out=$("$CLI" mt handoff build "$P" --variant cpu-fp16)
grep -q "(3 entries, transposePolicy already_transposed_for_inference)" <<<"$out" || fail "build summary: $out"
grep -q "OK: wrote the map; reseal the package" <<<"$out" || fail "build wrote: $out"
cmp "$INF/weight_handoff_map.json" "$GRAPHS/ref/expected_map.json" || fail "built map differs from the reference codec's"
out=$("$CLI" mt handoff build "$P" --variant cpu-fp16 --peft lora) || fail "rebuild: exit $?"
grep -q "OK: unchanged, nothing written" <<<"$out" || fail "rebuild"
"$CLI" mt reseal "$P" >/dev/null
out=$("$CLI" check "$P" --variant cpu-fp16) || fail "check after build: exit $?"
grep -q "OK: all checks hold" <<<"$out" || fail "check after build"
grep -q 'note: variant "cpu-fp16": model.onnx: 7 initializers (7 external), precision float32' <<<"$out" \
  || fail "check notes the graph"

# mt graph: one line per initializer with its claim; JSON with the same facts.
out=$("$CLI" mt graph "$P" --variant cpu-fp16)
grep -Eq "model.layers.0.attn.v_proj.MatMul.weight +float32 +\[8, 4\] +external model.layers.0.attn.v_proj.MatMul.weight.bin @0 \+128  \[entry 2 role weight\]" <<<"$out" \
  || fail "graph listing: $out"
grep -Eq "model.reshape_shape +int64 +\[2\] +external frozen_base.onnx.data @560 \+16  \[frozen\]" <<<"$out" || fail "frozen listing"
grep -q "precision:  training quantization fp16; inference graph measured float32, declared float32" <<<"$out" || fail "precision line"
grep -q "^OK: the map and the declared precision agree with the graph" <<<"$out" || fail "graph ok"
"$CLI" mt graph "$P" --variant cpu-fp16 --json >"$T/g.json"
/usr/bin/python3 - "$T/g.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True and r["problems"] == [], r["problems"]
assert r["measured_precision"] == "float32" and r["declared_precision"] == "float32" and r["precision_matches"] is True
assert r["quantization"] == "fp16"
by = {i["name"]: i for i in r["initializers"]}
v = by["model.layers.0.attn.v_proj.MatMul.weight"]
assert v["dims"] == [8, 4] and v["dtype"] == "float32" and v["external"] is True and v["offset"] == 0 and v["length"] == 128
assert v["entry"] == 2 and v["role"] == "weight", v
assert by["model.embed_tokens.weight"]["entry"] is None
assert r["model"]["opset"] == 17 and len(r["initializers"]) == 7
PY

# Naming drift: refused, naming the layer; the map on disk untouched.
cp "$INF/weight_handoff_map.json" "$T/map.before"
sed -i 's/self_attn.v_proj": {/self_attn.k_proj": {/' "$P/variants/cpu-fp16/train/training_config.json"
set +e
err=$("$CLI" mt handoff build "$P" --variant cpu-fp16 2>&1)
rc=$?
set -e
[ $rc = 1 ] || fail "drift exit $rc"
grep -q 'peft_mapping/base_model.model.model.layers.0.self_attn.k_proj: layer "base_model.model.model.layers.0.self_attn.k_proj": no initializer of .* matches it (tried seeds "model.layers.0.attn.k_proj.MatMul", "model.layers.0.self_attn.k_proj.MatMul"): inference/training naming drifted' <<<"$err" \
  || fail "drift message: $err"
cmp "$INF/weight_handoff_map.json" "$T/map.before" || fail "drift wrote the map"
cp "$GRAPHS"/ref/train/training_config.json "$P/variants/cpu-fp16/train/"

# mt inspect: per variant, training quantization beside measured and declared inference precision.
# cpu-int4 (the example's own graph) is made to declare "mixed", which is not what
# describe_graph_precision says ("mixed(float16/float32)").
sed -i 's|"inferenceGraphPrecision": "mixed(float16/float32)"|"inferenceGraphPrecision": "mixed"|' \
  "$P/variants/cpu-int4/inference/optimum_config.json"
grep -q '"inferenceGraphPrecision": "mixed",' "$P/variants/cpu-int4/inference/optimum_config.json" || fail "setup: declared precision"
set +e
out=$("$CLI" mt inspect "$P")
rc=$?
set -e
echo "$out"
grep -Eq "^  cpu-fp16 +fp16 +float32 +float32 +ok$" <<<"$out" || fail "inspect cpu-fp16"
grep -Eq "^  cpu-int4 +int4 +mixed\(float16/float32\) +mixed +PROBLEMS$" <<<"$out" || fail "inspect cpu-int4"
[ $rc = 1 ] || fail "inspect exit $rc"
"$CLI" mt inspect "$P" --json >"$T/i.json" || true
/usr/bin/python3 - "$T/i.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
v = {x["variant"]: x for x in r["variants"]}
assert v["cpu-int4"]["quantization"] == "int4" and v["cpu-int4"]["measured_precision"] == "mixed(float16/float32)"
assert v["cpu-int4"]["precision_matches"] is False and v["cpu-fp16"]["precision_matches"] is True
assert r["ok"] is False
PY

# The check hook on a disagreement, and a graph reading outside its directory (refused unopened).
cp "$GRAPHS/cases/dtype.onnx" "$INF/model.onnx"
set +e
out=$("$CLI" mt graph "$P" --variant cpu-fp16)
rc=$?
set -e
[ $rc = 1 ] || fail "dtype exit"
grep -q 'weight_handoff_map.json: /entries/1/tensorDtypes/weight: entry "base_model.model.model.layers.0.self_attn.q_proj.base_layer" role "weight": the graph.s initializer "model.layers.0.attn.q_proj.MatMul.weight" is float16 (ONNX data type 10), the map declares float32 \[mismatch\]' <<<"$out" \
  || fail "dtype problem: $out"
mkfifo "$P/variants/cpu-fp16/outside.bin"
cp "$GRAPHS/cases/outside.onnx" "$INF/model.onnx"
set +e
out=$(timeout 20 "$CLI" mt graph "$P" --variant cpu-fp16)
rc=$?
set -e
[ $rc = 1 ] || fail "outside exit $rc"
grep -q 'external data location "../outside.bin" leaves the package' <<<"$out" || fail "outside: $out"

# Usage.
out=$("$CLI" mt graph --help) || fail "help: exit $?"
grep -q "usage: modelpkg mt graph DIR" <<<"$out" || fail help
out=$("$CLI" mt --help) || fail "mt help: exit $?"
grep -q "modelpkg mt inspect DIR" <<<"$out" || fail "mt help"
set +e
"$CLI" mt graph 2>"$T/e"; [ $? = 2 ] || fail "no dir"
"$CLI" mt inspect "$P" --variant x 2>"$T/e"; [ $? = 2 ] || fail "inspect --variant"
grep -q -- "--variant does not apply to mt inspect" "$T/e" || fail "inspect --variant message"
"$CLI" mt handoff build "$P" --bogus 2>"$T/e"; [ $? = 2 ] || fail "bogus option"
set -e
echo "ok"
