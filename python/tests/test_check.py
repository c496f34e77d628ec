"""modelpkg.check against the CLI: the Report's to_dict() is the `modelpkg check --json` document,
key for key, for both kinds of package, passing and failing."""

from __future__ import annotations

import json
import subprocess

import pytest

import modelpkg
from conftest import EXAMPLES

GEMMA = EXAMPLES / "gemma4-audio"
GEMMA_LIB = GEMMA / "lib" / "gemma4-audio-webgpu.wasm"


def cli_json(cli: str, *args: str) -> dict:
    p = subprocess.run([cli, "check", *args, "--json"], capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    assert (p.returncode == 0) == doc["ok"]
    return doc


def same_as_cli(report: modelpkg.Report, cli_doc: dict) -> None:
    got = report.to_dict()
    assert list(got) == list(cli_doc)  # the same keys, in the same order
    assert got == cli_doc


def test_mlc_example_with_library(cli):
    r = modelpkg.check(str(GEMMA), str(GEMMA_LIB), device_features=["shader-f16"])
    assert isinstance(r, modelpkg.MlcReport) and r.ok
    assert r.contract == "declared" and r.interface_id.declared == r.interface_id.computed
    assert r.library.model_type == "gemma4" and r.library.resources.required_features == ["shader-f16"]
    assert r.weights.parameters == 3 and r.weights.verified
    assert r.binding.executor == "generation" and r.binding.audio.adapter_function == "audio_embed"
    same_as_cli(r, cli_json(cli, str(GEMMA), "--lib", str(GEMMA_LIB), "--device-features", "shader-f16"))


def test_mlc_example_device_without_the_feature(cli):
    r = modelpkg.check(str(GEMMA), str(GEMMA_LIB), device_features=[], max_binding_size=256)
    assert not r.ok
    assert {p.code for p in r.problems} == {"mismatch"}
    assert any("shader-f16" in p.rule for p in r.problems)
    same_as_cli(r, cli_json(cli, str(GEMMA), "--lib", str(GEMMA_LIB), "--device-features", "",
                            "--max-binding-size", "256"))


def test_mlc_example_without_library(cli):
    r = modelpkg.check(str(GEMMA), no_weights=True)
    assert r.ok and r.library is None and r.binding is None and not r.weights.verified
    same_as_cli(r, cli_json(cli, str(GEMMA), "--no-weights"))


def test_mlc_package_with_a_broken_shard(cli, tmp_path):
    import shutil
    pkg = tmp_path / "gemma"
    shutil.copytree(GEMMA, pkg)
    cache = json.loads((pkg / "tensor-cache.json").read_text())
    shard = pkg / cache["records"][0]["dataPath"]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))
    r = modelpkg.check(str(pkg))
    assert not r.ok and r.weights is not None and not r.weights.verified
    assert any(p.file.endswith(cache["records"][0]["dataPath"]) for p in r.problems)
    same_as_cli(r, cli_json(cli, str(pkg)))


@pytest.mark.parametrize("all_variants", [False, True])
def test_mt_example(cli, all_variants):
    r = modelpkg.check(str(EXAMPLES / "mt-tiny"), all_variants=all_variants)
    assert isinstance(r, modelpkg.MtReport) and r.ok
    same_as_cli(r, cli_json(cli, str(EXAMPLES / "mt-tiny"), *(["--all-variants"] if all_variants else [])))


def test_mt_package_with_problems(cli, tiny_copy):
    # the tiny fixture's tensors are placeholders: the load gate and the graph reader refuse them
    r = modelpkg.check(str(tiny_copy), all_variants=True)
    assert not r.ok
    for p in r.problems:
        assert p.file and p.rule and p.code in {"mismatch", "malformed", "not-found"}
    same_as_cli(r, cli_json(cli, str(tiny_copy), "--all-variants"))


def test_check_that_cannot_run(tmp_path):
    with pytest.raises(modelpkg.Error) as e:
        modelpkg.check(tmp_path / "no-such-dir")
    assert str(tmp_path / "no-such-dir") in str(e.value)
    with pytest.raises(modelpkg.Error):
        modelpkg.mt.check(tmp_path / "no-such-dir")
