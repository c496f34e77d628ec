"""WebLLM 0.2.86's MLC vectors through the binding, with the results the C suite (tests/conformance/)
and the JS package (js/test/shared/conformance.mjs, ported here case for case) assert:
model_package_parse.json, load_model_package_manifest.json, compiled_program_parse.json,
resolve_chat_completion.json, prefill_chunks_artifact.json, prefill_chunks_legacy.json,
prompt_segments.json. Errors are compared as docs/conformance.md says: WebLLM's location (the file,
then .key / [index] per pointer segment) and rule, its message opening ours."""

from __future__ import annotations

import base64
import json
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import modelpkg
from modelpkg import mlc
from conftest import load_cases


def webllm_location(e: modelpkg.Error) -> str:
    """WebLLM's location of an error: FILE then .key / [index] per pointer segment (testutil.c)."""
    out = e.file
    if not e.pointer:
        return out
    segs = [s.replace("~1", "/").replace("~0", "~") for s in e.pointer.split("/")[1:]]
    for i, s in enumerate(segs):
        if s == "" and i == len(segs) - 1:
            out += " key"
        elif re.fullmatch(r"[0-9]+", s):
            out += f"[{s}]"
        else:
            out += f".{s}"
    return out


def webllm_message(e: modelpkg.Error) -> str:
    loc = webllm_location(e)
    return f"{loc}: {e.rule}" if loc else e.rule


def parse_cases(cases: List[Dict[str, Any]], parse: Callable[[Dict[str, Any]], Any],
                divergent: Callable[[Dict[str, Any]], bool] = lambda c: False) -> int:
    """A parse vector file: each case's expected object, or WebLLM's error message opening ours."""
    ran = 0
    for c in cases:
        ran += 1
        if divergent(c):
            continue
        if "expected_error" in c:
            with pytest.raises(modelpkg.Error) as e:
                parse(c)
            msg = webllm_message(e.value)
            want = c["expected_error"]["message"]
            assert msg.startswith(want), f"{c['name']}: expected\n  {want}\ngot\n  {msg}"
        else:
            assert parse(c) == c["expected"], c["name"]
    return ran


def text(value: Any) -> str:
    """A vector's input as JSON text, as the JS suite hands JSON.stringify's over: the same values (the
    vectors hold no float that JavaScript would write as an integer); non-ASCII as \\u escapes, which
    the library reads back exactly (a lone surrogate escaped, as JSON.stringify escapes it)."""
    return json.dumps(value, ensure_ascii=True)


# ---- the documents: parseModelPackageManifest, loadModelPackageManifest, parseCompiledProgramArtifact,
# resolveChatCompletionArtifact (test_conf_package.c, test_conf_program.c, test_conf_resolve.c)


def test_model_package_parse():
    n = parse_cases(load_cases("model_package_parse.json")["cases"],
                    lambda c: mlc.Package.parse(text(c["input"]), check_interface_id=False).to_dict())
    assert n == 83


def test_load_model_package_manifest():
    rules = {"duplicate_key_last_wins": "duplicate object key", "invalid_utf8_byte_becomes_replacement_char":
             "invalid JSON"}
    divergent = 0

    def diverges(c: Dict[str, Any]) -> bool:
        # WebLLM keeps the last duplicate / decodes U+FFFD; modelpkg refuses at the byte
        nonlocal divergent
        rule = rules.get(c["name"])
        if rule is None:
            return False
        with pytest.raises(modelpkg.MalformedError) as e:
            mlc.Package.parse(base64.b64decode(c["input_base64"]))
        assert rule in e.value.rule and e.value.offset is not None and e.value.offset > 0, f"{c['name']}: {e.value}"
        divergent += 1
        return True

    n = parse_cases(load_cases("load_model_package_manifest.json")["cases"],
                    lambda c: mlc.Package.parse(base64.b64decode(c["input_base64"])).to_dict(), diverges)
    assert (n, divergent) == (12, 2)


def test_compiled_program_parse():
    n = parse_cases(load_cases("compiled_program_parse.json")["cases"],
                    lambda c: mlc.Artifact.parse(text(c["input"])).to_dict())
    assert n == 41


def test_resolve_chat_completion():
    cases = load_cases("resolve_chat_completion.json")["cases"]
    for c in cases:
        def bind() -> Dict[str, Any]:
            # the vectors use placeholder ids: the sidecar's self-check is not part of this step
            pkg = mlc.Package.parse(text(c["model_package"]), check_interface_id=False)
            return mlc.resolve(pkg, mlc.Artifact.parse(text(c["compiled_program"]))).to_dict()

        if "expected_error" in c:
            with pytest.raises(modelpkg.MismatchError) as e:
                bind()
            assert e.value.rule.startswith(c["expected_error"]["message"]), f"{c['name']}: {e.value}"
        else:
            assert bind() == c["expected"], c["name"]
    assert len(cases) == 35


def test_binding_fields_match_its_object():
    c = next(c for c in load_cases("resolve_chat_completion.json")["cases"]
             if "expected" in c and c["expected"]["image_input"])
    pkg = mlc.Package.parse(c["model_package"], check_interface_id=False)
    art = mlc.Artifact.parse(c["compiled_program"], "artifact.json")
    b = mlc.resolve(pkg, art)
    want = c["expected"]
    assert (b.executor, b.generation_inputs, b.prefill, b.decode) == (
        want["executor"], want["generation"]["inputs"], want["generation"]["prefill"], want["generation"]["decode"])
    assert b.supported_input_kinds == want["supported_input_kinds"]
    assert b.kv_state_kind_implied == want["kv_state_kind_implied"]
    assert art.required_features == c["compiled_program"]["resources"]["required_features"]
    del pkg, art  # the binding keeps what it borrows from
    assert b.to_dict() == want


# ---- prefill planning (test_conf_prefill.c)

#: WebLLM's error class -> the binding's exception class name
PREFILL_ERRORS = {
    "ContextWindowSizeExceededError": "LimitError",
    "PrefillChunkSizeSmallerThanImageError": "LimitError",
    "ArtifactManifestError": "UnsupportedError",
    "Error": "InvalidArgumentError",
}


def prefill_message(name: str, e: modelpkg.Error, expected: str) -> None:
    """WebLLM's message up to its first newline opens ours; its other lines are in ours too."""
    first, *rest = expected.split("\n")
    assert e.rule.startswith(first), f"{name}: expected message\n  {first}\ngot\n  {e.rule}"
    if rest:
        assert "\n".join(rest) in e.rule, f"{name}: message lacks {chr(10).join(rest)!r}: {e.rule}"


def plan_prefill(config: Dict[str, Any], prompt: Dict[str, Any]) -> mlc.PrefillPlan:
    """The JS package's planPrefill(config, prompt): the planner from its configuration, the prompt
    as SEGMENTS.json."""
    with mlc.Planner.from_config(config) as p:
        return p.plan(prompt)


def artifact_case(c: Dict[str, Any], image_rows_known: bool) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """An artifact case as a planner configuration and SEGMENTS.json; image_rows_known: the image's
    rows declared as num_embeddings and not passed (the check then runs before the adapter)."""
    def media(p: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        if not p:
            return None
        # JSON.stringify leaves out what the case does not give
        keys = ("prefix_token_ids", "placeholder_token_id", "suffix_token_ids")
        return {"prompt": {k: p[k] for k in keys if p.get(k) is not None}}

    config: Dict[str, Any] = {
        "generation_inputs": "tokens", "prefill_chunk_size": c["prefill_chunk_size"],
        "context_window_size": c.get("context_window_size") if c.get("context_window_size") is not None else 0,
        "sliding_window_size": c.get("sliding_window_size") if c.get("sliding_window_size") is not None else -1,
        "system_prefix_token_ids": c.get("system_prefix_token_ids") or [],
        "audio": media(c.get("audio_prompt")), "image": media(c.get("image_prompt")),
    }
    rows = iter(c.get("adapter_rows") or [])
    segments: List[Dict[str, Any]] = []
    for s in c["segments"]:
        if s not in ("AUDIO", "IMAGE"):
            segments.append({"text": c["tokenizer"][s]})
            continue
        r = next(rows)
        if s == "AUDIO":
            segments.append({"audio": {"rows": r}})
        elif image_rows_known and config["image"]:
            config["image"]["num_embeddings"] = r
            segments.append({"image": {}})
        else:
            segments.append({"image": {"rows": r}})
    prompt = {"filled_kv_cache_length": c.get("filled_kv_cache_length") or 0, "segments": segments}
    return config, prompt


def compare_plan(name: str, c: Dict[str, Any], plan: mlc.PrefillPlan) -> None:
    assert plan.prompt_length == c["expected_prompt_length"], f"{name}: prompt length"
    assert len(plan.chunks) == len(c["expected_chunks"]), f"{name}: chunks"
    offset = 0
    for i, (ch, e) in enumerate(zip(plan.chunks, c["expected_chunks"])):
        assert ch["token_ids"] == e["token_ids"], f"{name}: chunk {i} token ids"
        assert ch["modality_ids"] == e["modality_ids"], f"{name}: chunk {i} modality ids"
        assert ch["embedding_rows"] == e["embedding_rows"], f"{name}: chunk {i} embedding rows"
        assert ch["offset"] == offset, f"{name}: chunk {i} offset (the chunks tile the prompt)"
        offset += len(ch["token_ids"])
    assert offset == plan.prompt_length, f"{name}: the chunks' positions"


def test_prefill_chunks_artifact():
    cases = load_cases("prefill_chunks_artifact.json")["cases"]
    refused = 0
    for c in cases:
        for known in (False, True):
            name = c["name"] + (" (image rows known)" if known else "")
            config, prompt = artifact_case(c, known)
            if "expected_error" not in c:
                compare_plan(name, c, plan_prefill(config, prompt))
                continue
            with pytest.raises(modelpkg.Error) as e:
                plan_prefill(config, prompt)
            err = e.value
            assert type(err).__name__ == PREFILL_ERRORS[c["expected_error"]["name"]], \
                f"{name}: error class {type(err).__name__} for {c['expected_error']['name']}"
            prefill_message(name, err, c["expected_error"]["message"])
            # WebLLM disposes an adapter output exactly when the context check before slicing refuses it
            seg = re.fullmatch(r"/segments/(\d+)", err.pointer)
            is_media = seg is not None and "text" not in prompt["segments"][int(seg.group(1))]
            disposed = 1 if is_media and isinstance(err, modelpkg.LimitError) else 0
            assert disposed == c["adapter_outputs_disposed"], f"{name}: adapter outputs disposed"
            refused += 1
    assert len(cases) == 15
    assert refused > 0


def test_prefill_chunks_legacy():
    cases = load_cases("prefill_chunks_legacy.json")["cases"]
    for i, c in enumerate(cases):
        items = [{"image": it["embed_size"]} if "image" in it else {"text": it["count"]} for it in c["input"]]
        if "expected_error" in c:
            with pytest.raises(modelpkg.Error) as e:
                mlc.legacy_chunks(items, c["prefill_chunk_size"])
            assert type(e.value).__name__ == PREFILL_ERRORS[c["expected_error"]["name"]], f"legacy {i}: error class"
            prefill_message(f"legacy {i}", e.value, c["expected_error"]["message"])
            continue
        chunks = mlc.legacy_chunks(items, c["prefill_chunk_size"])
        assert [ch["length"] for ch in chunks] == c["expected_chunk_lens"], f"legacy {i}: chunk lengths"
        assert len(chunks) == len(c["expected_chunks"]), f"legacy {i}: chunks"
        for k, ch in enumerate(chunks):
            # the vectors write a token piece as [first, last] values of a range from the item's first
            # value, an image piece by the image's name (always whole)
            got: List[Dict[str, Any]] = []
            for pc in ch["pieces"]:
                src = c["input"][pc["item"]]
                if "image" not in src:
                    first = src["tokens"][0] + pc["start"]
                    got.append({"tokens": [first, first + pc["count"] - 1], "count": pc["count"]})
                else:
                    assert pc["start"] == 0 and pc["count"] == src["embed_size"], f"legacy {i}: chunk {k}: an image whole"
                    got.append({"image": src["image"]})
            want = [{"image": ep["image"]} if "image" in ep else {"tokens": ep["tokens"], "count": ep["count"]}
                    for ep in c["expected_chunks"][k]]
            assert got == want, f"legacy {i}: chunk {k}"
    assert len(cases) == 9


def toy_tokens(s: str) -> List[int]:
    """A toy tokenizer for rendered strings: one token per UTF-8 byte, id = byte + 1000."""
    return [1000 + b for b in s.encode("utf-8")]


def test_prompt_segments():
    audio = {"prefix_token_ids": [256000], "placeholder_token_id": 258881, "suffix_token_ids": [258883]}
    image = {"prefix_token_ids": [], "placeholder_token_id": 32000, "suffix_token_ids": []}

    def check(name: str, conv: Dict[str, Any], segs: List[Any], filled: int) -> None:
        sys_ids = conv.get("system_prefix_token_ids") or []
        config = {"prefill_chunk_size": 64, "context_window_size": 4096, "sliding_window_size": -1,
                  "system_prefix_token_ids": sys_ids,
                  "audio": {"prompt": audio, "adapter_function": "audio_embed"},
                  "image": {"prompt": image, "adapter_function": "image_embed", "num_embeddings": 576}}
        want = list(sys_ids) if filled == 0 else []
        mods = [0] * len(want)
        segments: List[Dict[str, Any]] = []
        for s in segs:
            if isinstance(s, str):
                ids = toy_tokens(s)
                want += ids
                mods += [0] * len(ids)
                segments.append({"text": ids})
                continue
            is_audio = s["type"] == "input_audio"
            p: Dict[str, Any] = audio if is_audio else image
            rows = 25 if is_audio else 576
            want += p["prefix_token_ids"] + [p["placeholder_token_id"]] * rows + p["suffix_token_ids"]
            mods += [0] * len(p["prefix_token_ids"]) + [1] * rows + [0] * len(p["suffix_token_ids"])
            segments.append({"audio": {"rows": 25}} if is_audio else {"image": {}})
        plan = plan_prefill(config, {"filled_kv_cache_length": filled, "segments": segments})
        assert [t for ch in plan.chunks for t in ch["token_ids"]] == want, f"{name}: the prompt's token ids"
        assert [m for ch in plan.chunks for m in ch["modality_ids"]] == mods, f"{name}: modality ids"
        assert [it["segment"] for it in plan.items] == [k for k, s in enumerate(segments) if "text" not in s], \
            f"{name}: items name their segments, in order"

    applied = 0
    cases = load_cases("prompt_segments.json")["cases"]
    for c in cases:
        if not c.get("expected_segments"):
            assert c.get("expected_error"), f"{c['name']}: neither segments nor an error"  # a conversation's refusal
            continue
        check(c["name"], c["conv_config"], c["expected_segments"], 0)
        if c.get("expected_last_round_segments"):
            check(f"{c['name']} (last round)", c["conv_config"], c["expected_last_round_segments"], 40)
        applied += 1
    assert applied == 5


# ---- beyond the vectors: the configuration read strictly, the chunker's arguments (prefill.test.mjs)

SEGMENTS = {"segments": [{"text": [1, 2, 3]}, {"audio": {"rows": 3}}, {"text": [4]}]}
BASE = {"prefill_chunk_size": 4, "context_window_size": 16, "audio": {"prompt": {"placeholder_token_id": 7}}}


def test_planner_from_config():
    plan = plan_prefill(BASE, SEGMENTS)
    assert plan.prompt_length == 7
    assert [(i["kind"], i["rows"], i["offset"]) for i in plan.items] == [("audio", 3, 3)]
    assert plan.package is None and plan.lib is None
    # JSON text and a Python value read alike
    with mlc.Planner.from_config(json.dumps(BASE)) as p:
        assert p.plan(SEGMENTS).doc == plan.doc
    with pytest.raises(modelpkg.InvalidArgumentError) as e:
        mlc.Planner.from_config({**BASE, "prefil_chunk_size": 4})
    assert (e.value.file, e.value.pointer) == ("prefill config", "/prefil_chunk_size")
    assert "unknown field" in e.value.rule
    with pytest.raises(modelpkg.InvalidArgumentError) as e:
        mlc.Planner.from_config({**BASE, "audio": {"prompt": {"placeholder_token_id": "x"}}}, "CONFIG.json")
    assert (e.value.file, e.value.pointer) == ("CONFIG.json", "/audio/prompt")
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.Planner.from_config({**BASE, "prefill_chunk_size": 0})
    with pytest.raises(modelpkg.MalformedError):
        mlc.Planner.from_config('{"prefill_chunk_size": 4,')
    with pytest.raises(modelpkg.Error) as e:
        plan_prefill(BASE, {"segments": [{"video": {}}]})
    assert e.value.pointer.startswith("/segments/0")


def test_legacy_chunks_arguments():
    assert mlc.legacy_chunks([{"text": 5}, {"image": 3}], 4) == [
        {"length": 4, "pieces": [{"item": 0, "start": 0, "count": 4}]},
        {"length": 4, "pieces": [{"item": 0, "start": 4, "count": 1}, {"item": 1, "start": 0, "count": 3}]},
    ]
    assert mlc.legacy_chunks([], 4) == []
    for items, size, pointer in (([{"text": 1, "image": 2}], 4, "/items/0"), ([{"audio": 1}], 4, "/items/0"),
                                 ([{"text": 1}, {"text": True}], 4, "/items/1"), ([{"text": 1.5}], 4, "/items/0"),
                                 ([{"text": 1}], "4", "/prefill_chunk_size"), ({"text": 1}, 4, "")):
        with pytest.raises(modelpkg.InvalidArgumentError) as e:
            mlc.legacy_chunks(items, size)
        assert (e.value.file, e.value.pointer) == ("legacy items", pointer), (items, size)
    with pytest.raises(modelpkg.LimitError):
        mlc.legacy_chunks([{"image": 5}], 4)
    with pytest.raises(modelpkg.InvalidArgumentError):
        mlc.legacy_chunks([{"text": 5}], 0)
