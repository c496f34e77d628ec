#!/usr/bin/python3
"""Tiny decoder-style language models as MobileTransformers packages: the numerical gates' test
graphs (docs/mt-numeric.md, "Test graphs"). Used by tests/e2e/test_mt_parity.sh (the parity gate)
and by the merge's post-merge check tests (PROBE.json, the adapters).

The model (vocabulary V = 64, hidden H = 64, MLP width F = 96), opset 17:

    input_ids int64 [1, n] -> Gather(embed [V, H])                   h0 [1, n, H]
    h1 = MatMul(h0, attn)          attn [H, H]   (square; a handoff tensor)
    h2 = h1 + MatMul(Relu(MatMul(h1, up)), down)   up [H, F], down [F, H]   (handoff tensors)
    logits = MatMul(h2, lm_head)   lm_head [H, V]                     logits [1, n, V]

The weights are constructed, not trained, for a known process: token sequences from a fixed Markov
chain, next = (t + 1) mod V with probability P_NEXT, else uniform over the vocabulary. `embed` is a
random orthogonal matrix Q, `attn` = Qᵀ S Q with S the shift-by-one permutation (so h1 of token t is
Q's row t + 1), `lm_head` = C · Qᵀ (the logit of t + 1 is C, every other about 0), and the MLP is a
small random residual. The chain's own entropy is ~1.31 nats per token and the model's
cross-entropy on its sequences ~1.3, far below the uniform floor ln(64) = 4.159; the transposed
`attn` (Qᵀ S⁻¹ Q) predicts t - 1 instead (~5.7 nats), zeroed weights give exactly ln(64).

Weights are stored as the exporter stores them: the handoff tensors (attn, up, down: LoRA targets,
[in, out] on disk, i.e. already transposed for inference; up/down are non-square so a merge
observes the orientation) each in its own raw .bin with a .bin.sha256 sidecar described by
weight_handoff_map.json; embed and lm_head in frozen_base.onnx.data. The training-side twin
train/eval_model.onnx takes input_ids and gives logits, its weights inline. The package is sealed by
`modelpkg mt build --describe`.

Cases (OUT/<case>/pkg, OUT/<case>/tokens.json = {"tokens": [...]}: one Markov sequence, and
OUT/<case>/expected.json: numpy float64 cross-entropies of both graphs on those tokens):
  f32          inference float32; train twin float32, the same numbers: difference ~0; beside it
               not_lm.onnx, a training-style eval graph (parameters and labels as inputs, a loss out)
  quant        train twin weight-only uint8 (per-output-channel scale and zero point,
               DequantizeLinear -> MatMul) as the exporter's training graph: a small difference, passes
  zeroed       the inference weights (handoff tensors and frozen base) are all zero: the inference
               graph sits at the uniform floor ln(V) and the gate fails
  transposed   the train twin's square attn weight transposed: fails
  damaged      inference attn = attn + D (D of rank RANK): worse than f32 but far from the floor;
               for the merge's post-merge check, with
                 adapter-improve.safetensors  factors whose delta is -D: the merge repairs the layer
                 adapter-destroy.safetensors  random factors N(0, 0.09) for every entry, a delta
                                              as large as the weights: the probe CE goes from ~1.7 to ~41
                                              nats (expected.json probe_ce_destroyed)
               (the scale is the package's training_config.json alpha / rank = ALPHA / RANK)
  OUT/probe.json   {"sequences": [[ids], ...]}: PROBE sequences from the same Markov chain

usage: /usr/bin/python3 make_decoder.py OUTDIR MODELPKG [CASE...]   (needs python3-numpy, python3-onnx)
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from make_onnx_package import py_json, safetensors, seal, write, write_shared  # noqa: E402

V, H, F = 64, 64, 96
P_NEXT = 0.8
C = math.log((P_NEXT + (1 - P_NEXT) / V) / ((1 - P_NEXT) / V))  # the likely token's logit: the chain's odds
RANK, ALPHA = 4, 8           # the damage and the adapters: rank 4, scale alpha / rank = 2
DESTROY = 0.3                # the destructive adapter's factors: N(0, DESTROY²)
VARIANT = "cpu"
SEQ_LEN = 128
PROBE_SEQS, PROBE_LEN = 4, 48
CASES = ["f32", "quant", "zeroed", "transposed", "damaged"]

HANDOFF = [  # (name stem, weight key): the LoRA targets, in graph order
    ("model.layers.0.self_attn.proj", "attn"),
    ("model.layers.0.mlp.up_proj", "up"),
    ("model.layers.0.mlp.down_proj", "down"),
]
FROZEN = [("model.embed_tokens.weight", "embed"), ("lm_head.weight", "lm_head")]


def weights():
    """The float32 weights, from a fixed seed."""
    rng = np.random.RandomState(20261202)
    q, _ = np.linalg.qr(rng.standard_normal((V, H)))
    s = np.roll(np.eye(V), 1, axis=1)              # e_t @ s = e_{t+1}
    return {
        "embed": q.astype(np.float32),
        "attn": (q.T @ s @ q).astype(np.float32),   # [in, out]: q[t] @ attn = q[t + 1]
        "up": (rng.standard_normal((H, F)) * 0.15).astype(np.float32),
        "down": (rng.standard_normal((F, H)) * 0.05).astype(np.float32),
        "lm_head": (C * q.T).astype(np.float32),
    }


def damage():
    """D (rank RANK, [in, out]) and the improving adapter's factors: merged = W + scale · (B A)ᵀ."""
    rng = np.random.RandomState(7)
    u = rng.standard_normal((H, RANK)) * 0.35
    v = rng.standard_normal((H, RANK)) * 0.35
    d = (u @ v.T).astype(np.float32)
    scale = ALPHA / RANK
    a = u.T.astype(np.float32)                      # [rank, in]
    b = (-v / scale).astype(np.float32)             # [out, rank]: scale · (B A)ᵀ = -u vᵀ = -D
    return d, a, b


def markov(rng, n):
    t = [int(rng.randint(V))]
    while len(t) < n:
        t.append((t[-1] + 1) % V if rng.rand() < P_NEXT else int(rng.randint(V)))
    return t


def forward_ce(w, ids):
    """numpy float64: the mean next-token cross-entropy (the definition in docs/mt-numeric.md)."""
    g = {k: v.astype(np.float64) for k, v in w.items()}
    h1 = g["embed"][ids] @ g["attn"]
    h2 = h1 + np.maximum(h1 @ g["up"], 0) @ g["down"]
    z = h2 @ g["lm_head"]
    z = z - z.max(axis=1, keepdims=True)
    lp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-np.mean([lp[i, ids[i + 1]] for i in range(len(ids) - 1)]))


def graph(name, inits, nodes_for):
    """input_ids -> logits over `inits`: {key: TensorProto or name}; nodes_for(key) gives the
    (nodes, value name) that produce the float weight."""
    nodes = []
    wn = {}
    for key in ("embed", "attn", "up", "down", "lm_head"):
        n, v = nodes_for(key)
        nodes += n
        wn[key] = v
    nodes += [
        helper.make_node("Gather", [wn["embed"], "input_ids"], ["h0"], axis=0),
        helper.make_node("MatMul", ["h0", wn["attn"]], ["h1"]),
        helper.make_node("MatMul", ["h1", wn["up"]], ["u"]),
        helper.make_node("Relu", ["u"], ["r"]),
        helper.make_node("MatMul", ["r", wn["down"]], ["d"]),
        helper.make_node("Add", ["h1", "d"], ["h2"]),
        helper.make_node("MatMul", ["h2", wn["lm_head"]], ["logits"]),
    ]
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence"])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "sequence", V])],
                          initializer=inits)
    m = helper.make_model(g, producer_name="modelpkg tests/tools/make_decoder.py",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def tensor_name(key):
    for stem, k in HANDOFF:
        if k == key:
            return stem + ".MatMul.weight"
    return dict((k, n) for n, k in FROZEN)[key]


def external(name, arr, location, offset):
    t = TensorProto()
    t.name, t.data_type = name, TensorProto.FLOAT
    t.dims.extend(arr.shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(arr.nbytes))):
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def write_inference(pkg, w):
    """inference/: model.onnx, a .bin + .bin.sha256 per handoff tensor, frozen_base.onnx.data, the map."""
    import hashlib
    inf = os.path.join(pkg, "variants", VARIANT, "inference")
    inits, entries, mapping = [], [], {}
    for stem, key in HANDOFF:
        name = tensor_name(key)
        raw = np.ascontiguousarray(w[key]).astype("<f4").tobytes()
        digest = hashlib.sha256(raw).hexdigest()
        write(os.path.join(inf, name + ".bin"), raw)
        write(os.path.join(inf, name + ".bin.sha256"), digest + "\n")
        inits.append(external(name, w[key], name + ".bin", 0))
        ckpt = "base_model.model." + stem
        n_in, n_out = w[key].shape
        names = {"adapter_A": ckpt + ".lora_A.weight", "adapter_B": ckpt + ".lora_B.weight",
                 "weight": ckpt + ".base_layer.weight"}
        mapping[ckpt + ".base_layer"] = names
        entries.append({
            "adapterDtypes": {"adapter_A": "float32", "adapter_B": "float32"},
            "adapterShapes": {"adapter_A": [RANK, n_in], "adapter_B": [n_out, RANK]},
            "checkpointNames": names, "dtype": "float32",
            "externalDataLocation": {"weight": name + ".bin"}, "genaiInputNames": {},
            "inferenceInitializerNames": {"weight": name}, "mergedTensorNames": {"weight": name},
            "mergerOutputNames": {"weight": "merged_weight"},
            "sha256": {"weight": digest}, "shape": [n_in, n_out],
            "tensorDtypes": {"weight": "float32"}, "tensorShapes": {"weight": [n_in, n_out]},
            "trainingBaseLayerName": ckpt + ".base_layer", "transposePolicy": "no_transpose"})
    blob, off = b"", 0
    for name, key in FROZEN:
        raw = np.ascontiguousarray(w[key]).astype("<f4").tobytes()
        inits.append(external(name, w[key], "frozen_base.onnx.data", off))
        blob += raw
        off += len(raw)
    write(os.path.join(inf, "frozen_base.onnx.data"), blob)
    model = graph("modelpkg-decoder-inference", inits, lambda key: ([], tensor_name(key)))
    onnx.save(model, os.path.join(inf, "model.onnx"))
    onnx.checker.check_model(os.path.join(inf, "model.onnx"))
    write(os.path.join(inf, "weight_handoff_map.json"), py_json({
        "engines": ["native"], "entries": entries, "externalDataLayout": "one_file_per_tensor",
        "handoffMode": "external_initializer", "mergerModels": {}, "minReaderVersion": "1.0",
        "schemaVersion": "1.1"}))
    write(os.path.join(pkg, "variants", VARIANT, "train", "training_config.json"), py_json({
        "alpha": ALPHA, "peft_mapping": mapping, "peft_target": ["proj"], "rank": RANK,
        "requires_grad": ["lora_A", "lora_B"]}))


def quantize(w):
    """Weight-only uint8, per output channel (axis 1 of [in, out]): scale, zero point, the uint8
    values, and the dequantized float32 weight the twin computes with."""
    lo, hi = np.minimum(w.min(axis=0), 0), np.maximum(w.max(axis=0), 0)
    scale = ((hi - lo) / 255).astype(np.float32)
    scale[scale == 0] = 1
    zp = np.clip(np.round(-lo / scale), 0, 255).astype(np.uint8)
    qv = np.clip(np.round(w / scale) + zp, 0, 255).astype(np.uint8)
    deq = ((qv.astype(np.int32) - zp.astype(np.int32)) * scale).astype(np.float32)
    return qv, scale, zp, deq


def write_train(pkg, w, quant):
    """train/eval_model.onnx: input_ids -> logits, the weights inline (uint8 + DequantizeLinear with
    `quant`, except the embedding table). Returns the float weights it computes with."""
    inits, used = [], dict(w)

    def nodes_for(key):
        name = tensor_name(key)
        if quant and key != "embed":
            qv, scale, zp, deq = quantize(w[key])
            used[key] = deq
            inits.extend([numpy_helper.from_array(qv, name + ".quant"),
                          numpy_helper.from_array(scale, name + ".scale"),
                          numpy_helper.from_array(zp, name + ".zero_point")])
            return [helper.make_node("DequantizeLinear", [name + ".quant", name + ".scale", name + ".zero_point"],
                                     [name], axis=1)], name
        inits.append(numpy_helper.from_array(w[key], name))
        return [], name

    model = graph("modelpkg-decoder-eval", inits, nodes_for)
    path = os.path.join(pkg, "variants", VARIANT, "train", "eval_model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)
    onnx.checker.check_model(path)
    return used


def write_not_lm(path, w):
    """An ONNX Runtime training-style eval model: it takes its parameter and the labels as inputs and
    gives a loss — not a language model's graph (the parity gate refuses it, naming an input)."""
    nodes = [helper.make_node("Gather", ["embed", "input_ids"], ["h"], axis=0),
             helper.make_node("MatMul", ["h", "lm_head"], ["logits"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["logits2d", "labels1d"], ["loss"]),
             ]
    nodes[2:2] = [helper.make_node("Reshape", ["logits", "shape2"], ["logits2d"]),
                  helper.make_node("Reshape", ["labels", "shape1"], ["labels1d"])]
    g = helper.make_graph(
        nodes, "modelpkg-decoder-training-eval",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence"]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [1, "sequence"]),
         helper.make_tensor_value_info("embed", TensorProto.FLOAT, [V, H])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        initializer=[numpy_helper.from_array(w["lm_head"], "lm_head"),
                     numpy_helper.from_array(np.array([-1, V], np.int64), "shape2"),
                     numpy_helper.from_array(np.array([-1], np.int64), "shape1")])
    m = helper.make_model(g, producer_name="modelpkg tests/tools/make_decoder.py",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    onnx.checker.check_model(path)


def adapter(a_attn, b_attn, rng, destroy=False):
    """The adapter's factors for every map entry: attn's given; up/down with B = 0 (no change), or
    random N(0, DESTROY²) with `destroy`."""
    t = {}
    for stem, key in HANDOFF:
        ckpt = "base_model.model." + stem
        n_in, n_out = (H, H) if key == "attn" else ((H, F) if key == "up" else (F, H))
        if key == "attn":
            a, b = a_attn, b_attn
        elif destroy:
            a = (rng.standard_normal((RANK, n_in)) * DESTROY).astype(np.float32)
            b = (rng.standard_normal((n_out, RANK)) * DESTROY).astype(np.float32)
        else:
            a, b = rng.standard_normal((RANK, n_in)).astype(np.float32), np.zeros((n_out, RANK), np.float32)
        t[ckpt + ".lora_A.weight"], t[ckpt + ".lora_B.weight"] = a, b
    return t


def make_case(out, case, mpk):
    root = os.path.join(out, case)
    pkg = os.path.join(root, "pkg")
    w = weights()
    inf_w, train_w = dict(w), dict(w)
    if case == "zeroed":
        inf_w = {k: np.zeros_like(v) for k, v in w.items()}
    if case == "transposed":
        train_w["attn"] = np.ascontiguousarray(w["attn"].T)
    if case == "damaged":
        d, a, b = damage()
        inf_w["attn"] = (w["attn"] + d).astype(np.float32)
    write_inference(pkg, inf_w)
    used = write_train(pkg, train_w, quant=(case == "quant"))
    write_shared(pkg, H)
    seal(root, pkg, {"baseModelId": "modelpkg-e2e/decoder-" + case, "exportedAt": "2026-12-02T00:00:00Z",
                     "peftMethods": ["lora"], "variants": [{
                         "id": VARIANT, "executionProvider": "cpu",
                         "quantization": "QUInt8" if case == "quant" else None,
                         "features": ["core", "inference", "train"]}]}, mpk)
    tokens = markov(np.random.RandomState(11), SEQ_LEN)
    write(os.path.join(root, "tokens.json"), json.dumps({"tokens": tokens}) + "\n")
    exp = {"case": case, "vocab": V, "uniform_floor": math.log(V),
           "ce_train": forward_ce(used, tokens), "ce_inference": forward_ce(inf_w, tokens)}
    if case == "f32":
        write_not_lm(os.path.join(root, "not_lm.onnx"), w)
    if case == "damaged":
        rng = np.random.RandomState(5)
        write(os.path.join(root, "adapter-improve.safetensors"), safetensors(adapter(a, b, rng)))
        ba = rng.standard_normal((RANK, H)).astype(np.float32) * DESTROY
        bb = rng.standard_normal((H, RANK)).astype(np.float32) * DESTROY
        destroy_factors = adapter(ba, bb, rng, destroy=True)
        write(os.path.join(root, "adapter-destroy.safetensors"), safetensors(destroy_factors))
        probe = probe_sequences()
        exp["probe_ce_before"] = float(np.mean([forward_ce(inf_w, s) for s in probe]))
        exp["probe_ce_repaired"] = float(np.mean([forward_ce(w, s) for s in probe]))
        destroyed = dict(inf_w)
        for stem, key in HANDOFF:  # merged = W + scale · (B A)ᵀ for every entry, as the merge does
            ckpt = "base_model.model." + stem
            fa, fb = destroy_factors[ckpt + ".lora_A.weight"], destroy_factors[ckpt + ".lora_B.weight"]
            destroyed[key] = (inf_w[key].astype(np.float64) + (ALPHA / RANK) * (fb.astype(np.float64) @ fa).T)
        exp["probe_ce_destroyed"] = float(np.mean([forward_ce(destroyed, s) for s in probe]))
    write(os.path.join(root, "expected.json"), json.dumps(exp, indent=1) + "\n")
    return root


def probe_sequences():
    rng = np.random.RandomState(23)
    return [markov(rng, PROBE_LEN) for _ in range(PROBE_SEQS)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    out, mpk, cases = sys.argv[1], sys.argv[2], sys.argv[3:] or CASES
    for case in cases:
        if case not in CASES:
            sys.exit("make_decoder: unknown case %r (cases: %s)" % (case, ", ".join(CASES)))
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "probe.json"), json.dumps({"sequences": probe_sequences()}) + "\n")
    for case in cases:
        print(make_case(out, case, mpk))


if __name__ == "__main__":
    main()
