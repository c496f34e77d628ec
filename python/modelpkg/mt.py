"""MobileTransformers packages: the manifest, the package check, sealing (``mt build``).

Bound so far: :class:`Manifest` (read, version gate, typed fields, download plans, the exporter's
bytes), :func:`check_versions` (the shared version gate), :func:`check`, :func:`build`, and
:func:`open_tensors` (the load gate; views as zero-copy numpy arrays with DLPack, from
:mod:`modelpkg.tensors`). Not yet bound: select/plan, install, HandoffMap as an object, merge
(docs/python.md).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional

from . import _lib
from ._util import JsonInput, PathLike, json_bytes, opt_str, path_bytes
from .errors import check as _check
from .report import MtReport, Progress, ProgressFn, mt_report_from_c
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


__all__ = ["MANIFEST_FILENAME", "READER_VERSION", "HANDOFF_READER_VERSION", "check_versions", "sanitize_repo_id",
           "REPO_DIR_MAX", "Variant",
           "ManifestFile", "Manifest", "check", "Change", "BuildResult", "build", "open_tensors", "GatedTensors",
           "TensorView"]
