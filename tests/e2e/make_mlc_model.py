#!/usr/bin/env python3
"""A generated MLC model with real shards, in the layout a model hub serves (python3 stdlib only).

OUT/ receives what a hub repository `ORG/MODEL` holds under `resolve/main/`:
  mlc-chat-config.json         the chat config (model_config sized to the tensors)
  tokenizer.json               the tokenizer its tokenizer_files lists (a small BPE; WebLLM loads it)
  tensor-cache.json            MLC's weights manifest: one record per shard (dataPath, format
                               "raw-shard", nbytes, md5sum, records: name, shape, dtype "float16",
                               format "raw", nbytes, byteOffset), metadata ParamSize/ParamBytes
  params_shard_K.bin           the shards: deterministic pseudo-random bytes (seeded)
  mlc-model-manifest.json      the sidecar (unless --no-manifest: a legacy model), its
                               interface_id and parameter_schema_id computed here as MLC's Python
                               producer does (scripts/gen_examples.py's functions), independently of
                               modelpkg: `modelpkg check OUT` on the result is a cross-check.
--lib FILE writes a compiled library (scripts/gen_examples.py's: a WebAssembly module whose TVM
module blob holds the `_metadata` JSON with `params` and the `artifact`, and a function table with
every role the artifact names) bound to these weights.

Sizes: --shards N shards of --shard-kib KiB each, shard 0 (the embedding) --big-kib KiB (one
shard larger than 32 MiB by default, so that ranged transfers happen). Every size is a multiple of
2 KiB (float16 rows of 1024 elements).
--change K: a changed version of the same model (an update): the same tensor names and shapes
(so the same parameter_schema_id, and the same library binds), the bytes of shards 1..K drawn from
another seed — their sizes the same, their MD5s different; --change-big: shard 0's too.

usage: make_mlc_model.py OUT [--shards N] [--shard-kib K] [--big-kib B] [--seed S] [--change K [--change-big]]
                             [--no-manifest] [--lib FILE]
Prints one line: the number of shards and the total bytes.
"""
import argparse
import hashlib
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
import gen_examples as gx  # noqa: E402  (the example generator's identities and library writer)

HIDDEN = 1024            # float16 elements per row
ROW = HIDDEN * 2         # bytes per row
TASKS = {"chat.completions": {"executor": "generation", "inputs": {"text": {"processor": "tokenizer"}},
                              "output": "text"}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--shard-kib", type=int, default=2048)
    ap.add_argument("--big-kib", type=int, default=34 * 1024)
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--change", type=int, default=0)
    ap.add_argument("--change-big", action="store_true")
    ap.add_argument("--no-manifest", action="store_true")
    ap.add_argument("--lib")
    a = ap.parse_args()
    if a.shards < 1 or a.shard_kib < 4 or a.big_kib < 2 or a.shard_kib % 4 or a.big_kib % 2:
        sys.exit("make_mlc_model.py: --shards >= 1, --shard-kib a multiple of 4 (>= 4), --big-kib a multiple of 2")
    os.makedirs(a.out, exist_ok=True)
    vocab = a.big_kib * 1024 // ROW
    params, shards = [], []
    # shard 0: the embedding table, alone (the large one); shards 1..N-1: two tensors each
    layout = [[("model.embed_tokens.weight", vocab)]]
    half = a.shard_kib * 1024 // ROW // 2
    for i in range(1, a.shards):
        layout.append([("model.layers.%d.self_attn.qkv_proj.weight" % (i - 1), half),
                       ("model.layers.%d.mlp.down_proj.weight" % (i - 1), half)])
    total = 0
    for k, tensors in enumerate(layout):
        seed = a.seed * 1000 + k + (500 if 1 <= k <= a.change or (k == 0 and a.change_big) else 0)
        rng = random.Random(seed)
        recs, off = [], 0
        for name, rows in tensors:
            n = rows * ROW
            recs.append({"name": name, "shape": [rows, HIDDEN], "dtype": "float16", "format": "raw",
                         "nbytes": n, "byteOffset": off})
            params.append({"name": name, "shape": [rows, HIDDEN], "dtype": "float16"})
            off += n
        data = rng.randbytes(off)
        path = "params_shard_%d.bin" % k
        with open(os.path.join(a.out, path), "wb") as f:
            f.write(data)
        shards.append({"dataPath": path, "format": "raw-shard", "nbytes": off, "records": recs,
                       "md5sum": hashlib.md5(data).hexdigest()})
        total += off
    gx.write_json(os.path.join(a.out, "tensor-cache.json"), {
        "metadata": {"ParamSize": len(params), "ParamBytes": float(total), "BitsPerParam": 16.0},
        "records": shards})
    cfg = gx.chat_config("llama", vocab)
    cfg["model_config"]["hidden_size"] = HIDDEN
    cfg["model_config"]["num_hidden_layers"] = max(a.shards - 1, 1)
    gx.write_json(os.path.join(a.out, "mlc-chat-config.json"), cfg)
    vocab_map = {chr(0x21 + i): i for i in range(90)}
    with open(os.path.join(a.out, "tokenizer.json"), "w") as f:
        json.dump({"version": "1.0", "added_tokens": [], "normalizer": None,
                   "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                                     "use_regex": True},
                   "model": {"type": "BPE", "dropout": None, "unk_token": None, "vocab": vocab_map,
                             "merges": []}}, f, indent=1)
        f.write("\n")
    iid, pid = gx.interface_id(TASKS), gx.parameter_schema_id(params)
    if not a.no_manifest:
        gx.write_json(os.path.join(a.out, "mlc-model-manifest.json"), {
            "schema": "mlc.model-package", "schema_version": 1, "chat_config": "mlc-chat-config.json",
            "interface_id": iid, "weights": {"manifest": "tensor-cache.json", "parameter_schema_id": pid},
            "tasks": TASKS})
    if a.lib:
        artifact = {"schema": "mlc.compiled-program", "schema_version": 1, "interface_id": iid,
                    "parameter_schema_id": pid,
                    "programs": {"generation": {"kind": "token_generation", "exports": {
                        "embed_tokens": "embed", "prefill_tokens": "prefill_tokens",
                        "decode_tokens": "decode_tokens", "create_kv_cache": "create_tir_paged_kv_cache"}}},
                    "resources": dict(required_features=["shader-f16"], **gx.resources(params))}
        metadata = {"model_type": "llama", "quantization": "q0f16", "context_window_size": 4096,
                    "prefill_chunk_size": 1024, "kv_state_kind": "kv_cache",
                    "params": [dict(p, preprocs=[]) for p in params],
                    "kv_cache": {"num_hidden_layers": max(a.shards - 1, 1), "num_attention_heads": 8,
                                 "num_key_value_heads": 8, "head_dim": 128},
                    "memory_usage": {"prefill": 1 << 20, "decode": 1 << 16, "embed": 1 << 16},
                    "artifact": artifact}
        os.makedirs(os.path.dirname(os.path.abspath(a.lib)), exist_ok=True)
        gx.library(a.lib, metadata, "gemma4")  # its function table has every role the artifact names
    print("%d shards, %d bytes" % (len(shards), total))


if __name__ == "__main__":
    main()
