#!/usr/bin/env python3
"""mt_package.py — write a large MobileTransformers package tree for bench/run_mt.sh (stdlib only).

    python3 bench/mt_package.py DIR [--big N] [--big-mib M] [--small N] [--small-mib M]

Creates DIR (which must not exist) in the exporter's layout with two variants, cpu-fp16 and
cpu-int4, and writes DIR.build.json beside it (the BUILD.json for `modelpkg mt build`). Defaults:
6 files of 512 MiB and 1000 files of 1 MiB of random bytes (4 GiB), plus the small documents of
a real export (tokenizer, configs, licenses, ONNX graphs, handoff maps, .bin.sha256 sidecars):

    shared/tokenizer/{tokenizer.json, tokenizer_config.json, special_tokens_map.json}
    shared/{config.json, generation_config.json, chat_template.jinja}
    README.md  licenses/{BASE_MODEL_LICENSE, FRAMEWORK_LICENSE}  optimum/export_report.json
    variants/<id>/inference/{model.onnx, frozen_base.onnx.data*, weight_handoff_map.json,
                             genai_config.json (cpu-fp16), generation_config.json,
                             <tensor>.bin + <tensor>.bin.sha256 ...}
    variants/<id>/train/{training_model.onnx, training_model.onnx.data*, eval_model.onnx,
                         eval_model.onnx.data*, optimizer_model.onnx, training_config.json,
                         weight_handoff_map.json, adapters/<tensor>.bin ...}

(* = one of the big files; they are dealt out in that order over the variants.) The 1 MiB files
are split between each variant's inference tensors (70 %, each named by an entry of the
inference handoff map, with its digest and a sidecar) and train/adapters/ (30 %).

Random bytes come from `openssl rand` (an AES-CTR DRBG, GB/s): one process per big file (its
count is an int, so at most 2 GiB - 1 per call) and one stream cut into the small files.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

MIB = 1 << 20
VARIANTS = ["cpu-fp16", "cpu-int4"]
BIG_NAMES = ["inference/frozen_base.onnx.data", "train/training_model.onnx.data", "train/eval_model.onnx.data"]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def write_json(path, obj):
    write(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def rand_file(path, nbytes):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        left = nbytes
        while left:
            n = min(left, 1 << 30)
            subprocess.run(["openssl", "rand", str(n)], stdout=f, check=True)
            left -= n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--big", type=int, default=6)
    ap.add_argument("--big-mib", type=int, default=512)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--small-mib", type=int, default=1)
    a = ap.parse_args()
    root = a.dir
    os.makedirs(root)

    # -- shared documents (small, plausible contents)
    write_json(f"{root}/shared/tokenizer/tokenizer.json",
               {"version": "1.0", "model": {"type": "BPE", "vocab": {f"t{i}": i for i in range(2000)}, "merges": []}})
    write_json(f"{root}/shared/tokenizer/tokenizer_config.json", {"bos_token": "<s>", "eos_token": "</s>"})
    write_json(f"{root}/shared/tokenizer/special_tokens_map.json", {"bos_token": "<s>", "eos_token": "</s>"})
    write_json(f"{root}/shared/config.json",
               {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 22, "model_type": "llama"})
    write_json(f"{root}/shared/generation_config.json", {"max_new_tokens": 256, "temperature": 0.7})
    write(f"{root}/shared/chat_template.jinja", "{% for m in messages %}{{ m['content'] }}\n{% endfor %}\n")
    write(f"{root}/README.md", "# Bench-1B\n\nA synthetic package for bench/run_mt.sh.\n")
    write(f"{root}/licenses/BASE_MODEL_LICENSE", "Apache License 2.0\n")
    write(f"{root}/licenses/FRAMEWORK_LICENSE", "Apache License 2.0\n")
    write_json(f"{root}/optimum/export_report.json", {"task": "text-generation-with-past", "ok": True})

    # -- big files, dealt out over the variants
    for k in range(a.big):
        v = VARIANTS[k // len(BIG_NAMES) % len(VARIANTS)]
        rand_file(f"{root}/variants/{v}/{BIG_NAMES[k % len(BIG_NAMES)]}", a.big_mib * MIB)

    # -- small files: one openssl stream cut into pieces
    per_variant = [a.small // len(VARIANTS) + (1 if i < a.small % len(VARIANTS) else 0) for i in range(len(VARIANTS))]
    size = a.small_mib * MIB
    rng = subprocess.Popen(["openssl", "rand", str(a.small * size)], stdout=subprocess.PIPE, bufsize=0)
    buf = bytearray(size)
    view = memoryview(buf)

    def next_chunk():
        got = 0
        while got < size:
            n = rng.stdout.readinto(view[got:])
            if not n:
                sys.exit("mt_package.py: openssl rand ended early")
            got += n
        return buf

    for v, count in zip(VARIANTS, per_variant):
        inf, train = f"{root}/variants/{v}/inference", f"{root}/variants/{v}/train"
        n_inf = count * 7 // 10
        entries = []
        for i in range(n_inf):
            layer, proj = divmod(i, 4)
            name = f"model.layers.{layer}.attn.{'qkvo'[proj]}_proj.MatMul.weight"
            data = next_chunk()
            write(f"{inf}/{name}.bin", data)
            digest = hashlib.sha256(data).hexdigest()
            write(f"{inf}/{name}.bin.sha256", digest + "\n")
            entries.append({
                "checkpointNames": {"weight": f"backbone.model.layers.{layer}.self_attn.{'qkvo'[proj]}_proj.base_layer.weight"},
                "dtype": "float16",
                "externalDataLocation": {"weight": f"{name}.bin"},
                "inferenceInitializerNames": {"weight": name},
                "mergedTensorNames": {"weight": name},
                "sha256": {"weight": digest},
                "shape": [size // 2 // 1024, 1024],
                "tensorDtypes": {"weight": "float16"},
                "tensorShapes": {"weight": [size // 2 // 1024, 1024]},
                "trainingBaseLayerName": f"backbone.model.layers.{layer}.self_attn.{'qkvo'[proj]}_proj.base_layer",
                "transposePolicy": "no_transpose",
            })
        for i in range(count - n_inf):
            write(f"{train}/adapters/model.layers.{i // 2}.lora_{'AB'[i % 2]}.bin", next_chunk())
        hmap = {"schemaVersion": "1.1", "minReaderVersion": "1.0", "engines": ["native"],
                "externalDataLayout": "one_file_per_tensor", "frozenBaseBlob": "frozen_base.onnx.data",
                "handoffMode": "external_initializer", "mergerModels": {}, "entries": entries}
        write_json(f"{inf}/weight_handoff_map.json", hmap)
        write_json(f"{train}/weight_handoff_map.json", dict(hmap, entries=[]))
        write(f"{inf}/model.onnx", os.urandom(64 * 1024))
        write_json(f"{inf}/generation_config.json", {"max_new_tokens": 256})
        if v == "cpu-fp16":
            write_json(f"{inf}/genai_config.json", {"model": {"type": "llama", "context_length": 2048}})
        for g in ("training_model.onnx", "eval_model.onnx", "optimizer_model.onnx"):
            write(f"{train}/{g}", os.urandom(32 * 1024))
        write_json(f"{train}/training_config.json", {"learning_rate": 1e-4, "epochs": 1})
    rng.stdout.close()
    if rng.wait():
        sys.exit("mt_package.py: openssl rand failed")

    build = {
        "baseModelId": "bench/Bench-1B",
        "defaultVariant": "cpu-fp16",
        "exportedAt": "2026-12-01T00:00:00Z",
        "mobiletransformersVersion": "0.2.0",
        "architectures": ["LlamaForCausalLM"],
        "supportedTasks": ["text-generation-with-past"],
        "selectedTask": "text-generation-with-past",
        "peftMethods": ["lora"],
        "quantization": ["fp16", "int4"],
        "license": {"framework": "Apache-2.0", "baseModelWeights": "Apache-2.0", "noticeFile": "licenses/BASE_MODEL_LICENSE"},
        "variants": [
            {"id": "cpu-fp16", "executionProvider": "cpu", "quantization": "fp16",
             "features": ["core", "inference", "train", "genai"], "supportedEngines": ["native", "genai"]},
            {"id": "cpu-int4", "executionProvider": "cpu", "quantization": "int4",
             "features": ["core", "inference", "train"]},
        ],
    }
    with open(root.rstrip("/") + ".build.json", "w") as f:
        json.dump(build, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
