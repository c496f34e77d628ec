"""producer_python_reference.json through the binding, as test_mlc_build.c and test_mlc_weights.c run
it: the sidecar byte for byte, the parameter_schema_id, the resources with named dimensions (from
the package's mlc-chat-config.json, as `mlc build` reads them), a missing dimension refused."""

from __future__ import annotations

import json

import pytest

import modelpkg
from modelpkg import mlc
from conftest import load_cases

PROGRAMS = {"generation": {"kind": "token_generation", "exports": {
    "embed_tokens": "embed", "prefill_embeds": "prefill", "decode_embeds": "decode", "create_kv_cache": "kv"},
    "adapters": {"audio": "audio_embed", "image": "image_embed"}, "adapter_dtypes": {"image": "uint32"}}}
TEXT_ONLY = {"chat.completions": {"executor": "generation", "inputs": {"text": {"processor": "tokenizer"}},
                                  "output": "text"}}
TEXT_PROGRAMS = {"generation": {"kind": "token_generation", "exports": {
    "embed_tokens": "embed", "prefill_embeds": "prefill", "decode_embeds": "decode", "create_kv_cache": "kv"}}}


def cases(kind):
    return load_cases("producer_python_reference.json")["cases"][kind]


def test_sidecars_byte_exact(tmp_path):
    ran = 0
    for c in cases("sidecar"):
        r = mlc.build(tmp_path, c["tasks"], params=c["params"], programs=PROGRAMS,
                      required_features=["shader-f16", "shader-f16"], write=False)
        assert r.manifest == c["expected_text"].encode(), ran
        assert json.loads(r.artifact)["resources"]["required_features"] == ["shader-f16"]  # de-duplicated
        ran += 1
    assert ran == 2


def test_parameter_schema_ids(tmp_path):
    for c in cases("parameter_schema"):
        # the id keeps a named dimension's name; the resources beside it need some size for it
        named = {d: 1 for _, shape, _ in c["params"] for d in shape if isinstance(d, str)}
        (tmp_path / "mlc-chat-config.json").write_text(json.dumps({"model_config": named}))
        if "error" in c:
            with pytest.raises(modelpkg.MalformedError) as e:
                mlc.build(tmp_path, TEXT_ONLY, params=c["params"], programs=TEXT_PROGRAMS, write=False)
            assert c["message"] in e.value.message
            continue
        r = mlc.build(tmp_path, TEXT_ONLY, params=c["params"], programs=TEXT_PROGRAMS, write=False)
        assert r.parameter_schema_id == c["parameter_schema_id"], c["params"]
        assert modelpkg.canonical_json([{"dtype": d, "name": n, "shape": s} for n, s, d in
                                        sorted(c["params"])]) == c["canonical_json"]
    assert len(cases("parameter_schema")) == 5


def test_resources_with_named_dimensions(tmp_path):
    for i, c in enumerate(cases("resources")):
        d = tmp_path / str(i)
        d.mkdir()
        (d / "mlc-chat-config.json").write_text(json.dumps({"model_config": c.get("symbolic_sizes", {})}))
        if "error" in c:
            with pytest.raises(modelpkg.Error) as e:
                mlc.build(d, TEXT_ONLY, params=c["params"], programs=TEXT_PROGRAMS, write=False)
            assert "vocab_size" in str(e.value)
            continue
        r = mlc.build(d, TEXT_ONLY, params=c["params"], programs=TEXT_PROGRAMS, write=False)
        assert (r.max_storage_buffer_binding_size, r.estimated_device_memory_bytes) == (
            c["ok"]["max_storage_buffer_binding_size"], c["ok"]["estimated_device_memory_bytes"]), i
