#!/usr/bin/python3
"""Write the MobileTransformers packages that test_merge_onnx.sh merges and runs in ONNX Runtime.

Each case is a real ONNX model (opset 17) of three linear layers, 8 -> 12 -> 12 -> 6, whose weights
are external initializers, each in its own raw `.bin` (ONNX external data: location = the file name,
offset 0, length = its size) with a `.bin.sha256` sidecar, described by a weight_handoff_map.json,
with train/training_config.json (alpha, rank), sealed by `modelpkg mt build --describe` so that
`modelpkg check` passes; beside the package: the LoRA adapter as .safetensors (written here, byte
by byte), the fixed input, and expected.json with float64 results computed here in numpy,
independently of modelpkg and of ONNX Runtime.

Two layers are non-square, so the merge can observe the orientation; the middle one is square, so a
merge that transposes the delta the wrong way still gets shapes that fit, and only the numbers can
tell: the outputs of every layer are graph outputs.

Cases (the same W, A, B and x for both layouts of a dtype: the expected outputs are identical, only
the bytes on disk and the graph differ):
  f32-no_transpose   float32 weights stored [out, in] (PyTorch); graph Gemm(transB=1) / MatMul(x, Transpose(W))
  f32-transposed     float32 weights stored [in, out]; graph MatMul(x, W)
  f16-no_transpose   float16 weights [out, in], Cast to float32 in the graph; float16 adapter factors
  f16-transposed     float16 weights [in, out], Cast to float32; float16 adapter factors

Every map declares transposePolicy "no_transpose", as the reference exporter always did: the merge
must observe the orientation, never trust the field.

usage: /usr/bin/python3 make_onnx_package.py OUTDIR MODELPKG [CASE...]   (needs python3-numpy, python3-onnx)
"""
import hashlib
import json
import os
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

DIMS = [8, 12, 12, 6]           # layer i maps DIMS[i] -> DIMS[i+1]; layers 0 and 2 are non-square
RANK = 4
ALPHA = 8                       # scale = alpha / rank = 2: the delta is as large as the base weight
BATCH = 5
VARIANT = "cpu"
CASES = {  # name: (weight dtype, on-disk layout)
    "f32-no_transpose": ("float32", "no_transpose"),
    "f32-transposed": ("float32", "already_transposed_for_inference"),
    "f16-no_transpose": ("float16", "no_transpose"),
    "f16-transposed": ("float16", "already_transposed_for_inference"),
}
NP = {"float32": np.float32, "float16": np.float16}
ONNX_T = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}
ST_T = {"float32": "F32", "float16": "F16"}


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def py_json(value):
    """The exporter's documents: json.dumps(indent=2, sort_keys=True) + newline."""
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


def safetensors(tensors):
    """The safetensors format: u64 little-endian header length, a JSON header naming each tensor's
    dtype, shape and [begin, end) offsets into the data that follows, then the data, contiguous."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": ST_T[arr.dtype.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # pad so the data starts 8-byte aligned, as the writers do
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def layer_names(i):
    stem = "model.layers.%d.mlp.proj" % i
    ckpt = "base_model.model." + stem
    return {
        "init": stem + ".MatMul.weight",                       # the ONNX initializer
        "file": stem + ".MatMul.weight.bin",                   # its external data
        "base": ckpt + ".base_layer",                          # trainingBaseLayerName
        "A": ckpt + ".lora_A.weight", "B": ckpt + ".lora_B.weight", "W": ckpt + ".base_layer.weight",
    }


def model_data(dtype):
    """W [out, in], A [rank, in], B [out, rank] and x, rounded to what is stored: every expected
    value below is computed from exactly the stored numbers. A fixed seed: the same on every run."""
    rng = np.random.RandomState(20260814 + (dtype == "float16"))
    layers = []
    for i in range(3):
        n_in, n_out = DIMS[i], DIMS[i + 1]
        w = rng.uniform(-1, 1, (n_out, n_in)).astype(NP[dtype])
        a = rng.uniform(-0.5, 0.5, (RANK, n_in)).astype(NP[dtype])
        b = rng.uniform(-0.5, 0.5, (n_out, RANK)).astype(NP[dtype])
        layers.append((w, a, b))
    x = rng.uniform(-1, 1, (BATCH, DIMS[0])).astype(np.float32)
    return layers, x


def forward(x, weights):
    """The float64 reference: y_{i+1} = y_i @ W_iᵀ with W_i [out, in]; every layer's output."""
    ys, h = [], x.astype(np.float64)
    for w in weights:
        h = h @ w.astype(np.float64).T
        ys.append(h)
    return ys


def onnx_model(dtype, layout, layers):
    """The inference graph over `layers` (each (W [out, in], A, B)); its input and output widths
    come from the weights' shapes."""
    nodes, inits, h = [], [], "x"
    for i, (w, _a, _b) in enumerate(layers):
        n = layer_names(i)
        disk = w if layout == "no_transpose" else w.T
        t = TensorProto()
        t.name, t.data_type = n["init"], ONNX_T[dtype]
        t.dims.extend(disk.shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", n["file"]), ("offset", "0"), ("length", str(disk.nbytes))):
            e = t.external_data.add()
            e.key, e.value = key, value
        inits.append(t)
        wname = n["init"]
        if dtype == "float16":  # ORT's CPU MatMul/Gemm are float32: widen the stored float16 weight
            nodes.append(helper.make_node("Cast", [wname], [wname + ".f32"], to=TensorProto.FLOAT))
            wname += ".f32"
        out = "y%d" % i
        if layout == "already_transposed_for_inference":
            nodes.append(helper.make_node("MatMul", [h, wname], [out]))
        elif i == 0:  # both spellings of x @ Wᵀ that exporters emit for a [out, in] weight
            nodes.append(helper.make_node("Gemm", [h, wname], [out], transB=1))
        else:
            nodes.append(helper.make_node("Transpose", [wname], [wname + ".T"], perm=[1, 0]))
            nodes.append(helper.make_node("MatMul", [h, wname + ".T"], [out]))
        h = out
    graph = helper.make_graph(
        nodes, "modelpkg-merge-e2e",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, layers[0][0].shape[1]])],
        [helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, [BATCH, w.shape[0]])
         for i, (w, _a, _b) in enumerate(layers)],
        initializer=inits)
    model = helper.make_model(graph, producer_name="modelpkg tests/e2e", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_variant(pkg, variant, dtype, layout, layers, scale, exact=True):
    """One variant's inference/ (a .bin + .bin.sha256 per layer, model.onnx, the handoff map) and
    train/training_config.json. Returns (adapter tensors, per-weight expectations); with exact=False
    the expectations carry no per-element values (large models)."""
    inf = os.path.join(pkg, "variants", variant, "inference")
    entries, mapping, adapter, weights = [], {}, {}, []
    for i, (w, a, b) in enumerate(layers):
        n = layer_names(i)
        disk = np.ascontiguousarray(w if layout == "no_transpose" else w.T)
        raw = disk.astype(disk.dtype.newbyteorder("<")).tobytes()
        digest = hashlib.sha256(raw).hexdigest()
        write(os.path.join(inf, n["file"]), raw)
        write(os.path.join(inf, n["file"] + ".sha256"), digest + "\n")
        # The adapter holds the factors only, not the frozen base: the merge must take the base from
        # the shipped .bin, which is what makes a second merge detectable.
        adapter[n["A"]], adapter[n["B"]] = a, b
        names = {"adapter_A": n["A"], "adapter_B": n["B"], "weight": n["W"]}
        mapping[n["base"]] = names
        entries.append({
            "adapterDtypes": {"adapter_A": dtype, "adapter_B": dtype},
            "adapterShapes": {"adapter_A": list(a.shape), "adapter_B": list(b.shape)},
            "checkpointNames": names, "dtype": dtype,
            "externalDataLocation": {"weight": n["file"]}, "genaiInputNames": {},
            "inferenceInitializerNames": {"weight": n["init"]}, "mergedTensorNames": {"weight": n["init"]},
            "mergerOutputNames": {"weight": "merged_weight"},
            "sha256": {"weight": digest}, "shape": list(disk.shape),
            "tensorDtypes": {"weight": dtype}, "tensorShapes": {"weight": list(disk.shape)},
            "trainingBaseLayerName": n["base"], "transposePolicy": "no_transpose"})
        weight = {"file": n["file"], "dtype": dtype, "shape": list(disk.shape), "base_sha256": digest}
        if exact:
            # The merged weight, exactly, in the on-disk layout, and the magnitude that bounds the
            # float32 accumulation error of each element (|W| + scale·Σ_k |B_ik·A_kj|).
            w64, a64, b64 = w.astype(np.float64), a.astype(np.float64), b.astype(np.float64)
            ex = w64 + scale * (b64 @ a64)
            mag = np.abs(w64) + scale * (np.abs(b64) @ np.abs(a64))
            tr = (lambda m: m) if layout == "no_transpose" else (lambda m: m.T)
            weight.update({"merged_exact": tr(ex).ravel().tolist(), "accumulation_magnitude": tr(mag).ravel().tolist()})
        weights.append(weight)

    model = onnx_model(dtype, layout, layers)
    onnx.save(model, os.path.join(inf, "model.onnx"))
    onnx.checker.check_model(os.path.join(inf, "model.onnx"))  # also finds every external file

    handoff = {"engines": ["native"], "entries": entries, "externalDataLayout": "one_file_per_tensor",
               "handoffMode": "external_initializer", "mergerModels": {}, "minReaderVersion": "1.0",
               "schemaVersion": "1.1"}
    write(os.path.join(inf, "weight_handoff_map.json"), py_json(handoff))
    write(os.path.join(pkg, "variants", variant, "train", "training_config.json"), py_json({
        "alpha": ALPHA, "peft_mapping": mapping, "peft_target": ["proj"], "rank": RANK,
        "requires_grad": ["lora_A", "lora_B"]}))
    return adapter, weights


def write_shared(pkg, hidden):
    """shared/: the tokenizer and the three files the core download group names (present, so that
    check has nothing to warn about)."""
    write(os.path.join(pkg, "shared", "tokenizer", "tokenizer.json"), py_json({
        "version": "1.0", "model": {"type": "WordLevel", "unk_token": "<unk>", "vocab": {"<unk>": 0}}}))
    write(os.path.join(pkg, "shared", "chat_template.jinja"), "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    write(os.path.join(pkg, "shared", "config.json"), py_json({"model_type": "modelpkg-e2e", "hidden_size": hidden}))
    write(os.path.join(pkg, "shared", "generation_config.json"), py_json({}))


def seal(root, pkg, build, mpk):
    """build.json beside the package, then `modelpkg mt build PKG --describe build.json`."""
    write(os.path.join(root, "build.json"), py_json(build))
    subprocess.run([mpk, "mt", "build", pkg, "--describe", os.path.join(root, "build.json")],
                   check=True, stdout=subprocess.DEVNULL)


def expectations(case, dtype, layout, variant, layers, x, scale, weights, extra_wrong=None):
    """expected.json's document: float64 outputs before and after the merge, wrong merges (each must
    land far outside the tolerance), the per-weight expectations."""
    base = [w for w, _a, _b in layers]
    merged = [w.astype(np.float64) + scale * (b.astype(np.float64) @ a.astype(np.float64)) for w, a, b in layers]

    def variant_out(fn):
        return {"y%d" % i: y.ravel().tolist() for i, y in enumerate(forward(x, fn()))}

    # Wrong merges, computed so that the check can show each is far outside the tolerance.
    sq = 1  # the square layer
    delta = [m - w.astype(np.float64) for m, w in zip(merged, base)]
    wrong = {
        "unmerged": variant_out(lambda: base),
        "scale 1 instead of alpha/rank": variant_out(lambda: [w + d / scale for w, d in zip(base, delta)]),
        "merged twice": variant_out(lambda: [w + 2 * d for w, d in zip(base, delta)]),
        "square layer's delta transposed": variant_out(
            lambda: [w + (d.T if i == sq else d) for i, (w, d) in enumerate(zip(base, delta))]),
    }
    for what, ws in (extra_wrong or {}).items():
        wrong[what] = variant_out(lambda ws=ws: ws)
    return {
        "case": case, "dtype": dtype, "layout": layout, "scale": scale, "variant": variant,
        "output_dims": {"y%d" % i: [BATCH, w.shape[0]] for i, w in enumerate(base)},
        "before": variant_out(lambda: base), "after": variant_out(lambda: merged), "wrong": wrong,
        "weights": weights,
    }


def make_case(out, case, mpk):
    dtype, layout = CASES[case]
    root = os.path.join(out, case)
    pkg = os.path.join(root, "pkg")
    layers, x = model_data(dtype)
    scale = ALPHA / RANK
    adapter, weights = write_variant(pkg, VARIANT, dtype, layout, layers, scale)
    write_shared(pkg, DIMS[0])
    seal(root, pkg, {"baseModelId": "modelpkg-e2e/" + case, "exportedAt": "2026-08-20T00:00:00Z",
                     "peftMethods": ["lora"], "variants": [{
                         "id": VARIANT, "executionProvider": "cpu",
                         "quantization": None if dtype == "float32" else "fp16",
                         "features": ["core", "inference", "train"]}]}, mpk)
    write(os.path.join(root, "adapter.safetensors"), safetensors(adapter))
    write(os.path.join(root, "inputs.json"), json.dumps(
        {"x": {"dims": list(x.shape), "data": x.ravel().tolist()}}))
    write(os.path.join(root, "expected.json"), json.dumps(
        expectations(case, dtype, layout, VARIANT, layers, x, scale, weights)))
    return root


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    out, mpk, cases = sys.argv[1], sys.argv[2], sys.argv[3:] or list(CASES)
    for case in cases:
        if case not in CASES:
            sys.exit("make_onnx_package: unknown case %r (cases: %s)" % (case, ", ".join(CASES)))
        print(make_case(out, case, mpk))


if __name__ == "__main__":
    main()
