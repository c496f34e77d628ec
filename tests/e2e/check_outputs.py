#!/usr/bin/python3
"""Compare ONNX Runtime's outputs (run_onnx.js) and the package's weights with expected.json
(make_onnx_package.py's float64 results). Prints one line per check and the figures; exit 1 when
any check fails.

usage: /usr/bin/python3 check_outputs.py CASE_DIR before|after ORT_OUTPUTS.json [INFERENCE_DIR]
  INFERENCE_DIR: where the .bin files are (an installed tree's inference/); default the package's

Tolerances, relative to each output's magnitude (max |expected|), per output tensor:
  float32 weights: 1e-5. ONNX Runtime computes in float32: dot products of at most 12 terms through
    three layers round at ~2^-24 per operation, a few 1e-7 of the output magnitude (measured here:
    <= 2e-7). A merged float32 weight adds one rounding per element (2^-24). 1e-5 leaves ~50x margin
    and is 1e4 times smaller than the nearest wrong merge (they are checked to be far away).
  float16 weights: 1e-3 after the merge. The merged weight must be rounded to float16 (unit
    roundoff 2^-11 ~ 4.9e-4 per element); each output sums such errors over its inputs, and they
    add up through the layers: measured 1.8e-4 to 3.0e-4. Before the merge the float16 weights are exact
    in float64, so the float32 tolerance applies.
The float16 weight check is tighter than the outputs can be: every merged element must be the
float16 nearest to the exact float64 value, up to the float32 accumulation error the issue allows
(merge in float32, then round) — a truncating conversion fails it.
"""
import hashlib
import json
import os
import sys

import numpy as np

NP = {"float32": np.float32, "float16": np.float16}
TOL = {"float32": 1e-5, "float16": 1e-3}
SEP_FACTOR = 20   # a wrong merge must be at least this many tolerances away from the right one

failures = 0


def report(ok, what):
    global failures
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures += 1


def rel_err(got, exp):
    got, exp = np.asarray(got, np.float64), np.asarray(exp, np.float64)
    err = np.abs(got - exp).max()
    return err, err / np.abs(exp).max()


def compare_outputs(ort, expected, tol, label):
    for name in sorted(expected):
        if name not in ort:
            report(False, "%s: ONNX Runtime gave no output %s" % (label, name))
            continue
        err, rel = rel_err(ort[name]["data"], expected[name])
        report(rel <= tol, "%s: %s max abs error %.3g, relative to magnitude %.3g (tolerance %g)" %
               (label, name, err, rel, tol))


def read_bin(inf, w):
    with open(os.path.join(inf, w["file"]), "rb") as f:
        raw = f.read()
    return raw, np.frombuffer(raw, np.dtype(NP[w["dtype"]]).newbyteorder("<")).reshape(w["shape"])


def forward(x, disk_weights, layout):
    h = np.asarray(x, np.float64)
    ys = {}
    for i, w in enumerate(disk_weights):
        w = w.astype(np.float64)
        h = h @ (w.T if layout == "no_transpose" else w)
        ys["y%d" % i] = h.ravel().tolist()
    return ys


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[2] not in ("before", "after"):
        sys.exit("usage: check_outputs.py CASE_DIR before|after ORT_OUTPUTS.json [INFERENCE_DIR]")
    case_dir, stage, ort_file = sys.argv[1:4]
    with open(os.path.join(case_dir, "expected.json")) as f:
        exp = json.load(f)
    with open(os.path.join(case_dir, "inputs.json")) as f:
        xin = json.load(f)["x"]
    x = np.array(xin["data"], np.float64).reshape(xin["dims"])
    with open(ort_file) as f:
        ort = json.load(f)
    inf = sys.argv[4] if len(sys.argv) == 5 else os.path.join(case_dir, "pkg", "variants", exp["variant"], "inference")
    dtype, layout = exp["dtype"], exp["layout"]
    label = "%s %s" % (exp["case"], stage)

    for name, dims in exp["output_dims"].items():
        if name in ort and ort[name]["dims"] != dims:
            report(False, "%s: %s has dims %s, expected %s" % (label, name, ort[name]["dims"], dims))

    if stage == "before":
        # The harness: ONNX Runtime reads the shipped .bin files as the package describes them.
        compare_outputs(ort, exp["before"], TOL["float32"], label + " vs float64 x@W_baseᵀ")
        for w in exp["weights"]:
            raw, _ = read_bin(inf, w)
            report(hashlib.sha256(raw).hexdigest() == w["base_sha256"], "%s: %s is the shipped base" % (label, w["file"]))
        # The test can fail: every plausible wrong merge lands far outside the tolerance.
        mag = {k: np.abs(np.array(v)).max() for k, v in exp["after"].items()}
        for what, ys in sorted(exp["wrong"].items()):
            sep = max(np.abs(np.array(ys[k]) - np.array(exp["after"][k])).max() / mag[k] for k in ys)
            report(sep > SEP_FACTOR * TOL[dtype], "%s: a wrong merge (%s) is %.3g away from the right one, relative "
                   "(> %d x tolerance)" % (label, what, sep, SEP_FACTOR))
        return

    compare_outputs(ort, exp["after"], TOL[dtype], label + " vs float64 x@(W+scale·BA)ᵀ")
    disk = []
    for w in exp["weights"]:
        raw, m = read_bin(inf, w)
        disk.append(m)
        digest = hashlib.sha256(raw).hexdigest()
        report(digest != w["base_sha256"], "%s: %s was rewritten" % (label, w["file"]))
        try:
            with open(os.path.join(inf, w["file"] + ".sha256")) as f:
                sidecar = f.read()
        except OSError as e:
            sidecar = "(%s)" % e
        report(sidecar == digest + "\n", "%s: %s.sha256 holds the new digest and a newline" % (label, w["file"]))
        # Correct rounding: the stored value is as close to the exact one as the nearest value of the
        # dtype is, give or take the float32 accumulation error (a few units of 2^-24 of |W| + s·Σ|B||A|).
        e = np.array(w["merged_exact"], np.float64).reshape(w["shape"])
        nearest = e.astype(NP[dtype]).astype(np.float64)  # numpy rounds float64 to either dtype to nearest
        # Merging in float32 errs by at most ~(rank + 2)·2^-24 of the magnitude, and rounding that
        # float32 value can land on the other side of a tie: twice that, with room.
        slack = 16 * 2.0 ** -24 * np.array(w["accumulation_magnitude"]).reshape(w["shape"])
        got = m.astype(np.float64)
        excess = np.abs(got - e) - np.abs(nearest - e) - slack
        report(bool((excess <= 0).all()), "%s: %s: every element the %s nearest the exact merge (max error %.3g; "
               "%d of %d elements not the nearest, %d of them beyond the float32 accumulation error)" %
               (label, w["file"], dtype, np.abs(got - e).max(), int((got != nearest).sum()), got.size,
                int((excess > 0).sum())))
    # ONNX Runtime used the merged bytes on disk: a float64 run over exactly those weights.
    compare_outputs(ort, forward(x, disk, layout), TOL["float32"], label + " vs float64 over the merged .bin bytes")


if __name__ == "__main__":
    main()
    sys.exit(1 if failures else 0)
