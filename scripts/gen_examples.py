#!/usr/bin/env python3
"""Generate the bundled example packages under examples/ (Python standard library only).

Deterministic: the same bytes on every run. The identities are computed here the way MLC's
Python producer computes them (json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False) then SHA-256), independently of modelpkg, so `modelpkg check` on these
packages is a cross-check, not a tautology.

The compiled libraries are SYNTHETIC: a WebAssembly header, filler bytes, and the _metadata
JSON stored the way TVM stores it (u64 little-endian length, then the JSON text). They carry no
code; they exist to show and test the contract check.

usage: python3 scripts/gen_examples.py [OUTDIR]   (default: examples/)
"""
import hashlib
import json
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def library(path, metadata, seed):
    """A synthetic .wasm: header, filler, a decoy '{', then u64 LE length + _metadata JSON."""
    rng = random.Random(seed)
    text = json.dumps(metadata, indent=1, ensure_ascii=False).encode("utf-8")
    filler = bytes(rng.getrandbits(8) for _ in range(4096))
    decoy = struct.pack("<Q", 10 ** 9) + b"{not metadata}"
    body = (b"\0asm\x01\0\0\0" + filler + decoy + filler[:333] + b"\x07\0\0\0" +
            struct.pack("<Q", len(text)) + text + filler[:1000])
    write(path, body)


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
    library(os.path.join(d, "lib", "gemma4-audio-webgpu.wasm"), metadata, 2)
    # A library compiled for other weights (a larger vocabulary): the check must refuse it.
    other_params = [dict(params[0], shape=[64, 8])] + params[1:]
    other = dict(artifact, parameter_schema_id=parameter_schema_id(other_params),
                 resources=dict(required_features=["shader-f16"], **resources(other_params)))
    library(os.path.join(out, "mismatched-lib", "gemma4-audio-other-weights-webgpu.wasm"),
            dict(metadata, params=[dict(p, preprocs=[]) for p in other_params], artifact=other), 3)


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
    library(os.path.join(d, "lib", "llava-image-webgpu.wasm"), metadata, 5)


def legacy(out):
    d = os.path.join(out, "legacy-no-manifest")
    params = [{"name": "embed.weight", "shape": [16, 8], "dtype": "float32"}]
    write_json(os.path.join(d, "mlc-chat-config.json"), chat_config("llama", 16))
    tensor_cache(d, params, 6)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "examples")
    gemma4_audio(out)
    llava_image(out)
    legacy(out)
    print("examples written to", out)


if __name__ == "__main__":
    main()
