"""The request checks through the binding (docs/mlc-request.md): every case of request_checks.json
with WebLLM's decision and message (test_conf_request.c), then what JSON cannot say as WebLLM's
JavaScript does: float32 arrays as Float32Arrays, other arrays as plain ones, NaN as null."""

from __future__ import annotations

import array

import pytest

import modelpkg
from modelpkg import mlc
from conftest import load_cases

MALFORMED = {"TypeError", "SystemMessageOrderError", "MessageOrderError"}


def typed(v, np):
    """The vectors write a Float32Array as {"$float32array": [...]}: a float32 array goes in."""
    if isinstance(v, dict):
        if "$float32array" in v:
            return np.asarray(v["$float32array"], dtype=np.float32)
        return {k: typed(x, np) for k, x in v.items()}
    if isinstance(v, list):
        return [typed(x, np) for x in v]
    return v


def test_request_checks_vectors():
    np = pytest.importorskip("numpy", reason="SKIP: /usr/bin/python3 module numpy not found (python3-numpy)")
    accepted = refused = 0
    for c in load_cases("request_checks.json")["cases"]:
        kinds = c.get("supported_input_kinds")
        call = lambda: mlc.check_request(typed(c["request"], np), model_id="m", model_type=c["model_type"],  # noqa: E731
                                         input_kinds=kinds, file="request.json")
        e = c.get("expected_error")
        if e is None:
            assert call() is None, c["name"]
            accepted += 1
            continue
        cls = modelpkg.MalformedError if e["name"] in MALFORMED else modelpkg.UnsupportedError
        with pytest.raises(cls) as got:
            call()
        first, _, second = e["message"].partition("\n")
        assert got.value.message.startswith(first) and second in got.value.message, c["name"]
        assert got.value.pointer.startswith("/messages/0") and got.value.file == "request.json", c["name"]
        refused += 1
    assert (accepted, refused) == (3, 12)


def pcm(data, rate=16000):
    return {"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"format": "pcm_f32", "data": data, "sample_rate": rate}}]}]}


def test_what_json_cannot_say():
    audio = {"input_kinds": ["audio"]}
    mlc.check_request(pcm(array.array("f", [0.0, 0.5])), **audio)           # a Float32Array
    for not_f32 in (array.array("d", [0.0]), [0.0, 0.5], "AAAA"):
        with pytest.raises(modelpkg.MalformedError) as e:
            mlc.check_request(pcm(not_f32), **audio)
        assert "must be a Float32Array" in e.value.message and e.value.pointer.endswith("/input_audio/data")
    for rate in (float("nan"), float("inf"), 0, 1.5, "16000"):
        with pytest.raises(modelpkg.MalformedError) as e:
            mlc.check_request(pcm(array.array("f", [0.0]), rate), **audio)
        assert e.value.pointer.endswith("/input_audio/sample_rate"), rate
    np = pytest.importorskip("numpy", reason="SKIP: /usr/bin/python3 module numpy not found (python3-numpy)")
    mlc.check_request(pcm(np.zeros(4, np.float32)), **audio)
    with pytest.raises(modelpkg.MalformedError):
        mlc.check_request(pcm(np.zeros(4, np.float64)), **audio)


def test_model_and_text_forms():
    text = '{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}'
    with pytest.raises(modelpkg.UnsupportedError) as e:
        mlc.check_request(text, input_kinds=[])
    assert e.value.pointer == "/messages/0/content" and "at most one text contentPart" in e.value.message
    with pytest.raises(modelpkg.UnsupportedError) as e:  # a text-only LLM without a manifest
        mlc.check_request({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]}, model_id="x")
    assert "Loaded modelId: x, modelType: LLM" in e.value.message
    mlc.check_request({"messages": [{"role": "user", "content": "hi"}]}, model_type="embedding")
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.check_request({"messages": [{"role": "user", "content": "hi"}]}, model_type="GPT")
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.check_request({"messages": [{"role": "user", "content": "hi"}]}, input_kinds=["video"])
