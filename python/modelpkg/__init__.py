"""modelpkg from Python: a ctypes binding of libmodelpkg (the C library's public API).

    import modelpkg
    report = modelpkg.check("examples/mt-tiny")          # MLC or MobileTransformers, as the CLI
    if not report.ok:
        for p in report.problems:
            print(p.file, p.pointer, p.rule)

What is bound so far, and what is not yet, is in docs/python.md. Errors are :class:`Error`
subclasses, one per library error code, carrying ``file``, ``pointer``, ``message`` (``rule``)
and ``offset``.
"""

from __future__ import annotations

import ctypes
from typing import Iterable, List, Optional, Tuple

from . import _lib
from ._util import JsonInput, PathLike, json_bytes, path_bytes
from .errors import (
    CancelledError,
    Error,
    InvalidArgumentError,
    IoError,
    LimitError,
    MalformedError,
    MismatchError,
    NotFoundError,
    NoVariantError,
    OutOfMemoryError,
    UnsupportedError,
    VersionError,
)
from .errors import check as _check
from .report import MlcReport, MtReport, Problem, ProgressFn, Report

__version__ = "0.1.0"


def version() -> str:
    """The library's version string at run time ("0.1.0")."""
    return str(_lib.lib.mpk_version().decode())


def version_number() -> int:
    """MPK_VERSION_NUMBER of the loaded library (major * 10000 + minor * 100 + patch)."""
    return int(_lib.lib.mpk_version_number())


def version_info() -> Tuple[int, int, int]:
    """(major, minor, patch) of the loaded library."""
    n = version_number()
    return n // 10000, n // 100 % 100, n % 100


def components() -> List[str]:
    """The components the library was built with: "core", then any of mlc mt fetch audio image onnx."""
    return [str(c) for c in _lib.lib.mpk_components().decode().split()]


def has_component(name: str) -> bool:
    return bool(_lib.lib.mpk_has_component(name.encode()))


def hash_implementation() -> str:
    """What computes SHA-256 and MD5 in this process: "openssl", "builtin-shani", ..."""
    return str(_lib.lib.mpk_hash_implementation().decode())


def library_path() -> str:
    """The shared library this binding loaded."""
    return _lib.path


def canonical_json(value: JsonInput) -> str:
    """Canonical JSON (mpk_canonical_json): keys sorted by code point at every level, "," and ":",
    no whitespace, non-ASCII raw, minimal escapes, integers only (an integral 16000.0 is 16000).

    ``value`` is JSON text (str or bytes) or a Python value (serialized with json.dumps). A number
    that is not an integer in the IEEE-754 safe range raises :class:`MalformedError` with the JSON
    pointer of the number.
    """
    text = json_bytes(value)
    out = ctypes.c_void_p()
    n = ctypes.c_size_t()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_canonical_json(text, len(text), ctypes.byref(out), ctypes.byref(n), ctypes.byref(err)), err)
    return _lib.take_buffer(out, n.value).decode("utf-8")


def sha256_id(data: bytes) -> str:
    """"sha256:" + the lowercase hex SHA-256 of `data` (mpk_sha256_id)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    out = ctypes.create_string_buffer(_lib.MPK_SHA256_ID_SIZE)
    rc = _lib.lib.mpk_sha256_id(bytes(data), len(data), out)
    if rc:
        raise InvalidArgumentError(rc, "mpk_sha256_id refused its arguments")
    return out.value.decode()


#: mpk_package_kind
PACKAGE_NONE, PACKAGE_MLC, PACKAGE_MT = "none", "mlc", "mobiletransformers"


def package_kind(path: PathLike) -> str:
    """What a package directory holds, from its manifests: "mlc", "mobiletransformers" or "none".
    A directory holding both raises :class:`MalformedError`."""
    kind = ctypes.c_int()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_package_kind(path_bytes(path), ctypes.byref(kind), ctypes.byref(err)), err)
    return (PACKAGE_NONE, PACKAGE_MLC, PACKAGE_MT)[kind.value]


def check(path: PathLike, lib: Optional[PathLike] = None, *, device_features: Optional[Iterable[str]] = None,
          max_binding_size: Optional[int] = None, no_weights: bool = False, variant: Optional[str] = None,
          all_variants: bool = False, no_hash: bool = False, no_graph: bool = False, workers: int = 0,
          progress: Optional[ProgressFn] = None) -> Report:
    """Check a package directory as ``modelpkg check`` does, and return the report.

    A directory holding ``mobiletransformers_manifest.json`` is checked as a MobileTransformers
    package (:func:`modelpkg.mt.check`: ``variant``, ``all_variants``, ``no_hash``, ``no_graph``),
    any other as an MLC package (:func:`modelpkg.mlc.check`: ``lib``, ``device_features``,
    ``max_binding_size``, ``no_weights``). An option of the other kind raises ValueError, as the CLI
    refuses it. The report is an :class:`MlcReport` or an :class:`MtReport`: ``report.ok``,
    ``report.problems`` (each with ``file``, ``pointer``, ``rule``), ``report.to_dict()`` (the
    ``--json`` document). Raises :class:`Error` only when the check could not run.
    """
    from . import mlc, mt

    kind = package_kind(path)
    mt_given = [n for n, v in (("variant", variant is not None), ("all_variants", all_variants),
                               ("no_hash", no_hash), ("no_graph", no_graph)) if v]
    mlc_given = [n for n, v in (("lib", lib is not None), ("device_features", device_features is not None),
                                ("max_binding_size", max_binding_size is not None), ("no_weights", no_weights)) if v]
    if kind == PACKAGE_MT:
        if mlc_given:
            raise ValueError(f"{mlc_given[0]} applies to an MLC package; {path!s} is a MobileTransformers package")
        return mt.check(path, variant=variant, all_variants=all_variants, no_hash=no_hash, no_graph=no_graph,
                        workers=workers, progress=progress)
    if mt_given:
        raise ValueError(f"{mt_given[0]} applies to a MobileTransformers package; {path!s} has no "
                         f"{mt.MANIFEST_FILENAME}")
    return mlc.check(path, lib, device_features=device_features, max_binding_size=max_binding_size,
                     no_weights=no_weights, workers=workers, progress=progress)


from . import audio, image, mlc, mt, tensors  # noqa: E402  (submodules, after the names they import)

__all__ = [
    "version", "version_number", "version_info", "components", "has_component", "hash_implementation",
    "library_path", "canonical_json", "sha256_id", "package_kind", "check", "Report", "MlcReport", "MtReport",
    "Problem", "Error", "MalformedError", "VersionError", "MismatchError", "NotFoundError", "UnsupportedError",
    "IoError", "OutOfMemoryError", "LimitError", "NoVariantError", "CancelledError", "InvalidArgumentError",
    "mlc", "mt", "tensors", "audio", "image",
]
