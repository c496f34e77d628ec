#!/usr/bin/python3
"""Write the ONNX graphs test_ort runs in ONNX Runtime, and the numbers it must get, computed here
with numpy independently of modelpkg and of ONNX Runtime.

  add.onnx       C = A + B (float32 [2, 3]): a graph that is not a language model
  lm.onnx        a tiny decoder-style LM, initializers inside the file:
                   h = Gather(E, input_ids) + Gather(P, position_ids); h = h * attention_mask
                   logits = MatMul(h, W)                      [1, n, V]
  lm_ext.onnx    the same graph, E and W as ONNX external data (E.bin, W.bin beside it; raw
                 little-endian float32, offset 0), P inside the file
  lm_past.onnx   lm.onnx plus a past input past_key_values.0.key float32 [batch, 2,
                 past_sequence_length, 2] added as ReduceSum (0 when the past is empty)
  lm_odd.onnx    lm.onnx plus an input 'token_type_ids' the cross-entropy does not feed
  lm_f16.onnx    lm.onnx with float16 logits (Cast; exact, see below)
  tokens.json    the token ids; expected.json: {"lm": cross-entropy, "vocab": V, "E": [...], "W": [...]}

Every weight is a multiple of 1/8 with |w| <= 2 and the hidden width is 4, so every float32 product
and sum of the forward pass is exact: ONNX Runtime's logits equal numpy's float64 ones bit for bit
and the cross-entropies agree to rounding (test_ort asserts 1e-9 relative).

usage: /usr/bin/python3 make_ort_graphs.py OUTDIR      (needs python3-numpy, python3-onnx; exit 77 without)
"""
import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # a missing tool is a skip, never a pass
    print(f"SKIP: make_ort_graphs: python3-numpy / python3-onnx not found ({e})", file=sys.stderr)
    sys.exit(77)

V, D, MAXPOS = 11, 4, 32
TOKENS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4]


def weights():
    rng = np.random.default_rng(21)
    E = (rng.integers(-16, 17, size=(V, D)) / 8).astype(np.float32)
    P = (rng.integers(-4, 5, size=(MAXPOS, D)) / 8).astype(np.float32)
    W = (rng.integers(-16, 17, size=(D, V)) / 8).astype(np.float32)
    return E, P, W


def lm_graph(E, P, W, external=None, past=False, odd=False, f16=False):
    seq = "sequence_length"
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", seq]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", seq]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", seq])]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["te"]),
             helper.make_node("Gather", ["P", "position_ids"], ["pe"]),
             helper.make_node("Add", ["te", "pe"], ["h0"]),
             helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["mf", "axis_last"], ["m3"]),
             helper.make_node("Mul", ["h0", "m3"], ["h"]),
             helper.make_node("MatMul", ["h", "W"], ["logits0" if past or f16 else "logits"])]
    inits = [numpy_helper.from_array(E, "E"), numpy_helper.from_array(P, "P"), numpy_helper.from_array(W, "W"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis_last")]
    if past:
        inputs.append(helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT,
                                                    ["batch", 2, "past_sequence_length", 2]))
        nodes += [helper.make_node("ReduceSum", ["past_key_values.0.key"], ["ps"], keepdims=0),
                  helper.make_node("Add", ["logits0", "ps"], ["logits"])]
    if f16:  # float16 logits: every value here is k/64 with |k| < 2048, exact in float16
        nodes.append(helper.make_node("Cast", ["logits0"], ["logits"], to=TensorProto.FLOAT16))
    if odd:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", seq]))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT16 if f16 else TensorProto.FLOAT, ["batch", seq, V])]
    if external:
        outdir = external
        for t in inits:
            if t.name in ("E", "W"):
                raw = t.raw_data
                with open(os.path.join(outdir, t.name + ".bin"), "wb") as f:
                    f.write(raw)
                t.ClearField("raw_data")
                t.data_location = TensorProto.EXTERNAL
                for k, v in (("location", t.name + ".bin"), ("offset", "0"), ("length", str(len(raw)))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
    g = helper.make_graph(nodes, "tiny_lm", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_ort_graphs")
    m.ir_version = 8
    return m


def cross_entropy(E, P, W, ids):
    ids = np.array(ids)
    h = E.astype(np.float64)[ids] + P.astype(np.float64)[np.arange(len(ids))]
    logits = h @ W.astype(np.float64)
    ce = 0.0
    for t in range(len(ids) - 1):
        row = logits[t]
        m = row.max()
        ce += m + np.log(np.exp(row - m).sum()) - row[ids[t + 1]]
    return ce / (len(ids) - 1)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    E, P, W = weights()
    a = helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3])
    b = helper.make_tensor_value_info("B", TensorProto.FLOAT, [2, 3])
    c = helper.make_tensor_value_info("C", TensorProto.FLOAT, [2, 3])
    add = helper.make_model(helper.make_graph([helper.make_node("Add", ["A", "B"], ["C"])], "add", [a, b], [c]),
                            opset_imports=[helper.make_opsetid("", 17)])
    add.ir_version = 8
    onnx.save(add, os.path.join(out, "add.onnx"))
    onnx.save(lm_graph(E, P, W), os.path.join(out, "lm.onnx"))
    onnx.save(lm_graph(E, P, W, external=out), os.path.join(out, "lm_ext.onnx"))
    onnx.save(lm_graph(E, P, W, past=True), os.path.join(out, "lm_past.onnx"))
    onnx.save(lm_graph(E, P, W, odd=True), os.path.join(out, "lm_odd.onnx"))
    onnx.save(lm_graph(E, P, W, f16=True), os.path.join(out, "lm_f16.onnx"))
    for name in ("add", "lm", "lm_ext", "lm_past", "lm_odd", "lm_f16"):
        onnx.checker.check_model(os.path.join(out, name + ".onnx"))
    with open(os.path.join(out, "tokens.json"), "w") as f:
        json.dump(TOKENS, f)
    expected = {"lm": cross_entropy(E, P, W, TOKENS), "vocab": V, "n": len(TOKENS)}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    # The float32 bytes test_ort hands over as initializers (the same as E.bin / W.bin).
    print(f"make_ort_graphs: {out}: lm cross-entropy {expected['lm']!r} (vocab {V}, {len(TOKENS)} tokens)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
