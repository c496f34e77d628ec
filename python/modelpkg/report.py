"""Check reports as dataclasses, named after the CLI's ``--json`` schema (docs/check-report.md).

Every field of ``modelpkg check --json`` is an attribute of the same name, nested objects as
nested dataclasses; the one exception is the MobileTransformers report's ``manifest`` summary,
whose camelCase JSON keys (``schemaVersion``, ...) are snake_case attributes here
(``schema_version``, ...). :meth:`Report.to_dict` gives back the JSON document, key for key and in
the CLI's order, so ``json.dumps(report.to_dict(), indent=2)`` is what ``--json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from . import _lib
from .errors import Error, code_name, from_c, format_error


@dataclass(frozen=True)
class Problem:
    """One failed check: where (file, JSON pointer, byte offset) and which rule."""

    code: str            #: "malformed", "mismatch", "not-found", ... (the JSON's problems[].code)
    file: str            #: the file (or logical document) the problem is in
    pointer: str         #: RFC 6901 JSON pointer into it ("" = the whole document)
    message: str         #: the rule, one line
    offset: Optional[int] = None  #: byte offset, when the problem is at a byte
    code_value: int = 0  #: the MPK_E* value
    line: str = ""       #: the library's FILE: POINTER: MESSAGE line (as the CLI prints it)

    @property
    def rule(self) -> str:
        return self.message

    def to_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "file": self.file, "pointer": self.pointer, "message": self.message,
                "offset": self.offset}

    def exception(self) -> Error:
        """The problem as the exception the library would raise for it."""
        e = _lib.mpk_error()
        e.code = self.code_value
        e.message = self.message.encode()[:511]
        e.file = self.file.encode()[:511]
        e.pointer = self.pointer.encode()[:511]
        e.offset = -1 if self.offset is None else self.offset
        return from_c(e)


def problem_from_c(e: "_lib.mpk_error") -> Problem:
    dec = _lib.dec
    return Problem(code=code_name(e.code), file=dec(e.file), pointer=dec(e.pointer), message=dec(e.message),
                   offset=e.offset if e.offset >= 0 else None, code_value=e.code, line=format_error(e))


def problems_from_c(arr: Any, n: int) -> List[Problem]:
    return [problem_from_c(arr[i]) for i in range(n)]


@dataclass(frozen=True)
class Report:
    """What ``modelpkg.check`` found. ``ok`` is true exactly when ``problems`` is empty."""

    modelpkg_version: str
    ok: bool
    dir: str
    problems: List[Problem]
    notes: List[str]

    command = "check"

    @property
    def warnings(self) -> List[str]:
        """The notes that are warnings (they start with "warning: ")."""
        return [n for n in self.notes if n.startswith("warning: ")]

    def raise_for_problems(self) -> None:
        """Raise the first problem as its exception (nothing when ok)."""
        if self.problems:
            raise self.problems[0].exception()

    def to_dict(self) -> Dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError


# ---------------------------------------------------------------------------------------- MLC


@dataclass(frozen=True)
class InterfaceIds:
    declared: Optional[str]
    computed: Optional[str]


@dataclass(frozen=True)
class Resources:
    max_storage_buffer_binding_size: int
    estimated_device_memory_bytes: int
    required_features: Optional[List[str]] = None  #: only the library's resources list them


@dataclass(frozen=True)
class Library:
    path: str
    loaded: bool
    model_type: Optional[str]
    kv_state_kind: Optional[str]
    has_artifact: bool
    resources: Optional[Resources]  #: only with an artifact


@dataclass(frozen=True)
class Weights:
    tensor_cache: str
    parameters: int
    shards: int
    parameter_schema_id: Optional[str]
    verified: bool
    resources: Optional[Resources]


@dataclass(frozen=True)
class BoundInput:
    input: str
    adapter: str
    adapter_function: str
    dtype: str


@dataclass(frozen=True)
class Binding:
    task: str
    executor: str
    generation_inputs: str  #: "tokens" or "embeds"
    embed_tokens: str
    create_kv_cache: str
    prefill: str
    decode: str
    create_rnn_state: Optional[str]
    kv_state_kind_implied: str
    audio: Optional[BoundInput]
    image: Optional[BoundInput]


@dataclass(frozen=True)
class MlcReport(Report):
    """The report of an MLC package (docs/check-report.md, "MLC packages")."""

    contract: str = "none"  #: "declared", "none" or "unloadable"
    interface_id: InterfaceIds = field(default_factory=lambda: InterfaceIds(None, None))
    library: Optional[Library] = None
    weights: Optional[Weights] = None
    binding: Optional[Binding] = None

    format = "mlc"

    def to_dict(self) -> Dict[str, Any]:
        lib = None
        if self.library is not None:
            L = self.library
            lib = {"path": L.path, "loaded": L.loaded, "model_type": L.model_type, "kv_state_kind": L.kv_state_kind,
                   "has_artifact": L.has_artifact}
            if L.resources is not None:
                lib["resources"] = {"required_features": list(L.resources.required_features or []),
                                    "max_storage_buffer_binding_size": L.resources.max_storage_buffer_binding_size,
                                    "estimated_device_memory_bytes": L.resources.estimated_device_memory_bytes}
        w = None
        if self.weights is not None:
            W = self.weights
            w = {"tensor_cache": W.tensor_cache, "parameters": W.parameters, "shards": W.shards,
                 "parameter_schema_id": W.parameter_schema_id, "verified": W.verified,
                 "resources": None if W.resources is None else {
                     "max_storage_buffer_binding_size": W.resources.max_storage_buffer_binding_size,
                     "estimated_device_memory_bytes": W.resources.estimated_device_memory_bytes}}
        b = None
        if self.binding is not None:
            B = self.binding
            def bound(x: Optional[BoundInput]) -> Optional[Dict[str, str]]:
                return None if x is None else {"input": x.input, "adapter": x.adapter,
                                               "adapter_function": x.adapter_function, "dtype": x.dtype}
            b = {"task": B.task, "executor": B.executor, "generation_inputs": B.generation_inputs,
                 "embed_tokens": B.embed_tokens, "create_kv_cache": B.create_kv_cache, "prefill": B.prefill,
                 "decode": B.decode, "create_rnn_state": B.create_rnn_state,
                 "kv_state_kind_implied": B.kv_state_kind_implied, "audio": bound(B.audio), "image": bound(B.image)}
        return {"modelpkg_version": self.modelpkg_version, "command": self.command, "ok": self.ok, "dir": self.dir,
                "contract": self.contract,
                "interface_id": {"declared": self.interface_id.declared, "computed": self.interface_id.computed},
                "library": lib, "weights": w, "binding": b,
                "problems": [p.to_dict() for p in self.problems], "notes": list(self.notes)}


def _bound(b: "_lib.mpk_mlc_bound_input") -> BoundInput:
    s = _lib.s
    return BoundInput(input=s(b.input.contents.name) or "", adapter=s(b.adapter) or "",
                      adapter_function=s(b.adapter_function) or "", dtype=s(b.dtype) or "")


def mlc_report_from_c(r: "_lib.mpk_mlc_report") -> MlcReport:
    s = _lib.s
    pkg = r.package.contents if r.package else None
    library = None
    if r.lib_path:
        md = r.metadata.contents if r.metadata else None
        art = md.artifact.contents if md is not None and md.artifact else None
        library = Library(
            path=s(r.lib_path) or "", loaded=md is not None, model_type=s(md.model_type) if md else None,
            kv_state_kind=s(md.kv_state_kind) if md else None, has_artifact=art is not None,
            resources=None if art is None else Resources(
                art.max_storage_buffer_binding_size, art.estimated_device_memory_bytes,
                _lib.strings(art.required_features, art.n_required_features)))
    weights = None
    if r.tensor_cache:
        tc = r.tensor_cache.contents
        weights = Weights(
            tensor_cache=s(r.tensor_cache_path) or "", parameters=tc.n_records, shards=tc.n_shards,
            parameter_schema_id=s(r.weights_parameter_schema_id) or None, verified=bool(r.weights_verified),
            resources=Resources(r.weights_resources.max_storage_buffer_binding_size,
                                r.weights_resources.estimated_device_memory_bytes)
            if r.has_weights_resources else None)
    binding = None
    if r.resolved:
        b = r.binding
        binding = Binding(
            task="chat.completions", executor=s(b.executor) or "",
            generation_inputs="tokens" if b.generation_inputs == 0 else "embeds",
            embed_tokens=s(b.embed_tokens) or "", create_kv_cache=s(b.create_kv_cache) or "",
            prefill=s(b.prefill) or "", decode=s(b.decode) or "", create_rnn_state=s(b.create_rnn_state),
            kv_state_kind_implied=s(_lib.lib.mpk_mlc_kv_state_kind_name(b.kv_state_kind_implied)) or "",
            audio=_bound(b.audio) if b.has_audio else None, image=_bound(b.image) if b.has_image else None)
    problems = problems_from_c(r.problems, r.n_problems)
    return MlcReport(
        modelpkg_version=s(_lib.lib.mpk_version()) or "", ok=not problems, dir=s(r.dir) or "", problems=problems,
        notes=_lib.strings(r.notes, r.n_notes),
        contract="declared" if pkg is not None else "unloadable" if r.has_manifest else "none",
        interface_id=InterfaceIds(s(pkg.interface_id) if pkg is not None else None,
                                  s(r.computed_interface_id) or None),
        library=library, weights=weights, binding=binding)


# ------------------------------------------------------------------------------ MobileTransformers


@dataclass(frozen=True)
class ManifestSummary:
    schema_version: str
    min_reader_version: str
    base_model_id: Optional[str]
    default_variant: str
    variants: List[str]


@dataclass(frozen=True)
class Checked:
    variants: List[str]
    all_variants: bool
    hashed: bool
    installed: bool


@dataclass(frozen=True)
class Files:
    in_scope: int
    sized: int
    hashed: int
    bytes_hashed: int
    merged: int


@dataclass(frozen=True)
class Tensors:
    gated: int
    verified: int


@dataclass(frozen=True)
class MtReport(Report):
    """The report of a MobileTransformers package (docs/check-report.md, second section)."""

    manifest: Optional[ManifestSummary] = None
    checked: Checked = field(default_factory=lambda: Checked([], False, False, False))
    files: Files = field(default_factory=lambda: Files(0, 0, 0, 0, 0))
    tensors: Tensors = field(default_factory=lambda: Tensors(0, 0))
    unlisted: List[str] = field(default_factory=list)

    format = "mobiletransformers"

    def to_dict(self) -> Dict[str, Any]:
        m = self.manifest
        return {
            "modelpkg_version": self.modelpkg_version, "command": self.command, "ok": self.ok,
            "format": self.format, "dir": self.dir,
            "manifest": None if m is None else {
                "schemaVersion": m.schema_version, "minReaderVersion": m.min_reader_version,
                "baseModelId": m.base_model_id, "defaultVariant": m.default_variant, "variants": list(m.variants)},
            "checked": {"variants": list(self.checked.variants), "all_variants": self.checked.all_variants,
                        "hashed": self.checked.hashed, "installed": self.checked.installed},
            "files": {"in_scope": self.files.in_scope, "sized": self.files.sized, "hashed": self.files.hashed,
                      "bytes_hashed": self.files.bytes_hashed, "merged": self.files.merged},
            "tensors": {"gated": self.tensors.gated, "verified": self.tensors.verified},
            "unlisted": list(self.unlisted),
            "problems": [p.to_dict() for p in self.problems], "notes": list(self.notes)}


def mt_report_from_c(r: "_lib.mpk_mt_report") -> MtReport:
    s = _lib.s
    summary = None
    if r.manifest:
        m = r.manifest.contents
        summary = ManifestSummary(
            schema_version=s(m.schema_version) or "", min_reader_version=s(m.min_reader_version) or "",
            base_model_id=s(m.base_model_id), default_variant=s(m.default_variant) or "",
            variants=[s(m.variants[i].id) or "" for i in range(m.n_variants)])
    problems = problems_from_c(r.problems, r.n_problems)
    return MtReport(
        modelpkg_version=s(_lib.lib.mpk_version()) or "", ok=not problems, dir=s(r.dir) or "", problems=problems,
        notes=_lib.strings(r.notes, r.n_notes), manifest=summary,
        checked=Checked(_lib.strings(r.variants, r.n_variants), bool(r.all_variants), bool(r.hashed),
                        bool(r.installed)),
        files=Files(r.n_files, r.n_files_sized, r.n_files_hashed, r.bytes_hashed, r.n_files_merged),
        tensors=Tensors(r.n_tensors, r.n_tensors_verified), unlisted=_lib.strings(r.unlisted, r.n_unlisted))


# ------------------------------------------------------------------------------ progress callbacks

ProgressFn = Callable[[int, int], Optional[bool]]


class Progress:
    """A Python progress callback as an mpk_progress_fn.

    The callable gets (bytes done, bytes in all) from the library's worker threads, never two at
    once; a true return value cancels (the call then raises CancelledError). An exception raised
    by the callable cancels too and is re-raised from the call instead.
    """

    def __init__(self, fn: Optional[ProgressFn]) -> None:
        self.fn = fn
        self.exc: Optional[BaseException] = None
        self.c_fn = _lib.PROGRESS_FN(self._call) if fn is not None else None

    def _call(self, ctx: Any, done: int, total: int) -> int:
        try:
            return 1 if self.fn(done, total) else 0  # type: ignore[misc]
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            self.exc = e
            return 1

    def install(self, opts: Any) -> None:
        if self.c_fn is not None:
            opts.progress = self.c_fn

    def reraise(self) -> None:
        if self.exc is not None:
            exc, self.exc = self.exc, None
            raise exc


__all__ = ["Problem", "Report", "MlcReport", "MtReport", "InterfaceIds", "Library", "Resources", "Weights",
           "Binding", "BoundInput", "ManifestSummary", "Checked", "Files", "Tensors"]

