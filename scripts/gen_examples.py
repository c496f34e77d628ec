#!/usr/bin/env python3
"""Generate the bundled example packages under examples/ (Python standard library only).

Deterministic: the same bytes on every run. The identities are computed here the way MLC's
Python producer computes them (json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False) then SHA-256), independently of modelpkg, so `modelpkg check` on these
packages is a cross-check, not a tautology.

The compiled libraries are valid WebAssembly modules laid out like MLC's WebGPU builds but without
code: their memory (data segments split at zero runs) holds TVM's module blob, whose Relax VM
executable has the function table the example's artifact names and the _metadata JSON as its
string constant (tests/tools/make_tvm_lib.py writes both). They exist to show and test the
contract check, the function checks and `mlc embed`; they cannot run.

usage: python3 scripts/gen_examples.py [OUTDIR]   (default: examples/)
"""
import hashlib
import json
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import make_tvm_lib as tvm_lib  # noqa: E402  (the TVM blob and WebAssembly writers)


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_id(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def interface_id(tasks):
    return sha256_id(canonical({"tasks": tasks}))


def parameter_schema_id(params):
    recs = sorted(({"name": p["name"], "shape": p["shape"], "dtype": p["dtype"]} for p in params),
                  key=lambda r: r["name"])
    return sha256_id(canonical(recs))


DTYPE_SIZE = {"float32": 4, "float16": 2, "uint32": 4, "int8": 1, "uint8": 1}


def resources(params):
    """MLC's producer: per parameter elements x ceil(bits/8); the largest and the sum."""
    sizes = []
    for p in params:
        n = DTYPE_SIZE[p["dtype"]]
        for d in p["shape"]:
            n *= d
        sizes.append(n)
    return {"max_storage_buffer_binding_size": max(sizes, default=0),
            "estimated_device_memory_bytes": sum(sizes)}


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)


def write_json(path, value):
    # As MLC's Python writer: indent 2, ASCII escapes, a trailing newline.
    write(path, json.dumps(value, indent=2) + "\n")


def tensor_cache(pkg_dir, params, seed):
    """Tiny shards of deterministic bytes and the tensor-cache.json describing them."""
    rng = random.Random(seed)
    records, offset, blob = [], 0, bytearray()
    for p in params:
        n = DTYPE_SIZE[p["dtype"]]
        for d in p["shape"]:
            n *= d
        records.append({"name": p["name"], "shape": p["shape"], "dtype": p["dtype"],
                        "format": "raw", "nbytes": n, "byteOffset": offset})
        blob += bytes(rng.getrandbits(8) for _ in range(n))
        offset += n
    write(os.path.join(pkg_dir, "params_shard_0.bin"), bytes(blob))
    total = sum(r["nbytes"] for r in records)
    count = sum(1 for _ in params)
    write_json(os.path.join(pkg_dir, "tensor-cache.json"), {
        "metadata": {"ParamSize": count, "ParamBytes": float(total), "BitsPerParam": 16.0},
        "records": [{"dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": len(blob),
                     "records": records, "md5sum": hashlib.md5(bytes(blob)).hexdigest()}],
    })


def chat_config(model_type, vocab):
    return {"version": "0.1.0", "model_type": model_type, "quantization": "q0f16",
            "model_config": {"vocab_size": vocab, "hidden_size": 8, "num_hidden_layers": 1},
            "vocab_size": vocab, "context_window_size": 4096, "prefill_chunk_size": 1024,
            "tokenizer_files": ["tokenizer.json"], "conv_template": {"name": "example"}}


def library(path, metadata, preset):
    """A WebAssembly library as MLC's WebGPU builds hold it, without the code: memory initialized by
    data segments (split at zero runs) holding TVM's module blob, whose Relax VM executable has the
    preset's function table (tests/tools/make_tvm_lib.py) and the _metadata JSON as its string
    constant (docs/mlc-library.md)."""
    text = json.dumps(metadata, indent=1, ensure_ascii=False).encode("utf-8")
    table = tvm_lib.build_table(tvm_lib.PRESETS[preset], set(), {}, [], [])
    blob = tvm_lib.module_blob("relax.Executable", tvm_lib.executable(table, text, "0.14"))
    write(path, tvm_lib.split_wasm_zeros(tvm_lib.data_wasm(blob), 8))


def gemma4_audio(out):
    d = os.path.join(out, "gemma4-audio")
    params = [{"name": "embed.weight", "shape": [32, 8], "dtype": "float16"},
              {"name": "layers.0.mlp.weight", "shape": [8, 8], "dtype": "float16"},
              {"name": "audio_tower.proj.weight", "shape": [8, 4], "dtype": "float16"}]
    tasks = {"chat.completions": {"executor": "generation", "inputs": {
        "text": {"processor": "tokenizer"},
        "audio": {"processor": {"kind": "audio_decode", "format": "pcm_f32", "sample_rate_hz": 16000,
                                "channels": 1, "min_samples": 161, "max_samples": 480000},
                  "adapter": "audio",
                  "prompt": {"prefix_token_ids": [256000], "placeholder_token_id": 258881,
                             "suffix_token_ids": [258883]}}},
        "output": "text"}}
    iid, pid = interface_id(tasks), parameter_schema_id(params)
    write_json(os.path.join(d, "mlc-model-manifest.json"), {
        "schema": "mlc.model-package", "schema_version": 1, "chat_config": "mlc-chat-config.json",
        "interface_id": iid, "weights": {"manifest": "tensor-cache.json", "parameter_schema_id": pid},
        "tasks": tasks})
    write_json(os.path.join(d, "mlc-chat-config.json"), chat_config("gemma4", 32))
    tensor_cache(d, params, 1)
    artifact = {"schema": "mlc.compiled-program", "schema_version": 1, "interface_id": iid,
                "parameter_schema_id": pid,
                "programs": {"generation": {"kind": "token_generation", "exports": {
                    "embed_tokens": "embed", "prefill_tokens": "prefill_tokens",
                    "decode_tokens": "decode_tokens", "create_kv_cache": "create_tir_paged_kv_cache"},
                    "adapters": {"audio": "audio_embed"}}},
                "resources": dict(required_features=["shader-f16"], **resources(params))}
    metadata = {"model_type": "gemma4", "quantization": "q0f16", "context_window_size": 4096,
                "prefill_chunk_size": 1024, "kv_state_kind": "kv_cache",
                "params": [dict(p, preprocs=[]) for p in params],
                "kv_cache": {"num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                             "head_dim": 4},
                "memory_usage": {"prefill": 2048, "decode": 256, "embed": 512, "audio_embed": 1024},
                "artifact": artifact}
    library(os.path.join(d, "lib", "gemma4-audio-webgpu.wasm"), metadata, "gemma4")
    # A library compiled for other weights (a larger vocabulary): the check must refuse it.
    other_params = [dict(params[0], shape=[64, 8])] + params[1:]
    other = dict(artifact, parameter_schema_id=parameter_schema_id(other_params),
                 resources=dict(required_features=["shader-f16"], **resources(other_params)))
    library(os.path.join(out, "mismatched-lib", "gemma4-audio-other-weights-webgpu.wasm"),
            dict(metadata, params=[dict(p, preprocs=[]) for p in other_params], artifact=other), "gemma4")


def llava_image(out):
    d = os.path.join(out, "llava-image")
    params = [{"name": "embed.weight", "shape": [40, 8], "dtype": "float16"},
              {"name": "vision.proj.weight", "shape": [8, 8], "dtype": "float16"}]
    tasks = {"chat.completions": {"executor": "generation", "inputs": {
        "text": {"processor": "tokenizer"},
        "image": {"processor": {"kind": "image_decode", "format": "rgb_u8", "layout": "nhwc",
                                "resize": {"mode": "center_crop", "height": 336, "width": 336},
                                "num_embeddings": 576},
                  "adapter": "image", "prompt": {"placeholder_token_id": 32000}}},
        "output": "text"}}
    iid, pid = interface_id(
        {"chat.completions": dict(tasks["chat.completions"], inputs=dict(
            tasks["chat.completions"]["inputs"],
            image=dict(tasks["chat.completions"]["inputs"]["image"],
                       prompt={"prefix_token_ids": [], "placeholder_token_id": 32000,
                               "suffix_token_ids": []})))}), parameter_schema_id(params)
    write_json(os.path.join(d, "mlc-model-manifest.json"), {
        "schema": "mlc.model-package", "schema_version": 1, "interface_id": iid,
        "weights": {"manifest": "tensor-cache.json", "parameter_schema_id": pid}, "tasks": tasks})
    write_json(os.path.join(d, "mlc-chat-config.json"), chat_config("llava", 40))
    tensor_cache(d, params, 4)
    artifact = {"schema": "mlc.compiled-program", "schema_version": 1, "interface_id": iid,
                "parameter_schema_id": pid,
                "programs": {"generation": {"kind": "token_generation", "exports": {
                    "embed_tokens": "embed", "prefill_embeds": "prefill", "decode_embeds": "decode",
                    "create_kv_cache": "create_tir_paged_kv_cache"},
                    "adapters": {"image": "image_embed"}, "adapter_dtypes": {"image": "uint32"}}},
                "resources": dict(required_features=["shader-f16"], **resources(params))}
    metadata = {"model_type": "llava", "quantization": "q0f16", "context_window_size": 4096,
                "kv_state_kind": "kv_cache", "params": [dict(p, preprocs=[]) for p in params],
                "kv_cache": {"num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
                             "head_dim": 4},
                "memory_usage": {"prefill": 4096, "decode": 512, "embed": 640, "image_embed": 2048},
                "artifact": artifact}
    library(os.path.join(d, "lib", "llava-image-webgpu.wasm"), metadata, "llava")


def legacy(out):
    d = os.path.join(out, "legacy-no-manifest")
    params = [{"name": "embed.weight", "shape": [16, 8], "dtype": "float32"}]
    write_json(os.path.join(d, "mlc-chat-config.json"), chat_config("llama", 16))
    tensor_cache(d, params, 6)


# ---------------------------------------------------------------------------------------------
# MobileTransformers. The manifest and checksums rules below restate the reference exporter's
# (build_manifest / write_variant_checksums / write_manifest, docs/mt-build.md) independently of
# modelpkg, so that `modelpkg mt reseal` / `mt build` on the result is a cross-check.

MT_MANIFEST = "mobiletransformers_manifest.json"


def py_json(value, sort=True):
    """The exporter's documents: json.dumps(indent=2, sort_keys=True) (ASCII escapes) + newline."""
    return json.dumps(value, indent=2, sort_keys=sort) + "\n"


def mt_listed_files(pkg):
    """Every file under pkg except any named like the manifest: sorted package-relative paths."""
    found = []
    for root, _dirs, files in os.walk(pkg):
        for name in files:
            if name != MT_MANIFEST:
                found.append(os.path.relpath(os.path.join(root, name), pkg).replace(os.sep, "/"))
    return sorted(found)


def mt_manifest(pkg, build):
    """One pass of the exporter over the tree, with the BUILD.json-shaped descriptive inputs."""
    listed = mt_listed_files(pkg)
    digests, sizes = {}, {}
    for rel in listed:
        with open(os.path.join(pkg, rel), "rb") as f:
            data = f.read()
        digests[rel], sizes[rel] = hashlib.sha256(data).hexdigest(), len(data)
    variants, plans = [], {}
    for desc in build["variants"]:
        vid, feats = desc["id"], desc.get("features", [])
        paths = {"tokenizer": "shared/tokenizer"}
        for sub in ("train", "inference", "embedding"):
            if os.path.isdir(os.path.join(pkg, "variants", vid, sub)):
                paths[sub] = "variants/%s/%s" % (vid, sub)
        variants.append({
            "id": vid, "executionProvider": desc["executionProvider"], "quantization": desc["quantization"],
            "supportedEngines": desc.get("supportedEngines", ["native"]), "abi": desc.get("abi"),
            "features": feats, "minimumAndroidApi": desc.get("minimumAndroidApi"),
            "recommendedDeviceMemoryMb": desc.get("recommendedDeviceMemoryMb"),
            "weightHandoff": "variants/%s/inference/weight_handoff_map.json" % vid, "paths": paths})
        group = {"inference": "variants/%s/inference/**", "train": "variants/%s/train/**",
                 "rag": "variants/%s/embedding/**", "genai": "variants/%s/inference/genai_config.json"}
        plans[vid] = {name: [pattern % vid] if name in feats else [] for name, pattern in group.items()}
        plans[vid]["core"] = [MT_MANIFEST, "shared/tokenizer/**", "shared/chat_template.jinja",
                              "shared/config.json", "shared/generation_config.json"]
        plans[vid]["checksums"] = ["variants/%s/checksums.json" % vid]
    default = build.get("defaultVariant") or build["variants"][0]["id"]
    manifest = {
        "schemaVersion": "1.0", "minReaderVersion": "1.0", "artifactFormatVersion": 1,
        "baseModelId": build["baseModelId"], "exportedAt": build.get("exportedAt") or "",
        "mobiletransformersVersion": build.get("mobiletransformersVersion", ""),
        "trustRemoteCode": bool(build.get("trustRemoteCode", False)),
        "defaultVariant": default, "variants": variants, "downloadPlan": plans,
        "requiredFiles": [MT_MANIFEST, "shared/tokenizer/tokenizer.json",
                          "variants/%s/inference/model.onnx" % default],
        "fileSizes": sizes, "sha256": digests,
        "weightHandoff": "variants/%s/inference/weight_handoff_map.json" % default,
        "androidRuntime": build.get("androidRuntime", {"minimumAndroidApi": None,
                                                       "recommendedDeviceMemoryMb": None,
                                                       "requiredAbis": []}),
        "license": build.get("license", {"framework": "Apache-2.0", "baseModelWeights": None,
                                         "noticeFile": None}),
    }
    for key in ("architectures", "supportedTasks", "peftMethods", "quantization"):
        manifest[key] = build.get(key, [])
    for key in ("selectedTask", "optimumOnnxVersion", "transformersVersion", "onnxRuntimeTrainingVersion",
                "onnxRuntimeGenAIVersion", "trainableParameterCount", "trainingParameterCount"):
        manifest[key] = build.get(key)
    return manifest


def mt_seal(pkg, build):
    """The exporter's two passes: checksums.json from a pass without them, then the manifest."""
    for desc in build["variants"]:
        stale = os.path.join(pkg, "variants", desc["id"], "checksums.json")
        if os.path.exists(stale):
            os.remove(stale)
    first = mt_manifest(pkg, build)
    for desc in build["variants"]:
        prefix = "variants/%s/" % desc["id"]
        own = {rel: h for rel, h in first["sha256"].items() if rel.startswith(prefix)}
        write(os.path.join(pkg, prefix + "checksums.json"), py_json(own))
    write(os.path.join(pkg, MT_MANIFEST), py_json(mt_manifest(pkg, build)))


def pb_varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb(field, value):
    """One protobuf field: an int (varint), or bytes/str (length-delimited)."""
    if isinstance(value, int):
        return pb_varint(field << 3) + pb_varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return pb_varint(field << 3 | 2) + pb_varint(len(value)) + value


ONNX_FLOAT, ONNX_FLOAT16 = 1, 10


def onnx_external(name, dtype, dims, location, offset=None, length=None):
    """TensorProto whose bytes live outside the graph (data_location EXTERNAL)."""
    t = b"".join(pb(1, d) for d in dims) + pb(2, dtype) + pb(8, name)
    entries = [("location", location)]
    if offset is not None:
        entries += [("offset", str(offset)), ("length", str(length))]
    t += b"".join(pb(13, pb(1, k) + pb(2, v)) for k, v in entries)
    return t + pb(14, 1)


def onnx_value(name, dims):
    dim = b"".join(pb(1, pb(1, d)) for d in dims)
    return pb(1, name) + pb(2, pb(1, pb(1, ONNX_FLOAT) + pb(2, dim)))


def onnx_node(op, inputs, outputs, name, ints=()):
    attrs = b"".join(pb(5, pb(1, k) + pb(3, v) + pb(20, 2)) for k, v in ints)  # type INT
    return b"".join(pb(1, i) for i in inputs) + b"".join(pb(2, o) for o in outputs) + pb(3, name) + \
        pb(4, op) + attrs


def mt_tiny(out):
    """A small two-variant MobileTransformers package with real tensors.

    The inference graph is a real ONNX model (opset 17): output = Gemm(Gemm(input, q)ᵀ, v)ᵀ with
    both weights trainable (one float32, one float16, each in its own raw `.bin` external-data file
    with a `.bin.sha256` sidecar) and both biases frozen in frozen_base.onnx.data. The weights are
    [out, in] with transB=1, PyTorch's orientation, so the handoff entries are no_transpose:
    adapter_B @ adapter_A has the weight's shape.
    """
    d = os.path.join(out, "mt-tiny")
    if os.path.isdir(d):
        import shutil
        shutil.rmtree(d)
    rank = 2
    layers = [  # (projection, dtype, [out, in])
        ("q_proj", "float32", [4, 3]),
        ("v_proj", "float16", [6, 4]),
    ]
    fmt = {"float32": "<%df", "float16": "<%de"}
    tensors, entries, mapping = {}, [], {}
    for k, (proj, dtype, shape) in enumerate(layers):
        name = "model.layers.0.attn.%s.MatMul.weight" % proj
        count = shape[0] * shape[1]
        data = struct.pack(fmt[dtype] % count, *[((i * 7 + k * 3) % 11 - 5) / 8.0 for i in range(count)])
        tensors[name] = (dtype, shape, data)
        base = "backbone.model.layers.0.self_attn.%s.base_layer" % proj
        lora = base[: -len("base_layer")]
        names = {"adapter_A": lora + "lora_A.default.weight", "adapter_B": lora + "lora_B.default.weight",
                 "weight": base + ".weight"}
        mapping[base] = names
        entries.append({
            "adapterDtypes": {"adapter_A": "float32", "adapter_B": "float32"},
            "adapterShapes": {"adapter_A": [rank, shape[1]], "adapter_B": [shape[0], rank]},
            "checkpointNames": names, "dtype": dtype,
            "externalDataLocation": {"weight": name + ".bin"}, "genaiInputNames": {},
            "inferenceInitializerNames": {"weight": name}, "mergedTensorNames": {"weight": name},
            "mergerOutputNames": {"weight": "merged_weight"},
            "sha256": {"weight": hashlib.sha256(data).hexdigest()}, "shape": shape,
            "tensorDtypes": {"weight": dtype}, "tensorShapes": {"weight": shape},
            "trainingBaseLayerName": base, "transposePolicy": "no_transpose"})
    handoff = {"engines": ["native", "genai"], "entries": entries, "externalDataLayout": "one_file_per_tensor",
               "frozenBaseBlob": "frozen_base.onnx.data", "handoffMode": "external_initializer",
               "mergerModels": {}, "minReaderVersion": "1.0", "schemaVersion": "1.1"}
    trainable = sum(rank * (s[0] + s[1]) for _, _, s in layers)
    biases = struct.pack("<4f", 0.5, -0.25, 0.125, 0.0) + struct.pack("<6f", 0.0, 0.25, -0.5, 1.0, 0.75, -0.125)
    q, v = ("model.layers.0.attn.%s.MatMul.weight" % p for p, _, _ in layers)
    graph = (pb(1, onnx_node("Gemm", ["input", q, "model.layers.0.attn.q_proj.bias"], ["hidden"], "q_proj",
                             [("transB", 1)])) +
             pb(1, onnx_node("Cast", [v], ["v_weight_f32"], "v_cast", [("to", ONNX_FLOAT)])) +
             pb(1, onnx_node("Gemm", ["hidden", "v_weight_f32", "model.layers.0.attn.v_proj.bias"], ["output"],
                             "v_proj", [("transB", 1)])) +
             pb(2, "mt-tiny") +
             pb(5, onnx_external(q, ONNX_FLOAT, [4, 3], q + ".bin")) +
             pb(5, onnx_external(v, ONNX_FLOAT16, [6, 4], v + ".bin")) +
             pb(5, onnx_external("model.layers.0.attn.q_proj.bias", ONNX_FLOAT, [4], "frozen_base.onnx.data", 0, 16)) +
             pb(5, onnx_external("model.layers.0.attn.v_proj.bias", ONNX_FLOAT, [6], "frozen_base.onnx.data", 16, 24)) +
             pb(11, onnx_value("input", [1, 3])) + pb(12, onnx_value("output", [1, 6])))
    model = pb(1, 8) + pb(2, "modelpkg gen_examples.py") + pb(3, "1") + pb(7, graph) + pb(8, pb(1, "") + pb(2, 17))

    report = {"architectures": ["LlamaForCausalLM"], "mobiletransformersVersion": "0.2.0",
              "onnxRuntimeTrainingVersion": "1.23.0", "optimumOnnxVersion": "0.1.0", "peftMethods": ["lora"],
              "quantization": ["fp16"], "selectedTask": "text-generation-with-past",
              "supportedTasks": ["text-generation-with-past"], "trainableParameterCount": trainable,
              "trustRemoteCode": False, "transformersVersion": "4.46.2"}
    write(os.path.join(d, "README.md"), "# mt-tiny\n\nA MobileTransformers package made by scripts/gen_examples.py.\n")
    write(os.path.join(d, "licenses", "BASE_MODEL_LICENSE"), "Apache-2.0\n")
    write(os.path.join(d, "licenses", "FRAMEWORK_LICENSE"), "Apache-2.0\n")
    write(os.path.join(d, "optimum", "export_report.json"), py_json(report))
    write(os.path.join(d, "optimum", "supported_tasks.json"), py_json(report["supportedTasks"], sort=False))
    write(os.path.join(d, "shared", "tokenizer", "tokenizer.json"), py_json({
        "version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
        "model": {"type": "WordLevel", "unk_token": "<unk>",
                  "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "hello": 3, "world": 4}}}))
    write(os.path.join(d, "shared", "chat_template.jinja"),
          "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}")
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 3, "model_type": "llama",
              "num_hidden_layers": 1, "vocab_size": 5}
    write(os.path.join(d, "shared", "config.json"), py_json(config))
    generation = {"bos_token_id": 1, "eos_token_id": 2}
    write(os.path.join(d, "shared", "generation_config.json"), py_json(generation))

    for vid, quant, with_train in (("cpu-fp16", "fp16", True), ("cpu-int4", "int4", False)):
        inf = os.path.join(d, "variants", vid, "inference")
        write(os.path.join(inf, "model.onnx"), model)
        write(os.path.join(inf, "frozen_base.onnx.data"), biases)
        for name, (_dtype, _shape, data) in sorted(tensors.items()):
            write(os.path.join(inf, name + ".bin"), data)
            write(os.path.join(inf, name + ".bin.sha256"), hashlib.sha256(data).hexdigest() + "\n")
        write(os.path.join(inf, "weight_handoff_map.json"), py_json(handoff))
        write(os.path.join(inf, "generation_config.json"), py_json(generation))
        write(os.path.join(inf, "optimum_config.json"), py_json({
            "inferenceGraphPrecision": "mixed(float16/float32)", "modelId": "MobileTransformers/Tiny-0.1B", "modelType": "llama",
            "quantization": quant, "supportedEngines": ["native", "genai"] if with_train else ["native"],
            "task": "text-generation-with-past"}))
        if not with_train:
            continue
        write(os.path.join(inf, "genai_config.json"), py_json({"model": {
            "type": "llama", "vocab_size": 5, "context_length": 64, "bos_token_id": 1, "eos_token_id": 2,
            "decoder": {"filename": "model.onnx", "hidden_size": 3, "num_hidden_layers": 1}}}, sort=False))
        train = os.path.join(d, "variants", vid, "train")
        write(os.path.join(train, "training_config.json"), py_json({
            "alpha": 4, "peft_mapping": mapping, "peft_target": ["q_proj", "v_proj"], "rank": rank,
            "requires_grad": ["lora_A", "lora_B"], "trainable_parameter_count": trainable}))
        write(os.path.join(train, "trainable_parameters.json"), py_json({
            "baseLayers": sorted(mapping), "peftMethod": "lora", "rank": rank, "requiresGrad": ["lora_A", "lora_B"],
            "trainableParameterCount": trainable}))
        write(os.path.join(train, "weight_handoff_map.json"), py_json(handoff))

    build = dict(report, baseModelId="MobileTransformers/Tiny-0.1B", exportedAt="2026-08-20T00:00:00Z",
                 onnxRuntimeGenAIVersion="0.14.0", trainingParameterCount=trainable + 12 + 24 + 4 + 6,
                 defaultVariant="cpu-fp16",
                 androidRuntime={"minimumAndroidApi": 28, "recommendedDeviceMemoryMb": 2048,
                                 "requiredAbis": ["arm64-v8a"]},
                 license={"framework": "Apache-2.0", "baseModelWeights": "Apache-2.0",
                          "noticeFile": "licenses/BASE_MODEL_LICENSE"},
                 variants=[{"id": "cpu-fp16", "executionProvider": "cpu", "quantization": "fp16",
                            "supportedEngines": ["native", "genai"], "abi": ["arm64-v8a"],
                            "features": ["core", "inference", "train", "genai"], "minimumAndroidApi": 28,
                            "recommendedDeviceMemoryMb": 2048},
                           {"id": "cpu-int4", "executionProvider": "cpu", "quantization": "int4",
                            "supportedEngines": ["native"], "abi": None, "features": ["core", "inference"],
                            "minimumAndroidApi": 28, "recommendedDeviceMemoryMb": None}])
    # BUILD.json for `modelpkg mt build` (beside the package: a file inside it would be listed).
    write(os.path.join(out, "mt-tiny.build.json"), py_json(build))
    mt_seal(d, build)
    # A trained adapter for `modelpkg mt merge` (also beside the package): each entry's factors under
    # its checkpointNames, float32, A [rank, in] and B [out, rank].
    factors = []
    for k, (proj, _dtype, shape) in enumerate(layers):
        names = mapping["backbone.model.layers.0.self_attn.%s.base_layer" % proj]
        for role, dims in (("adapter_A", [rank, shape[1]]), ("adapter_B", [shape[0], rank])):
            n = dims[0] * dims[1]
            factors.append((names[role], dims, [((i * 5 + k * 2 + len(role)) % 9 - 4) / 16.0 for i in range(n)]))
    write(os.path.join(out, "mt-tiny.adapter.safetensors"), safetensors(factors))


def safetensors(tensors):
    """The safetensors layout: u64 LE header length, JSON header padded with spaces to 8 bytes, data."""
    header, data = {}, b""
    for name, dims, values in tensors:
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": dims, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "examples")
    gemma4_audio(out)
    llava_image(out)
    legacy(out)
    mt_tiny(out)
    print("examples written to", out)


if __name__ == "__main__":
    main()
