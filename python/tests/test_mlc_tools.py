"""modelpkg.mlc's _metadata, producer, fit and prefill planning against the native CLI on the
bundled examples: `mlc metadata` (byte-exact, and its --json keys), `mlc build` (the same sidecar
bytes and artifact, refusals naming the tasks file), `fit --json`, `mlc plan --json`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import modelpkg
from modelpkg import mlc
from conftest import EXAMPLES

GEMMA = EXAMPLES / "gemma4-audio"
GEMMA_LIB = GEMMA / "lib" / "gemma4-audio-webgpu.wasm"
LLAVA = EXAMPLES / "llava-image"
LLAVA_LIB = LLAVA / "lib" / "llava-image-webgpu.wasm"
OTHER_LIB = EXAMPLES / "mismatched-lib" / "gemma4-audio-other-weights-webgpu.wasm"
LIBS = [GEMMA_LIB, LLAVA_LIB, OTHER_LIB]


def run(cli: str, *args: Any, ok: bool = True) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    p = subprocess.run([cli, *map(str, args)], capture_output=True)
    if ok:
        assert p.returncode == 0, p.stderr.decode()
    return p


def cli_json(cli: str, *args: Any) -> Any:
    p = run(cli, *args, "--json", ok=False)
    assert p.returncode in (0, 1), p.stderr.decode()
    return json.loads(p.stdout)


# ---------------------------------------------------------------------------------- _metadata


@pytest.mark.parametrize("lib", LIBS, ids=lambda p: p.name)
def test_metadata_equals_the_cli(cli, lib):
    md = mlc.metadata(lib)
    printed = run(cli, "mlc", "metadata", lib).stdout
    assert md.json == printed                                  # byte for byte
    assert md.to_dict() == json.loads(printed)
    doc = cli_json(cli, "mlc", "metadata", lib)
    info = md.info()
    assert info == {k: doc[k] for k in info}
    assert md.model_type == doc["metadata"]["model_type"] and md.has_artifact


def test_metadata_from_bytes_and_json_file(cli, tmp_path):
    md = mlc.metadata(GEMMA_LIB)
    b = mlc.Metadata.from_bytes(GEMMA_LIB.read_bytes(), "x.wasm")
    assert b.json == md.json and b.source_offset == md.source_offset
    j = tmp_path / "md.json"
    j.write_bytes(md.json)
    f = mlc.metadata(j)  # a _metadata JSON file: the CLI's fallback
    assert f.json == md.json and f.where == "a _metadata JSON file" and f.offset is None
    assert f.info() == {k: cli_json(cli, "mlc", "metadata", j)[k] for k in f.info()}
    assert mlc.Metadata.load(GEMMA_LIB).json == md.json


def test_metadata_refusals_name_the_file(cli, tmp_path):
    z = tmp_path / "zeros.so"
    z.write_bytes(b"\0" * 5000)
    with pytest.raises(modelpkg.Error) as e:
        mlc.metadata(z)
    line = run(cli, "mlc", "metadata", z, ok=False).stderr.decode()
    assert e.value.file and str(e.value) in line
    assert "not a compiled model library" in e.value.rule
    with pytest.raises(modelpkg.NotFoundError) as e2:
        mlc.metadata(tmp_path / "absent.wasm")
    assert e2.value.file.endswith("absent.wasm")
    with pytest.raises(modelpkg.MalformedError) as e3:
        mlc.Metadata.from_bytes(b'{"model_type": 1', "broken.json")
    assert e3.value.file == "broken.json"


def test_package_tasks():
    p = mlc.Package.load(GEMMA)
    t = p.task("chat.completions")
    assert t is not None and t.executor == "generation"
    audio = t.input("audio")
    assert audio is not None and audio.kind == "audio_decode" and audio.audio is not None
    assert audio.audio.sample_rate_hz == 16000 and audio.adapter == "audio"
    assert p.normalized_tasks()["chat.completions"]["inputs"]["audio"]["processor"]["kind"] == "audio_decode"
    img = mlc.Package.load(LLAVA).task("chat.completions").input("image")  # type: ignore[union-attr]
    assert img is not None and img.image is not None and img.image.resize_mode in ("stretch", "center_crop")


# ---------------------------------------------------------------------------------- the producer


def package_copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("mlc-chat-config.json", "tensor-cache.json", "params_shard_0.bin"):
        shutil.copy(src / name, dst / name)
    return dst


@pytest.mark.parametrize("example,lib", [(GEMMA, GEMMA_LIB), (LLAVA, LLAVA_LIB)], ids=["gemma4-audio", "llava-image"])
def test_build_is_byte_identical_to_the_cli(cli, tmp_path, example, lib):
    tasks = json.loads((example / "mlc-model-manifest.json").read_text())["tasks"]
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps(tasks))
    a, b = package_copy(example, tmp_path / "a"), package_copy(example, tmp_path / "b")
    run(cli, "mlc", "build", a, "--tasks", tasks_file, "--lib", lib, "--required-features", "shader-f16",
        "-o", a / "artifact.json")
    r = mlc.build(b, tasks, lib=lib, required_features=["shader-f16"], output=b / "artifact.json")
    assert (b / "mlc-model-manifest.json").read_bytes() == (a / "mlc-model-manifest.json").read_bytes() == r.manifest
    assert (b / "artifact.json").read_bytes() == (a / "artifact.json").read_bytes() == r.artifact
    if example == GEMMA:  # the audio example's own sidecar was written by this producer (test_cli.sh)
        assert r.manifest == (example / "mlc-model-manifest.json").read_bytes()
    assert r.manifest_path == str(b / "mlc-model-manifest.json") and not r.f16_without_shader_f16
    doc = cli_json(cli, "mlc", "build", a, "--tasks", tasks_file, "--lib", lib, "--required-features", "shader-f16")
    assert (doc["interface_id"], doc["parameter_schema_id"], doc["artifact"]) == \
        (r.interface_id, r.parameter_schema_id, r.artifact_dict())
    # the tasks as a file, as text, as bytes: the same
    for t in (dict(tasks_file=tasks_file), dict(tasks=json.dumps(tasks)), dict(tasks=json.dumps(tasks).encode())):
        assert mlc.build(b, lib=lib, required_features=["shader-f16"], write=False, **t).manifest == r.manifest


def test_build_from_weights_and_programs(cli, tmp_path):
    tasks = json.loads((GEMMA / "mlc-model-manifest.json").read_text())["tasks"]
    programs = {"generation": {"kind": "token_generation", "exports": {
        "embed_tokens": "e", "prefill_tokens": "p", "decode_tokens": "d", "create_kv_cache": "k"},
        "adapters": {"audio": "a"}}}
    (tmp_path / "t.json").write_text(json.dumps(tasks))
    (tmp_path / "p.json").write_text(json.dumps(programs))
    a, b = package_copy(GEMMA, tmp_path / "a"), package_copy(GEMMA, tmp_path / "b")
    cli_art = run(cli, "mlc", "build", a, "--tasks", tmp_path / "t.json", "--programs", tmp_path / "p.json").stdout
    r = mlc.build(b, tasks, programs=programs)
    assert r.artifact == cli_art and r.manifest == (a / "mlc-model-manifest.json").read_bytes()
    assert r.max_storage_buffer_binding_size == 512 and r.f16_without_shader_f16
    # parameters from a params list
    md = mlc.metadata(GEMMA_LIB).to_dict()
    (tmp_path / "params.json").write_text(json.dumps(md["params"]))
    run(cli, "mlc", "build", a, "--tasks", tmp_path / "t.json", "--programs", tmp_path / "p.json",
        "--params", tmp_path / "params.json")
    r2 = mlc.build(b, tasks, programs_file=tmp_path / "p.json", params_file=tmp_path / "params.json")
    assert r2.manifest == (a / "mlc-model-manifest.json").read_bytes()


def test_build_refusals_name_the_tasks_file(cli, tmp_path):
    b = package_copy(GEMMA, tmp_path / "b")
    text = json.dumps(json.loads((GEMMA / "mlc-model-manifest.json").read_text())["tasks"])
    bad = tmp_path / "tasks-bad.json"
    bad.write_text(text.replace('"adapter": "audio"', '"adapter": "speech"'))
    with pytest.raises(modelpkg.MismatchError) as e:
        mlc.build(b, tasks_file=bad, lib=GEMMA_LIB)
    assert e.value.file == str(bad) and e.value.pointer == "/chat.completions/inputs/audio/adapter"
    assert 'names adapter "speech"' in e.value.rule
    line = run(cli, "mlc", "build", b, "--tasks", bad, "--lib", GEMMA_LIB, ok=False).stderr.decode()
    assert str(e.value) in line
    with pytest.raises(modelpkg.MismatchError) as e2:  # given as a value: the library's name for it
        mlc.build(b, bad.read_text(), lib=GEMMA_LIB)
    assert e2.value.file == "tasks"
    assert not (b / "mlc-model-manifest.json").exists()  # nothing written on a refusal
    with pytest.raises(ValueError):
        mlc.build(b, text, lib=GEMMA_LIB, params=[])
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.build(tmp_path / "absent", text)
    with pytest.raises(modelpkg.NotFoundError) as e3:
        mlc.build(b, tasks_file=tmp_path / "absent.json")
    assert e3.value.file.endswith("absent.json")


# ---------------------------------------------------------------------------------- fit

FIT_CASES = [
    (GEMMA, [], {}),
    (GEMMA, ["--lib", GEMMA_LIB], dict(lib=GEMMA_LIB)),
    (GEMMA, ["--lib", GEMMA_LIB, "--context", "100", "--device-memory", "65536", "--max-binding-size", "256",
             "--device-features", ""],
     dict(lib=GEMMA_LIB, context=100, device_memory=65536, max_binding_size=256, device_features=[])),
    (GEMMA, ["--lib", GEMMA_LIB, "--device-memory", "1048576", "--device-features", "f16"],
     dict(lib=GEMMA_LIB, device_memory=1 << 20, device_features=["f16"])),
    (LLAVA, ["--lib", LLAVA_LIB, "--context", "7", "--device-features", "shader-f16,subgroups"],
     dict(lib=LLAVA_LIB, context=7, device_features=["shader-f16", "subgroups"])),
    (GEMMA, ["--lib", OTHER_LIB], dict(lib=OTHER_LIB)),  # not the package's library: refused
    (GEMMA, ["--device-memory", "1"], dict(device_memory=1)),
]


@pytest.mark.parametrize("i", range(len(FIT_CASES)))
def test_fit_equals_the_cli(cli, i):
    pkg, args, kw = FIT_CASES[i]
    doc = cli_json(cli, "fit", pkg, *args)
    r = mlc.fit(str(pkg), **{k: (str(v) if isinstance(v, Path) else v) for k, v in kw.items()})
    got = r.to_dict()
    assert list(got) == list(doc) and got == doc
    assert r.ok == (not r.problems)


def test_fit_refusals(cli, tmp_path):
    with pytest.raises(modelpkg.InvalidArgumentError) as e:  # a --set nothing uses
        mlc.fit(GEMMA, GEMMA_LIB, dims={"no_such_dim": 3})
    assert "no_such_dim" in e.value.message
    assert "no_such_dim" in run(cli, "fit", GEMMA, "--lib", GEMMA_LIB, "--set", "no_such_dim=3", ok=False).stderr.decode()
    with pytest.raises(modelpkg.NotFoundError) as e2:
        mlc.fit(GEMMA, tmp_path / "absent.wasm")
    assert e2.value.file.endswith("absent.wasm")
    with pytest.raises(ValueError):
        mlc.fit(GEMMA, GEMMA_LIB, context=0)
    r = mlc.fit(GEMMA, OTHER_LIB)
    assert r.refused and r.needs is None and r.problems and all(p.file for p in r.problems)


# ---------------------------------------------------------------------------------- prefill planning

SEGMENTS = [
    (GEMMA, GEMMA_LIB, {"segments": [{"text": [3, 4, 5]}, {"audio": {"rows": 1500}}, {"text": [6]}]}),
    (GEMMA, GEMMA_LIB, {"filled_kv_cache_length": 10, "segments": [{"audio": {"rows": 3}}]}),
    (LLAVA, LLAVA_LIB, {"segments": [{"text": [1, 2]}, {"image": {}}, {"text": [7, 8, 9]}]}),
]


@pytest.mark.parametrize("i", range(len(SEGMENTS)))
def test_plan_equals_the_cli(cli, tmp_path, i):
    pkg, lib, seg = SEGMENTS[i]
    f = tmp_path / "seg.json"
    f.write_text(json.dumps(seg))
    doc = cli_json(cli, "mlc", "plan", "--package", pkg, "--lib", lib, "--segments", f)
    assert doc["ok"], doc
    p = mlc.plan(str(pkg), str(lib), seg)
    assert list(p.to_dict()) == list(doc) and p.to_dict() == doc
    with mlc.Planner.open(str(pkg), str(lib)) as planner:
        assert planner.plan(segments_file=f).to_dict() == doc
        assert planner.plan(seg["segments"], filled_kv_cache_length=seg.get("filled_kv_cache_length", 0)).doc == p.doc
    assert p.prompt_length == doc["prompt_length"] and len(p.chunks) == len(doc["chunks"])


def test_plan_refusals(cli, tmp_path):
    f = tmp_path / "seg.json"
    f.write_text(json.dumps({"segments": [{"text": [1] * 5000}]}))  # past the 4096 context window
    with pytest.raises(modelpkg.LimitError) as e:
        mlc.plan(GEMMA, GEMMA_LIB, segments_file=f)
    assert e.value.file == str(f)
    line = run(cli, "mlc", "plan", "--package", GEMMA, "--lib", GEMMA_LIB, "--segments", f, ok=False).stderr.decode()
    assert str(e.value) in line
    with pytest.raises(modelpkg.MalformedError) as e2:  # unknown field, strict
        mlc.plan(GEMMA, GEMMA_LIB, {"segments": [{"video": {}}]})
    assert e2.value.file == "SEGMENTS.json" and e2.value.pointer.startswith("/segments/0")
    with pytest.raises(modelpkg.UnsupportedError):  # no image input in the audio package
        mlc.plan(GEMMA, GEMMA_LIB, [{"image": {}}])
    with pytest.raises(modelpkg.NotFoundError):  # a legacy package has no manifest
        mlc.Planner.open(EXAMPLES / "legacy-no-manifest", GEMMA_LIB)
