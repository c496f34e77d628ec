#!/usr/bin/python3
"""ort_zero_copy_package.py — a MobileTransformers package whose inference graph is a language model
with large handoff weights, for bench/run_ort_zero_copy.sh and tests/e2e/test_ort_zero_copy.sh.

    /usr/bin/python3 bench/ort_zero_copy_package.py OUT MODELPKG [--mib 1024] [--dim 4096]

OUT/pkg is a package (sealed by `modelpkg mt build --describe`, as tests/e2e/make_onnx_package.py
does) with one variant "cpu" whose inference/model.onnx is

    input_ids [1, n] -> Gather(E [V, D]) -> MatMul(W_0 [D, D]) -> ... -> MatMul(W_{L-1}) -> MatMul(U [D, V]) -> logits

where each W_i is a handoff tensor: ONNX external data in its own raw float32 .bin (with a .bin.sha256
sidecar and the map's digest), L = MIB / (D*D*4 / 2^20) layers, so the handoff tensors total MIB
MiB. E and U (V = 64) are inside the model file. The weights are numpy normal(0, 1/sqrt(D)) in
float32 (fixed seed), written in 16 MiB chunks and hashed on the way, never read back.
OUT/tokens.json holds the token ids the benchmark runs. Needs python3-numpy and python3-onnx.
"""
import argparse
import hashlib
import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from make_onnx_package import py_json, seal, write, write_shared  # noqa: E402

V = 64
RANK = 4
TOKENS = [5, 17, 33, 2, 60, 41, 8, 29]


def write_weight(path, dim, rng):
    """normal(0, 1/sqrt(dim)) float32 [dim, dim], written in row blocks; returns its SHA-256."""
    h = hashlib.sha256()
    rows = max(1, (16 << 20) // (dim * 4))
    with open(path, "wb") as f:
        for r in range(0, dim, rows):
            block = (rng.standard_normal((min(rows, dim - r), dim), dtype=np.float32) / np.float32(np.sqrt(dim)))
            raw = block.astype("<f4").tobytes()
            h.update(raw)
            f.write(raw)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("modelpkg")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--dim", type=int, default=4096)
    a = ap.parse_args()
    dim = a.dim
    layer_mib = dim * dim * 4 / (1 << 20)
    n_layers = max(1, int(round(a.mib / layer_mib)))
    pkg = os.path.join(a.out, "pkg")
    inf = os.path.join(pkg, "variants", "cpu", "inference")
    os.makedirs(inf, exist_ok=True)
    rng = np.random.default_rng(21)
    E = rng.standard_normal((V, dim), dtype=np.float32)
    U = (rng.standard_normal((dim, V), dtype=np.float32) / np.float32(np.sqrt(dim))).astype(np.float32)
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["h0"])]
    inits = [numpy_helper.from_array(E, "E"), numpy_helper.from_array(U, "U")]
    entries, mapping = [], {}
    for i in range(n_layers):
        stem = "model.layers.%d.mlp.proj" % i
        init, fname, base = stem + ".MatMul.weight", stem + ".MatMul.weight.bin", "base_model.model." + stem + ".base_layer"
        digest = write_weight(os.path.join(inf, fname), dim, rng)
        write(os.path.join(inf, fname + ".sha256"), digest + "\n")
        t = TensorProto()
        t.name, t.data_type = init, TensorProto.FLOAT
        t.dims.extend([dim, dim])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", fname), ("offset", "0"), ("length", str(dim * dim * 4))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
        nodes.append(helper.make_node("MatMul", ["h%d" % i, init], ["h%d" % (i + 1)]))
        names = {"adapter_A": "base_model.model." + stem + ".lora_A.weight",
                 "adapter_B": "base_model.model." + stem + ".lora_B.weight",
                 "weight": "base_model.model." + stem + ".base_layer.weight"}
        mapping[base] = names
        entries.append({
            "adapterDtypes": {"adapter_A": "float32", "adapter_B": "float32"},
            "adapterShapes": {"adapter_A": [RANK, dim], "adapter_B": [dim, RANK]},
            "checkpointNames": names, "dtype": "float32",
            "externalDataLocation": {"weight": fname}, "genaiInputNames": {},
            "inferenceInitializerNames": {"weight": init}, "mergedTensorNames": {"weight": init},
            "mergerOutputNames": {"weight": "merged_weight"},
            "sha256": {"weight": digest}, "shape": [dim, dim],
            "tensorDtypes": {"weight": "float32"}, "tensorShapes": {"weight": [dim, dim]},
            "trainingBaseLayerName": base, "transposePolicy": "no_transpose"})
    nodes.append(helper.make_node("MatMul", ["h%d" % n_layers, "U"], ["logits"]))
    graph = helper.make_graph(
        nodes, "modelpkg-ort-zero-copy",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "sequence_length"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "sequence_length", V])], initializer=inits)
    model = helper.make_model(graph, producer_name="modelpkg bench", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(inf, "model.onnx"))
    write(os.path.join(inf, "weight_handoff_map.json"), py_json({
        "engines": ["native"], "entries": entries, "externalDataLayout": "one_file_per_tensor",
        "handoffMode": "external_initializer", "mergerModels": {}, "minReaderVersion": "1.0", "schemaVersion": "1.1"}))
    write(os.path.join(pkg, "variants", "cpu", "train", "training_config.json"), py_json({
        "alpha": 8, "peft_mapping": mapping, "peft_target": ["proj"], "rank": RANK, "requires_grad": ["lora_A", "lora_B"]}))
    write_shared(pkg, dim)
    seal(a.out, pkg, {"baseModelId": "modelpkg-bench/ort-zero-copy", "exportedAt": "2026-12-02T00:00:00Z",
                      "peftMethods": ["lora"], "variants": [{"id": "cpu", "executionProvider": "cpu", "quantization": None,
                                                             "features": ["core", "inference", "train"]}]}, a.modelpkg)
    write(os.path.join(a.out, "tokens.json"), json.dumps(TOKENS))
    print(f"{pkg}: {n_layers} handoff tensors of [{dim}, {dim}] float32, {n_layers * layer_mib:.0f} MiB")


if __name__ == "__main__":
    main()
