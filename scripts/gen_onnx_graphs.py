#!/usr/bin/python3
"""Test graphs for the ONNX graph work (issue 11), written with Debian's python3-onnx.

Run with /usr/bin/python3 (which has onnx and numpy): `gen_onnx_graphs.py OUTDIR`. Deterministic:
the same OUTDIR contents every run. Nothing here is committed; ctest runs it into the build tree.

OUTDIR/
  ref/      the reference exporter's layout for three adapted layers (q_proj square [8, 8], v_proj
            and o_proj [in, out] = [8, 4] and [4, 8]): model.onnx whose trainable MatMul weights are external in their own
            <name>.bin (+ .sha256 sidecar) and every other initializer (embedding, norm, bias, an int64
            shape constant) in frozen_base.onnx.data; inference/optimum_config.json with the measured
            inferenceGraphPrecision; train/training_config.json (peft_mapping, rank, alpha,
            trainable_tensor_specs); expected_map.json: the map the reference codec writes for it
  quant/    the same with q_proj uint8-quantized (weight_quantized, weight_scale, weight_zero_point)
  cases/    graphs over ref's files that disagree with ref's map, or break a reader rule:
            dtype, shape, location, offset, missing, outside (../outside.bin), absolute, link (a file
            name the test turns into a symbolic link), nodata, beyond (past frozen_base's end)
  precision/  the reference test's graphs: fp32, mixed (uint8 16x16 + float 16), shapes (float 8x8
            + int64 [2]), empty (no initializers)
  expected.json  the precision each graph measures (describe_graph_precision, restated below)

The expected map is computed by this script's own restatement of the reference codec's rules
(TrainableTensorCodec.from_peft_mapping with the exporter's _classify_initializers, derive /
resolve transpose policy, HandoffMap.to_json), written from the rules, not copied; modelpkg's C
builder must produce the same bytes.
"""
import copy
import hashlib
import json
import os
import shutil
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.external_data_helper import set_external_data, write_external_data_tensors
except ImportError as e:  # a skip (ctest SKIP_RETURN_CODE 77) naming what is missing, never a pass;
    # the tests that read the graphs skip too when there are none (tests/util/testutil.h).
    print(f"SKIP: gen_onnx_graphs: {sys.executable} module {e.name or e} not found (scripts/setup.sh --test installs it)")
    sys.exit(77)

FROZEN = "frozen_base.onnx.data"
RANK, ALPHA = 2, 4
NP_NAME = {TensorProto.FLOAT: "float32", TensorProto.UINT8: "uint8", TensorProto.INT8: "int8",
           TensorProto.INT64: "int64", TensorProto.FLOAT16: "float16", TensorProto.INT32: "int32"}


def rng_array(shape, dtype, seed):
    r = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return r.standard_normal(shape).astype(dtype)
    return r.integers(0, 255, size=shape).astype(dtype)


# ---------------------------------------------------------------- precision (restated)

SKIP = {TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL}
PREC_NAME = {1: "float32", 2: "uint8", 3: "int8", 10: "float16", 16: "bfloat16", 21: "uint4", 22: "int4"}


def precision(model):
    counts = {}
    for init in model.graph.initializer:
        if init.data_type in SKIP:
            continue
        n = 1
        for d in init.dims:
            n *= d
        counts[init.data_type] = counts.get(init.data_type, 0) + n
    if not counts:
        return "unknown"
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    names = [PREC_NAME.get(t, "elem_type=%d" % t) for t, _ in ranked]
    return names[0] if len(names) == 1 else "mixed(%s)" % "/".join(names)


# ---------------------------------------------------------------- graphs

def llama_graph(quantized):
    """Embedding, norm, q_proj (square), v_proj ([in, out] = [8, 4]) with a bias, a reshape."""
    inits = [numpy_helper.from_array(rng_array((16, 8), np.float32, 1), "model.embed_tokens.weight"),
             numpy_helper.from_array(rng_array((8,), np.float32, 2), "model.layers.0.input_layernorm.weight")]
    q = "model.layers.0.attn.q_proj.MatMul"
    nodes = [helper.make_node("Gather", ["model.embed_tokens.weight", "ids"], ["emb"], name="embed"),
             helper.make_node("Mul", ["emb", "model.layers.0.input_layernorm.weight"], ["xn"], name="norm")]
    if quantized:
        inits += [numpy_helper.from_array(rng_array((8, 8), np.uint8, 3), q + ".weight_quantized"),
                  numpy_helper.from_array(rng_array((8,), np.float32, 4), q + ".weight_scale"),
                  numpy_helper.from_array(rng_array((8,), np.uint8, 5), q + ".weight_zero_point")]
        nodes += [helper.make_node("DequantizeLinear", [q + ".weight_quantized", q + ".weight_scale",
                                                        q + ".weight_zero_point"], ["q_w"], name="q_dq", axis=1),
                  helper.make_node("MatMul", ["xn", "q_w"], ["q_out"], name="q_proj")]
    else:
        inits.append(numpy_helper.from_array(rng_array((8, 8), np.float32, 3), q + ".weight"))
        nodes.append(helper.make_node("MatMul", ["xn", q + ".weight"], ["q_out"], name="q_proj"))
    inits += [numpy_helper.from_array(rng_array((8, 4), np.float32, 6), "model.layers.0.attn.v_proj.MatMul.weight"),
              numpy_helper.from_array(rng_array((4,), np.float32, 7), "model.layers.0.attn.v_proj.bias"),
              numpy_helper.from_array(rng_array((4, 8), np.float32, 8), "model.layers.0.attn.o_proj.MatMul.weight"),
              numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "model.reshape_shape")]
    nodes += [helper.make_node("MatMul", ["q_out", "model.layers.0.attn.v_proj.MatMul.weight"], ["v_out"], name="v_proj"),
              helper.make_node("Add", ["v_out", "model.layers.0.attn.v_proj.bias"], ["v_b"], name="v_bias"),
              helper.make_node("MatMul", ["v_b", "model.layers.0.attn.o_proj.MatMul.weight"], ["o_out"], name="o_proj"),
              helper.make_node("Reshape", ["o_out", "model.reshape_shape"], ["out"], name="reshape")]
    graph = helper.make_graph(nodes, "tiny_llama",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 4])], inits)
    model = helper.make_model(graph, producer_name="gen_onnx_graphs.py", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def training_config():
    mapping, specs = {}, {}
    for proj, (din, dout) in (("q_proj", (8, 8)), ("v_proj", (8, 4)), ("o_proj", (4, 8))):
        module = "base_model.model.model.layers.0.self_attn." + proj
        mapping[module] = {"adapter_A": module + ".lora_A.default", "adapter_B": module + ".lora_B.default"}
        ckpt = "backbone.model.layers.0.self_attn." + proj
        specs[ckpt + ".lora_A.default.weight"] = {"dtype": "float32", "shape": [RANK, din]}
        specs[ckpt + ".lora_B.default.weight"] = {"dtype": "float32", "shape": [dout, RANK]}
    return {"alpha": ALPHA, "peft_mapping": mapping, "rank": RANK, "requires_grad": ["lora_A", "lora_B"],
            "trainable_tensor_specs": specs}


# ---------------------------------------------------------------- the codec (restated)

ROLE_BY_TOKEN = {"weight": "weight", "weight_quantized": "weight_quantized", "weight_scale": "scale",
                 "weight_zero_point": "zero_point", "qweight": "weight_quantized", "scales": "scale",
                 "qzeros": "zero_point"}
QROLES = ("weight_quantized", "scale", "zero_point")
LORA_ROLES = ("adapter_A", "adapter_B")


def seeds_of(layer, attn="self_attn"):
    base = layer if layer.endswith(".base_layer") else layer + ".base_layer"
    name = base
    again = True
    while again:
        again = False
        for p in ("backbone.", "base_model.model.", "base_model."):
            if name.startswith(p):
                name, again = name[len(p):], True
                break
    name = name.replace(".base_layer", ".MatMul")
    out = []
    if attn != "attn":
        out.append(name.replace("." + attn + ".", ".attn."))
    if name not in out:
        out.append(name)
    return base, out


def orientation(wshape, ashapes):
    a = ashapes.get("adapter_A") or ashapes.get("shared_A")
    b = ashapes.get("adapter_B")
    if b and not a:
        raise ValueError("up-projection without down-projection")
    if not a or not b or len(a) != 2 or len(b) != 2 or len(wshape) != 2:
        return "no_transpose"
    if list(wshape) == [b[0], a[1]]:
        return "no_transpose"
    if list(wshape) == [a[1], b[0]]:
        return "already_transposed_for_inference"
    raise ValueError("delta fits neither orientation")


def expected_map(model, cfg, inference_dir):
    all_seeds = set()
    for layer in cfg["peft_mapping"]:
        all_seeds.update(seeds_of(layer)[1])
    observed = []
    for init in model.graph.initializer:
        seed, _, token = init.name.rpartition(".")
        if seed in all_seeds and token in ROLE_BY_TOKEN:
            observed.append((seed, init.name, NP_NAME[init.data_type], list(init.dims), ROLE_BY_TOKEN[token]))
    entries = []
    for layer, roles in cfg["peft_mapping"].items():
        base, seeds = seeds_of(layer)
        group = next((g for g in ([o for o in observed if o[0] == s] for s in seeds) if g), None)
        if not group:
            raise KeyError(layer)
        names = {o[4]: o[1] for o in group}
        wl = next((o for o in group if o[4] in ("weight", "weight_quantized")), group[0])
        ckpt = {r: n for r, n in roles.items() if r in LORA_ROLES}
        ckpt.setdefault("weight", base + ".weight")
        adt, ash = {}, {}
        for r, module in ckpt.items():
            if r == "weight":
                continue
            key = module
            if key.startswith("base_model.model.model."):
                key = "backbone.model." + key[len("base_model.model.model."):]
            spec = cfg.get("trainable_tensor_specs", {}).get(key + ".weight")
            if spec:
                adt[r], ash[r] = spec["dtype"], list(spec["shape"])
        sha = {}
        for r, n in names.items():
            with open(os.path.join(inference_dir, n + ".bin"), "rb") as f:
                sha[r] = hashlib.sha256(f.read()).hexdigest()
        e = {"trainingBaseLayerName": base, "checkpointNames": ckpt, "adapterDtypes": adt, "adapterShapes": ash,
             "mergerOutputNames": {r: "merged_" + r for r in names}, "mergedTensorNames": dict(names),
             "inferenceInitializerNames": dict(names), "externalDataLocation": {r: n + ".bin" for r, n in names.items()},
             "sha256": sha, "genaiInputNames": {}, "dtype": wl[2], "shape": wl[3],
             "tensorDtypes": {o[4]: o[2] for o in group}, "tensorShapes": {o[4]: o[3] for o in group},
             "transposePolicy": orientation(wl[3], ash)}
        if any(o[4] in QROLES for o in group):
            e["quantization"] = {"weightQuantizedName": names.get("weight_quantized", ""),
                                 "scaleName": names.get("scale", ""), "zeroPointName": names.get("zero_point", "")}
        entries.append(e)
    decided = {e["transposePolicy"] for e in entries
               if len(e["shape"]) == 2 and e["shape"][0] != e["shape"][1] and e["adapterShapes"]}
    assert len(decided) <= 1
    policy = decided.pop() if decided else "no_transpose"
    for e in entries:
        e["transposePolicy"] = policy
    entries.sort(key=lambda e: e["inferenceInitializerNames"].get("weight") or e["trainingBaseLayerName"])
    doc = {"schemaVersion": "1.1", "minReaderVersion": "1.0", "handoffMode": "external_initializer",
           "engines": ["native", "genai"], "externalDataLayout": "one_file_per_tensor", "frozenBaseBlob": FROZEN,
           "mergerModels": {}, "entries": entries}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------- packages

def split_and_save(model, inference_dir, trainable):
    """The exporter's layout: trainables to <name>.bin, the rest to the frozen blob (onnx's own writer)."""
    for init in model.graph.initializer:
        set_external_data(init, location=init.name + ".bin" if init.name in trainable else FROZEN)
    write_external_data_tensors(model, inference_dir)
    onnx.save(model, os.path.join(inference_dir, "model.onnx"))
    for name in sorted(trainable):
        path = os.path.join(inference_dir, name + ".bin")
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(path + ".sha256", "w") as f:
            f.write(digest + "\n")


def write_json(path, obj):
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def package(out, quantized):
    inf, train = os.path.join(out, "inference"), os.path.join(out, "train")
    os.makedirs(inf)
    os.makedirs(train)
    model = llama_graph(quantized)
    measured = precision(model)
    cfg = training_config()
    seeds = set()
    for layer in cfg["peft_mapping"]:
        seeds.update(seeds_of(layer)[1])
    trainable = {i.name for i in model.graph.initializer
                 if i.name.rpartition(".")[0] in seeds and i.name.rpartition(".")[2] in ROLE_BY_TOKEN}
    split_and_save(model, inf, trainable)
    write_json(os.path.join(train, "training_config.json"), cfg)
    write_json(os.path.join(inf, "optimum_config.json"),
               {"inferenceGraphPrecision": measured, "modelId": "modelpkg/tiny-llama", "task": "text-generation-with-past"})
    saved = onnx.load(os.path.join(inf, "model.onnx"), load_external_data=False)
    with open(os.path.join(out, "expected_map.json"), "w") as f:
        f.write(expected_map(saved, cfg, inf))
    return saved, measured


def find(model, name):
    return next(i for i in model.graph.initializer if i.name == name)


def set_key(init, key, value):
    for kv in init.external_data:
        if kv.key == key:
            kv.value = value
            return
    init.external_data.add(key=key, value=value)


def cases(out, ref):
    os.makedirs(out)
    v = "model.layers.0.attn.v_proj.MatMul.weight"
    q = "model.layers.0.attn.q_proj.MatMul.weight"

    def case(name, edit):
        m = copy.deepcopy(ref)
        edit(m)
        onnx.save(m, os.path.join(out, name + ".onnx"))

    case("dtype", lambda m: setattr(find(m, q), "data_type", TensorProto.FLOAT16))
    case("shape", lambda m: (find(m, v).ClearField("dims"), find(m, v).dims.extend([4, 8])))
    case("location", lambda m: set_key(find(m, v), "location", "other.bin"))
    case("offset", lambda m: set_key(find(m, v), "offset", "16"))
    case("missing", lambda m: m.graph.initializer.remove(find(m, v)))
    case("outside", lambda m: set_key(find(m, "model.reshape_shape"), "location", "../outside.bin"))
    case("absolute", lambda m: set_key(find(m, "model.reshape_shape"), "location",
                                       os.path.abspath(os.path.join(out, "absolute.bin"))))
    case("link", lambda m: set_key(find(m, "model.reshape_shape"), "location", "link.bin"))

    def nodata(m):
        t = find(m, "model.layers.0.attn.v_proj.bias")
        t.ClearField("external_data")
        t.ClearField("data_location")
    case("nodata", nodata)
    case("beyond", lambda m: set_key(find(m, "model.reshape_shape"), "offset", "100000"))


def precision_graphs(out):
    os.makedirs(out)
    size = {TensorProto.FLOAT: 4, TensorProto.UINT8: 1, TensorProto.INT64: 8}
    graphs = {"fp32": [("w", TensorProto.FLOAT, (4, 4))],
              "mixed": [("w_quantized", TensorProto.UINT8, (16, 16)), ("w_scale", TensorProto.FLOAT, (16,))],
              "shapes": [("w", TensorProto.FLOAT, (8, 8)), ("reshape_target", TensorProto.INT64, (2,))],
              "empty": []}
    expected = {}
    for name, inits in graphs.items():
        tensors = []
        for n, dt, shape in inits:
            count = int(np.prod(shape)) if shape else 1
            tensors.append(helper.make_tensor(n, dt, list(shape), b"\x00" * (count * size[dt]), raw=True))
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "inference_model",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b"])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b"])], tensors)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        onnx.save(model, os.path.join(out, name + ".onnx"))
        expected["precision/" + name] = precision(model)
    return expected


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_onnx_graphs.py OUTDIR")
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ref, ref_prec = package(os.path.join(out, "ref"), False)
    _, quant_prec = package(os.path.join(out, "quant"), True)
    cases(os.path.join(out, "cases"), ref)
    expected = precision_graphs(os.path.join(out, "precision"))
    expected["ref"], expected["quant"] = ref_prec, quant_prec
    # The reference test's figures, so a drift in this restatement cannot go unnoticed.
    assert expected["precision/fp32"] == "float32"
    assert expected["precision/mixed"] == "mixed(uint8/float32)"
    assert expected["precision/shapes"] == "float32"
    assert expected["precision/empty"] == "unknown"
    write_json(os.path.join(out, "expected.json"), expected)


if __name__ == "__main__":
    main()
