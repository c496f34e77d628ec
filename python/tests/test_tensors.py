"""Tensor views from the load gate: zero-copy numpy arrays and DLPack, alive as long as referenced."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

import modelpkg
from modelpkg import tensors as T
from conftest import EXAMPLES

np = pytest.importorskip("numpy", reason="SKIP: /usr/bin/python3 module numpy not found (python3-numpy)")

Q = "backbone.model.layers.0.self_attn.q_proj.base_layer"
V = "backbone.model.layers.0.self_attn.v_proj.base_layer"
INF = Path("variants/cpu-fp16/inference")


def from_file(path: str, dtype: str, shape) -> "np.ndarray":
    return np.fromfile(path, dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)


def test_gate_and_views_of_the_example():
    with T.open_tensors(EXAMPLES / "mt-tiny") as t:
        assert t.ready and t.variant == "cpu-fp16" and t.problems == []
        assert [(g.layer, g.status, g.dtype, g.shape) for g in t.tensors] == [
            (Q, "verified", "float32", (4, 3)), (V, "verified", "float16", (6, 4))]
        views = t.views()
    assert set(views) == {Q, V}
    for g in t.tensors:
        v = views[g.layer]
        assert (v.dtype, v.shape, v.nbytes, v.file) == (g.dtype, g.shape, g.size, g.file)
        a = v.numpy()
        assert a.dtype == np.dtype(g.dtype) and a.shape == g.shape
        assert np.array_equal(a, from_file(g.file, g.dtype, g.shape))
        assert a.__array_interface__["data"][0] == v.data_ptr  # the mapping itself, no copy
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 1


def test_dlpack_shares_the_mapping():
    with T.open_tensors(EXAMPLES / "mt-tiny") as t:
        v = t.open(Q)
    assert v.__dlpack_device__() == (1, 0)  # kDLCPU
    b = np.from_dlpack(v)
    a = v.numpy()
    assert np.shares_memory(a, b) and b.__array_interface__["data"][0] == v.data_ptr
    assert np.array_equal(a, b)


def test_arrays_outlive_the_view_and_the_gate():
    t = T.open_tensors(EXAMPLES / "mt-tiny")
    v = t.open(V)
    want = from_file(v.file, "float16", (6, 4))
    a = v.numpy()
    b = np.from_dlpack(v)
    assert len(T._live) == 1  # the DLPack consumer holds one managed tensor
    t.close()
    del t, v
    gc.collect()
    assert np.array_equal(a, want) and np.array_equal(b, want)  # the mapping is alive
    del b
    gc.collect()
    assert len(T._live) == 0  # numpy called the deleter
    assert np.array_equal(a, want)
    cap = a.base.__dlpack__()  # a capsule never consumed gives its tensor back when collected
    assert len(T._live) == 1
    del cap
    gc.collect()
    assert len(T._live) == 0


def test_open_by_initializer_name_and_unknown():
    with T.open_tensors(EXAMPLES / "mt-tiny") as t:
        v = t.open("model.layers.0.attn.q_proj.MatMul.weight")
        assert v.layer == Q
        with pytest.raises(KeyError):
            t.open("no.such.layer")
        with pytest.raises(ValueError):
            t.open(Q, role="no-such-role")


def test_refused_tensor_fails_closed(tmp_path):
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLES / "mt-tiny", pkg)
    f = pkg / INF / "model.layers.0.attn.q_proj.MatMul.weight.bin"
    data = bytearray(f.read_bytes())
    data[0] ^= 1
    f.write_bytes(bytes(data))
    with T.open_tensors(pkg) as t:
        assert not t.ready
        bad = next(g for g in t.tensors if g.layer == Q)
        assert bad.status == "mismatch"
        assert any(p.file.endswith(f.name) for p in t.problems)
        with pytest.raises(modelpkg.MismatchError) as e:
            t.open(V)  # no view of any tensor while one is refused
        assert e.value.file.endswith(f.name)


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="SKIP: /proc/self/statm not found")
def test_a_large_view_is_not_copied(tmp_path):
    """A 256 MiB tensor: opening it as numpy and through DLPack does not grow the resident set by
    its size (the pages are mapped, not read)."""
    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLES / "mt-tiny", pkg)
    rows, cols = 8192, 8192  # float32: 256 MiB
    size = rows * cols * 4
    f = pkg / INF / "model.layers.0.attn.q_proj.MatMul.weight.bin"
    h = hashlib.sha256()
    with open(f, "wb") as out:
        block = np.arange(cols * 64, dtype="<f4").tobytes()
        for _ in range(rows // 64):
            out.write(block)
            h.update(block)
    digest = h.hexdigest()
    (f.parent / (f.name + ".sha256")).write_text(digest + "\n")
    mp = pkg / INF / "weight_handoff_map.json"
    doc = json.loads(mp.read_text())
    for e in doc["entries"]:
        if e["trainingBaseLayerName"] == Q:
            e["shape"] = [rows, cols]
            e["tensorShapes"]["weight"] = [rows, cols]
            e["sha256"]["weight"] = digest
    mp.write_text(json.dumps(doc, indent=2))
    with T.open_tensors(pkg) as t:
        assert t.ready, t.problems
        gc.collect()
        before = rss_bytes()
        v = t.open(Q)
        a = v.numpy()
        b = np.from_dlpack(v)
        grown = rss_bytes() - before
    assert a.shape == (rows, cols) and a.nbytes == size
    assert grown < size // 8, f"resident set grew by {grown} bytes for a {size}-byte tensor"
    assert a[rows - 1, cols - 1] == float(cols * 64 - 1) and b[0, 1] == 1.0  # touch two pages only
