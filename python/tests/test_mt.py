"""MobileTransformers through the binding: the version gate (check_compat_cases.json, as
test_mt_manifest.c), the cache's directory names (sanitize_repo_id_cases.json), the manifest, the package check, and sealing byte-identical to the exporter
(the tiny fixture, as test_mt_build.c)."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading

import pytest

import modelpkg
from modelpkg import mt
from conftest import EXAMPLES, MT, TINY, load_cases, need

MANIFEST = "mobiletransformers_manifest.json"


def test_check_compat_oracle():
    ran = 0
    for c in load_cases("check_compat_cases.json", MT)["cases"]:
        if c["expect"] == "accept":
            mt.check_versions(c["doc"], c["minReader"], c["reader"])
        else:  # refused: a newer major or minReader (VersionError), or a malformed version
            with pytest.raises((modelpkg.VersionError, modelpkg.MalformedError)):
                mt.check_versions(c["doc"], c["minReader"], c["reader"])
        ran += 1
    assert ran == 10


def test_sanitize_repo_id_oracle():
    cases = load_cases("sanitize_repo_id_cases.json", MT)["cases"]
    for c in cases:
        assert mt.sanitize_repo_id(c["input"]) == c["expected"], c["input"]
    assert len(cases) == 10
    for bad in ("", ".", ".."):
        with pytest.raises(modelpkg.InvalidArgumentError):
            mt.sanitize_repo_id(bad)
    with pytest.raises(modelpkg.LimitError):
        mt.sanitize_repo_id("a" * 256)
    assert mt.sanitize_repo_id("a" * 255) == "a" * 255


@pytest.mark.parametrize("bad", ["1", "1.x", " 1.0", "+1.0", "1.0.0", "", "1,0"])
def test_malformed_versions(bad):
    with pytest.raises(modelpkg.MalformedError):
        mt.check_versions(bad, "1.0")
    with pytest.raises(modelpkg.MalformedError):
        mt.check_versions("1.0", bad)


def test_missing_version_names_the_field():
    with pytest.raises(modelpkg.MalformedError) as e:
        mt.check_versions(None, "1.0")
    assert e.value.pointer == "/schemaVersion"
    with pytest.raises(modelpkg.MalformedError) as e:
        mt.check_versions("1.0", None)
    assert e.value.pointer == "/minReaderVersion"


# ------------------------------------------------------------------------------------ the manifest


def test_manifest_of_the_example():
    m = mt.Manifest.load(EXAMPLES / "mt-tiny")
    doc = json.loads((EXAMPLES / "mt-tiny" / MANIFEST).read_text())
    assert m.schema_version == doc["schemaVersion"] and m.min_reader_version == doc["minReaderVersion"]
    assert m.base_model_id == "MobileTransformers/Tiny-0.1B"
    assert m.default_variant == doc["defaultVariant"] == m.variant().id
    assert [v.id for v in m.variants] == [v["id"] for v in doc["variants"]]
    for v, dv in zip(m.variants, doc["variants"]):
        assert v.execution_provider == dv["executionProvider"] and v.quantization == dv["quantization"]
        assert v.features == dv["features"] and v.supported_engines == dv["supportedEngines"]
        assert v.abi == dv["abi"]
        assert v.paths == dv["paths"] and v.weight_handoff == dv["weightHandoff"]
    # every listed file, with the size and digest the manifest gives, and they are the files' own
    listed = set(doc["fileSizes"]) | set(doc["sha256"])
    assert [f.path for f in m.files] == sorted(listed)
    for f in m.files:
        assert f.size == doc["fileSizes"].get(f.path) and f.sha256 == doc["sha256"].get(f.path)
        data = (EXAMPLES / "mt-tiny" / f.path).read_bytes()
        assert len(data) == f.size and hashlib.sha256(data).hexdigest() == f.sha256
    assert m.download_plan.keys() == doc["downloadPlan"].keys()
    for vid, groups in doc["downloadPlan"].items():
        assert m.download_plan[vid] == groups
    assert m.required_files == doc["requiredFiles"]
    with pytest.raises(KeyError):
        m.variant("no-such-variant")


def test_plan_files():
    m = mt.Manifest.load(EXAMPLES / "mt-tiny")
    core = m.plan_files(groups=["core"])
    assert core and [f.path for f in core] == sorted(f.path for f in core)
    everything = {f.path for f in m.plan_files()}
    assert {f.path for f in core} <= everything
    assert all(f.path != MANIFEST for f in m.plan_files())  # the manifest itself is never listed
    with pytest.raises(modelpkg.NotFoundError):
        m.plan_files(groups=["no-such-group"])
    with pytest.raises(modelpkg.NotFoundError):
        m.plan_files("no-such-variant")


def test_manifest_to_json_is_the_exporters_bytes():
    # a manifest the exporter wrote comes back byte for byte (absent keys stay absent)
    m = mt.Manifest.load(need(TINY))
    assert m.to_json() == (TINY / MANIFEST).read_bytes()
    again = mt.Manifest.parse(m.to_json(), "again.json")
    assert again.to_json() == m.to_json()


def test_manifest_errors_name_the_field(tmp_path):
    doc = json.loads((EXAMPLES / "mt-tiny" / MANIFEST).read_text())
    doc["schemaVersion"] = "2.0"
    with pytest.raises(modelpkg.VersionError) as e:
        mt.Manifest.parse(doc, "m.json")
    assert e.value.file == "m.json" and e.value.pointer == "/schemaVersion"
    doc["schemaVersion"] = "1.0"
    doc["fileSizes"]["shared/config.json"] = -1
    with pytest.raises(modelpkg.MalformedError) as e:
        mt.Manifest.parse(doc, "m.json")
    assert e.value.pointer == "/fileSizes/shared~1config.json"
    with pytest.raises(modelpkg.NotFoundError):
        mt.Manifest.load(tmp_path)


# ------------------------------------------------------------------------------------- the check


def test_check_example_default_variant():
    r = mt.check(EXAMPLES / "mt-tiny")
    assert r.ok and r.problems == [] and r.format == "mobiletransformers"
    assert r.checked.variants == ["cpu-fp16"] and r.checked.hashed and not r.checked.all_variants
    assert r.files.in_scope == r.files.sized == r.files.hashed == 23
    assert r.tensors.gated == r.tensors.verified == 2
    assert r.manifest.default_variant == "cpu-fp16" and r.manifest.variants == ["cpu-fp16", "cpu-int4"]


def test_check_example_all_variants():
    # the README's sample: 33 files in scope, 33 sized, 33 verified (17470 bytes), 4 tensors
    r = modelpkg.check(EXAMPLES / "mt-tiny", all_variants=True)
    assert isinstance(r, modelpkg.MtReport) and r.ok
    assert (r.files.in_scope, r.files.sized, r.files.hashed, r.files.bytes_hashed) == (33, 33, 33, 17470)
    assert (r.tensors.gated, r.tensors.verified) == (4, 4)
    assert r.checked.all_variants and r.checked.variants == ["cpu-fp16", "cpu-int4"]


def test_check_no_hash():
    r = mt.check(EXAMPLES / "mt-tiny", no_hash=True)
    assert r.ok and not r.checked.hashed and r.files.hashed == 0 and r.files.sized == 23


def test_check_reports_a_changed_file(tiny_copy):
    target = tiny_copy / "shared" / "config.json"
    data = bytearray(target.read_bytes())
    data[0] ^= 1  # same size, other bytes
    target.write_bytes(bytes(data))
    r = mt.check(tiny_copy)
    assert not r.ok
    p = next(p for p in r.problems if p.file.endswith("shared/config.json"))
    assert p.code == "mismatch" and "sha256" in p.rule.lower()
    assert p.line.startswith(p.file)
    with pytest.raises(modelpkg.MismatchError) as e:
        r.raise_for_problems()
    assert e.value.file == r.problems[0].file


def test_check_reports_a_missing_file(tiny_copy):
    (tiny_copy / "shared" / "config.json").unlink()
    r = mt.check(tiny_copy, no_hash=True)
    assert not r.ok
    assert any(p.code == "not-found" and p.file.endswith("shared/config.json") for p in r.problems)


def test_check_refusals(tmp_path):
    with pytest.raises(ValueError):
        mt.check(EXAMPLES / "mt-tiny", variant="cpu-fp16", all_variants=True)
    with pytest.raises(ValueError):  # an MLC option on an MT package, as the CLI refuses it
        modelpkg.check(EXAMPLES / "mt-tiny", lib="x.wasm")
    with pytest.raises(ValueError):
        modelpkg.check(EXAMPLES / "gemma4-audio", all_variants=True)


def test_check_progress_and_cancel():
    seen = []
    r = mt.check(EXAMPLES / "mt-tiny", progress=lambda done, total: seen.append((done, total)))
    assert r.ok and seen
    assert seen[-1][0] == seen[-1][1] > 0
    with pytest.raises(modelpkg.CancelledError):
        mt.check(EXAMPLES / "mt-tiny", progress=lambda done, total: True)

    class Stop(Exception):
        pass

    def boom(done, total):
        raise Stop()

    with pytest.raises(Stop):  # the callback's own exception, not CancelledError
        mt.check(EXAMPLES / "mt-tiny", progress=boom)


# ----------------------------------------------------------------------------------------- build


def fixture_plus_counts() -> bytes:
    """The committed manifest with the two keys it predates, null, where json.dumps(sort_keys) puts them."""
    text = need(TINY / MANIFEST).read_bytes()
    anchor = b'  "transformersVersion": '
    at = text.index(anchor)
    return text[:at] + b'  "trainableParameterCount": null,\n  "trainingParameterCount": null,\n' + text[at:]


TINY_BUILD = {
    "baseModelId": "MobileTransformers/Tiny-0.1B", "exportedAt": "2026-07-14T00:00:00Z",
    "mobiletransformersVersion": "0.2.0", "architectures": ["LlamaForCausalLM"],
    "supportedTasks": ["text-generation", "text-generation-with-past"],
    "selectedTask": "text-generation-with-past", "trustRemoteCode": False,
    "optimumOnnxVersion": "0.1.0", "transformersVersion": "4.46.2",
    "onnxRuntimeTrainingVersion": "1.23.0", "onnxRuntimeGenAIVersion": "0.14.0",
    "peftMethods": ["lora"], "quantization": ["int4", "fp16"],
    "androidRuntime": {"minimumAndroidApi": 28, "recommendedDeviceMemoryMb": 3072, "requiredAbis": ["arm64-v8a"]},
    "license": {"framework": "Apache-2.0", "baseModelWeights": "Apache-2.0",
                "noticeFile": "licenses/BASE_MODEL_LICENSE"},
    "defaultVariant": "cpu-int4",
    "variants": [
        {"id": "cpu-int4", "executionProvider": "cpu", "quantization": "int4", "supportedEngines": ["native", "genai"],
         "abi": ["arm64-v8a"], "features": ["core", "inference", "train", "rag", "genai"],
         "minimumAndroidApi": 28, "recommendedDeviceMemoryMb": 3072},
        {"id": "cpu-fp16", "executionProvider": "cpu", "quantization": "fp16", "supportedEngines": ["native"],
         "abi": None, "features": ["core", "inference", "train"], "minimumAndroidApi": 28,
         "recommendedDeviceMemoryMb": 6144}]}

CHECKSUMS = ["variants/cpu-int4/checksums.json", "variants/cpu-fp16/checksums.json"]


def test_reseal_tiny_package_byte_exact(tiny_copy):
    res = mt.build(tiny_copy, workers=3)
    expected = fixture_plus_counts()
    assert res.manifest == expected
    assert (tiny_copy / MANIFEST).read_bytes() == expected
    for rel in CHECKSUMS:
        assert (tiny_copy / rel).read_bytes() == (TINY / rel).read_bytes()
    assert res.had_manifest and res.n_files == 31 and res.changes == []
    assert res.written == [MANIFEST]  # only the manifest, for the two keys
    again = mt.build(tiny_copy)
    assert again.written == [] and again.changes == []  # a fixpoint


@pytest.mark.parametrize("fresh", [False, True])
def test_build_from_describe_reproduces(tiny_copy, fresh):
    if fresh:  # a fresh export's initial condition: no checksums files yet, no manifest
        for rel in [MANIFEST, *CHECKSUMS]:
            (tiny_copy / rel).unlink()
    res = mt.build(tiny_copy, TINY_BUILD)  # a dict; text and bytes are taken too
    assert res.had_manifest == (not fresh)
    assert len(res.written) == (3 if fresh else 1)
    assert (tiny_copy / MANIFEST).read_bytes() == fixture_plus_counts()
    for rel in CHECKSUMS:
        assert (tiny_copy / rel).read_bytes() == (TINY / rel).read_bytes()
    # every listed file is listed with its own size and digest
    sealed = mt.Manifest.load(tiny_copy)
    assert len(sealed.files) == res.n_files == 31
    for f in sealed.files:
        data = (tiny_copy / f.path).read_bytes()
        assert f.size == len(data) and f.sha256 == hashlib.sha256(data).hexdigest()


def test_build_records_changes_and_dry_run(tiny_copy):
    mt.build(tiny_copy)
    before = (tiny_copy / MANIFEST).read_bytes()
    (tiny_copy / "shared" / "config.json").write_text('{"changed": true}\n')
    dry = mt.build(tiny_copy, dry_run=True)
    assert [c.path for c in dry.changes] == ["shared/config.json"]
    assert dry.changes[0].kind == "changed"
    assert (tiny_copy / MANIFEST).read_bytes() == before  # nothing written
    res = mt.build(tiny_copy)
    assert res.written == dry.written and res.written[-1] == MANIFEST
    assert res.manifest == dry.manifest == (tiny_copy / MANIFEST).read_bytes()
    sealed = mt.Manifest.load(tiny_copy)
    f = sealed.file("shared/config.json")
    assert f.size == len('{"changed": true}\n')
    assert f.sha256 == hashlib.sha256(b'{"changed": true}\n').hexdigest()


def test_build_refusal_names_the_field(tiny_copy):
    bad = dict(TINY_BUILD, defaultVariant="no-such-variant")
    with pytest.raises(modelpkg.Error) as e:
        mt.build(tiny_copy, json.dumps(bad), describe_file="BUILD.json")
    assert e.value.file == "BUILD.json" and e.value.pointer == "/defaultVariant"
    assert (tiny_copy / MANIFEST).read_bytes() == (TINY / MANIFEST).read_bytes()  # nothing written


def test_build_cancel(tiny_copy):
    with pytest.raises(modelpkg.CancelledError):
        mt.build(tiny_copy, progress=lambda done, total: True)
    assert (tiny_copy / MANIFEST).read_bytes() == (TINY / MANIFEST).read_bytes()


def test_two_threads_build_two_packages(tmp_path):
    """ctypes releases the GIL around the library's calls: two threads seal two packages at once."""
    dirs = []
    for i in range(2):
        d = tmp_path / f"p{i}"
        shutil.copytree(need(TINY), d)
        dirs.append(d)
    results = {}

    def run(d):
        results[d] = mt.build(d).manifest

    threads = [threading.Thread(target=run, args=(d,)) for d in dirs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[dirs[0]] == results[dirs[1]] == fixture_plus_counts()
