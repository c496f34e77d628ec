"""MLC model packages: identities, where WebLLM finds a model's files, and the package check.

Bound so far: :func:`interface_id`, :class:`Package` (the sidecar ``mlc-model-manifest.json``),
:func:`clean_model_url`, :func:`resource_urls` and :func:`check`. The rest of ``mpk_mlc_*``
(metadata, build, fit, plan, install) is not bound yet: docs/python.md lists it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Iterable, List, Optional

from . import _lib
from ._util import JsonInput, PathLike, json_bytes, opt_path, opt_str, path_bytes
from .errors import check as _check
from .report import MlcReport, Progress, ProgressFn, mlc_report_from_c

MANIFEST_FILENAME = "mlc-model-manifest.json"


def interface_id(tasks: JsonInput) -> str:
    """The ``interface_id`` ("sha256:<hex>") of a ``tasks`` object, normalized exactly as a sidecar's
    tasks (defaults filled) and hashed as MLC's Python producer does (mpk_mlc_interface_id).

    ``tasks`` is JSON text (str or bytes) or a Python value (a dict), serialized with
    ``json.dumps``. Raises :class:`modelpkg.MalformedError` for tasks WebLLM would refuse.
    """
    text = json_bytes(tasks)
    out = ctypes.create_string_buffer(_lib.MPK_SHA256_ID_SIZE)
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mlc_interface_id(text, len(text), out, ctypes.byref(err)), err)
    return out.value.decode()


class Package:
    """A parsed ``mlc-model-manifest.json`` (immutable; the C object is freed with this one)."""

    def __init__(self, ptr: "ctypes._Pointer[_lib.mpk_mlc_package]") -> None:
        self._ptr: Any = ptr
        p = ptr.contents
        self.schema_version: int = p.schema_version
        self.chat_config: str = _lib.s(p.chat_config) or ""
        self.interface_id: str = _lib.s(p.interface_id) or ""
        self.weights_manifest: str = _lib.s(p.weights_manifest) or ""
        self.parameter_schema_id: str = _lib.s(p.parameter_schema_id) or ""

    @classmethod
    def parse(cls, document: JsonInput, file: Optional[str] = None, *, check_interface_id: bool = True) -> "Package":
        """Parse a sidecar as WebLLM 0.2.86 does (mpk_mlc_package_parse). ``document`` is JSON text or
        a Python value; ``file`` names it in errors. ``check_interface_id=False`` skips the
        interface_id self-check (for documents with placeholder ids, as the conformance vectors have)."""
        text = json_bytes(document)
        ptr = ctypes.POINTER(_lib.mpk_mlc_package)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_package_parse(text, len(text), opt_str(file), 0 if check_interface_id else 1,
                                              ctypes.byref(ptr), ctypes.byref(err)), err)
        return cls(ptr)

    @classmethod
    def load(cls, path: PathLike) -> "Package":
        """Read a sidecar file, or DIR/mlc-model-manifest.json (mpk_mlc_package_load)."""
        ptr = ctypes.POINTER(_lib.mpk_mlc_package)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_package_load(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err)), err)
        return cls(ptr)

    def computed_interface_id(self) -> str:
        """The interface_id recomputed from the package's tasks."""
        out = ctypes.create_string_buffer(_lib.MPK_SHA256_ID_SIZE)
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_package_interface_id(self._ptr, out, ctypes.byref(err)), err)
        return out.value.decode()

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib.mpk_mlc_package_free(ptr)

    def __repr__(self) -> str:
        return f"Package(interface_id={self.interface_id!r}, weights_manifest={self.weights_manifest!r})"


def clean_model_url(model_url: str) -> str:
    """WebLLM 0.2.86's cleanModelUrl: a trailing "/", "resolve/main/" unless present, WHATWG
    serialization (mpk_mlc_clean_model_url). http(s) only."""
    out = ctypes.c_void_p()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mlc_clean_model_url(model_url.encode(), ctypes.byref(out), ctypes.byref(err)), err)
    try:
        return ctypes.string_at(out).decode()
    finally:
        _lib.lib.mpk_free(out)


@dataclass(frozen=True)
class ResourceUrls:
    """Where a model's documents are, as WebLLM's resolveModelPackageResourceURLs computes them."""

    chat_config_url: str
    tensor_cache_manifest_url: str
    tensor_cache_base_url: str  #: new URL(".", tensor_cache_manifest_url): shards resolve here


def resource_urls(model_url: str, package: Optional[Package] = None) -> ResourceUrls:
    """WebLLM 0.2.86's resolveModelPackageResourceURLs(model_url, package): ``package`` the parsed
    sidecar, or None (no sidecar: mlc-chat-config.json and tensor-cache.json). ``model_url`` is used
    as given (WebLLM cleans it first: :func:`clean_model_url`)."""
    u = _lib.mpk_mlc_resource_urls()
    err = _lib.mpk_error()
    pkg = package._ptr if package is not None else None
    rc = _lib.lib.mpk_mlc_resource_urls_resolve(model_url.encode(), pkg, ctypes.byref(u), ctypes.byref(err))
    try:
        _check(rc, err)
        return ResourceUrls(ctypes.string_at(u.chat_config_url).decode(),
                            ctypes.string_at(u.tensor_cache_manifest_url).decode(),
                            ctypes.string_at(u.tensor_cache_base_url).decode())
    finally:
        _lib.lib.mpk_mlc_resource_urls_free(ctypes.byref(u))


def check(path: PathLike, lib: Optional[PathLike] = None, *, device_features: Optional[Iterable[str]] = None,
          max_binding_size: Optional[int] = None, no_weights: bool = False, workers: int = 0,
          progress: Optional[ProgressFn] = None) -> MlcReport:
    """Every check ``modelpkg check DIR [--lib FILE]`` runs on an MLC package (mpk_mlc_check).

    ``device_features``: the WebGPU features the device offers (None: not checked; an empty list:
    none); ``max_binding_size``: its maxStorageBufferBindingSize (None: not checked). ``progress``
    gets (bytes hashed, bytes in all) of the shards. Returns the report (``report.ok``); raises only
    when the check could not run (no such directory: :class:`modelpkg.NotFoundError`, ...).
    """
    opts = _lib.options(_lib.mpk_mlc_check_options)
    opts.lib_path = opt_path(lib)
    opts.no_weights = 1 if no_weights else 0
    opts.workers = workers
    keep: List[object] = []
    if device_features is not None or max_binding_size is not None:
        dev = _lib.mpk_mlc_device()
        if device_features is not None:
            feats = [f.encode() for f in device_features]
            arr = (ctypes.c_char_p * max(1, len(feats)))(*feats)
            keep.append(arr)
            dev.features = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
            dev.n_features = len(feats)
            dev.has_features = 1
        dev.max_storage_buffer_binding_size = -1 if max_binding_size is None else int(max_binding_size)
        keep.append(dev)
        opts.device = ctypes.pointer(dev)
    prog = Progress(progress)
    prog.install(opts)
    out = ctypes.POINTER(_lib.mpk_mlc_report)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mlc_check(path_bytes(path), ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    try:
        prog.reraise()
        _check(rc, err)
        return mlc_report_from_c(out.contents)
    finally:
        _lib.lib.mpk_mlc_report_free(out)


__all__ = ["interface_id", "Package", "clean_model_url", "ResourceUrls", "resource_urls", "check",
           "MANIFEST_FILENAME"]
