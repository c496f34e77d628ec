"""MobileTransformers packages: the manifest, the check, sealing, selection, installs, the weight
handoff map, merges.

Bound: :class:`Manifest` (read, version gate, typed fields, download plans, the exporter's bytes),
:func:`check_versions`, :func:`check`, :func:`build` (``mt build`` / ``mt reseal``),
:func:`select` and :func:`plan_download` (``mt select`` / ``mt plan``), :func:`install` (``mt
install``, with progress and cancellation), :func:`installed`, :class:`HandoffMap` (read,
``to_json``, ``build`` from the graph), :func:`merge` (``mt merge``), and :func:`open_tensors` (the
load gate on a package or an installed model; views as zero-copy numpy arrays with DLPack, from
:mod:`modelpkg.tensors`). Each result's ``to_dict()`` is the command's ``--json`` document. Not
yet bound: the cache as a whole, restore, parity, the graph report (docs/python.md).
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

from . import _lib
from ._util import JsonInput, PathLike, json_bytes, opt_path, opt_str, path_bytes
from .errors import MismatchError, NotFoundError, from_c
from .errors import check as _check
from .report import MtReport, Problem, Progress, ProgressFn, mt_report_from_c, problem_from_c, problems_from_c
from .tensors import GatedTensors, TensorView, open_tensors

MANIFEST_FILENAME = "mobiletransformers_manifest.json"
#: The manifest versions this library reads (MPK_MT_MANIFEST_READER_VERSION).
READER_VERSION = "1.0"
#: The handoff map versions it reads (MPK_MT_HANDOFF_READER_VERSION).
HANDOFF_READER_VERSION = "1.1"


def check_versions(schema_version: Optional[str], min_reader_version: Optional[str],
                   reader: str = READER_VERSION) -> None:
    """The shared version gate (mpk_doc_version_check): a document is readable when its
    schemaVersion's major is not above the reader's and its minReaderVersion is not newer than the
    reader. Raises :class:`modelpkg.VersionError` when refused, :class:`modelpkg.MalformedError` for
    a version that is not "MAJOR.MINOR" (or None: a missing field)."""
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_doc_version_check(opt_str(schema_version), opt_str(min_reader_version), reader.encode(),
                                          ctypes.byref(err)), err)


#: the longest directory name sanitize_repo_id gives (MPK_MT_REPO_DIR_MAX)
REPO_DIR_MAX = 255


def sanitize_repo_id(repo_id: str) -> str:
    """The installed cache's directory name of a Hub repo id, as the reference sanitize_repo_id makes
    it (mpk_mt_sanitize_repo_id): per code point, '/' becomes "__", A-Z a-z 0-9 '.' '_' '-' are kept,
    anything else becomes one '_'. :class:`modelpkg.InvalidArgumentError` for an empty id or one that
    names "." or ".."; :class:`modelpkg.LimitError` past 255 bytes."""
    out = ctypes.create_string_buffer(REPO_DIR_MAX + 1)
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mt_sanitize_repo_id(repo_id.encode("utf-8", "surrogatepass"), out, len(out),
                                            ctypes.byref(err)), err)
    return out.value.decode()


def _opt(o: "_lib.mpk_opt_int") -> Optional[int]:
    return o.value if o.present else None


@dataclass(frozen=True)
class Variant:
    id: str
    execution_provider: str
    quantization: Optional[str]
    supported_engines: List[str]
    abi: Optional[List[str]]  #: None: any ABI ("abi": null); [] runs nowhere
    features: List[str]
    minimum_android_api: Optional[int]
    recommended_device_memory_mb: Optional[int]
    weight_handoff: Optional[str]
    paths: Dict[str, str]  #: feature -> package-relative directory


@dataclass(frozen=True)
class ManifestFile:
    """A file the manifest lists (fileSizes and/or sha256)."""

    path: str
    size: Optional[int]
    sha256: Optional[str]


class Manifest:
    """A read ``mobiletransformers_manifest.json``: version gate passed, every field typed.

    The fields are plain Python values read once; the C object stays alive for :meth:`plan_files`
    and :meth:`to_json` and is freed with this object.
    """

    def __init__(self, ptr: "ctypes._Pointer[_lib.mpk_mt_manifest]") -> None:
        self._ptr: Any = ptr
        m = ptr.contents
        s = _lib.s
        self.schema_version: str = s(m.schema_version) or ""
        self.min_reader_version: str = s(m.min_reader_version) or ""
        self.base_model_id: Optional[str] = s(m.base_model_id)
        self.exported_at: Optional[str] = s(m.exported_at)
        self.mobiletransformers_version: Optional[str] = s(m.mobiletransformers_version)
        self.artifact_format_version: Optional[int] = _opt(m.artifact_format_version)
        self.selected_task: Optional[str] = s(m.selected_task)
        self.trust_remote_code: Optional[bool] = None if m.trust_remote_code < 0 else bool(m.trust_remote_code)
        self.optimum_onnx_version: Optional[str] = s(m.optimum_onnx_version)
        self.transformers_version: Optional[str] = s(m.transformers_version)
        self.onnx_runtime_training_version: Optional[str] = s(m.onnx_runtime_training_version)
        self.onnx_runtime_genai_version: Optional[str] = s(m.onnx_runtime_genai_version)
        self.trainable_parameter_count: Optional[int] = _opt(m.trainable_parameter_count)
        self.training_parameter_count: Optional[int] = _opt(m.training_parameter_count)
        self.default_variant: str = s(m.default_variant) or ""
        self.variants: List[Variant] = [self._variant(m.variants[i]) for i in range(m.n_variants)]
        self.download_plan: Dict[str, Dict[str, List[str]]] = {}
        for i in range(m.n_plans):
            p = m.plans[i]
            self.download_plan[s(p.variant) or ""] = {
                s(p.groups[j].name) or "": _lib.strings(p.groups[j].patterns, p.groups[j].n_patterns)
                for j in range(p.n_groups)}
        self.required_files: List[str] = _lib.strings(m.required_files, m.n_required_files)
        self.files: List[ManifestFile] = [
            ManifestFile(s(f.path) or "", f.size if f.has_size else None, s(f.sha256))
            for f in (m.files[i] for i in range(m.n_files))]
        self.weight_handoff: Optional[str] = s(m.weight_handoff)
        self.android_minimum_api: Optional[int] = _opt(m.android_minimum_api)
        self.android_recommended_memory_mb: Optional[int] = _opt(m.android_recommended_memory_mb)
        self.android_required_abis: List[str] = _lib.strings(m.android_required_abis, m.n_android_required_abis)
        self.license_framework: Optional[str] = s(m.license_framework)
        self.license_base_model_weights: Optional[str] = s(m.license_base_model_weights)
        self.license_notice_file: Optional[str] = s(m.license_notice_file)

    @staticmethod
    def _variant(v: "_lib.mpk_mt_variant") -> Variant:
        s = _lib.s
        return Variant(
            id=s(v.id) or "", execution_provider=s(v.execution_provider) or "", quantization=s(v.quantization),
            supported_engines=_lib.strings(v.supported_engines, v.n_supported_engines),
            abi=None if v.abi_any else _lib.strings(v.abi, v.n_abi), features=_lib.strings(v.features, v.n_features),
            minimum_android_api=_opt(v.minimum_android_api),
            recommended_device_memory_mb=_opt(v.recommended_device_memory_mb), weight_handoff=s(v.weight_handoff),
            paths={s(v.paths[i].key) or "": s(v.paths[i].value) or "" for i in range(v.n_paths)})

    @classmethod
    def load(cls, path: PathLike) -> "Manifest":
        """Read DIR/mobiletransformers_manifest.json, or a manifest file (mpk_mt_manifest_load)."""
        ptr = ctypes.POINTER(_lib.mpk_mt_manifest)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_manifest_load(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err)), err)
        return cls(ptr)

    @classmethod
    def parse(cls, document: JsonInput, file: Optional[str] = None) -> "Manifest":
        """Read a manifest from JSON text (or a Python value); ``file`` names it in errors."""
        text = json_bytes(document)
        ptr = ctypes.POINTER(_lib.mpk_mt_manifest)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_manifest_parse(text, len(text), opt_str(file), ctypes.byref(ptr), ctypes.byref(err)),
               err)
        return cls(ptr)

    def variant(self, id: Optional[str] = None) -> Variant:
        """The variant with this id (None: the defaultVariant); KeyError when absent."""
        want = self.default_variant if id is None else id
        for v in self.variants:
            if v.id == want:
                return v
        raise KeyError(want)

    def file(self, path: str) -> Optional[ManifestFile]:
        for f in self.files:
            if f.path == path:
                return f
        return None

    def plan_files(self, variant: Optional[str] = None, groups: Optional[Iterable[str]] = None) -> List[ManifestFile]:
        """The listed files a variant's download plan selects (mpk_mt_plan_files), sorted by path:
        ``groups`` None means every group of the plan. NotFoundError for an unknown variant or group."""
        names = [g.encode() for g in groups] if groups is not None else []
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        out = ctypes.POINTER(ctypes.POINTER(_lib.mpk_mt_file))()
        n = ctypes.c_size_t()
        err = _lib.mpk_error()
        vid = (self.default_variant if variant is None else variant).encode()
        rc = _lib.lib.mpk_mt_plan_files(self._ptr, vid, ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)),
                                        len(names), ctypes.byref(out), ctypes.byref(n), ctypes.byref(err))
        try:
            _check(rc, err)
            res = []
            for i in range(n.value):
                f = out[i].contents
                res.append(ManifestFile(_lib.s(f.path) or "", f.size if f.has_size else None, _lib.s(f.sha256)))
            return res
        finally:
            _lib.lib.mpk_free(ctypes.cast(out, ctypes.c_void_p))

    def to_json(self) -> bytes:
        """The manifest as the reference exporter writes it (json.dumps(indent=2, sort_keys=True) +
        "\\n", unknown fields kept): mpk_mt_manifest_json."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_manifest_json(self._ptr, ctypes.byref(out), ctypes.byref(n), ctypes.byref(err)), err)
        return _lib.take_buffer(out, n.value)

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib.mpk_mt_manifest_free(ptr)

    def __repr__(self) -> str:
        return (f"Manifest(base_model_id={self.base_model_id!r}, default_variant={self.default_variant!r}, "
                f"variants={[v.id for v in self.variants]!r}, files={len(self.files)})")


def check(path: PathLike, *, variant: Optional[str] = None, all_variants: bool = False, no_hash: bool = False,
          no_graph: bool = False, workers: int = 0, progress: Optional[ProgressFn] = None) -> MtReport:
    """Every check ``modelpkg check DIR`` runs on a MobileTransformers package (mpk_mt_check):
    manifest, variants, handoff map, load gate, every listed file's size and SHA-256.

    ``variant`` (None: defaultVariant, or an installed model's own) or ``all_variants``;
    ``no_hash``: sizes only; ``no_graph``: model.onnx not read; ``workers``: hashing threads (0: one
    per CPU, at most 8); ``progress`` gets (bytes hashed, bytes in all). Returns the report; raises
    only when the check could not run.
    """
    if variant is not None and all_variants:
        raise ValueError("give variant or all_variants, not both")
    opts = _lib.options(_lib.mpk_mt_check_options)
    opts.variant = opt_str(variant)
    opts.all_variants = int(all_variants)
    opts.no_hash = int(no_hash)
    opts.no_graph = int(no_graph)
    opts.workers = workers
    prog = Progress(progress)
    prog.install(opts)
    out = ctypes.POINTER(_lib.mpk_mt_report)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mt_check(path_bytes(path), ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    try:
        prog.reraise()
        _check(rc, err)
        return mt_report_from_c(out.contents)
    finally:
        _lib.lib.mpk_mt_report_free(out)


#: mpk_mt_change_kind
CHANGE_KINDS = ("added", "removed", "changed")


@dataclass(frozen=True)
class Change:
    """A fileSizes/sha256 entry that differs from the previous manifest."""

    path: str
    kind: str  #: "added", "removed" or "changed"


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` did (mpk_mt_build_result)."""

    had_manifest: bool     #: the directory held a readable manifest, and ``changes`` compare with it
    n_files: int           #: files listed (fileSizes / sha256)
    total_bytes: int       #: their sizes added up
    changes: List[Change]  #: sorted by path (none without a previous manifest)
    written: List[str]     #: documents whose bytes changed on disk (dry_run: would change); manifest last
    manifest: bytes        #: the manifest's bytes


def build(path: PathLike, describe: Optional[JsonInput] = None, *, describe_file: Optional[str] = None,
          workers: int = 0, dry_run: bool = False, progress: Optional[ProgressFn] = None) -> BuildResult:
    """Seal a package directory as the reference exporter does, byte for byte (mpk_mt_build; what
    ``modelpkg mt build`` / ``mt reseal`` run; rules: docs/mt-build.md).

    ``describe``: the descriptive inputs as BUILD.json (text, bytes or a Python dict); None re-seals
    from the package's existing manifest. Every file is listed with its size and SHA-256 (hashed on
    ``workers`` threads), each variant's checksums.json and the manifest written atomically, only when
    their bytes change. ``dry_run`` computes everything and writes nothing. The GIL is released while
    the library hashes.
    """
    inp = _lib.mpk_mt_build_input()
    text = None
    if describe is not None:
        text = json_bytes(describe)
        inp.describe = text
        inp.describe_len = len(text)
    inp.describe_file = opt_str(describe_file)
    inp.workers = workers
    inp.dry_run = int(dry_run)
    prog = Progress(progress)
    prog.install(inp)
    res = _lib.mpk_mt_build_result()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mt_build(path_bytes(path), ctypes.byref(inp), ctypes.byref(res), ctypes.byref(err))
    try:
        prog.reraise()
        _check(rc, err)
        return BuildResult(
            had_manifest=bool(res.had_manifest), n_files=res.n_files, total_bytes=res.total_bytes,
            changes=[Change(_lib.s(res.changes[i].path) or "", CHANGE_KINDS[res.changes[i].kind])
                     for i in range(res.n_changes)],
            written=_lib.strings(res.written, res.n_written),
            manifest=ctypes.string_at(res.manifest, res.manifest_len) if res.manifest else b"")
    finally:
        _lib.lib.mpk_mt_build_result_free(ctypes.byref(res))
        del text



# ============================================================================ shared helpers


def _cstrings(items: Optional[Iterable[str]], keep: List[Any]) -> Tuple[Any, int]:
    """A C array of strings (None: NULL) and its length; ``keep`` holds the memory for the call.
    An empty list is a non-NULL array of length 0 (the C API tells "none" from "the default")."""
    if items is None:
        return None, 0
    enc = [str(x).encode("utf-8") for x in items]
    arr = (ctypes.c_char_p * max(1, len(enc)))(*enc)
    keep.extend([enc, arr])
    return ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), len(enc)


def _is_url(source: Any) -> bool:
    return isinstance(source, str) and (source.startswith("http://") or source.startswith("https://"))


def _source_name(source: Any) -> str:
    if isinstance(source, Manifest):
        return ""
    return os.fsdecode(source) if isinstance(source, (bytes, os.PathLike)) else str(source)


def open_source(source: "Union[Manifest, PathLike]") -> Manifest:
    """The manifest of a package source as ``mt select`` / ``mt plan`` read it: a Manifest as given,
    an http(s) base URL through mpk_mt_manifest_open_source (as the installer reads it: at most
    16 MiB, version-gated), else a directory or a manifest file (mpk_mt_manifest_load)."""
    if isinstance(source, Manifest):
        return source
    if _is_url(source):
        ptr = ctypes.POINTER(_lib.mpk_mt_manifest)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_manifest_open_source(str(source).encode(), ctypes.byref(ptr), ctypes.byref(err)), err)
        return Manifest(ptr)
    return Manifest.load(source)


def _envelope(command: str, ok: bool) -> Dict[str, Any]:
    return {"modelpkg_version": _lib.lib.mpk_version().decode(), "command": command, "ok": ok}


def _finish(doc: Dict[str, Any], problems: List[Problem], notes: List[str]) -> Dict[str, Any]:
    if problems:
        doc["ok"] = False
    doc["problems"] = [p.to_dict() for p in problems]
    doc["notes"] = list(notes)
    return doc


def _err_problem(err: "_lib.mpk_error") -> Problem:
    return problem_from_c(err)


# ============================================================================ select and plan

#: mpk_mt_select_options: closed sets the CLI checks (a typo would filter out every variant)
ANDROID_ABIS = ("arm64-v8a", "armeabi-v7a", "x86", "x86_64", "riscv64")
ENGINES = ("native", "genai")
#: MPK_MT_DEFAULT_PREFER_QUANT
DEFAULT_PREFER_QUANT = "int4"


def storage_budget(free_bytes: int) -> int:
    """How much of ``free_bytes`` a download may use: floor(free * 9 / 10) (mpk_mt_storage_budget)."""
    if free_bytes < 0:
        raise ValueError("free_bytes must be non-negative")
    return int(_lib.lib.mpk_mt_storage_budget(free_bytes))


@dataclass(frozen=True)
class Device:
    """The device and request a variant is selected for (mpk_mt_select_options); None filters
    nothing. ``prefer_quant`` None: ["int4"]; [] no preference. ``storage_bytes``: free storage (the
    download must fit 90 % of it)."""

    abis: Optional[List[str]] = None
    execution_provider: Optional[str] = None
    quantization: Optional[str] = None
    engine: Optional[str] = None
    memory_mb: Optional[int] = None
    api_level: Optional[int] = None
    storage_bytes: Optional[int] = None
    prefer_quant: Optional[List[str]] = None

    def given(self) -> bool:
        """Any device fact given (what makes ``install`` select instead of using the default rule)."""
        return any(v is not None for v in (self.abis, self.execution_provider, self.quantization, self.engine,
                                           self.memory_mb, self.api_level, self.storage_bytes, self.prefer_quant))

    def to_dict(self) -> Dict[str, Any]:
        """The CLI's "device" object (prefer_quant is reported beside it, as used)."""
        return {"abis": list(self.abis) if self.abis else None, "execution_provider": self.execution_provider,
                "quantization": self.quantization, "engine": self.engine, "memory_mb": self.memory_mb,
                "api_level": self.api_level, "storage_bytes": self.storage_bytes}

    def _options(self, features: Optional[Iterable[str]], keep: List[Any]) -> Any:
        for a in self.abis or []:
            if a not in ANDROID_ABIS:
                raise ValueError(f"abi {a!r} is not one of {', '.join(ANDROID_ABIS)}")
        if self.engine is not None and self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        for name in ("execution_provider", "quantization", "engine"):
            if getattr(self, name) == "":
                raise ValueError(f"{name} needs a non-empty value")
        o = _lib.options(_lib.mpk_mt_select_options)
        o.abis, o.n_abis = _cstrings(self.abis or None, keep)
        o.execution_provider = opt_str(self.execution_provider)
        o.quantization = opt_str(self.quantization)
        o.engine = opt_str(self.engine)
        for name, field_name in (("memory_mb", "memory_mb"), ("api_level", "api_level"),
                                 ("storage_bytes", "free_bytes")):
            v = getattr(self, name)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int) or v < 0 or v > (1 << 53) - 1:
                    raise ValueError(f"{name} needs a non-negative integer, not {v!r}")
                setattr(o, field_name, _lib.mpk_opt_int(1, v))
        feats = list(features) if features is not None else None
        if feats is not None and any(not f for f in feats):
            raise ValueError("features has an empty item")
        o.features, o.n_features = _cstrings(feats, keep)
        o.prefer_quant, o.n_prefer_quant = _cstrings(self.prefer_quant, keep)
        return o


@dataclass(frozen=True)
class Candidate:
    """One variant's fate in a selection (mpk_mt_candidate)."""

    id: str
    quantization: Optional[str]
    execution_provider: str
    download_bytes: Optional[int]  #: its plan's total for the requested features; None: no plan
    rank: Optional[int]            #: 1-based among the variants past the hard filters; None: excluded
    excluded_by: Optional[str]     #: the first filter that excluded it ("abi", ..., "storage"); None
    chosen: bool
    reason: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "quantization": self.quantization, "execution_provider": self.execution_provider,
                "download_bytes": self.download_bytes, "rank": self.rank, "excluded_by": self.excluded_by,
                "chosen": self.chosen, "reason": self.reason}


@dataclass(frozen=True)
class Selection:
    """The variant chosen for a device and why (mpk_mt_selection): ``chosen`` None when none fits,
    ``error`` then names every variant and the first filter that excluded it."""

    source: str
    device: Device
    chosen: Optional[str]
    fell_back: bool
    summary: Optional[str]
    features: List[str]
    groups: List[str]
    prefer_quant: List[str]
    preferred_quant: Optional[str]
    budget_bytes: Optional[int]
    free_bytes: Optional[int]
    candidates: List[Candidate]
    error: Optional[Problem]

    @property
    def ok(self) -> bool:
        return self.chosen is not None

    def raise_for_no_variant(self) -> None:
        """Raise NoVariantError (the library's message) when nothing fits."""
        if self.error is not None:
            raise self.error.exception()

    def to_dict(self) -> Dict[str, Any]:
        """``modelpkg mt select SOURCE ... --json``, key for key."""
        doc = _envelope("mt select", self.error is None)
        doc.update({"source": self.source, "chosen": self.chosen, "fell_back": self.fell_back,
                    "summary": self.summary, "device": self.device.to_dict(), "features": list(self.features),
                    "groups": list(self.groups), "prefer_quant": list(self.prefer_quant),
                    "preferred_quant": self.preferred_quant, "budget_bytes": self.budget_bytes,
                    "candidates": [c.to_dict() for c in self.candidates],
                    "error": self.error.to_dict() if self.error else None})
        return _finish(doc, [self.error] if self.error else [], [])


def select(source: "Union[Manifest, PathLike]", device: Optional[Device] = None, *,
           features: Optional[Iterable[str]] = None) -> Selection:
    """Choose the variant of a package (a Manifest, a directory, a manifest file or an http(s) base
    URL) for a device: ``modelpkg mt select`` (mpk_mt_select; rules: docs/mt-select.md). Hard filters
    in order (ABI, execution provider, quantization, engine, features, memory, API level, an
    installable plan), then ranked (preferred quantization, smallest download, defaultVariant, id);
    with ``device.storage_bytes`` the best-ranked one that fits 90 % of it.

    Returns the Selection whenever the selection ran — ``chosen`` None and ``error`` set when no
    variant fits (``raise_for_no_variant()``); raises when it could not run (manifest refused,
    invalid options: ValueError for what the CLI refuses as a usage error)."""
    device = device or Device()
    keep: List[Any] = []
    opts = device._options(features, keep)
    m = open_source(source)
    out = ctypes.POINTER(_lib.mpk_mt_selection)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mt_select(m._ptr, ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    try:
        if not out:
            _check(rc, err)
        sel = out.contents
        s = _lib.s
        cands = []
        for i in range(sel.n_candidates):
            c = sel.candidates[i]
            v = c.variant.contents
            cands.append(Candidate(
                id=s(v.id) or "", quantization=s(v.quantization), execution_provider=s(v.execution_provider) or "",
                download_bytes=c.download_bytes if c.has_bytes else None, rank=c.rank or None,
                excluded_by=s(_lib.lib.mpk_mt_filter_name(c.excluded_by)) if c.excluded_by else None,
                chosen=bool(c.chosen), reason=s(c.reason)))
        return Selection(
            source=_source_name(source), device=device, chosen=s(sel.chosen.contents.id) if sel.chosen else None,
            fell_back=bool(sel.fell_back), summary=s(sel.summary), features=_lib.strings(sel.features, sel.n_features),
            groups=_lib.strings(sel.groups, sel.n_groups), prefer_quant=_lib.strings(sel.prefer_quant, sel.n_prefer_quant),
            preferred_quant=s(sel.preferred_quant), budget_bytes=sel.budget_bytes if sel.has_budget else None,
            free_bytes=sel.free_bytes if sel.has_budget else None, candidates=cands,
            error=_err_problem(err) if rc else None)
    finally:
        _lib.lib.mpk_mt_selection_free(out)
        del keep


@dataclass(frozen=True)
class PlannedFile:
    """One file of a download plan (mpk_mt_planned_file)."""

    path: str
    group: str
    size: Optional[int]    #: None: fileSizes does not list it
    sha256: Optional[str]  #: None: not listed

    def to_dict(self) -> Dict[str, Any]:
        return {"path": self.path, "group": self.group, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class DownloadPlan:
    """The exact files and bytes to download for a variant (mpk_mt_download_plan)."""

    source: str
    variant: str
    features: List[str]
    groups: List[str]
    files: List[PlannedFile]     #: sorted by path (bytewise)
    total_bytes: int
    includes_manifest: bool      #: a group names the manifest (already read: not in files or the total)
    n_unverifiable: int          #: files without a size or a digest (allow_unverifiable only)
    problems: List[Problem]      #: one per such file
    notes: List[str]             #: patterns that select no listed file

    @property
    def installable(self) -> bool:
        return self.n_unverifiable == 0

    def to_dict(self) -> Dict[str, Any]:
        """``modelpkg mt plan SOURCE ... --json``, key for key."""
        doc = _envelope("mt plan", self.n_unverifiable == 0 and not self.problems)
        doc.update({"source": self.source, "variant": self.variant, "features": list(self.features),
                    "groups": list(self.groups), "files": [f.to_dict() for f in self.files],
                    "n_files": len(self.files), "total_bytes": self.total_bytes,
                    "includes_manifest": self.includes_manifest, "installable": self.installable})
        if self.n_unverifiable:
            doc["ok"] = False
        return _finish(doc, self.problems, self.notes)


def plan_download(source: "Union[Manifest, PathLike]", variant: Optional[str] = None, *,
                  features: Optional[Iterable[str]] = None, allow_unverifiable: bool = True) -> DownloadPlan:
    """The files to fetch for ``variant`` and the groups core, checksums and ``features`` (None:
    ["inference"]): ``modelpkg mt plan`` (mpk_mt_plan_download). ``variant`` None: the default rule
    (an installed model's recorded variant, else defaultVariant). As the CLI, files without a size or
    digest are reported (``installable`` False, ``problems``) rather than refused; with
    ``allow_unverifiable=False`` such a plan raises MalformedError naming the file, as the installer
    refuses it."""
    keep: List[Any] = []
    feats = list(features) if features is not None else None
    if feats is not None and any(not f for f in feats):
        raise ValueError("features has an empty item")
    m = open_source(source)
    inst = ctypes.POINTER(_lib.mpk_mt_installed)()
    try:
        if variant is None:
            if not isinstance(source, Manifest) and not _is_url(source) and os.path.isdir(path_bytes(source)):
                err = _lib.mpk_error()
                rc = _lib.lib.mpk_mt_installed_open(path_bytes(source), ctypes.byref(inst), ctypes.byref(err))
                if rc and rc != -4:
                    _check(rc, err)
            dv = _lib.lib.mpk_mt_default_variant(m._ptr, inst)
            if dv is None:
                raise NotFoundError(-4, "no variant given and the manifest has no defaultVariant",
                                    _source_name(source), "/defaultVariant")
            variant = dv.decode()
        opts = _lib.options(_lib.mpk_mt_plan_options)
        opts.features, opts.n_features = _cstrings(feats, keep)
        opts.allow_unverifiable = int(allow_unverifiable)
        out = ctypes.POINTER(_lib.mpk_mt_download_plan)()
        err = _lib.mpk_error()
        rc = _lib.lib.mpk_mt_plan_download(m._ptr, variant.encode(), ctypes.byref(opts), ctypes.byref(out),
                                           ctypes.byref(err))
        try:
            _check(rc, err)
            p = out.contents
            s = _lib.s
            files = [PlannedFile(s(f.path) or "", s(f.group) or "", f.size if f.has_size else None, s(f.sha256))
                     for f in (p.files[i] for i in range(p.n_files))]
            return DownloadPlan(
                source=_source_name(source), variant=s(p.variant) or "", features=_lib.strings(p.features, p.n_features),
                groups=_lib.strings(p.groups, p.n_groups), files=files, total_bytes=p.total_bytes,
                includes_manifest=bool(p.includes_manifest), n_unverifiable=p.n_unverifiable,
                problems=problems_from_c(p.problems, p.n_problems), notes=_lib.strings(p.notes, p.n_notes))
        finally:
            _lib.lib.mpk_mt_download_plan_free(out)
    finally:
        _lib.lib.mpk_mt_installed_free(inst)
        del keep


# ============================================================================ install


#: mpk_mt_install_event_kind, as the CLI's --json progress events name them
INSTALL_EVENTS = ("planned", "file_start", "file_done", "retry", "bytes", "committed")


@dataclass(frozen=True)
class InstallEvent:
    """One progress event of an install (mpk_mt_install_event)."""

    kind: str             #: "planned", "file_start", "file_done", "retry", "bytes", "committed"
    file: Optional[str]   #: package-relative path (file events)
    file_done: int
    file_size: int
    done: int             #: bytes of the whole plan present and hashed
    total: int            #: bytes in all
    files: int            #: files planned
    message: Optional[str]  #: retry: the reason


InstallProgressFn = Callable[[InstallEvent], Any]


class _InstallProgress:
    """A Python callable as an mpk_mt_install_fn: a true return cancels (CancelledError); an
    exception it raises cancels too and is re-raised from the call."""

    def __init__(self, fn: Optional[InstallProgressFn]) -> None:
        self.fn = fn
        self.exc: Optional[BaseException] = None
        self.c_fn = _lib.INSTALL_FN(self._call) if fn is not None else None

    def _call(self, ctx: Any, ev: Any) -> int:
        try:
            e = ev.contents
            s = _lib.s
            kind = INSTALL_EVENTS[e.kind] if 0 <= e.kind < len(INSTALL_EVENTS) else "?"
            event = InstallEvent(kind, s(e.file), e.file_done, e.file_size, e.done, e.total, e.files, s(e.message))
            return 1 if self.fn(event) else 0  # type: ignore[misc]
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            self.exc = exc
            return 1

    def reraise(self) -> None:
        if self.exc is not None:
            exc, self.exc = self.exc, None
            raise exc


@dataclass(frozen=True)
class InstalledAdapter:
    """An adapter merged into the install an update replaced: re-applied or dropped."""

    sha256: Optional[str]
    reapplied: bool
    reason: Optional[str]


@dataclass(frozen=True)
class InstallResult:
    """What an install did (mpk_mt_install_result)."""

    repo_dir: str
    variant: str
    files: int          #: files installed (the manifest and the records not counted)
    total_bytes: int
    reused_bytes: int   #: bytes an interrupted install had staged, re-hashed and kept
    retries: int
    restarts: int
    replaced: bool      #: a previous install was replaced
    adapters: List[InstalledAdapter]
    seconds: float      #: wall time of the call

    def to_dict(self) -> Dict[str, Any]:
        """``modelpkg mt install ... --json``'s result document, key for key."""
        doc = _envelope("mt install", True)
        doc.update({"repo_dir": self.repo_dir, "variant": self.variant, "files": self.files,
                    "bytes": self.total_bytes, "reused_bytes": self.reused_bytes, "retries": self.retries,
                    "restarts": self.restarts, "replaced": self.replaced,
                    "adapters": [{"sha256": a.sha256, "reapplied": a.reapplied, "reason": a.reason}
                                 for a in self.adapters],
                    "seconds": self.seconds})
        return _finish(doc, [], [])


def _bounded(name: str, v: Optional[int], lo: int, hi: int) -> int:
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{name} needs an integer from {lo} to {hi}, not {v!r}")
    return v


def install(source: PathLike, repo_id: str, cache_dir: PathLike, *, variant: Optional[str] = None,
            device: Optional[Device] = None, features: Optional[Iterable[str]] = None, jobs: Optional[int] = None,
            connections: Optional[int] = None, ca_file: Optional[PathLike] = None, wait: bool = False,
            retries: Optional[int] = None, retry_delay_ms: Optional[int] = None, timeout: Optional[int] = None,
            low_speed: Optional[int] = None, low_speed_time: Optional[int] = None,
            progress: Optional[InstallProgressFn] = None) -> InstallResult:
    """Install a variant of the package at ``source`` (a directory or an http(s) base URL) into
    ``cache_dir/<sanitized repo id>/``: ``modelpkg mt install`` (mpk_mt_install; docs/mt-install.md).
    Every file is checked against the manifest's size and SHA-256 while it arrives; the previous
    install stays intact until the new tree is complete, then one rename swaps them.

    ``variant`` names the variant; else with a ``device`` that gives any fact the variant is selected
    (as :func:`select`; storage defaults to the cache's free space); else the default rule (the
    variant this cache's install records, else defaultVariant). ``features``: groups besides core and
    checksums (None: ["inference"]). The other keywords are the CLI's options (None: its defaults).
    ``progress(event)`` gets :class:`InstallEvent` objects from worker threads, never two at once; a
    true return cancels (CancelledError: the installed tree unchanged, what was staged kept for a
    resume), an exception it raises cancels and is re-raised. The GIL is released meanwhile."""
    keep: List[Any] = []
    device = device or Device()
    selecting = device.given()
    if variant is not None and selecting:
        raise ValueError("variant names the variant: device options select one; not both")
    if not repo_id:
        raise ValueError("repo_id is required")
    feats = list(features) if features is not None else None
    so = device._options(feats, keep)
    o = _lib.options(_lib.mpk_mt_install_options)
    o.repo_id = repo_id.encode("utf-8", "surrogatepass")
    o.cache_dir = path_bytes(cache_dir)
    o.variant = opt_str(variant)
    o.features, o.n_features = so.features, so.n_features
    o.select = ctypes.pointer(so) if selecting else None
    o.jobs = _bounded("jobs", jobs, 1, 64)
    o.connections = _bounded("connections", connections, 1, 64)
    o.ca_file = opt_path(ca_file)
    o.wait_for_lock = int(wait)
    o.attempts = _bounded("retries", retries, 1, 100)
    o.retry_delay_ms = _bounded("retry_delay_ms", retry_delay_ms, 1, 60000)
    o.timeout_secs = _bounded("timeout", timeout, 1, 604800)
    o.low_speed_bytes = _bounded("low_speed", low_speed, 1, 1000000000)
    o.low_speed_secs = _bounded("low_speed_time", low_speed_time, 1, 3600)
    prog = _InstallProgress(progress)
    if prog.c_fn is not None:
        o.on_event = prog.c_fn
    res = _lib.mpk_mt_install_result()
    err = _lib.mpk_error()
    t0 = time.monotonic()
    rc = _lib.lib.mpk_mt_install(os.fsencode(source), ctypes.byref(o), ctypes.byref(res), ctypes.byref(err))
    secs = time.monotonic() - t0
    try:
        prog.reraise()
        _check(rc, err)
        s = _lib.s
        return InstallResult(
            repo_dir=s(res.repo_dir) or "", variant=s(res.variant) or "", files=res.files,
            total_bytes=res.total_bytes, reused_bytes=res.reused_bytes, retries=res.retries, restarts=res.restarts,
            replaced=bool(res.replaced),
            adapters=[InstalledAdapter(s(a.sha256), bool(a.reapplied), s(a.reason))
                      for a in (res.adapters[i] for i in range(res.n_adapters))],
            seconds=secs)
    finally:
        _lib.lib.mpk_mt_install_result_free(ctypes.byref(res))
        del keep


@dataclass(frozen=True)
class Installed:
    """What an installed model's records say (mpk_mt_installed_open; docs/mt-installed.md)."""

    repo_id: str
    variant: Optional[str]
    features: List[str]
    installed_at_ms: int
    install_id: Optional[str]
    source: Optional[str]
    record: str  #: "modelpkg", "reference" or "none" (a hand-pushed tree)


def installed(path: PathLike) -> Installed:
    """Read installed model ``path`` (``<cache>/<sanitized repo id>``): NotFoundError when it is not
    one (a package directory, say)."""
    ptr = ctypes.POINTER(_lib.mpk_mt_installed)()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mt_installed_open(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err)), err)
    try:
        i = ptr.contents
        s = _lib.s
        return Installed(s(i.repo_id) or "", s(i.variant), _lib.strings(i.features, i.n_features), i.installed_at_ms,
                         s(i.install_id), s(i.source), ("none", "modelpkg", "reference")[i.record])
    finally:
        _lib.lib.mpk_mt_installed_free(ptr)


def installed_path(manifest: Manifest, variant: str, package_path: str) -> str:
    """Where a package file goes in an installed tree of ``variant`` (mpk_mt_installed_path):
    ``<paths[stage]>/x`` → ``<stage>/x``, ``variants/<id>/checksums.json`` → ``checksums.json``."""
    v = _lib.lib.mpk_mt_manifest_variant(manifest._ptr, variant.encode())
    if not v:
        raise KeyError(variant)
    out = ctypes.c_void_p()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mt_installed_path(v, package_path.encode(), ctypes.byref(out), ctypes.byref(err)), err)
    return _lib.take_buffer(out, len(ctypes.string_at(out))).decode("utf-8", "surrogateescape")


# ============================================================================ the weight handoff map

ROLES = ("weight", "weight_quantized", "scale", "zero_point")
TRANSPOSE_POLICIES = ("no_transpose", "already_transposed_for_inference")


def _dims(d: "_lib.mpk_mt_dims") -> Optional[Tuple[int, ...]]:
    return tuple(d.dims[i] for i in range(d.ndim)) if d.present else None


def _roles(arr: Any) -> Dict[str, str]:
    return {ROLES[r]: _lib.s(arr[r]) or "" for r in range(len(ROLES)) if arr[r] is not None}


def _pairs(arr: Any, n: int) -> Dict[str, str]:
    return {_lib.s(arr[i].key) or "": _lib.s(arr[i].value) or "" for i in range(n)}


@dataclass(frozen=True)
class HandoffEntry:
    """One entries[] element of a weight handoff map (mpk_mt_handoff_entry); per-role maps keyed by
    "weight", "weight_quantized", "scale", "zero_point", holding only the roles present."""

    index: int
    training_base_layer_name: str
    dtype: Optional[str]
    shape: Tuple[int, ...]
    tensor_dtypes: Dict[str, str]
    tensor_shapes: Dict[str, Tuple[int, ...]]
    merger_output_names: Dict[str, str]
    merged_tensor_names: Dict[str, str]
    inference_initializer_names: Dict[str, str]
    external_data_location: Dict[str, str]
    sha256: Dict[str, str]
    genai_input_names: Dict[str, str]
    checkpoint_names: Dict[str, str]
    adapter_dtypes: Dict[str, str]
    adapter_shapes: Dict[str, Tuple[int, ...]]
    quantization: Optional[Dict[str, Optional[str]]]  #: weightQuantizedName, scaleName, zeroPointName
    transpose_policy: str


class HandoffMap:
    """A read and validated ``weight_handoff_map.json`` (mpk_mt_handoff): typed fields, entries as
    :class:`HandoffEntry`, and :meth:`to_json`, the reference HandoffMap.to_json() bytes."""

    def __init__(self, ptr: "ctypes._Pointer[_lib.mpk_mt_handoff]") -> None:
        self._ptr: Any = ptr
        h = ptr.contents
        s = _lib.s
        self.schema_version: str = s(h.schema_version) or ""
        self.min_reader_version: str = s(h.min_reader_version) or ""
        self.handoff_mode: str = s(h.handoff_mode) or ""
        self.engines: List[str] = _lib.strings(h.engines, h.n_engines)
        self.external_data_layout: str = s(h.external_data_layout) or ""
        self.frozen_base_blob: str = s(h.frozen_base_blob) or ""
        self.merger_models: Dict[str, str] = _pairs(h.merger_models, h.n_merger_models)
        self.entries: List[HandoffEntry] = [self._entry(h.entries[i]) for i in range(h.n_entries)]

    @staticmethod
    def _entry(e: "_lib.mpk_mt_handoff_entry") -> HandoffEntry:
        s = _lib.s
        shapes = {ROLES[r]: _dims(e.tensor_shapes[r]) for r in range(len(ROLES))}
        return HandoffEntry(
            index=e.index, training_base_layer_name=s(e.training_base_layer_name) or "", dtype=s(e.dtype),
            shape=_dims(e.shape) or (), tensor_dtypes=_roles(e.tensor_dtypes),
            tensor_shapes={k: v for k, v in shapes.items() if v is not None},
            merger_output_names=_roles(e.merger_output_names), merged_tensor_names=_roles(e.merged_tensor_names),
            inference_initializer_names=_roles(e.inference_initializer_names),
            external_data_location=_roles(e.external_data_location), sha256=_roles(e.sha256),
            genai_input_names=_roles(e.genai_input_names),
            checkpoint_names=_pairs(e.checkpoint_names, e.n_checkpoint_names),
            adapter_dtypes=_pairs(e.adapter_dtypes, e.n_adapter_dtypes),
            adapter_shapes={s(e.adapter_shapes[i].key) or "": _dims(e.adapter_shapes[i].shape) or ()
                            for i in range(e.n_adapter_shapes)},
            quantization={"weightQuantizedName": s(e.weight_quantized_name), "scaleName": s(e.scale_name),
                          "zeroPointName": s(e.zero_point_name)} if e.quantized else None,
            transpose_policy=TRANSPOSE_POLICIES[e.transpose_policy])

    @classmethod
    def load(cls, path: PathLike) -> "HandoffMap":
        """Read a map file, or DIR/weight_handoff_map.json (mpk_mt_handoff_load): version gate, every
        field typed, the reference HandoffMap.validate() invariants; errors name the entry and field."""
        ptr = ctypes.POINTER(_lib.mpk_mt_handoff)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_handoff_load(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err)), err)
        return cls(ptr)

    @classmethod
    def parse(cls, document: JsonInput, file: Optional[str] = None) -> "HandoffMap":
        """Read a map from JSON text (or a Python value); ``file`` names it in errors."""
        text = json_bytes(document)
        ptr = ctypes.POINTER(_lib.mpk_mt_handoff)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_handoff_parse(text, len(text), opt_str(file), ctypes.byref(ptr), ctypes.byref(err)),
               err)
        return cls(ptr)

    @classmethod
    def build(cls, path: PathLike, variant: Optional[str] = None, *, peft_method: Optional[str] = None,
              attention_module: Optional[str] = None, dry_run: bool = False) -> "HandoffBuildResult":
        """Build a variant's inference/weight_handoff_map.json from train/training_config.json and the
        initializers of inference/model.onnx, as the reference codec does (mpk_mt_handoff_build;
        ``modelpkg mt handoff build``); written atomically when its bytes change, unless ``dry_run``.
        The manifest lists the map: reseal the package afterwards (:func:`build`)."""
        o = _lib.options(_lib.mpk_mt_handoff_build_options)
        o.variant = opt_str(variant)
        o.peft_method = opt_str(peft_method)
        o.attention_module = opt_str(attention_module)
        o.dry_run = int(dry_run)
        res = _lib.mpk_mt_handoff_build_result()
        err = _lib.mpk_error()
        rc = _lib.lib.mpk_mt_handoff_build(path_bytes(path), ctypes.byref(o), ctypes.byref(res), ctypes.byref(err))
        try:
            _check(rc, err)
            data = ctypes.string_at(res.map, res.map_len) if res.map else b""
            return HandoffBuildResult(dir=_source_name(path), path=_lib.s(res.path) or "", map_bytes=data,
                                      map=cls.parse(data, _lib.s(res.path)), changed=bool(res.changed),
                                      n_entries=res.n_entries, transpose_policy=TRANSPOSE_POLICIES[res.policy],
                                      dry_run=dry_run)
        finally:
            _lib.lib.mpk_mt_handoff_build_result_free(ctypes.byref(res))

    def entry(self, name: str) -> HandoffEntry:
        """The entry whose trainingBaseLayerName, or an inference initializer name, is ``name``."""
        for e in self.entries:
            if name == e.training_base_layer_name or name in e.inference_initializer_names.values():
                return e
        raise KeyError(name)

    def role_layout(self, entry: Union[int, HandoffEntry], role: str = "weight") -> Tuple[str, Tuple[int, ...]]:
        """The on-disk dtype and shape of an entry's role (mpk_mt_handoff_role_layout): NotFoundError
        when the map does not describe it."""
        i = entry.index if isinstance(entry, HandoffEntry) else entry
        if not 0 <= i < len(self.entries):
            raise IndexError(i)
        dtype = ctypes.c_char_p()
        shape = ctypes.POINTER(ctypes.c_int64)()
        ndim = ctypes.c_size_t()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_handoff_role_layout(ctypes.byref(self._ptr.contents.entries[i]), ROLES.index(role),
                                                   ctypes.byref(dtype), ctypes.byref(shape), ctypes.byref(ndim),
                                                   ctypes.byref(err)), err)
        return _lib.s(dtype.value) or "", tuple(shape[d] for d in range(ndim.value))

    def to_json(self) -> bytes:
        """The canonical bytes, as the reference HandoffMap.to_json() writes them (mpk_mt_handoff_json)."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_handoff_json(self._ptr, ctypes.byref(out), ctypes.byref(n), ctypes.byref(err)), err)
        return _lib.take_buffer(out, n.value)

    def __len__(self) -> int:
        return len(self.entries)

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib.mpk_mt_handoff_free(ptr)

    def __repr__(self) -> str:
        return f"HandoffMap(schema_version={self.schema_version!r}, entries={len(self.entries)})"


@dataclass(frozen=True)
class HandoffBuildResult:
    """What :meth:`HandoffMap.build` made (mpk_mt_handoff_build_result)."""

    dir: str
    path: str          #: the map: <inference dir>/weight_handoff_map.json
    map_bytes: bytes   #: its bytes
    map: HandoffMap    #: the same, read back
    changed: bool      #: the bytes differ from the file's (written unless dry_run)
    n_entries: int
    transpose_policy: str
    dry_run: bool

    def to_dict(self) -> Dict[str, Any]:
        """``modelpkg mt handoff build DIR ... --json``, key for key."""
        doc = _envelope("mt handoff build", True)
        doc.update({"dir": self.dir, "map": self.path, "entries": self.n_entries,
                    "transpose_policy": self.transpose_policy, "changed": self.changed, "dry_run": self.dry_run})
        return _finish(doc, [], [])


# ============================================================================ merge

ORIENTATIONS = ("undecided", "no_transpose", "already_transposed_for_inference")


@dataclass(frozen=True)
class MergeEntry:
    """One merged handoff entry (mpk_mt_merge_entry)."""

    entry: int
    layer: str
    adapter_a: str
    adapter_b: str
    dtype: str
    shape: Tuple[int, int]        #: the weight's on-disk [rows, cols]
    delta_shape: Tuple[int, int]  #: [out, in]
    rank: int
    quantized: bool
    observed: Optional[str]       #: the orientation the tensor shows; None: square
    scale: float
    scale_source: str
    base: str
    sha256: Dict[str, str]        #: the written files' digests by role

    def to_dict(self) -> Dict[str, Any]:
        return {"entry": self.entry, "layer": self.layer, "adapter_A": self.adapter_a, "adapter_B": self.adapter_b,
                "dtype": self.dtype, "shape": list(self.shape), "delta_shape": list(self.delta_shape),
                "rank": self.rank, "quantized": self.quantized, "observed": self.observed, "scale": self.scale,
                "scale_source": self.scale_source, "base": self.base, "sha256": dict(self.sha256)}


@dataclass(frozen=True)
class MergeVerify:
    """The post-merge check (``probe``): cross-entropies before and after, the bound, the verdict."""

    ce_before: Optional[float]
    ce_after: Optional[float]
    ratio: Optional[float]
    max_ratio: float
    rolled_back: bool
    verdict: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"ce_before": self.ce_before, "ce_after": self.ce_after, "ratio": self.ratio,
                "max_ratio": self.max_ratio, "rolled_back": self.rolled_back, "verdict": self.verdict}


@dataclass(frozen=True)
class MergeReport:
    """What a merge decided and did (mpk_mt_merge_report)."""

    variant: str
    inference_dir: str
    orientation: str
    evidence: str
    written: bool                 #: the transaction committed (False for a dry run)
    entries: List[MergeEntry]
    verify: Optional[MergeVerify]
    notes: List[str]
    rolled_back: bool
    problem: Optional[Problem]    #: a rollback's reason (then ``written`` is False)

    def to_dict(self) -> Dict[str, Any]:
        """``modelpkg mt merge DIR ... --json``, key for key."""
        doc = _envelope("mt merge", True)
        doc.update({"variant": self.variant, "inference_dir": self.inference_dir, "orientation": self.orientation,
                    "evidence": self.evidence, "written": self.written,
                    "entries": [e.to_dict() for e in self.entries],
                    "verify": self.verify.to_dict() if self.verify else None})
        return _finish(doc, [self.problem] if self.problem else [], self.notes)


class MergeRolledBack(MismatchError):
    """The post-merge check rolled the merge back (MPK_EMISMATCH): ``report`` says why; the package
    is byte-identical."""

    report: MergeReport


def _finite(v: float) -> Optional[float]:
    return v if math.isfinite(v) else None


def merge(path: PathLike, adapter: PathLike, *, variant: Optional[str] = None, scale: Optional[float] = None,
          orientation: Optional[str] = None, workers: int = 0, dry_run: bool = False, keep_base: bool = False,
          max_adapter_header: Optional[int] = None, max_adapter_tensors: Optional[int] = None,
          probe: Optional[PathLike] = None, max_ratio: Optional[float] = None, force: bool = False,
          progress: Optional[ProgressFn] = None) -> MergeReport:
    """Merge a trained LoRA adapter (.safetensors) into a package's or installed model's variant:
    merged = base + scale · (B @ A), one crash-safe transaction (mpk_mt_merge; ``modelpkg mt merge``;
    docs/mt-merge.md). ``variant`` None: an installed model's own, else defaultVariant. ``scale``
    None: from the variant's training_config.json or a PEFT adapter_config.json (never a default).
    ``orientation``: "no_transpose" / "already_transposed_for_inference" for all-square packages.
    ``workers``: merge threads (0: one per CPU, at most 8). ``keep_base`` keeps the replaced shipped
    tensors in the tree (``modelpkg mt restore`` then needs no download). ``probe`` (PROBE.json)
    runs the post-merge check in
    ONNX Runtime (MPK_ORT_LIBRARY, else libonnxruntime.so.1): above ``max_ratio`` (default 2) the
    merge is rolled back and :class:`MergeRolledBack` raised with the report, unless ``force``.

    ``progress`` gets (entries merged, entries in all) before the first entry and after each; a true
    return cancels (:class:`modelpkg.CancelledError`, the transaction aborted), and so does an
    exception it raises (re-raised here). On failure nothing is changed. The GIL is released while
    the library merges."""
    o = _lib.options(_lib.mpk_mt_merge_options)
    o.variant = opt_str(variant)
    o.adapter = path_bytes(adapter)
    if scale is not None:
        if not math.isfinite(scale):
            raise ValueError(f"scale {scale!r} is not a finite number")
        o.has_scale, o.scale = 1, float(scale)
    if orientation is not None:
        if orientation not in ORIENTATIONS[1:]:
            raise ValueError(f"orientation must be no_transpose or already_transposed_for_inference, not {orientation!r}")
        o.orientation = ORIENTATIONS.index(orientation)
    if workers < 0:
        raise ValueError("workers must be non-negative")
    o.workers = workers
    o.dry_run = int(dry_run)
    o.keep_base = int(keep_base)
    if max_adapter_header is not None:
        o.adapter_budget.max_header_bytes = _bounded("max_adapter_header", max_adapter_header, 1, 100000000)
    if max_adapter_tensors is not None:
        o.adapter_budget.max_tensors = _bounded("max_adapter_tensors", max_adapter_tensors, 1, 1 << 62)
    if probe is None and (max_ratio is not None or force):
        raise ValueError("max_ratio and force belong to the post-merge check: give probe")
    o.probe = opt_path(probe)
    if max_ratio is not None:
        if not math.isfinite(max_ratio) or max_ratio <= 0:
            raise ValueError(f"max_ratio {max_ratio!r} is not a positive finite number")
        o.max_ratio = float(max_ratio)
    o.force = int(force)
    prog = Progress(progress)
    prog.install(o)
    out = ctypes.POINTER(_lib.mpk_mt_merge_report)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mt_merge(path_bytes(path), ctypes.byref(o), ctypes.byref(out), ctypes.byref(err))
    try:
        prog.reraise()
        if rc and not (out and out.contents.rolled_back):
            _check(rc, err)
        r = out.contents
        s = _lib.s
        entries = []
        for i in range(r.n_entries):
            e = r.entries[i]
            entries.append(MergeEntry(
                entry=e.entry, layer=s(e.layer) or "", adapter_a=s(e.adapter_a) or "", adapter_b=s(e.adapter_b) or "",
                dtype=s(e.dtype) or "", shape=(e.rows, e.cols), delta_shape=(e.out, getattr(e, "in")), rank=e.rank,
                quantized=bool(e.quantized), observed=ORIENTATIONS[e.observed] if e.observed else None,
                scale=e.scale, scale_source=s(e.scale_source) or "", base=s(e.base_source) or "",
                sha256={ROLES[k]: _lib.dec(e.digest[k].value) for k in range(len(ROLES)) if e.digest[k].value}))
        verify = MergeVerify(_finite(r.ce_before), _finite(r.ce_after), _finite(r.ratio), r.max_ratio,
                             bool(r.rolled_back), s(r.verdict)) if r.verified else None
        report = MergeReport(
            variant=s(r.variant) or "", inference_dir=s(r.inference_dir) or "",
            orientation=s(_lib.lib.mpk_mt_orientation_name(r.orientation)) or "", evidence=s(r.evidence) or "",
            written=bool(r.written), entries=entries, verify=verify, notes=_lib.strings(r.notes, r.n_notes),
            rolled_back=bool(r.rolled_back), problem=_err_problem(err) if rc else None)
        if rc:
            exc = from_c(err, rc)
            rolled = MergeRolledBack(exc.code, exc.message, exc.file, exc.pointer, exc.offset, str(exc))
            rolled.report = report
            raise rolled
        return report
    finally:
        _lib.lib.mpk_mt_merge_report_free(out)


__all__ = ["MANIFEST_FILENAME", "READER_VERSION", "HANDOFF_READER_VERSION", "check_versions", "REPO_DIR_MAX", "Variant",
           "ManifestFile", "Manifest", "check", "Change", "BuildResult", "build", "open_tensors", "GatedTensors",
           "TensorView", "open_source", "storage_budget", "Device", "Candidate", "Selection", "select", "PlannedFile",
           "DownloadPlan", "plan_download", "sanitize_repo_id", "InstallEvent", "InstalledAdapter", "InstallResult",
           "install", "Installed", "installed", "installed_path", "ROLES", "HandoffEntry", "HandoffMap",
           "HandoffBuildResult", "MergeEntry", "MergeVerify", "MergeReport", "MergeRolledBack", "merge"]
