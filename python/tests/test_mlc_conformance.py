"""MLC through the binding with the C suite's results: interface_id.json (test_conf_identity.c),
resource_urls.json and cleanModelUrl (test_conf_urls.c)."""

from __future__ import annotations

import pytest

import modelpkg
from modelpkg import mlc
from conftest import EXAMPLES, load_cases


def test_interface_id_vectors():
    ran = 0
    for c in load_cases("interface_id.json")["cases"]:
        name = c["name"]
        tasks = c["tasks"] if "tasks" in c else c["tasks_json_text"]
        if name == "lone_surrogate_in_name":
            # WebLLM hashes "\ud800" escaped; the Python producer cannot emit it; modelpkg refuses it
            with pytest.raises(modelpkg.MalformedError) as e:
                mlc.interface_id(tasks)
            assert "invalid JSON" in e.value.message
        else:
            got = mlc.interface_id(tasks)
            assert got == c["python_interface_id"], name
            assert (got == c["interface_id"]) == bool(c["webllm_equals_python"]), name
            # the canonical text of the normalized tasks is the Python producer's, byte for byte
            assert modelpkg.canonical_json({"tasks": c["normalized_tasks"]}) == c["python_canonical_json"], name
        ran += 1
    assert ran == 15


def test_interface_id_of_text_equals_of_value():
    c = load_cases("interface_id.json")["cases"][0]
    import json
    assert mlc.interface_id(json.dumps(c["tasks"])) == mlc.interface_id(c["tasks"])
    assert mlc.interface_id(json.dumps(c["tasks"]).encode()) == c["python_interface_id"]


def test_resource_urls_vectors():
    ran = 0
    for c in load_cases("resource_urls.json")["cases"]:
        pkg = c.get("model_package")
        package = mlc.Package.parse(pkg, check_interface_id=False) if pkg is not None else None
        u = mlc.resource_urls(c["model_url"], package)
        got = {"chatConfigUrl": u.chat_config_url, "tensorCacheBaseUrl": u.tensor_cache_base_url,
               "tensorCacheManifestUrl": u.tensor_cache_manifest_url}
        assert got == c["expected"], c["name"]
        ran += 1
    assert ran >= 4


def test_package_parse_checks_the_interface_id():
    c = next(c for c in load_cases("resource_urls.json")["cases"] if c.get("model_package"))
    # the vector's placeholder interface_id is not its tasks' id: refused unless the check is skipped
    with pytest.raises(modelpkg.MismatchError) as e:
        mlc.Package.parse(c["model_package"], "sidecar.json")
    assert e.value.file == "sidecar.json"
    assert "interface_id does not match its tasks" in e.value.rule
    assert c["model_package"]["interface_id"] in e.value.message
    p = mlc.Package.parse(c["model_package"], check_interface_id=False)
    assert p.interface_id == c["model_package"]["interface_id"]
    assert p.computed_interface_id() != p.interface_id


def test_package_load_example():
    p = mlc.Package.load(EXAMPLES / "gemma4-audio")
    assert p.computed_interface_id() == p.interface_id
    assert p.weights_manifest == "tensor-cache.json" and p.schema_version == 1


CLEAN = [
    ("https://huggingface.co/mlc-ai/M", "https://huggingface.co/mlc-ai/M/resolve/main/"),
    ("https://huggingface.co/mlc-ai/M/", "https://huggingface.co/mlc-ai/M/resolve/main/"),
    ("https://huggingface.co/mlc-ai/M/resolve/main", "https://huggingface.co/mlc-ai/M/resolve/main/"),
    ("https://huggingface.co/mlc-ai/M/resolve/v1.0/", "https://huggingface.co/mlc-ai/M/resolve/v1.0/"),
    ("HTTPS://HF.co:443/a/../M", "https://hf.co/M/resolve/main/"),
    ("https://h/resolve/x", "https://h/resolve/x/"),
    ("https://h/resolve/", "https://h/resolve/resolve/main/"),
    ("https://h/m\n/resolve/main/", "https://h/m/resolve/main/resolve/main/"),
    ("https://h/m/resolve/a\u2028/", "https://h/m/resolve/a%E2%80%A8/resolve/main/"),
    ("https://h/m /", "https://h/m%20/resolve/main/"),
]


@pytest.mark.parametrize("url,want", CLEAN)
def test_clean_model_url(url, want):
    assert mlc.clean_model_url(url) == want


def test_clean_model_url_refusals():
    with pytest.raises(modelpkg.UnsupportedError) as e:
        mlc.clean_model_url("ftp://h/m")
    assert "ftp" in e.value.message
    with pytest.raises(modelpkg.InvalidArgumentError) as e:
        mlc.clean_model_url("https://h:99999/m")
    assert "port" in e.value.message
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.clean_model_url("models/m")
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.resource_urls("not a url")
