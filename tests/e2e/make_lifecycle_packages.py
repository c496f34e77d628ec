#!/usr/bin/python3
"""Write the packages of the device-lifecycle tests (issue 18): two versions of one MobileTransformers
package, a LoRA adapter trained on version 1 that still fits version 2, a version 2' where one entry
changed shape, and a two-variant package for the reference-installer tree.

Built from make_onnx_package.py's pieces (the same ONNX graph of three linear layers with external
per-tensor .bin weights, the same handoff map, training_config.json and sealing by `modelpkg mt
build --describe`): float32 weights stored [out, in], as the reference exporter writes them.

  OUT/v1/        pkg/ (version 1.0.0), adapter.safetensors, inputs.json, expected.json
  OUT/v2/        pkg/ (version 2.0.0: layers 0 and 2 hold other weights, layer 1 the same bytes;
                 names, shapes and dtypes unchanged, so v1's adapter fits), the same adapter and
                 inputs, expected.json (with "the previous version merged" among the wrong results)
  OUT/v2-reshaped/  pkg/ (version 2.1.0: layer 2 has one more output row: the adapter no longer fits
                 that entry), reshaped.json naming the entry, its file and both shapes
  OUT/ref/       pkg/ with two variants, "cpu-int8" (the default, first) and "cpu-int4", of different
                 weights; adapter.safetensors, inputs.json, expected.json for cpu-int4
  OUT/packages.json  what the tests need: the repo's variant, file names, digests per version

expected.json is make_onnx_package's document (check_outputs.py reads it): float64 outputs before
and after the merge, computed here in numpy, and per-weight merged values.

usage: /usr/bin/python3 make_lifecycle_packages.py OUTDIR MODELPKG [--scale K] [--no-exact] [NAME...]
  --scale K   every layer K times wider (8K -> 12K -> 12K -> 6K; the crash test's larger tensors)
  --no-exact  no expected.json (its per-element lists would be large)
  NAME        v1, v2, v2-reshaped, ref (default: all)
"""
import hashlib
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx_package as mop  # noqa: E402  (the shared pieces)

VARIANT = "cpu"
REF_VARIANTS = ["cpu-int8", "cpu-int4"]   # the default first; the tree holds the second
REF_INSTALLED = "cpu-int4"
DTYPE, LAYOUT = "float32", "no_transpose"
SCALE = mop.ALPHA / mop.RANK


def weights(rng, dims):
    return [rng.uniform(-1, 1, (dims[i + 1], dims[i])).astype(np.float32) for i in range(3)]


def factors(rng, dims):
    return [(rng.uniform(-0.5, 0.5, (mop.RANK, dims[i])).astype(np.float32),
             rng.uniform(-0.5, 0.5, (dims[i + 1], mop.RANK)).astype(np.float32)) for i in range(3)]


def build_doc(variants, version, exported):
    return {"baseModelId": "modelpkg-e2e/lifecycle", "exportedAt": exported, "mobiletransformersVersion": version,
            "peftMethods": ["lora"], "variants": [{
                "id": v, "executionProvider": "cpu", "quantization": q,
                "features": ["core", "inference", "train"]} for v, q in variants]}


def make(out, name, mpk, layers_by_variant, variants, version, exported, x, exact, extra_wrong=None, adapter_layers=None):
    """One package OUT/NAME/pkg; layers_by_variant: variant -> [(W, A, B)]; the expected document is
    for the last variant."""
    root = os.path.join(out, name)
    shutil.rmtree(root, ignore_errors=True)
    pkg = os.path.join(root, "pkg")
    shipped = {}
    for v, _q in variants:
        layers = layers_by_variant[v]
        adapter, ws = mop.write_variant(pkg, v, DTYPE, LAYOUT, layers, SCALE, exact)
        shipped[v] = {w["file"]: w["base_sha256"] for w in ws}
    mop.write_shared(pkg, layers[0][0].shape[1])
    mop.seal(root, pkg, build_doc(variants, version, exported), mpk)
    # The adapter is the one trained on version 1 (adapter_layers), whatever this version holds.
    a_layers = adapter_layers or layers
    mop.write(os.path.join(root, "adapter.safetensors"), mop.safetensors(
        {k: t for i, (_w, a, b) in enumerate(a_layers)
         for k, t in ((mop.layer_names(i)["A"], a), (mop.layer_names(i)["B"], b))}))
    mop.write(os.path.join(root, "inputs.json"), json.dumps({"x": {"dims": list(x.shape), "data": x.ravel().tolist()}}))
    if exact:
        mop.write(os.path.join(root, "expected.json"), json.dumps(
            mop.expectations("lifecycle-" + name, DTYPE, LAYOUT, variants[-1][0], layers, x, SCALE, ws, extra_wrong)))
    return root, shipped


def main():
    args = sys.argv[1:]
    scale, exact, names = 1, True, []
    while args:
        a = args.pop(0)
        if a == "--scale":
            scale = int(args.pop(0))
        elif a == "--no-exact":
            exact = False
        else:
            names.append(a)
    if len(names) < 2:
        sys.exit(next(l for l in __doc__.splitlines() if l.startswith("usage:")))
    out, mpk, names = names[0], names[1], names[2:] or ["v1", "v2", "v2-reshaped", "ref"]
    dims = [d * scale for d in mop.DIMS]
    rng = np.random.RandomState(20261202)
    w1 = weights(rng, dims)
    ab = factors(rng, dims)
    w2 = weights(rng, dims)
    w2[1] = w1[1]  # version 2 keeps layer 1's bytes: an update need not change every tensor
    x = rng.uniform(-1, 1, (mop.BATCH, dims[0])).astype(np.float32)
    v1 = [(w, a, b) for w, (a, b) in zip(w1, ab)]
    v2 = [(w, a, b) for w, (a, b) in zip(w2, ab)]
    v1_merged = [w.astype(np.float64) + SCALE * (b.astype(np.float64) @ a.astype(np.float64)) for w, a, b in v1]
    summary = {"variant": VARIANT, "dims": dims, "packages": {}}

    for name in names:
        if name == "v1":
            root, shipped = make(out, "v1", mpk, {VARIANT: v1}, [(VARIANT, None)], "1.0.0", "2026-11-01T00:00:00Z", x, exact)
        elif name == "v2":
            root, shipped = make(out, "v2", mpk, {VARIANT: v2}, [(VARIANT, None)], "2.0.0", "2026-12-01T00:00:00Z", x, exact,
                                 {"the previous version's weights merged": v1_merged})
        elif name == "v2-reshaped":
            # Layer 2 gains an output row: its weight [6K+1, 12K] no longer takes v1's B [6K, rank].
            rows = dims[3] + 1
            w = np.random.RandomState(7).uniform(-1, 1, (rows, dims[2])).astype(np.float32)
            b = np.random.RandomState(8).uniform(-0.5, 0.5, (rows, mop.RANK)).astype(np.float32)
            layers = [v2[0], v2[1], (w, v2[2][1], b)]
            root, shipped = make(out, "v2-reshaped", mpk, {VARIANT: layers}, [(VARIANT, None)], "2.1.0",
                                 "2026-12-02T00:00:00Z", x, False, adapter_layers=v1)
            n = mop.layer_names(2)
            mop.write(os.path.join(root, "reshaped.json"), json.dumps({
                "entry": n["base"], "file": n["file"], "initializer": n["init"],
                "shape_before": [dims[3], dims[2]], "shape_after": [rows, dims[2]]}))
        elif name == "ref":
            other = [(w, a, b) for w, (a, b) in zip(weights(np.random.RandomState(99), dims), ab)]
            root, shipped = make(out, "ref", mpk, {"cpu-int8": other, "cpu-int4": v1},
                                 [("cpu-int8", "QInt8"), ("cpu-int4", "int4")], "1.0.0", "2026-11-01T00:00:00Z", x, exact)
        else:
            sys.exit("make_lifecycle_packages: unknown package %r" % name)
        # Every shipped file of the package, by package path, from its sealed manifest.
        with open(os.path.join(root, "pkg", "mobiletransformers_manifest.json")) as f:
            manifest = json.load(f)
        summary["packages"][name] = {"dir": root, "tensors": shipped, "sha256": manifest["sha256"]}
        print(root)
    with open(os.path.join(out, "packages.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
