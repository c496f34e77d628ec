#!/usr/bin/python3
"""The reference MobileTransformers exporter's way of hashing, the peer of bench/run_mt.sh and
bench/py_seal.py: its `_sha256_of` (hashlib.sha256 over `f.read(1 << 20)` chunks) over every file
LISTING names (one path a line, relative to the working directory), then the fileSizes/sha256 maps
serialized as it writes them. Prints sha256sum's format, "DIGEST  PATH" a line.

    python3 bench/py_exporter.py LISTING
"""
import hashlib
import json
import os
import sys


def _sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


sizes, sums = {}, {}
for path in open(sys.argv[1], encoding="utf-8").read().splitlines():
    sizes[path] = os.path.getsize(path)
    sums[path] = _sha256_of(path)
json.dumps({"fileSizes": sizes, "sha256": sums}, indent=2, sort_keys=True)
for path, digest in sums.items():
    print(digest + "  " + path)
