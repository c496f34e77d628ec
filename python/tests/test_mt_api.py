"""modelpkg.mt beyond the first slice, each compared with the native CLI's --json on the same input:
variant selection and the download plan (mt select / mt plan), install into a device cache from a
directory and over HTTP (mt install; progress, cancellation, refusals), the installed model, the
weight handoff map as an object (its bytes, refusals, mt handoff build), the LoRA merge (mt merge),
and tensor views of an installed model."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import modelpkg
from modelpkg import mt
from conftest import EXAMPLES, MT, TINY, need

MANIFEST = "mobiletransformers_manifest.json"
MT_TINY = EXAMPLES / "mt-tiny"
ADAPTER = EXAMPLES / "mt-tiny.adapter.safetensors"
Q = "backbone.model.layers.0.self_attn.q_proj.base_layer"
# Installing, and opening a package over HTTP, are the fetch component's (docs/components.md): in a
# build without it the library refuses them (UnsupportedError) and these tests are skipped, named.
needs_fetch = pytest.mark.skipif(not modelpkg.has_component("fetch"),
                                 reason="SKIP: libmodelpkg built without the fetch component (mt install, HTTP sources)")


def run_json(cli: str, *args: str) -> Tuple[int, Dict[str, Any]]:
    p = subprocess.run([cli, *args, "--json"], capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout)


def copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return dst


def snapshot(root: Path) -> Dict[str, bytes]:
    """Every regular file under root (relative path -> bytes), dot directories included."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def http_root(tmp_path_factory: Any) -> Iterator[Tuple[str, Path]]:
    """A plain HTTP server (the standard library's) over a directory holding both fixtures."""
    root = tmp_path_factory.mktemp("www")
    shutil.copytree(MT_TINY, root / "mt-tiny")
    if TINY.exists():
        shutil.copytree(TINY, root / "tiny")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", root
    finally:
        srv.shutdown()
        srv.server_close()


# ------------------------------------------------------------------------------ select and plan

SELECT_CASES: List[Tuple[List[str], mt.Device, Any]] = [
    ([], mt.Device(), None),
    (["--abi", "arm64-v8a"], mt.Device(abis=["arm64-v8a"]), None),
    (["--engine", "genai"], mt.Device(engine="genai"), None),
    (["--abi", "x86_64", "--api-level", "28"], mt.Device(abis=["x86_64"], api_level=28), None),
    (["--memory-mb", "1024"], mt.Device(memory_mb=1024), None),
    (["--abi", "arm64-v8a", "--storage-bytes", "3000"], mt.Device(abis=["arm64-v8a"], storage_bytes=3000), None),
    (["--abi", "arm64-v8a,x86_64", "--storage-bytes", "2999"],
     mt.Device(abis=["arm64-v8a", "x86_64"], storage_bytes=2999), None),
    (["--storage-bytes", "2556"], mt.Device(storage_bytes=2556), None),
    (["--prefer-quant", "QInt8,fp16,int4"], mt.Device(prefer_quant=["QInt8", "fp16", "int4"]), None),
    (["--ep", "cpu", "--quant", "fp16"], mt.Device(execution_provider="cpu", quantization="fp16"), None),
    (["--features", "inference,train,rag"], mt.Device(), ["inference", "train", "rag"]),
    (["--features", "genai", "--memory-mb", "4096"], mt.Device(memory_mb=4096), ["genai"]),
]


@pytest.mark.parametrize("args,device,features", SELECT_CASES, ids=[" ".join(c[0]) or "none" for c in SELECT_CASES])
def test_select_equals_the_cli(cli, args, device, features):
    for pkg in (need(TINY), MT_TINY):
        rc, doc = run_json(cli, "mt", "select", str(pkg), *args)
        sel = mt.select(str(pkg), device, features=features)
        assert sel.to_dict() == doc
        assert (rc == 0) == sel.ok


def test_select_no_variant_names_each_filter():
    sel = mt.select(need(TINY), mt.Device(memory_mb=1024))
    assert sel.chosen is None and not sel.ok
    assert [c.excluded_by for c in sel.candidates] == ["recommendedDeviceMemoryMb"] * 2
    assert sel.error is not None and sel.error.pointer == "/variants" and sel.error.message == sel.summary
    with pytest.raises(modelpkg.NoVariantError) as e:
        sel.raise_for_no_variant()
    assert "cpu-int4: recommendedDeviceMemoryMb 3072 exceeds the device memory of 1024 MB" in e.value.rule


def test_select_fallback_and_budget():
    sel = mt.select(need(TINY), mt.Device(abis=["arm64-v8a"], storage_bytes=2999))
    assert sel.chosen == "cpu-fp16" and sel.fell_back and sel.budget_bytes == 2699 == mt.storage_budget(2999)
    c = {x.id: x for x in sel.candidates}
    assert (c["cpu-int4"].rank, c["cpu-int4"].download_bytes, c["cpu-int4"].excluded_by) == (1, 2700, "storage")
    assert c["cpu-fp16"].chosen and c["cpu-fp16"].download_bytes == 2301
    # a Manifest object, the manifest file and the directory select alike
    m = mt.Manifest.load(TINY)
    assert mt.select(m).chosen == mt.select(TINY / MANIFEST).chosen == mt.select(TINY).chosen == "cpu-int4"


def test_select_refusals_as_the_cli(cli, tmp_path):
    for bad in (mt.Device(abis=["arm64"]), mt.Device(engine="onnx"), mt.Device(memory_mb=-1),
                mt.Device(execution_provider="")):
        with pytest.raises(ValueError):
            mt.select(MT_TINY, bad)
    with pytest.raises(ValueError):
        mt.select(MT_TINY, features=["inference", ""])
    rc, doc = run_json(cli, "mt", "select", str(tmp_path / "nope"))
    with pytest.raises(modelpkg.NotFoundError) as e:
        mt.select(str(tmp_path / "nope"))
    assert rc == 1 and doc["problems"][0]["code"] == e.value.code_name == "not-found"
    assert doc["problems"][0]["file"] == e.value.file and doc["problems"][0]["message"] == e.value.rule


PLAN_CASES = [([], None, None), (["--variant", "cpu-int4"], "cpu-int4", None),
              (["--variant", "cpu-fp16"], "cpu-fp16", None),
              (["--variant", "cpu-int4", "--features", "inference,train,rag"], "cpu-int4", ["inference", "train", "rag"])]


@pytest.mark.parametrize("args,variant,features", PLAN_CASES, ids=[" ".join(c[0]) or "default" for c in PLAN_CASES])
def test_plan_equals_the_cli(cli, args, variant, features):
    for pkg in (need(TINY), MT_TINY):
        rc, doc = run_json(cli, "mt", "plan", str(pkg), *args)
        if rc == 0:
            assert mt.plan_download(str(pkg), variant, features=features).to_dict() == doc
            continue
        with pytest.raises(modelpkg.Error) as e:  # refused alike (mt-tiny's cpu-int4 declares no train)
            mt.plan_download(str(pkg), variant, features=features)
        p = doc["problems"][0]
        assert (p["code"], p["file"], p["pointer"], p["message"]) == (
            e.value.code_name, e.value.file, e.value.pointer, e.value.rule)
    plan = mt.plan_download(TINY, "cpu-int4")
    assert (len(plan.files), plan.total_bytes) == (12, 2700) and plan.installable and plan.includes_manifest
    assert all(f.path != MANIFEST for f in plan.files)


def test_plan_unverifiable_and_refusals(cli, tiny_copy):
    doc = json.loads((tiny_copy / MANIFEST).read_text())
    victim = "shared/config.json"
    del doc["sha256"][victim]
    (tiny_copy / MANIFEST).write_text(json.dumps(doc, indent=2))
    rc, cdoc = run_json(cli, "mt", "plan", str(tiny_copy), "--variant", "cpu-int4")
    plan = mt.plan_download(str(tiny_copy), "cpu-int4")
    assert rc == 1 and plan.to_dict() == cdoc and not plan.installable
    assert plan.n_unverifiable == 1 and plan.problems[0].file.endswith(MANIFEST) and victim in plan.problems[0].rule
    with pytest.raises(modelpkg.MalformedError) as e:  # what the installer refuses
        mt.plan_download(tiny_copy, "cpu-int4", allow_unverifiable=False)
    assert victim in e.value.rule
    for args, kw in ((["--variant", "nope"], {"variant": "nope"}),
                     (["--variant", "cpu-int4", "--features", "nope"], {"variant": "cpu-int4", "features": ["nope"]})):
        rc, cdoc = run_json(cli, "mt", "plan", str(TINY), *args)
        with pytest.raises(modelpkg.NotFoundError) as e:
            mt.plan_download(str(TINY), **kw)
        p = cdoc["problems"][0]
        assert rc == 1 and (p["file"], p["pointer"], p["message"]) == (e.value.file, e.value.pointer, e.value.rule)


@needs_fetch
def test_select_and_plan_over_http(cli, http_root):
    url, _ = http_root
    base = f"{url}/tiny"
    need(TINY)
    for args, dev in (([], mt.Device()), (["--abi", "arm64-v8a", "--storage-bytes", "2999"],
                                          mt.Device(abis=["arm64-v8a"], storage_bytes=2999))):
        rc, doc = run_json(cli, "mt", "select", base, *args)
        assert mt.select(base, dev).to_dict() == doc
    rc, doc = run_json(cli, "mt", "plan", base, "--variant", "cpu-fp16")
    assert mt.plan_download(base, "cpu-fp16").to_dict() == doc
    with pytest.raises(modelpkg.Error):
        mt.open_source(f"{url}/no-such-package")


# ------------------------------------------------------------------------------------- install


def comparable(res: mt.InstallResult, cache: Path) -> Dict[str, Any]:
    d = res.to_dict()
    d["repo_dir"] = os.path.relpath(d["repo_dir"], cache)
    del d["seconds"]
    return d


def tree_without_records(root: Path) -> Dict[str, bytes]:
    """An installed tree's files but the two install records (their time and id differ per install)."""
    return {k: v for k, v in snapshot(root).items() if k not in ("modelpkg_install.json", "install_record.json")}


@needs_fetch
@pytest.mark.parametrize("args,kw", [
    ([], {}),
    (["--variant", "cpu-int4", "--features", "inference,train"], {"variant": "cpu-int4", "features": ["inference", "train"]}),
    (["--abi", "arm64-v8a", "--jobs", "2"], {"device": mt.Device(abis=["arm64-v8a"]), "jobs": 2}),
], ids=["default", "variant-features", "selected"])
def test_install_equals_the_cli(cli, tmp_path, args, kw):
    src = need(TINY)
    c1, c2 = tmp_path / "c1", tmp_path / "c2"
    p = subprocess.run([cli, "mt", "install", str(src), "--repo-id", "org/Tiny", "--cache", str(c1), *args, "--json"],
                       capture_output=True, text=True)
    doc = json.loads(p.stdout)
    events: List[mt.InstallEvent] = []
    res = mt.install(src, "org/Tiny", c2, progress=events.append, **kw)
    assert p.returncode == 0
    d = comparable(res, c2)
    doc["repo_dir"] = os.path.relpath(doc["repo_dir"], c1)
    del doc["seconds"]
    assert d == doc
    assert res.repo_dir == str(c2 / "org__Tiny") and mt.sanitize_repo_id("org/Tiny") == "org__Tiny"
    assert tree_without_records(c1 / "org__Tiny") == tree_without_records(c2 / "org__Tiny")
    kinds = [e.kind for e in events]
    assert kinds[0] == "planned" and kinds[-1] == "committed" and kinds.count("file_done") == res.files
    assert events[-1].done == events[-1].total == res.total_bytes
    inst = mt.installed(res.repo_dir)
    assert (inst.repo_id, inst.variant, inst.record, inst.source) == ("org/Tiny", res.variant, "modelpkg", str(src))
    # installed again: replaced, the same tree
    again = mt.install(src, "org/Tiny", c2, **kw)
    assert again.replaced and tree_without_records(c2 / "org__Tiny") == tree_without_records(c1 / "org__Tiny")


@needs_fetch
def test_install_over_http(cli, http_root, tmp_path):
    url, _ = http_root
    src = f"{url}/mt-tiny"
    p = subprocess.run([cli, "mt", "install", src, "--repo-id", "org/Tiny", "--cache", str(tmp_path / "c1"), "--json"],
                       capture_output=True, text=True)
    doc = json.loads(p.stdout)
    res = mt.install(src, "org/Tiny", tmp_path / "c2", connections=2)
    doc["repo_dir"] = os.path.relpath(doc["repo_dir"], tmp_path / "c1")
    del doc["seconds"]
    assert p.returncode == 0 and comparable(res, tmp_path / "c2") == doc
    assert tree_without_records(tmp_path / "c1" / "org__Tiny") == tree_without_records(tmp_path / "c2" / "org__Tiny")
    assert mt.installed(res.repo_dir).source == src


@needs_fetch
def test_install_cancel_leaves_the_cache_unchanged(tmp_path):
    src = MT_TINY
    cache = tmp_path / "cache"
    with pytest.raises(modelpkg.CancelledError):  # a first install, cancelled: nothing installed
        mt.install(src, "org/Tiny", cache, progress=lambda e: e.kind == "file_done")
    assert not (cache / "org__Tiny").exists()
    res = mt.install(src, "org/Tiny", cache)  # resumes what was staged
    before = snapshot(cache / "org__Tiny")
    with pytest.raises(modelpkg.CancelledError):  # an update cancelled: the install untouched
        mt.install(src, "org/Tiny", cache, variant="cpu-int4", progress=lambda e: e.kind == "bytes")
    assert snapshot(cache / "org__Tiny") == before

    class Stop(Exception):
        pass

    def boom(e: mt.InstallEvent) -> None:
        raise Stop()

    with pytest.raises(Stop):  # the callback's own exception, not CancelledError
        mt.install(src, "org/Tiny", cache, variant="cpu-int4", progress=boom)
    assert snapshot(cache / "org__Tiny") == before
    assert mt.installed(res.repo_dir).variant == "cpu-fp16"


@needs_fetch
def test_install_refusals(cli, tmp_path, tiny_copy):
    doc = json.loads((tiny_copy / MANIFEST).read_text())
    del doc["fileSizes"]["shared/config.json"]
    (tiny_copy / MANIFEST).write_text(json.dumps(doc, indent=2))
    rc, cdoc = run_json(cli, "mt", "install", str(tiny_copy), "--repo-id", "org/T", "--cache", str(tmp_path / "c1"))
    with pytest.raises(modelpkg.MalformedError) as e:
        mt.install(tiny_copy, "org/T", tmp_path / "c2")
    p = cdoc["problems"][0]
    assert rc == 1 and (p["code"], p["file"], p["pointer"], p["message"]) == (
        e.value.code_name, e.value.file, e.value.pointer, e.value.rule)
    assert "shared/config.json" in e.value.rule
    assert not (tmp_path / "c2" / "org__T").exists()
    with pytest.raises(ValueError):
        mt.install(MT_TINY, "org/T", tmp_path / "c3", variant="cpu-fp16", device=mt.Device(abis=["x86"]))
    with pytest.raises(ValueError):
        mt.install(MT_TINY, "org/T", tmp_path / "c3", jobs=0)
    with pytest.raises(modelpkg.InvalidArgumentError):
        mt.sanitize_repo_id("..")
    with pytest.raises(modelpkg.NotFoundError):
        mt.installed(MT_TINY)  # a package directory is not an installed model


# ---------------------------------------------------------------------------------- handoff map


def test_handoff_map_to_json_is_the_exporters_file():
    # the 1.1 maps the exporter writes (the example's, the federated fixture of test_mt_handoff.c)
    maps = sorted(MT_TINY.rglob("weight_handoff_map.json")) + [need(MT / "android_test_federated_handoff.json")]
    assert len(maps) >= 4
    for f in maps:
        h = mt.HandoffMap.load(f)
        assert h.to_json() == f.read_bytes(), f
        assert mt.HandoffMap.parse(h.to_json(), "again.json").to_json() == h.to_json()
    # the tiny package's older 1.0 maps are written with the fields to_json() adds, then a fixpoint
    for f in sorted(need(TINY).rglob("weight_handoff_map.json")):
        h = mt.HandoffMap.load(f)
        out = h.to_json()
        assert h.schema_version == "1.0" and b'      "tensorDtypes": {},\n      "tensorShapes": {},\n' in out
        assert mt.HandoffMap.parse(out).to_json() == out
    h = mt.HandoffMap.load(MT_TINY / "variants/cpu-fp16/inference")  # a directory: its map
    raw = json.loads((MT_TINY / "variants/cpu-fp16/inference/weight_handoff_map.json").read_text())
    assert h.schema_version == raw["schemaVersion"] and len(h) == len(raw["entries"])
    e = h.entry(Q)
    assert e is h.entry(e.inference_initializer_names["weight"]) or e == h.entry(e.inference_initializer_names["weight"])
    assert h.role_layout(e) == ("float32", (4, 3)) and e.transpose_policy == "no_transpose"
    assert e.checkpoint_names["adapter_A"].endswith("lora_A.default.weight")
    with pytest.raises(modelpkg.NotFoundError):
        h.role_layout(e, "scale")
    with pytest.raises(KeyError):
        h.entry("no-such-layer")


def test_handoff_map_refusals_name_the_field():
    path = MT_TINY / "variants/cpu-fp16/inference/weight_handoff_map.json"
    doc = json.loads(path.read_text())
    doc["entries"][1]["sha256"]["weight"] = "ABC"
    with pytest.raises(modelpkg.MalformedError) as e:
        mt.HandoffMap.parse(doc, "map.json")
    assert e.value.file == "map.json" and e.value.pointer == "/entries/1/sha256/weight"
    doc = json.loads(path.read_text())
    doc["schemaVersion"] = "2.0"
    with pytest.raises(modelpkg.VersionError) as e:
        mt.HandoffMap.parse(doc, "map.json")
    assert e.value.pointer == "/schemaVersion"


def test_handoff_build_equals_the_cli(cli, tmp_path):
    a, b = copy(MT_TINY, tmp_path / "a"), copy(MT_TINY, tmp_path / "b")
    rc, doc = run_json(cli, "mt", "handoff", "build", str(a), "--dry-run")
    res = mt.HandoffMap.build(str(a), dry_run=True)
    assert rc == 0 and res.to_dict() == doc and snapshot(a) == snapshot(b)  # a dry run writes nothing
    rc, doc = run_json(cli, "mt", "handoff", "build", str(a), "--variant", "cpu-fp16")
    res = mt.HandoffMap.build(str(b), "cpu-fp16")
    doc["dir"], doc["map"] = str(b), doc["map"].replace(str(a), str(b))
    assert rc == 0 and res.to_dict() == doc and res.changed
    assert Path(res.path).read_bytes() == res.map_bytes == res.map.to_json()
    assert snapshot(a) == snapshot(b)
    assert not mt.HandoffMap.build(b, "cpu-fp16").changed  # a fixpoint
    with pytest.raises(modelpkg.UnsupportedError) as e:
        mt.HandoffMap.build(b, "cpu-fp16", peft_method="no-such-method")
    assert '"no-such-method"' in e.value.rule


# ---------------------------------------------------------------------------------------- merge


def merge_doc(r: mt.MergeReport, root: Path, other: Path) -> Dict[str, Any]:
    d = r.to_dict()
    d["inference_dir"] = d["inference_dir"].replace(str(root), str(other))
    return d


def merged_files(root: Path) -> Dict[str, bytes]:
    """The tensors, sidecars and map of every inference directory (the merge's records hold times)."""
    return {k: v for k, v in snapshot(root).items() if "/inference/" in f"/{k}" and not Path(k).name.startswith(".")}


def test_merge_equals_the_cli(cli, tmp_path):
    a, b = copy(MT_TINY, tmp_path / "a"), copy(MT_TINY, tmp_path / "b")
    rc, doc = run_json(cli, "mt", "merge", str(a), "--adapter", str(ADAPTER), "--dry-run")
    r = mt.merge(b, ADAPTER, dry_run=True)
    assert rc == 0 and merge_doc(r, b, a) == doc and not r.written and snapshot(b) == snapshot(copy(MT_TINY, tmp_path / "c"))
    rc, doc = run_json(cli, "mt", "merge", str(a), "--adapter", str(ADAPTER), "--jobs", "2")
    r = mt.merge(b, ADAPTER, workers=2)
    assert rc == 0 and merge_doc(r, b, a) == doc and r.written
    assert r.orientation == "no_transpose" and len(r.entries) == 2 and r.entries[0].sha256["weight"]
    assert merged_files(a) == merged_files(b)
    assert merged_files(b) != merged_files(tmp_path / "c")
    # the merged bytes are what the report says, and check accepts them (merged on device)
    inf = b / "variants/cpu-fp16/inference"
    for e in r.entries:
        f = inf / mt.HandoffMap.load(inf).entries[e.entry].external_data_location["weight"]
        assert hashlib.sha256(f.read_bytes()).hexdigest() == e.sha256["weight"]
    assert mt.check(b).ok


def test_merge_refusals_leave_the_tree_unchanged(cli, tmp_path):
    b = copy(MT_TINY, tmp_path / "b")
    mt.merge(b, ADAPTER)
    before = snapshot(b)
    rc, doc = run_json(cli, "mt", "merge", str(b), "--adapter", str(ADAPTER))
    with pytest.raises(modelpkg.Error) as e:  # no merge applies twice
        mt.merge(b, ADAPTER)
    p = doc["problems"][0]
    assert rc == 1 and (p["code"], p["file"], p["pointer"], p["message"]) == (
        e.value.code_name, e.value.file, e.value.pointer, e.value.rule)
    assert "already merged" in e.value.rule and e.value.file.endswith(".bin")
    assert snapshot(b) == before
    with pytest.raises(modelpkg.Error) as e:
        mt.merge(MT_TINY, ADAPTER, variant="cpu-int4", dry_run=True)
    assert "no usable scale" in e.value.rule
    with pytest.raises(modelpkg.Error):
        mt.merge(MT_TINY, MT_TINY / "README.md", dry_run=True)
    for bad in ({"orientation": "sideways"}, {"scale": float("inf")}, {"max_ratio": 2.0}, {"force": True}):
        with pytest.raises(ValueError):
            mt.merge(MT_TINY, ADAPTER, dry_run=True, **bad)


def test_merge_progress_and_cancel(tmp_path):
    b = copy(MT_TINY, tmp_path / "b")
    before = merged_files(b)
    seen = []
    with pytest.raises(modelpkg.CancelledError) as e:  # cancelled after the first of two entries
        mt.merge(b, ADAPTER, progress=lambda done, total: seen.append((done, total)) or done == 1)
    assert seen == [(0, 2), (1, 2)] and "cancelled after 1 of 2 entries" in e.value.rule
    assert merged_files(b) == before

    def boom(done: int, total: int) -> bool:
        raise KeyError("from the callback")
    with pytest.raises(KeyError):  # the callback's own exception, re-raised; nothing merged
        mt.merge(b, ADAPTER, progress=boom)
    assert merged_files(b) == before
    seen.clear()
    r = mt.merge(b, ADAPTER, progress=lambda done, total: seen.append((done, total)))
    assert r.written and seen == [(0, 2), (1, 2), (2, 2)] and merged_files(b) != before


# ----------------------------------------------------------- an installed model: merge and tensors


@needs_fetch
def test_installed_model_merge_and_tensor_views(cli, tmp_path):
    np = pytest.importorskip("numpy")
    res = mt.install(MT_TINY, "org/Tiny", tmp_path / "cache", features=["inference", "train"])
    with mt.open_tensors(res.repo_dir) as t:
        assert t.installed and t.ready and t.variant == "cpu-fp16"
        v = t.open(Q)
    shipped = MT_TINY / "variants/cpu-fp16/inference" / Path(v.file).name
    assert Path(v.file).parent == Path(res.repo_dir) / "inference"
    assert v.numpy().tobytes() == shipped.read_bytes()
    r = mt.merge(res.repo_dir, ADAPTER)
    assert r.written and r.inference_dir.endswith("org__Tiny/inference")
    with mt.open_tensors(res.repo_dir) as t:
        assert t.ready
        merged = t.open(Q)
        assert all(g.merged for g in t.tensors)
    assert hashlib.sha256(merged.numpy().tobytes()).hexdigest() == r.entries[0].sha256["weight"]
    assert np.from_dlpack(merged).shape == merged.shape
    assert v.numpy().tobytes() == shipped.read_bytes()  # the earlier view still maps the shipped bytes
    rc, doc = run_json(cli, "mt", "plan", res.repo_dir)  # the default rule: the installed variant
    assert mt.plan_download(res.repo_dir).to_dict() == doc and doc["variant"] == "cpu-fp16"
