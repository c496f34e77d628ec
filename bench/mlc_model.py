#!/usr/bin/env python3
"""mlc_model.py — write a large MLC model (WebLLM's files) for bench/run_mlc_install.sh (stdlib only).

    python3 bench/mlc_model.py DIR [--size-mib N] [--layout mlc|few] [--seed S]

Creates DIR (which must not exist) with mlc-chat-config.json, tensor-cache.json (every shard's
size and real MD5, its tensors' records) and the shards params_shard_<i>.bin, in the layout MLC's
converter writes (no mlc-model-manifest.json: a model as most hubs serve it). Layouts:

  mlc  (default) what `mlc_llm convert_weight` produces: tensors packed into shards of at most
       32 MiB, except a tensor larger than that, which gets a shard of its own — the embedding
       (vocab x hidden, ~10 % of a q4f16 model: 111 of 790 MiB in ReaderLM-v2, ~210 of 1800 MiB
       in Llama-3.2-3B) comes first as shard 0. Here: shard 0 = SIZE/10, then shards of 24-32 MiB
       (sizes irregular, multiples of 4 bytes, as packed tensors are), the last one the remainder.
  few  three shards of SIZE/3 each: fewer files than connections, so only ranges of one file on
       separate connections can use them all (a model packed with a large shard cap, or one big
       single-file model as other runtimes ship).

Bytes: AES-128-CTR keystream of zeros (`openssl enc`, one process per shard, the IV = the shard's
index; ~GB/s), so a model is the same for the same seed. MD5s: md5sum, two processes at once.
Prints one line per shard: "<name> <bytes> <md5>", then "TOTAL <files> <bytes>".
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

MIB = 1 << 20


def shard_sizes(total, layout):
    if layout == "few":
        base = (total // 3) & ~3
        return [base, base, total - 2 * base]
    sizes = [max(32 * MIB + 4 * 4099, (total // 10) & ~3)]   # the embedding: above the 32 MiB cap
    left = total - sizes[0]
    i = 1
    while left > 0:
        s = (32 * MIB - ((i * 2654435761) % (8 * MIB))) & ~3   # 24..32 MiB, irregular
        s = min(s, left)
        sizes.append(s)
        left -= s
        i += 1
    return sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--size-mib", type=int, default=2048)
    ap.add_argument("--layout", choices=["mlc", "few"], default="mlc")
    ap.add_argument("--seed", default="mpk-bench-mlc")
    a = ap.parse_args()
    total = a.size_mib * MIB
    if a.size_mib < 64:
        sys.exit("mlc_model.py: --size-mib must be at least 64")
    os.makedirs(a.dir)
    key = hashlib.md5(a.seed.encode()).hexdigest()
    sizes = shard_sizes(total, a.layout)
    names = [f"params_shard_{i}.bin" for i in range(len(sizes))]
    procs = []
    for i, (name, size) in enumerate(zip(names, sizes)):
        # head -c SIZE /dev/zero | openssl enc: exactly SIZE bytes, no SIGPIPE.
        cmd = (f"head -c {size} /dev/zero | openssl enc -aes-128-ctr -K {key} -iv {i:032x} "
               f"-out '{os.path.join(a.dir, name)}'")
        procs.append(subprocess.Popen(cmd, shell=True))
        if len(procs) >= 2:
            if procs.pop(0).wait():
                sys.exit("mlc_model.py: openssl failed")
    for p in procs:
        if p.wait():
            sys.exit("mlc_model.py: openssl failed")
    md5 = {}
    half = (len(names) + 1) // 2
    groups = [names[:half], names[half:]]
    hp = [subprocess.Popen(["md5sum", "--"] + g, cwd=a.dir, stdout=subprocess.PIPE, text=True) for g in groups if g]
    for p in hp:
        out, _ = p.communicate()
        if p.returncode:
            sys.exit("mlc_model.py: md5sum failed")
        for line in out.splitlines():
            h, n = line.split(None, 1)
            md5[n.lstrip("*")] = h
    records = []
    for i, (name, size) in enumerate(zip(names, sizes)):
        # Each shard holds a few tensors back to back (uint32 quantized weights), covering it.
        parts = 1 if i == 0 and a.layout == "mlc" else 4
        recs, off = [], 0
        for k in range(parts):
            n = (size // parts) & ~3 if k < parts - 1 else size - off
            recs.append({"name": f"model.layers.{i}.w{k}.q_weight" if not (i == 0 and a.layout == "mlc")
                         else "model.embed_tokens.q_weight",
                         "shape": [n // 4], "dtype": "uint32", "format": "raw", "nbytes": n, "byteOffset": off})
            off += n
        records.append({"dataPath": name, "format": "raw-shard", "nbytes": size, "records": recs, "md5sum": md5[name]})
    cache = {"metadata": {"ParamSize": sum(len(r["records"]) for r in records), "ParamBytes": float(total),
                          "BitsPerParam": 4.0}, "records": records}
    with open(os.path.join(a.dir, "tensor-cache.json"), "w") as f:
        json.dump(cache, f, indent=1)
    chat = {"version": "0.1.0", "model_type": "llama", "quantization": "q4f16_1",
            "model_config": {"vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": len(sizes) - 1,
                             "context_window_size": 4096, "prefill_chunk_size": 1024},
            "vocab_size": 32000, "context_window_size": 4096, "prefill_chunk_size": 1024,
            "tokenizer_files": [], "conv_template": {"name": "bench"}}
    with open(os.path.join(a.dir, "mlc-chat-config.json"), "w") as f:
        json.dump(chat, f, indent=1)
    for name, size in zip(names, sizes):
        print(name, size, md5[name])
    print("TOTAL", len(sizes), total)


if __name__ == "__main__":
    main()
