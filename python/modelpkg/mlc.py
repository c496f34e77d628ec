"""MLC model packages: identities, where WebLLM finds a model's files, the package check, a
compiled library's ``_metadata``, the producer, device fit and prefill planning.

Bound: :func:`interface_id`, :class:`Package` (the sidecar ``mlc-model-manifest.json``, its tasks),
:class:`Artifact` (``_metadata.artifact``), :func:`resolve` (:class:`Binding`), each also as WebLLM's
object (``to_dict()``), :func:`clean_model_url`, :func:`resource_urls`, :func:`check`,
:func:`metadata` (:class:`Metadata`), :func:`build`, :func:`fit`, :class:`Planner` (:func:`plan`,
:meth:`Planner.from_config`), :func:`legacy_chunks` and :func:`check_request`. Not yet bound: libraries as a whole
(function tables, compat), ``mlc embed``, ``mlc install`` (docs/python.md).
"""

from __future__ import annotations

import array
import ctypes
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional

from . import _lib
from ._util import JsonInput, PathLike, json_bytes, opt_path, opt_str, path_bytes
from .errors import MPK_EINVAL, MPK_EMALFORMED, MPK_EUNSUPPORTED
from .errors import check as _check
from .errors import from_c as _from_c
from .errors import make as _make
from .report import MlcReport, Problem, Progress, ProgressFn, mlc_report_from_c, problems_from_c

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


#: mpk_mlc_processor_kind, mpk_mlc_resize_mode
PROCESSOR_KINDS = ("named", "audio_decode", "image_decode")
RESIZE_MODES = ("stretch", "center_crop")


@dataclass(frozen=True)
class AudioDecode:
    """An audio_decode processor: canonical mono float32 PCM."""

    sample_rate_hz: int
    channels: int
    min_samples: int
    max_samples: int


@dataclass(frozen=True)
class ImageDecode:
    """An image_decode processor: [1, height, width, 3] RGB, resized by ``resize_mode``."""

    resize_mode: str  #: "stretch" or "center_crop"
    height: int
    width: int
    num_embeddings: int


@dataclass(frozen=True)
class Input:
    """A task input and its processor."""

    name: str
    kind: str                      #: "named", "audio_decode" or "image_decode"
    processor_name: Optional[str]  #: kind "named": e.g. "tokenizer"
    audio: Optional[AudioDecode]   #: kind "audio_decode"
    image: Optional[ImageDecode]   #: kind "image_decode"
    adapter: Optional[str]
    position: int                  #: declaration order in the document


@dataclass(frozen=True)
class Task:
    name: str
    executor: str
    output: str
    inputs: List[Input]

    def input(self, name: str) -> Optional[Input]:
        return next((i for i in self.inputs if i.name == name), None)


def _input(i: "_lib.mpk_mlc_input") -> Input:
    kind = PROCESSOR_KINDS[i.kind] if 0 <= i.kind < len(PROCESSOR_KINDS) else str(i.kind)
    a, m = i.audio, i.image
    return Input(name=_lib.s(i.name) or "", kind=kind, processor_name=_lib.s(i.processor_name),
                 audio=AudioDecode(a.sample_rate_hz, a.channels, a.min_samples, a.max_samples)
                 if kind == "audio_decode" else None,
                 image=ImageDecode(RESIZE_MODES[m.resize_mode] if 0 <= m.resize_mode < 2 else str(m.resize_mode),
                                   m.height, m.width, m.num_embeddings) if kind == "image_decode" else None,
                 adapter=_lib.s(i.adapter), position=i.position)


def _task(t: "_lib.mpk_mlc_task") -> Task:
    return Task(name=_lib.s(t.name) or "", executor=_lib.s(t.executor) or "", output=_lib.s(t.output) or "",
                inputs=[_input(t.inputs[k]) for k in range(t.n_inputs)])


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
        tasks = ctypes.cast(p.tasks, ctypes.POINTER(_lib.mpk_mlc_task))
        #: the tasks, sorted by name; each task's inputs sorted as WebLLM iterates them
        self.tasks: List[Task] = [_task(tasks[i]) for i in range(p.n_tasks)]

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

    def task(self, name: str) -> Optional["Task"]:
        """The task of this name, or None."""
        return next((t for t in self.tasks if t.name == name), None)

    def normalized_tasks(self) -> Dict[str, Any]:
        """The ``tasks`` object normalized (defaults filled; what the interface_id hashes), from the
        library's JSON (mpk_mlc_package_tasks_json)."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_package_tasks_json(self._ptr, ctypes.byref(out), ctypes.byref(n), ctypes.byref(err)),
               err)
        value: Dict[str, Any] = json.loads(_lib.take_buffer(out, n.value))
        return value

    def to_dict(self) -> Dict[str, Any]:
        """The package as WebLLM 0.2.86's parseModelPackageManifest returns it (mpk_mlc_package_json):
        schema, schema_version, chat_config, interface_id, weights, the normalized tasks."""
        value: Dict[str, Any] = _library_json(_lib.lib.mpk_mlc_package_json, self._ptr)
        return value

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib.mpk_mlc_package_free(ptr)

    def __repr__(self) -> str:
        return f"Package(interface_id={self.interface_id!r}, weights_manifest={self.weights_manifest!r})"


def _library_json(fn: Any, obj: Any) -> Any:
    """The JSON text a library function writes for ``obj`` (freed with mpk_free), parsed."""
    out = ctypes.c_void_p()
    n = ctypes.c_size_t()
    err = _lib.mpk_error()
    _check(fn(obj, ctypes.byref(out), ctypes.byref(n), ctypes.byref(err)), err)
    return json.loads(_lib.take_buffer(out, n.value))


class Artifact:
    """A parsed compiled program, ``_metadata.artifact`` (mpk_mlc_artifact; immutable, the C object
    is freed with this one)."""

    def __init__(self, ptr: "ctypes._Pointer[_lib.mpk_mlc_artifact]") -> None:
        self._ptr: Any = ptr
        a = ptr.contents
        self.schema_version: int = a.schema_version
        self.interface_id: str = _lib.s(a.interface_id) or ""
        self.parameter_schema_id: str = _lib.s(a.parameter_schema_id) or ""
        self.required_features: List[str] = _lib.strings(a.required_features, a.n_required_features)
        self.max_storage_buffer_binding_size: int = a.max_storage_buffer_binding_size
        self.estimated_device_memory_bytes: int = a.estimated_device_memory_bytes

    @classmethod
    def parse(cls, document: JsonInput, file: Optional[str] = None) -> "Artifact":
        """Parse the ``artifact`` object (schema "mlc.compiled-program") with WebLLM 0.2.86's rules
        (mpk_mlc_artifact_parse). ``document`` is JSON text or a Python value; ``file`` names it in
        errors."""
        text = json_bytes(document)
        ptr = ctypes.POINTER(_lib.mpk_mlc_artifact)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_artifact_parse(text, len(text), opt_str(file), ctypes.byref(ptr), ctypes.byref(err)),
               err)
        return cls(ptr)

    def to_dict(self) -> Dict[str, Any]:
        """The artifact as WebLLM 0.2.86's parseCompiledProgramArtifact returns it
        (mpk_mlc_artifact_json): programs with their exports, adapters and adapter_dtypes, resources."""
        value: Dict[str, Any] = _library_json(_lib.lib.mpk_mlc_artifact_json, self._ptr)
        return value

    def __del__(self) -> None:
        ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr:
            _lib.lib.mpk_mlc_artifact_free(ptr)

    def __repr__(self) -> str:
        return f"Artifact(interface_id={self.interface_id!r}, required_features={self.required_features!r})"


#: mpk_mlc_generation_inputs
GENERATION_INPUTS = ("tokens", "embeds")


class Binding:
    """A package bound to a compiled program (mpk_mlc_resolve): which function serves each role and
    adapter. Keeps the package and the artifact it borrows from alive."""

    def __init__(self, b: "_lib.mpk_mlc_binding", package: Package, artifact: Artifact) -> None:
        self._b = b
        self.package = package
        self.artifact = artifact
        self.executor: str = _lib.s(b.executor) or ""
        #: "tokens" (prefill_tokens / decode_tokens) or "embeds"
        self.generation_inputs: str = GENERATION_INPUTS[b.generation_inputs] if 0 <= b.generation_inputs < 2 \
            else str(b.generation_inputs)
        self.embed_tokens: Optional[str] = _lib.s(b.embed_tokens)
        self.create_kv_cache: Optional[str] = _lib.s(b.create_kv_cache)
        self.prefill: Optional[str] = _lib.s(b.prefill)
        self.decode: Optional[str] = _lib.s(b.decode)
        self.create_rnn_state: Optional[str] = _lib.s(b.create_rnn_state)
        self.kv_state_kind_implied: str = _lib.s(_lib.lib.mpk_mlc_kv_state_kind_name(b.kv_state_kind_implied)) or ""
        #: the media kinds the model takes, WebLLM's supportedInputKinds
        self.supported_input_kinds: List[str] = [k for k, has in (("audio", b.has_audio), ("image", b.has_image))
                                                 if has]

    def to_dict(self) -> Dict[str, Any]:
        """The binding as WebLLM 0.2.86's resolveChatCompletionArtifact returns it
        (mpk_mlc_binding_json): executor, generation, audio_input, image_input (adapter, function,
        processor, prompt; the image's dtype), supported_input_kinds, kv_state_kind_implied."""
        value: Dict[str, Any] = _library_json(_lib.lib.mpk_mlc_binding_json, ctypes.byref(self._b))
        return value

    def __repr__(self) -> str:
        return (f"Binding(executor={self.executor!r}, generation_inputs={self.generation_inputs!r}, "
                f"supported_input_kinds={self.supported_input_kinds!r})")


def resolve(package: Package, artifact: Artifact) -> Binding:
    """Bind a package to a compiled program with WebLLM 0.2.86's resolveChatCompletionArtifact rules
    (mpk_mlc_resolve). Raises :class:`modelpkg.MismatchError` with WebLLM's message."""
    b = _lib.mpk_mlc_binding()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mlc_resolve(package._ptr, artifact._ptr, ctypes.byref(b), ctypes.byref(err)), err)
    return Binding(b, package, artifact)


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


def _request_value(v: Any) -> Any:
    """A request as JSON sees it, the way JavaScript's JSON.stringify would hand WebLLM's to the
    library: a float32 array (numpy, ``array('f')``) becomes the Float32Array mark, any other array
    a plain list, NaN and the infinities null (docs/mlc-request.md)."""
    if isinstance(v, Mapping):
        return {str(k): _request_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_request_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, array.array):
        return {"$float32array": len(v)} if v.typecode == "f" else list(v)
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        if getattr(v, "ndim", 0) == 1 and str(getattr(v, "dtype", "")) == "float32":
            return {"$float32array": len(v)}
        return _request_value(v.tolist())
    return v


def check_request(request: Any, *, model_id: Optional[str] = None, model_type: str = "LLM",
                  input_kinds: Optional[Iterable[str]] = None, file: Optional[str] = None) -> None:
    """Check a chat-completion request's messages as WebLLM 0.2.86 does before it decodes anything
    (mpk_mlc_request_check, docs/mlc-request.md): content arrays only where the model takes them,
    ``input_audio`` / ``image_url`` parts only where declared, their fields, one text part per
    message, the system message first, the last from the user or a tool.

    ``request``: a dict (float32 arrays stand for Float32Arrays) or its JSON text. ``model_type``:
    "LLM", "VLM" or "embedding"; ``input_kinds``: what the model declares ("audio", "image"), WebLLM's
    supportedInputKinds — None for a model without a manifest. Returns None, or raises
    :class:`modelpkg.UnsupportedError` / :class:`modelpkg.MalformedError` naming the field
    (``e.pointer``, e.g. "/messages/0/content/1/type") with WebLLM's message.
    """
    if isinstance(request, (str, bytes, bytearray, memoryview)):
        text = json_bytes(request)
    else:
        text = json.dumps(_request_value(request), ensure_ascii=True).encode("ascii")
    m = _lib.mpk_mlc_request_model(model_id=opt_str(model_id), model_type=opt_str(model_type))
    if input_kinds is not None:
        m.kinds.declared = 1
        for k in input_kinds:
            if k not in ("audio", "image"):
                raise _make(MPK_EINVAL, "", "", f"input kind {k!r}: expected 'audio' or 'image'")
            setattr(m.kinds, k, 1)
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mlc_request_check(text, len(text), opt_str(file), ctypes.byref(m), ctypes.byref(err)), err)


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


# ---------------------------------------------------------------------------------- _metadata


class Metadata:
    """A compiled library's ``_metadata`` (mpk_mlc_metadata): the JSON text byte-exact as stored
    (``json``, what ``modelpkg mlc metadata LIB`` prints), :meth:`to_dict`, and where it was found.
    Immutable; the C objects are freed with this one."""

    def __init__(self, md: Any, owner: Any = None, library: Optional[str] = None) -> None:
        self._md: Any = md        # POINTER(mpk_mlc_metadata), borrowed from owner when given
        self._owner: Any = owner  # POINTER(mpk_mlc_library) or None (then _md is owned)
        m = md.contents
        lib_: Any = owner.contents if owner else None
        #: the _metadata JSON text, byte for byte
        self.json: bytes = ctypes.string_at(m.json, m.json_len) if m.json_len else b""
        self.model_type: Optional[str] = _lib.s(m.model_type)
        #: as stored; None when absent (WebLLM reads that as "kv_cache")
        self.kv_state_kind: Optional[str] = _lib.s(m.kv_state_kind)
        #: byte offset of the JSON text in the file (in the archive member), or None
        self.source_offset: Optional[int] = m.source_offset if m.source_offset >= 0 else None
        self.artifact_only: bool = bool(m.artifact_only)
        self.has_artifact: bool = bool(m.artifact)
        #: the path given to :func:`metadata` / :meth:`load` (None from bytes)
        self.library: Optional[str] = library
        #: where it was found, in words (``mlc metadata --json``'s ``where``)
        self.where: str = (_lib.s(lib_.metadata_where) or "") if lib_ is not None else "a _metadata JSON file"
        #: the archive member holding it; None: the file itself
        self.member: Optional[str] = _lib.s(lib_.metadata_member) if lib_ is not None else None
        #: the offset of the stored string (its u64 length) when read from a library, else None
        self.offset: Optional[int] = (m.source_offset - 8 if lib_ is not None and m.source_offset >= 8 else None)
        #: 1: found by the fallback scan, not where the format puts it
        self.scanned: bool = bool(lib_.metadata_scanned) if lib_ is not None else False

    @classmethod
    def load(cls, path: PathLike) -> "Metadata":
        """mpk_mlc_metadata_load: a library's bytes scanned for the _metadata, or a JSON file holding
        the whole _metadata object (or the artifact alone)."""
        ptr = ctypes.POINTER(_lib.mpk_mlc_metadata)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_metadata_load(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err)), err)
        return cls(ptr, library=os.fsdecode(path))

    @classmethod
    def from_bytes(cls, data: bytes, file: Optional[str] = None) -> "Metadata":
        """mpk_mlc_metadata_from_bytes: a library's (or a _metadata JSON file's) bytes in memory;
        ``file`` names them in errors."""
        data = bytes(data)
        ptr = ctypes.POINTER(_lib.mpk_mlc_metadata)()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_metadata_from_bytes(data, len(data), opt_str(file), ctypes.byref(ptr),
                                                    ctypes.byref(err)), err)
        return cls(ptr)

    def to_dict(self) -> Dict[str, Any]:
        """The _metadata as a Python value (key order kept)."""
        value: Dict[str, Any] = json.loads(self.json)
        return value

    def info(self) -> Dict[str, Any]:
        """``modelpkg mlc metadata LIB --json``'s own keys: library, where, member, offset, bytes,
        scanned, metadata."""
        return {"library": self.library, "where": self.where, "member": self.member, "offset": self.offset,
                "bytes": len(self.json), "scanned": self.scanned, "metadata": self.to_dict()}

    def __del__(self) -> None:
        owner, md = getattr(self, "_owner", None), getattr(self, "_md", None)
        self._owner = self._md = None
        if owner:
            _lib.lib.mpk_mlc_library_free(owner)
        elif md:
            _lib.lib.mpk_mlc_metadata_free(md)

    def __repr__(self) -> str:
        return f"Metadata(model_type={self.model_type!r}, bytes={len(self.json)}, where={self.where!r})"


def metadata(lib: PathLike) -> Metadata:
    """The ``_metadata`` of a compiled model library, found as ``modelpkg mlc metadata LIB`` finds it:
    the library read as a whole (mpk_mlc_library_open: where its format puts the _metadata, else a
    scan), and a file that reader refuses, or a _metadata JSON file, through mpk_mlc_metadata_load.
    ``metadata(lib).json`` is what the command prints, ``.to_dict()`` that parsed."""
    path = path_bytes(lib)
    ptr = ctypes.POINTER(_lib.mpk_mlc_library)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mlc_library_open(path, ctypes.byref(ptr), ctypes.byref(err))
    if rc == 0 and ptr.contents.metadata:
        return Metadata(ptr.contents.metadata, owner=ptr, library=os.fsdecode(lib))
    _lib.lib.mpk_mlc_library_free(ptr)
    if rc in (0, MPK_EUNSUPPORTED, MPK_EMALFORMED):
        return Metadata.load(lib)
    raise _from_c(err, rc)


# ---------------------------------------------------------------------------------- the producer


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build` produced (mpk_mlc_build_result)."""

    manifest: bytes                 #: mlc-model-manifest.json, byte-identical to MLC's Python writer
    artifact: bytes                 #: the ``artifact`` object to embed in the library's _metadata
    interface_id: str
    parameter_schema_id: str
    max_storage_buffer_binding_size: int
    estimated_device_memory_bytes: int
    f16_without_shader_f16: bool    #: float16 parameters without "shader-f16" required: worth a warning
    manifest_path: Optional[str]    #: where the manifest was written (None: write=False)

    def artifact_dict(self) -> Dict[str, Any]:
        value: Dict[str, Any] = json.loads(self.artifact)
        return value


def _read_doc(path: PathLike) -> bytes:
    return _lib.read_file(path_bytes(path))


def _one_of(value: Optional[JsonInput], file: Optional[PathLike], name: str) -> Optional[bytes]:
    if value is not None and file is not None:
        raise ValueError(f"give {name} or {name}_file, not both")
    if file is not None:
        return _read_doc(file)
    return None if value is None else json_bytes(value)


def build(dir: PathLike, tasks: Optional[JsonInput] = None, *, tasks_file: Optional[PathLike] = None,
          lib: Optional[PathLike] = None, params: Optional[JsonInput] = None,
          params_file: Optional[PathLike] = None, programs: Optional[JsonInput] = None,
          programs_file: Optional[PathLike] = None, required_features: Iterable[str] = (),
          output: Optional[PathLike] = None, write: bool = True) -> BuildResult:
    """Produce the manifest pair as ``modelpkg mlc build DIR --tasks TASKS.json`` does (mpk_mlc_build):
    write DIR/mlc-model-manifest.json (atomically; byte-identical to MLC's Python writer, and to what
    the command writes for the same inputs) and return it with the ``artifact`` to embed.

    ``tasks`` (or ``tasks_file``): the ``tasks`` object, or {"tasks": ..., "programs": ...}, as JSON
    text or a Python value. The parameters come from ``lib`` (a compiled library or its _metadata
    JSON; its artifact's programs are the default programs), or ``params``/``params_file`` (a list
    of {name, shape, dtype}), else DIR's tensor-cache.json; named dimensions take their values from
    DIR's mlc-chat-config.json model_config. ``programs``/``programs_file``: the ``programs``
    object. ``required_features`` are sorted and de-duplicated. ``output``: also write the artifact
    there (the CLI's ``-o``). ``write=False`` writes nothing. Refusals raise the library's error
    (e.g. :class:`modelpkg.MismatchError` for an executor the programs do not declare), naming
    the tasks file when one was given.
    """
    d = os.fsdecode(dir)
    if not os.path.isdir(d):
        raise _make(MPK_EINVAL, d, "", f"'{d}' is not a directory")
    if lib is not None and (params is not None or params_file is not None):
        raise ValueError("give lib or params, not both")
    tasks_text = _one_of(tasks, tasks_file, "tasks")
    if tasks_text is None:
        raise ValueError("missing tasks (or tasks_file)")
    programs_text = _one_of(programs, programs_file, "programs")
    params_text = _one_of(params, params_file, "params")
    feats = [f.encode() for f in required_features]
    if len(feats) > 64:
        raise _make(MPK_EINVAL, "", "", "more than 64 required features")
    err = _lib.mpk_error()
    md = ctypes.POINTER(_lib.mpk_mlc_metadata)()
    prm = ctypes.c_void_p()
    dims = ctypes.POINTER(_lib.mpk_mlc_named_dim)()
    n_dims = ctypes.c_size_t()
    res = _lib.mpk_mlc_build_result()
    try:
        if lib is not None:
            lp = path_bytes(lib)
            rc = _lib.lib.mpk_mlc_metadata_load(lp, ctypes.byref(md), ctypes.byref(err))
            if not rc:
                rc = _lib.lib.mpk_mlc_params_from_metadata(md, ctypes.byref(prm), ctypes.byref(err))
            if rc and not err.file:
                err.file = lp[:511]
            _check(rc, err)
        elif params_text is not None:
            pname = os.fsencode(params_file) if params_file is not None else b"params"
            _check(_lib.lib.mpk_mlc_params_parse(params_text, len(params_text), pname, ctypes.byref(prm),
                                                 ctypes.byref(err)), err)
        else:
            tc = ctypes.POINTER(_lib.mpk_mlc_tensor_cache)()
            rc = _lib.lib.mpk_mlc_tensor_cache_load(os.path.join(os.fsencode(dir), b"tensor-cache.json"),
                                                    ctypes.byref(tc), ctypes.byref(err))
            if not rc:
                rc = _lib.lib.mpk_mlc_params_from_tensor_cache(tc, ctypes.byref(prm), ctypes.byref(err))
            _lib.lib.mpk_mlc_tensor_cache_free(tc)
            _check(rc, err)
        chat = os.path.join(os.fsencode(dir), b"mlc-chat-config.json")
        if os.path.isfile(chat):
            _check(_lib.lib.mpk_mlc_named_dims_from_chat_config(chat, ctypes.byref(dims), ctypes.byref(n_dims),
                                                                ctypes.byref(err)), err)
        farr = (ctypes.c_char_p * max(1, len(feats)))(*feats)
        inp = _lib.mpk_mlc_build_input()
        inp.tasks_json, inp.tasks_len = tasks_text, len(tasks_text)
        if programs_text is not None:
            inp.programs_json, inp.programs_len = programs_text, len(programs_text)
        if md:
            inp.programs_from = md.contents.artifact
        inp.params = prm
        inp.dims, inp.n_dims = dims, n_dims.value
        inp.required_features = ctypes.cast(farr, ctypes.POINTER(ctypes.c_char_p))
        inp.n_required_features = len(feats)
        rc = _lib.lib.mpk_mlc_build(ctypes.byref(inp), ctypes.byref(res), ctypes.byref(err))
        if rc and tasks_file is not None and err.file == b"tasks":
            err.file = os.fsencode(tasks_file)[:511]
        _check(rc, err)
        manifest = ctypes.string_at(res.manifest, res.manifest_len)
        artifact = ctypes.string_at(res.artifact, res.artifact_len)
        manifest_path = os.path.join(d, MANIFEST_FILENAME)
        if write:
            _check(_lib.lib.mpk_write_file_atomic(os.fsencode(manifest_path), manifest, len(manifest),
                                                  ctypes.byref(err)), err)
            if output is not None:
                _check(_lib.lib.mpk_output_file(path_bytes(output), artifact, len(artifact), ctypes.byref(err)), err)
        return BuildResult(manifest=manifest, artifact=artifact, interface_id=res.interface_id.decode(),
                           parameter_schema_id=res.parameter_schema_id.decode(),
                           max_storage_buffer_binding_size=res.resources.max_storage_buffer_binding_size,
                           estimated_device_memory_bytes=res.resources.estimated_device_memory_bytes,
                           f16_without_shader_f16=bool(res.f16_without_shader_f16),
                           manifest_path=manifest_path if write else None)
    finally:
        _lib.lib.mpk_mlc_build_result_free(ctypes.byref(res))
        _lib.lib.mpk_free(ctypes.cast(dims, ctypes.c_void_p))
        _lib.lib.mpk_mlc_params_free(prm)
        _lib.lib.mpk_mlc_metadata_free(md)


# ---------------------------------------------------------------------------------- device fit

#: mpk_mlc_fit_context_source as `fit --json` spells it
_CONTEXT_FROM = (None, "given", "library", "chat_config")


@dataclass(frozen=True)
class FitNeeds:
    """What a model needs of a device, in bytes (``fit --json``'s ``needs``; docs/fit.md). Figures
    not counted (no library) are None."""

    complete: bool
    parameter_bytes: int
    kv_cache_bytes: Optional[int]
    workspace_bytes: Optional[int]
    total_bytes: Optional[int]
    max_binding_bytes: int
    max_binding_parameter: Optional[str]
    workspace_function: Optional[str]
    quantization: Optional[str]
    kv_dtype: Optional[str]
    kv_bytes_per_token: Optional[int]
    kv_cache: Optional[Dict[str, int]]  #: num_hidden_layers, num_key_value_heads, head_dim
    context: Optional[int]
    context_source: Optional[str]       #: "given", "library", "chat_config"
    context_field: Optional[str]
    uses_float16: bool
    kv_none_reason: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FitDevice:
    memory_bytes: Optional[int]
    max_storage_buffer_binding_size: Optional[int]
    features: Optional[List[str]]

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit` found; :meth:`to_dict` is ``modelpkg fit DIR --json``'s document."""

    modelpkg_version: str
    ok: bool                     #: no problem (it fits, or no device was given)
    dir: str
    library: Optional[str]
    chat_config: Optional[str]
    tensor_cache: Optional[str]
    fits: Optional[bool]         #: None: no device given, or refused
    refused: bool                #: the library is not the package's: ``problems`` says how
    needs: Optional[FitNeeds]    #: None when refused
    device: FitDevice
    problems: List[Problem]
    notes: List[str]

    command = "fit"

    def raise_for_problems(self) -> None:
        if self.problems:
            raise self.problems[0].exception()

    def to_dict(self) -> Dict[str, Any]:
        return {"modelpkg_version": self.modelpkg_version, "command": self.command, "ok": self.ok, "dir": self.dir,
                "library": self.library, "chat_config": self.chat_config, "tensor_cache": self.tensor_cache,
                "fits": self.fits, "needs": self.needs.to_dict() if self.needs is not None else None,
                "device": self.device.to_dict(), "problems": [p.to_dict() for p in self.problems],
                "notes": list(self.notes)}


def _nonempty(b: Optional[bytes]) -> Optional[str]:
    return _lib.s(b) if b else None


def _device(features: Optional[Iterable[str]], max_binding_size: Optional[int], keep: List[object]) -> Any:
    dev = _lib.mpk_mlc_device()
    dev.max_storage_buffer_binding_size = -1 if max_binding_size is None else int(max_binding_size)
    if features is not None:
        # as the CLI: empty names skipped, "f16" is shorthand for "shader-f16"
        names = [("shader-f16" if f.strip() == "f16" else f.strip()).encode() for f in features if f.strip()]
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        keep.append(arr)
        dev.features = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        dev.n_features = len(names)
        dev.has_features = 1
    keep.append(dev)
    return dev


_SAFE_INT = (1 << 53) - 1


def fit(dir: PathLike, lib: Optional[PathLike] = None, *, context: Optional[int] = None,
        dims: Optional[Mapping[str, int]] = None, device_memory: Optional[int] = None,
        max_binding_size: Optional[int] = None, device_features: Optional[Iterable[str]] = None) -> FitReport:
    """What an MLC model needs of a device, and whether it fits, as ``modelpkg fit DIR`` computes it
    (mpk_mlc_fit_package; docs/fit.md): ``lib`` the compiled library (or its _metadata JSON; without
    it only the parameters are counted), ``context`` the KV cache's tokens (``--context``), ``dims``
    named dimension values (``--set NAME=VALUE``), ``device_memory`` in bytes, ``max_binding_size``,
    ``device_features`` ("f16" = "shader-f16"). Returns the report (``report.to_dict()`` is the
    ``--json`` document); raises when the needs could not be computed (a name in ``dims`` nothing
    uses: :class:`modelpkg.InvalidArgumentError`)."""
    opts = _lib.options(_lib.mpk_mlc_fit_options)
    opts.lib_path = opt_path(lib)
    keep: List[object] = []
    if context is not None:
        if not 1 <= int(context) <= _SAFE_INT:
            raise _make(MPK_EINVAL, "", "", f"context needs a positive integer, not {context}")
        opts.context = int(context)
    if dims:
        arr = (_lib.mpk_mlc_named_dim * len(dims))()
        for i, (k, v) in enumerate(dims.items()):
            if int(v) < 1:
                raise _make(MPK_EINVAL, "", "", f"dimension {k} needs a positive integer (a dimension of 0 sizes "
                                                f"nothing), not {v}")
            arr[i].name = k.encode()
            arr[i].value = int(v)
        keep.append(arr)
        opts.dims = ctypes.cast(arr, ctypes.POINTER(_lib.mpk_mlc_named_dim))
        opts.n_dims = len(dims)
    if device_memory is not None:
        if not 0 <= int(device_memory) <= _SAFE_INT:
            raise _make(MPK_EINVAL, "", "", f"device_memory needs a number of bytes, not {device_memory}")
        opts.has_device_memory = 1
        opts.device_memory_bytes = int(device_memory)
    if max_binding_size is not None and int(max_binding_size) < 0:
        raise _make(MPK_EINVAL, "", "", f"max_binding_size needs a non-negative integer, not {max_binding_size}")
    dev = None
    if device_features is not None or max_binding_size is not None:
        dev = _device(device_features, max_binding_size, keep)
        opts.device = ctypes.pointer(dev)
    out = ctypes.POINTER(_lib.mpk_mlc_fit_report)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mlc_fit_package(path_bytes(dir), ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    try:
        _check(rc, err)
        r = out.contents
        f = r.fit
        c = bool(f.complete)
        kv = c and bool(f.kv_dtype)
        needs = FitNeeds(
            complete=c, parameter_bytes=f.parameter_bytes, kv_cache_bytes=f.kv_cache_bytes if c else None,
            workspace_bytes=f.workspace_bytes if c else None, total_bytes=f.total_bytes if c else None,
            max_binding_bytes=f.max_binding_bytes, max_binding_parameter=_nonempty(f.max_binding_parameter),
            workspace_function=_nonempty(f.workspace_function) if c else None,
            quantization=_nonempty(f.quantization), kv_dtype=_nonempty(f.kv_dtype) if kv else None,
            kv_bytes_per_token=f.kv_bytes_per_token if kv else None,
            kv_cache={"num_hidden_layers": f.kv_layers, "num_key_value_heads": f.kv_heads,
                      "head_dim": f.kv_head_dim} if kv else None,
            context=f.context if kv else None,
            context_source=(_CONTEXT_FROM[f.context_source] if 0 <= f.context_source < 4 else None) if kv else None,
            context_field=_nonempty(f.context_field) if kv else None, uses_float16=bool(f.uses_float16),
            kv_none_reason=_nonempty(f.kv_none_reason) if c else None)
        problems = problems_from_c(r.problems, r.n_problems)
        device = FitDevice(
            memory_bytes=int(opts.device_memory_bytes) if opts.has_device_memory else None,
            max_storage_buffer_binding_size=(dev.max_storage_buffer_binding_size
                                             if dev is not None and dev.max_storage_buffer_binding_size >= 0
                                             else None),
            features=_lib.strings(dev.features, dev.n_features) if dev is not None and dev.has_features else None)
        return FitReport(
            modelpkg_version=_lib.s(_lib.lib.mpk_version()) or "", ok=not problems, dir=_lib.s(r.dir) or "",
            library=_nonempty(r.lib_path), chat_config=_nonempty(r.chat_config_path),
            tensor_cache=_nonempty(r.weights_path),
            fits=(not problems) if r.device_checked and not r.refused else None, refused=bool(r.refused),
            needs=None if r.refused else needs, device=device, problems=problems,
            notes=_lib.strings(r.notes, r.n_notes))
    finally:
        _lib.lib.mpk_mlc_fit_report_free(out)


# ---------------------------------------------------------------------------------- prefill planning


class PrefillPlan:
    """A prompt planned (docs/prefill.md): the library's JSON of the plan (mpk_mlc_prefill_plan_json)
    as a dict, ``doc``, with its main fields as attributes; :meth:`to_dict` is ``modelpkg mlc plan
    --json``'s document."""

    def __init__(self, doc: Dict[str, Any], package: Optional[str], lib: Optional[str]) -> None:
        self.doc = doc
        self.package = package
        self.lib = lib
        self.generation_inputs: str = doc["generation_inputs"]
        self.functions: Dict[str, Optional[str]] = doc["functions"]
        self.prompt_length: int = doc["prompt_length"]
        self.filled_kv_cache_length: int = doc["filled_kv_cache_length"]
        self.items: List[Dict[str, Any]] = doc["items"]
        self.chunks: List[Dict[str, Any]] = doc["chunks"]

    def to_dict(self) -> Dict[str, Any]:
        from . import version

        out: Dict[str, Any] = {"modelpkg_version": version(), "command": "mlc plan", "ok": True,
                               "package": self.package, "lib": self.lib}
        out.update(self.doc)
        out["problems"] = []
        out["notes"] = []
        return out

    def __repr__(self) -> str:
        return f"PrefillPlan(prompt_length={self.prompt_length}, chunks={len(self.chunks)}, items={len(self.items)})"


class Planner:
    """A prefill planner: a package's (:meth:`open`, mpk_mlc_planner_open: the manifest bound to the
    compiled library, prefill_chunk_size, the context window and the system prefix from the chat
    config), or one from a configuration (:meth:`from_config`). Immutable; shareable between
    threads. ``package`` and ``lib`` are None for a configuration's."""

    def __init__(self, ptr: ctypes.c_void_p, package: Optional[str], lib: Optional[str]) -> None:
        self._ptr: Optional[ctypes.c_void_p] = ptr
        self.package = package
        self.lib = lib

    @classmethod
    def open(cls, package: PathLike, lib: PathLike) -> "Planner":
        """The planner for a package directory and its library (or _metadata JSON). A package without
        a manifest raises :class:`modelpkg.NotFoundError` (it takes the legacy chunker)."""
        ptr = ctypes.c_void_p()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_planner_open(path_bytes(package), path_bytes(lib), ctypes.byref(ptr),
                                             ctypes.byref(err)), err)
        return cls(ptr, os.fsdecode(package), os.fsdecode(lib))

    @classmethod
    def from_config(cls, config: JsonInput, file: Optional[str] = None) -> "Planner":
        """A planner from its configuration (mpk_mlc_planner_parse), as the JS package's planPrefill
        takes it: JSON text or a Python value with the fields of mpk_mlc_prefill_config in snake_case,
        each optional — generation_inputs ("tokens" or "embeds"), embed_tokens, prefill, decode,
        audio and image (None, or {"prompt": {"prefix_token_ids", "placeholder_token_id",
        "suffix_token_ids"}, "adapter_function", "num_embeddings"}), prefill_chunk_size,
        context_window_size, sliding_window_size, system_prefix_token_ids. Unknown fields and wrong
        types raise :class:`modelpkg.InvalidArgumentError` naming ``file`` (default "prefill config")
        and the field's pointer; then WebLLM's checks (a chunk size > 0, one window in use)."""
        text = json_bytes(config)
        ptr = ctypes.c_void_p()
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mlc_planner_parse(text, len(text), opt_str(file), ctypes.byref(ptr), ctypes.byref(err)),
               err)
        return cls(ptr, None, None)

    def plan(self, segments: Optional[JsonInput] = None, *, segments_file: Optional[PathLike] = None,
             filled_kv_cache_length: Optional[int] = None, file: Optional[str] = None) -> PrefillPlan:
        """Plan a prompt. ``segments``: SEGMENTS.json as text or a Python value,
        ``{"filled_kv_cache_length"?: N, "segments": [{"text": [ids]}, {"audio": {"rows": N}},
        {"image": {}}, ...]}``, or the list of segments alone; or ``segments_file``. Parsed strictly
        (mpk_mlc_segments_parse), planned (mpk_mlc_prefill_plan_segments). ``filled_kv_cache_length``
        overrides the document's. Refusals name ``file`` (default: segments_file, else
        "SEGMENTS.json") and the segment's pointer."""
        if self._ptr is None:
            raise ValueError("the planner is closed")
        if segments_file is not None:
            if segments is not None:
                raise ValueError("give segments or segments_file, not both")
            text = _read_doc(segments_file)
            name = file or os.fsdecode(segments_file)
        elif segments is None:
            raise ValueError("missing segments (or segments_file)")
        else:
            if isinstance(segments, (list, tuple)):
                segments = {"segments": list(segments)}
            text = json_bytes(segments)
            name = file or "SEGMENTS.json"
        err = _lib.mpk_error()
        segs = ctypes.POINTER(_lib.mpk_mlc_segments)()
        plan = ctypes.c_void_p()
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        try:
            _check(_lib.lib.mpk_mlc_segments_parse(text, len(text), name.encode(), ctypes.byref(segs),
                                                   ctypes.byref(err)), err)
            sg = segs.contents
            filled = sg.filled_kv_cache_length if filled_kv_cache_length is None else int(filled_kv_cache_length)
            rc = _lib.lib.mpk_mlc_prefill_plan_segments(self._ptr, filled, sg.segments, sg.n, ctypes.byref(plan),
                                                        ctypes.byref(err))
            if rc and not err.file:
                err.file = name.encode()[:511]  # the prompt's fault, as the CLI names it
            _check(rc, err)
            _check(_lib.lib.mpk_mlc_prefill_plan_json(self._ptr, plan, ctypes.byref(out), ctypes.byref(n),
                                                      ctypes.byref(err)), err)
            doc: Dict[str, Any] = json.loads(_lib.take_buffer(out, n.value))
            return PrefillPlan(doc, self.package, self.lib)
        finally:
            _lib.lib.mpk_mlc_prefill_plan_free(plan)
            _lib.lib.mpk_mlc_segments_free(segs)

    def close(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr:
            _lib.lib.mpk_mlc_planner_free(ptr)

    def __enter__(self) -> "Planner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_ptr", None):
            self.close()


def plan(package: PathLike, lib: PathLike, segments: Optional[JsonInput] = None, *,
         segments_file: Optional[PathLike] = None) -> PrefillPlan:
    """``modelpkg mlc plan --package DIR --lib LIB --segments FILE``: :meth:`Planner.open` then
    :meth:`Planner.plan`."""
    with Planner.open(package, lib) as p:
        return p.plan(segments, segments_file=segments_file)


def legacy_chunks(items: Iterable[Mapping[str, int]], prefill_chunk_size: int) -> List[Dict[str, Any]]:
    """WebLLM 0.2.86's pre-manifest chunker, getChunkedPrefillInputData (mpk_mlc_legacy_chunks), as
    the JS package's legacyChunks: ``items`` are ``{"text": TOKENS}`` or ``{"image": EMBED_SIZE}``;
    the chunks ``[{"length", "pieces": [{"item", "start", "count"}]}]`` (mpk_mlc_legacy_plan_json).
    Images are never split: one longer than the chunk size raises :class:`modelpkg.LimitError`
    (WebLLM's PrefillChunkSizeSmallerThanImageError); a chunk size <= 0
    :class:`modelpkg.InvalidArgumentError`."""
    where = "legacy items"
    if isinstance(items, (str, bytes, Mapping)):
        raise _make(MPK_EINVAL, where, "", "items must be an array")
    listed = list(items)
    if not _is_int64(prefill_chunk_size):
        raise _make(MPK_EINVAL, where, "/prefill_chunk_size", "must be an integer")
    arr = (_lib.mpk_mlc_legacy_item * max(1, len(listed)))()
    for i, it in enumerate(listed):
        kind: Any = next(iter(it)) if isinstance(it, Mapping) and len(it) == 1 else None
        value: Any = it[kind] if kind in ("text", "image") else None
        if not _is_int64(value):
            raise _make(MPK_EINVAL, where, f"/items/{i}", 'an item is {"text": TOKENS} or {"image": EMBED_SIZE}')
        arr[i].is_image = 1 if kind == "image" else 0
        arr[i].length = int(value)
    plan = ctypes.c_void_p()
    err = _lib.mpk_error()
    try:
        _check(_lib.lib.mpk_mlc_legacy_chunks(arr, len(listed), int(prefill_chunk_size), ctypes.byref(plan),
                                              ctypes.byref(err)), err)
        chunks: List[Dict[str, Any]] = _library_json(_lib.lib.mpk_mlc_legacy_plan_json, plan)
        return chunks
    finally:
        _lib.lib.mpk_mlc_legacy_plan_free(plan)


def _is_int64(v: Any) -> bool:
    """An integer as JSON has it (not a bool), within int64."""
    return isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)


__all__ = ["interface_id", "Package", "Task", "Input", "AudioDecode", "ImageDecode", "clean_model_url",
           "ResourceUrls", "resource_urls", "check", "MANIFEST_FILENAME", "Metadata", "metadata", "BuildResult",
           "build", "FitNeeds", "FitDevice", "FitReport", "fit", "Planner", "PrefillPlan", "plan", "Artifact",
           "Binding", "resolve", "GENERATION_INPUTS", "legacy_chunks"]
