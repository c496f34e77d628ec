#!/usr/bin/env bash
# The train/inference parity gate end to end (docs/mt-numeric.md): tiny decoder LMs made by
# tests/tools/make_decoder.py (numpy + onnx), run by `modelpkg mt parity` in ONNX Runtime (npm
# onnxruntime-node's libonnxruntime.so.1 through $MPK_ORT_LIBRARY) and, independently, by
# onnxruntime-node itself (lm_cross_entropy.js). The four verdicts: f32 and the uint8 quant twin
# pass with a small difference, zeroed inference weights fail at the uniform floor, a transposed
# weight fails; both cross-entropies agree with onnxruntime-node within 1e-5; seeded tokens are
# splitmix64's; --json keys; refusals (no ONNX Runtime, bad TOKENS.json, a load gate that is not
# ready, a training graph that is not a language model's); mt build/reseal --parity (a failing gate
# writes nothing).
#
# usage: test_mt_parity.sh MODELPKG SOURCE_DIR   (MPK_ORT_LIBRARY: the library; absent: a skip)
set -uo pipefail
MPK="$1"; SRC="$2"
PY=/usr/bin/python3
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
. "$SRC/tests/integration/expect.sh"

ORT_HOW="ONNX Runtime (libonnxruntime.so.1 from npm onnxruntime-node: scripts/deps_node.sh)"
[ -n "${MPK_ORT_LIBRARY:-}" ] && [ -f "$MPK_ORT_LIBRARY" ] || skip_test "$ORT_HOW${MPK_ORT_LIBRARY:+ at $MPK_ORT_LIBRARY}"
need_py numpy onnx
need_tool node
have_tool node node "$SRC/tests/e2e/run_onnx.js" --version || skip_test "onnxruntime-node (npm, in $SRC/.deps or \$MPK_NODE_MODULES)"
quiet() { "$@" >/dev/null 2>&1; }
need() { echo "FAIL: $*"; echo "$pass passed, $((fail + 1)) failed"; exit 1; }

"$PY" "$SRC/tests/tools/make_decoder.py" "$TMP" "$MPK" f32 quant zeroed transposed >"$TMP/cases.txt" ||
  need "make_decoder.py failed"
for c in f32 quant zeroed transposed; do
  check "$c: modelpkg check passes (the package is structurally sound)" quiet timeout 60 "$MPK" check "$TMP/$c/pkg"
done

# pyjson FILE EXPR: evaluate a Python assertion over the JSON document d in FILE.
pyjson() { "$PY" -c 'import json, math, sys; d = json.load(open(sys.argv[1])); assert eval(sys.argv[2]), (sys.argv[2], d)' "$1" "$2"; }
parity() { # parity NAME STATUS ARGS...: mt parity --json into $TMP/NAME.json with the wanted status
  local name="$1" want="$2" rc; shift 2
  timeout 120 "$MPK" mt parity "$@" --json >"$TMP/$name.json" 2>"$TMP/$name.err"; rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$name: exit $rc, wanted $want"; first_lines 10 "$(cat "$TMP/$name.err")"; fi
}

# ---- the four verdicts on the Markov chain's tokens
parity f32 0 "$TMP/f32/pkg" --tokens "$TMP/f32/tokens.json"
check "f32: pass, difference < 1e-6" pyjson "$TMP/f32.json" 'd["ok"] and d["pass"] and d["diff"] < 1e-6 and d["vocab"] == 64 and d["n_tokens"] == 128'
check "f32: far below the uniform floor" pyjson "$TMP/f32.json" 'd["ce_inference"] < d["uniform_floor"] - 2 and abs(d["uniform_floor"] - math.log(64)) < 1e-12'
parity quant 0 "$TMP/quant/pkg" --tokens "$TMP/quant/tokens.json"
check "quant: pass with a small, non-zero difference" pyjson "$TMP/quant.json" 'd["pass"] and 0 < d["diff"] < 0.05 and "pass" in d["verdict"]'
parity zeroed 1 "$TMP/zeroed/pkg" --tokens "$TMP/zeroed/tokens.json"
check "zeroed: fails, the inference graph within 0.05 of ln V" pyjson "$TMP/zeroed.json" \
  'not d["ok"] and not d["pass"] and abs(d["ce_inference"] - math.log(64)) < 0.05 and d["diff"] > 1.5 and "uniform floor" in d["verdict"] and d["problems"]'
parity transposed 1 "$TMP/transposed/pkg" --tokens "$TMP/transposed/tokens.json"
check "transposed: fails (difference > 1.5)" pyjson "$TMP/transposed.json" 'not d["pass"] and d["diff"] > 1.5 and "uniform floor" not in d["verdict"]'
expect "human report: OK line" 0 '^OK: .*differ by .* nats ≤ 1.5: pass' -- "$MPK" mt parity "$TMP/quant/pkg" --tokens "$TMP/quant/tokens.json"
expect "human report: FAILED line naming the floor" 1 'FAILED: .*> 1.5: fail; the inference graph sits at the uniform floor ln\(64\)=4.1589' -- \
  "$MPK" mt parity "$TMP/zeroed/pkg" --tokens "$TMP/zeroed/tokens.json"
expect "--max-diff tightens the bound" 1 'differ by .* > 1e-07: fail' -- "$MPK" mt parity "$TMP/quant/pkg" --tokens "$TMP/quant/tokens.json" --max-diff 1e-7

# ---- onnxruntime-node computes the same cross-entropies (the same graphs, the same tokens)
for c in f32 quant zeroed transposed; do
  for side in train inference; do
    if [ $side = train ]; then g="$TMP/$c/pkg/variants/cpu/train/eval_model.onnx"; k=ce_train
    else g="$TMP/$c/pkg/variants/cpu/inference/model.onnx"; k=ce_inference; fi
    timeout 60 node "$SRC/tests/e2e/lm_cross_entropy.js" "$g" "$TMP/$c/tokens.json" >"$TMP/node-$c-$side.json" ||
      { bad "$c $side: lm_cross_entropy.js failed"; continue; }
    check "$c $side: modelpkg's CE equals onnxruntime-node's within 1e-5" "$PY" -c '
import json, sys
m = json.load(open(sys.argv[1]))[sys.argv[3]]; n = json.load(open(sys.argv[2]))["cross_entropy"]
print("  %s: modelpkg %.12f, onnxruntime-node %.12f, |diff| %.2e" % (sys.argv[3], m, n, abs(m - n)))
assert abs(m - n) <= 1e-5' "$TMP/$c.json" "$TMP/node-$c-$side.json" "$k"
  done
done

# ---- seeded tokens: splitmix64 as documented, reproducible
parity seed7a 0 "$TMP/f32/pkg" --seed 7 --length 50
parity seed7b 0 "$TMP/f32/pkg" --seed 7 --length 50
parity seed8 0 "$TMP/f32/pkg" --seed 8 --length 50
"$PY" - "$TMP/seed7.tokens.json" <<'EOF'
import json, sys
M = (1 << 64) - 1
s, ids = 7, []
for _ in range(50):
    s = (s + 0x9E3779B97F4A7C15) & M
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    z ^= z >> 31
    ids.append(z % 64)
json.dump({"tokens": ids}, open(sys.argv[1], "w"))
EOF
parity seed7tok 0 "$TMP/f32/pkg" --tokens "$TMP/seed7.tokens.json"
check "seed 7 twice: the same cross-entropies" "$PY" -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["ce_train"] == b["ce_train"] and a["ce_inference"] == b["ce_inference"] and a["seed"] == 7 and a["n_tokens"] == 50' "$TMP/seed7a.json" "$TMP/seed7b.json"
check "seed 8 differs from seed 7" "$PY" -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["ce_train"] != b["ce_train"]' "$TMP/seed7a.json" "$TMP/seed8.json"
check "seed 7 = the documented splitmix64 ids given as TOKENS.json" "$PY" -c '
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["ce_train"] == b["ce_train"] and a["ce_inference"] == b["ce_inference"] and b["seed"] is None' "$TMP/seed7a.json" "$TMP/seed7tok.json"

# Seeded uniform ids are not text: on them the sound training graph (5.60) is above the floor and the
# zeroed inference graph's difference (1.44) is inside the bound. The gate passes by its rule, and
# the verdict still names the floor (docs/mt-numeric.md, "Tokens").
expect "zeroed, seeded ids: passes by the bound, the verdict names the floor" 0 'differ by 1\.44[0-9]* nats ≤ 1.5: pass; the inference graph sits at the uniform floor' -- \
  "$MPK" mt parity "$TMP/zeroed/pkg"

# ---- the --json document's keys, in order
check "--json keys" pyjson "$TMP/f32.json" 'list(d) == ["modelpkg_version", "command", "ok", "dir", "variant", "train_graph", "inference_graph", "tokens", "seed", "n_tokens", "vocab", "ce_train", "ce_inference", "diff", "uniform_floor", "max_diff", "pass", "verdict", "ort_version", "problems", "notes"] and d["command"] == "mt parity" and d["ort_version"]'

# ---- without ONNX Runtime: exit 1, saying so
expect "no ONNX Runtime: exit 1 naming it" 1 'ONNX Runtime not available: .*no-such-lib' -- \
  env MPK_ORT_LIBRARY="$TMP/no-such-lib.so" "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/f32/tokens.json"
expect "--ort-library absent: exit 1 naming it" 1 'ONNX Runtime not available: .*nope/libonnxruntime' -- \
  "$MPK" mt parity "$TMP/f32/pkg" --ort-library "$TMP/nope/libonnxruntime.so.1"

# ---- bad TOKENS.json: the file, the field, the rule
printf '{"tokens": [1, 2, 3.5]}' >"$TMP/t-real.json"
printf '{"tokens": [1, -2]}' >"$TMP/t-neg.json"
printf '{"tokens": [1]}' >"$TMP/t-one.json"
printf '{"ids": [1, 2]}' >"$TMP/t-key.json"
printf '{"tokens": [1, 2' >"$TMP/t-trunc.json"
printf '{"tokens": "1 2"}' >"$TMP/t-str.json"
printf '{"tokens": [1, 2, 64]}' >"$TMP/t-vocab.json"
expect "tokens: a real number" 1 't-real.json.*/tokens/2.*integer from 0 to 2147483647' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-real.json"
expect "tokens: negative" 1 't-neg.json.*/tokens/1.*integer from 0 to 2147483647' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-neg.json"
expect "tokens: only one" 1 't-one.json.*/tokens.*at least 2' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-one.json"
expect "tokens: unknown key" 1 't-key.json.*/ids.*unknown key' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-key.json"
expect "tokens: truncated JSON" 1 't-trunc.json.*invalid JSON' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-trunc.json"
expect "tokens: not an array" 1 't-str.json.*/tokens.*not an array' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-str.json"
expect "tokens: an id outside the vocabulary" 1 'model.onnx: token id 64 at position 2 is outside \[0, 64\)' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-vocab.json"
printf '{"tokens": [1, 2.0, 3]}' >"$TMP/t-int.json"
expect "tokens: 2.0 is the integer 2 (PROBE.json's rule)" 0 'tokens: 3 ids' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-int.json"
printf '{"tokens": [1, 2147483648]}' >"$TMP/t-big.json"
expect "tokens: above 2^31 - 1" 1 't-big.json.*/tokens/1.*from 0 to 2147483647' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/t-big.json"
expect "tokens: absent file" 1 'no-such.json' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/no-such.json"
mkfifo "$TMP/fifo.json"
expect "tokens: a FIFO is refused, not waited on" 1 'fifo.json' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/fifo.json"
expect "--train-graph: a FIFO is refused, not waited on" 1 'fifo.json' -- "$MPK" mt parity "$TMP/f32/pkg" --train-graph "$TMP/fifo.json" --tokens "$TMP/f32/tokens.json"
expect "usage: --tokens with --seed" 2 'does not apply' -- "$MPK" mt parity "$TMP/f32/pkg" --tokens "$TMP/f32/tokens.json" --seed 1
expect "usage: --length 1" 2 'length needs an integer from 2' -- "$MPK" mt parity "$TMP/f32/pkg" --length 1
expect "usage: --max-diff 0" 2 'max-diff needs a number' -- "$MPK" mt parity "$TMP/f32/pkg" --max-diff 0

# ---- the training-side graph: not a language model's; --train-graph; absent
expect "a training eval model (parameters and labels as inputs) is refused naming the input" 1 \
  "not_lm.onnx: the training-side graph is not a language model's.*'labels'.*--train-graph" -- \
  "$MPK" mt parity "$TMP/f32/pkg" --train-graph "$TMP/f32/not_lm.onnx" --tokens "$TMP/f32/tokens.json"
expect "--train-graph replaces the default graph (transposed package, f32 twin: pass)" 0 'OK: .*pass' -- \
  "$MPK" mt parity "$TMP/transposed/pkg" --train-graph "$TMP/f32/pkg/variants/cpu/train/eval_model.onnx" --tokens "$TMP/f32/tokens.json"
cp -a "$TMP/f32/pkg" "$TMP/notrain"
rm "$TMP/notrain/variants/cpu/train/eval_model.onnx"
expect "no train/eval_model.onnx: refused, saying --train-graph" 1 'eval_model.onnx: no training-side evaluation graph here: give .*--train-graph' -- \
  "$MPK" mt parity "$TMP/notrain" --tokens "$TMP/f32/tokens.json"

# ---- the load gate: a tampered handoff tensor is refused, naming it; nothing runs on bad bytes
cp -a "$TMP/f32/pkg" "$TMP/tampered"
bin="$TMP/tampered/variants/cpu/inference/model.layers.0.self_attn.proj.MatMul.weight.bin"
printf '\x00\x00\x80\x7f' | dd of="$bin" bs=1 seek=0 conv=notrunc status=none
expect "a tampered .bin: the gate refuses, naming the tensor" 1 'self_attn.proj.MatMul.weight.bin' -- \
  "$MPK" mt parity "$TMP/tampered" --tokens "$TMP/f32/tokens.json"

# ---- mt build / reseal --parity
snap() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$2"; }
cp -a "$TMP/zeroed/pkg" "$TMP/z2"
snap "$TMP/z2" "$TMP/z2.before"
expect "reseal --parity on a package at the floor: refused" 1 'the parity gate failed .*nothing written.*uniform floor' -- \
  "$MPK" mt reseal "$TMP/z2" --parity --parity-tokens "$TMP/zeroed/tokens.json"
snap "$TMP/z2" "$TMP/z2.after"
check "the refused reseal changed no byte" cmp -s "$TMP/z2.before" "$TMP/z2.after"
rm "$TMP/z2/mobiletransformers_manifest.json" "$TMP/z2/variants/cpu/checksums.json"
snap "$TMP/z2" "$TMP/z3.before"
expect "build --parity of a new package at the floor: refused" 1 'the parity gate failed' -- \
  "$MPK" mt build "$TMP/z2" --describe "$TMP/zeroed/build.json" --parity --parity-tokens "$TMP/zeroed/tokens.json"
snap "$TMP/z2" "$TMP/z3.after"
check "the refused build wrote nothing (no manifest, no checksums)" cmp -s "$TMP/z3.before" "$TMP/z3.after"
cp -a "$TMP/quant/pkg" "$TMP/q2"
rm "$TMP/q2/mobiletransformers_manifest.json" "$TMP/q2/variants/cpu/checksums.json"
expect "build --parity of the quant package: sealed, the gate's numbers shown" 0 'parity: +variant cpu, 128 tokens: training-side 1\.370' -- \
  "$MPK" mt build "$TMP/q2" --describe "$TMP/quant/build.json" --parity --parity-tokens "$TMP/quant/tokens.json"
check "the package built with --parity passes check" quiet timeout 60 "$MPK" check "$TMP/q2"
timeout 120 "$MPK" mt reseal "$TMP/q2" --parity --json >"$TMP/reseal.json" 2>/dev/null
check "reseal --parity --json: the parity object" pyjson "$TMP/reseal.json" 'd["ok"] and d["parity"]["pass"] and d["parity"]["n_tokens"] == 64 and list(d)[-3] == "parity"'
expect "build --parity without ONNX Runtime: refused before anything" 1 'ONNX Runtime not available' -- \
  env MPK_ORT_LIBRARY="$TMP/no-such-lib.so" "$MPK" mt reseal "$TMP/q2" --parity
expect "--parity-tokens without --parity: usage" 2 'is for --parity' -- "$MPK" mt reseal "$TMP/q2" --parity-tokens "$TMP/quant/tokens.json"

finish test_mt_parity
