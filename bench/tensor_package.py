#!/usr/bin/env python3
"""tensor_package.py — write a MobileTransformers inference directory of large tensors for bench/run_tensor.sh.

    python3 bench/tensor_package.py DIR [--tensors N] [--rows R] [--cols C]

Creates DIR (which must not exist) holding N float32 tensors of shape [R, C] as raw
`<name>.bin` files of random bytes, each with its `<name>.bin.sha256` sidecar, and the
`weight_handoff_map.json` (schema 1.1) whose entries name them, with per-role
`tensorDtypes`/`tensorShapes` and the map's own `sha256` too (the sidecar wins; both agree).
That is what `mpk_mt_tensor_open()` and `mpk_mt_load_gate()` read: a variant's `inference/`
directory. Defaults: 8 tensors of [8192, 4096] (128 MiB each).

bench/mt_package.py writes a whole two-variant package whose tensors are 1 MiB float16 files;
this helper writes only the inference directory, with tensors of any size, and reuses its
`write_json` (the same JSON layout). Random bytes come from `openssl rand` (an AES-CTR DRBG,
GB/s), hashed with hashlib on the way to the file, so each byte is written once and never
read back. stdlib only.
"""
import argparse
import hashlib
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree by the import below
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mt_package import write_json  # noqa: E402

MIB = 1 << 20


def rand_tensor(path, nbytes):
    """Write nbytes of random bytes to path and return their SHA-256 (hex)."""
    h = hashlib.sha256()
    buf = bytearray(4 * MIB)
    view = memoryview(buf)
    with open(path, "wb") as f:
        left = nbytes
        while left:
            n = min(left, (1 << 31) - MIB)  # `openssl rand` takes an int count
            rng = subprocess.Popen(["openssl", "rand", str(n)], stdout=subprocess.PIPE, bufsize=0)
            got = 0
            while True:
                k = rng.stdout.readinto(buf)
                if not k:
                    break
                h.update(view[:k])
                f.write(view[:k])
                got += k
            rng.stdout.close()
            if rng.wait() or got != n:
                sys.exit(f"tensor_package.py: openssl rand gave {got} of {n} bytes")
            left -= n
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--tensors", type=int, default=8)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    a = ap.parse_args()
    if a.tensors < 1 or a.rows < 1 or a.cols < 1:
        sys.exit("tensor_package.py: --tensors, --rows and --cols must be at least 1")
    os.makedirs(a.dir)
    shape = [a.rows, a.cols]
    entries = []
    for i in range(a.tensors):
        name = f"model.layers.{i}.mlp.down_proj.MatMul.weight"
        digest = rand_tensor(f"{a.dir}/{name}.bin", a.rows * a.cols * 4)
        with open(f"{a.dir}/{name}.bin.sha256", "w") as f:
            f.write(digest + "\n")
        entries.append({
            "checkpointNames": {"weight": f"backbone.model.layers.{i}.mlp.down_proj.base_layer.weight"},
            "dtype": "float32",
            "externalDataLocation": {"weight": f"{name}.bin"},
            "inferenceInitializerNames": {"weight": name},
            "mergedTensorNames": {"weight": name},
            "sha256": {"weight": digest},
            "shape": shape,
            "tensorDtypes": {"weight": "float32"},
            "tensorShapes": {"weight": shape},
            "trainingBaseLayerName": f"model.layers.{i}.mlp.down_proj",
            "transposePolicy": "no_transpose",
        })
    write_json(f"{a.dir}/weight_handoff_map.json", {
        "schemaVersion": "1.1", "minReaderVersion": "1.0", "engines": ["native"],
        "externalDataLayout": "one_file_per_tensor", "frozenBaseBlob": "frozen_base.onnx.data",
        "handoffMode": "external_initializer", "mergerModels": {}, "entries": entries})


if __name__ == "__main__":
    main()
