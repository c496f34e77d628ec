"""Version, components, canonical JSON (canonical_json.json, as test_conf_identity.c), errors."""

from __future__ import annotations

import re

import pytest

import modelpkg
from conftest import REPO, load_cases


def header_version() -> str:
    text = (REPO / "include" / "modelpkg" / "core.h").read_text()
    return re.search(r'#define MPK_VERSION_STRING "([^"]+)"', text).group(1)


def test_version_matches_the_header():
    assert modelpkg.version() == header_version()
    major, minor, patch = modelpkg.version_info()
    assert f"{major}.{minor}.{patch}" == modelpkg.version()
    assert modelpkg.version_number() == major * 10000 + minor * 100 + patch


def test_components():
    comps = modelpkg.components()
    assert comps[0] == "core"
    assert set(comps) <= {"core", "mlc", "mt", "fetch", "audio", "image", "onnx"}
    for c in comps:
        assert modelpkg.has_component(c)
    assert not modelpkg.has_component("no-such-component")
    assert modelpkg.hash_implementation() in {"openssl", "builtin-shani", "builtin-armv8", "builtin-c"}


def test_canonical_json_vectors():
    accepted = refused = 0
    for c in load_cases("canonical_json.json")["cases"]:
        value = c["value"]

        def safe(v):
            if isinstance(v, dict):
                return all(safe(x) for x in v.values())
            if isinstance(v, list):
                return all(safe(x) for x in v)
            if isinstance(v, float):
                return v == int(v) and abs(v) < 2**53
            return True

        if safe(value):
            out = modelpkg.canonical_json(value)
            assert out == c["python_canonical_json"]
            assert modelpkg.sha256_id(out.encode()) == c["python_sha256"]
            accepted += 1
        else:
            # identities are integers only: a fraction or a number beyond 2^53 is refused, with its path
            with pytest.raises(modelpkg.MalformedError) as e:
                modelpkg.canonical_json(value)
            assert e.value.pointer == "/n/2"
            assert e.value.code == -1 and e.value.code_name == "malformed"
            refused += 1
    assert (accepted, refused) == (6, 1)


def test_canonical_json_text_and_bytes():
    # Python's sort_keys order (code points), not UTF-16 code units: U+FF5A before U+1F600
    doc = '{"\\ud83d\\ude00":2,"\\uff5a":1,"a":3}'
    want = '{"a":3,"\uff5a":1,"\U0001f600":2}'
    assert modelpkg.canonical_json(doc) == want
    assert modelpkg.canonical_json(doc.encode()) == want
    assert modelpkg.canonical_json({"x": 16000.0}) == '{"x":16000}'


def test_errors_carry_the_location():
    with pytest.raises(modelpkg.MalformedError) as e:
        modelpkg.canonical_json('{"a": [1, 2.5]}')
    err = e.value
    assert isinstance(err, modelpkg.Error)
    assert err.pointer == "/a/1"
    assert err.rule == err.message and "integers" in err.message
    assert str(err) == f"/a/1: {err.message}"  # mpk_error_format: parts that are empty left out
    with pytest.raises(modelpkg.MalformedError) as e:
        modelpkg.canonical_json("{bad json")
    assert e.value.offset is not None or "JSON" in e.value.message


def test_exception_classes_map_every_code():
    classes = {
        -1: modelpkg.MalformedError, -2: modelpkg.VersionError, -3: modelpkg.MismatchError,
        -4: modelpkg.NotFoundError, -5: modelpkg.UnsupportedError, -6: modelpkg.IoError,
        -7: modelpkg.OutOfMemoryError, -8: modelpkg.LimitError, -9: modelpkg.NoVariantError,
        -10: modelpkg.CancelledError, -11: modelpkg.InvalidArgumentError,
    }
    names = {-1: "malformed", -2: "unsupported-version", -3: "mismatch", -4: "not-found", -5: "unsupported",
             -6: "io", -7: "no-memory", -8: "limit", -10: "cancelled", -11: "invalid-argument"}
    for code, cls in classes.items():
        assert cls.CODE == code and issubclass(cls, modelpkg.Error)
        if code in names:
            assert modelpkg.errors.code_name(code) == names[code]
    assert issubclass(modelpkg.InvalidArgumentError, ValueError)


def test_package_kind(tmp_path):
    assert modelpkg.package_kind(REPO / "examples" / "mt-tiny") == "mobiletransformers"
    assert modelpkg.package_kind(REPO / "examples" / "gemma4-audio") == "mlc"
    assert modelpkg.package_kind(tmp_path) == "none"
    (tmp_path / "mlc-model-manifest.json").write_text("{}")
    (tmp_path / "mobiletransformers_manifest.json").write_text("{}")
    with pytest.raises(modelpkg.MalformedError) as e:
        modelpkg.package_kind(tmp_path)
    assert "both" in e.value.message
