"""Tensors of a MobileTransformers package variant, from the load gate, as zero-copy arrays.

    with modelpkg.mt.open_tensors("examples/mt-tiny") as t:     # the load gate ran: t.ready
        view = t.open("backbone.model.layers.0.self_attn.q_proj.base_layer")
    a = view.numpy()                 # numpy array over the mapped file: no copy, read-only
    b = numpy.from_dlpack(view)      # DLPack (kDLCPU): the same memory

A :class:`TensorView` is the library's ``mpk_tensor_view`` (``mpk_mt_tensor_open``: the file
memory-mapped read-only, refused unless its size is exactly its declared layout's). The mapping
lives as long as anything references it: the view, an array from :meth:`TensorView.numpy` (its
``base`` is the view), or a DLPack consumer (until it calls the deleter) — closing the
:class:`GatedTensors` does not unmap views still referenced.

The memory is mapped read-only. ``view.numpy()`` is a read-only array; a DLPack consumer gets a
pointer DLPack 0.x cannot mark read-only (numpy < 2 imports it as writeable): writing through it
faults. numpy has no int4/uint4 (packed two per byte) or bfloat16 dtype: ``numpy()`` refuses
those; DLPack exports them as their DLPack types.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_uint8, c_uint16, c_uint64
from ctypes import c_void_p
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _lib
from ._util import PathLike, path_bytes
from .errors import UnsupportedError
from .errors import check as _check
from .report import Problem, problems_from_c

# ------------------------------------------------------------------------------ DLPack (dlpack.h 0.6)


class DLDevice(Structure):
    _c_name_ = "DLDevice"
    _fields_ = [("device_type", c_int), ("device_id", c_int)]


class DLDataType(Structure):
    _c_name_ = "DLDataType"
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _c_name_ = "DLTensor"
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    _c_name_ = "DLManagedTensor"


_DELETER = CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", _DELETER)]

#: structures checked against dlpack/dlpack.h by tests/test_layout.py
DLPACK_STRUCTS = [DLDevice, DLDataType, DLTensor, DLManagedTensor]

kDLCPU = 1

# The managed tensors handed out and not yet deleted: address -> (the struct, the view it maps).
_live: Dict[int, Tuple[DLManagedTensor, "TensorView"]] = {}


def _delete(p: Any) -> None:
    try:
        _live.pop(ctypes.addressof(p.contents), None)
    except Exception:  # noqa: BLE001 - never raise into C (interpreter shutdown)
        pass


_deleter = _DELETER(_delete)
_CAPSULE_NAME = b"dltensor"
_CAPSULE_DESTRUCTOR = CFUNCTYPE(None, c_void_p)
_pyapi = ctypes.pythonapi
_pyapi.PyCapsule_New.restype = ctypes.py_object
_pyapi.PyCapsule_New.argtypes = [c_void_p, c_char_p, _CAPSULE_DESTRUCTOR]
_pyapi.PyCapsule_IsValid.restype = c_int
_pyapi.PyCapsule_IsValid.argtypes = [c_void_p, c_char_p]
_pyapi.PyCapsule_GetPointer.restype = c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [c_void_p, c_char_p]


def _capsule_destructor(capsule: int) -> None:
    # A capsule never consumed (still named "dltensor": a consumer renames it "used_dltensor")
    # gives its tensor back here, as the DLPack protocol asks of the producer.
    try:
        if _pyapi.PyCapsule_IsValid(capsule, _CAPSULE_NAME):
            _live.pop(_pyapi.PyCapsule_GetPointer(capsule, _CAPSULE_NAME), None)
    except Exception:  # noqa: BLE001
        pass


_capsule_destructor_c = _CAPSULE_DESTRUCTOR(_capsule_destructor)

# numpy dtype strings of the library's dtype names (host byte order: the view converts on big-endian)
_NUMPY = {"float32": "f4", "float16": "f2", "float64": "f8", "int8": "i1", "uint8": "u1", "int16": "i2",
          "uint16": "u2", "int32": "i4", "uint32": "u4", "int64": "i8", "uint64": "u8", "bool": "b1"}


class TensorView:
    """A tensor over read-only mapped memory (mpk_tensor_view): dtype, shape, bytes; numpy and DLPack."""

    def __init__(self, view: "_lib.mpk_tensor_view", file: str = "", layer: str = "", role: str = "") -> None:
        self._v = view
        self.file = file
        self.layer = layer
        self.role = role
        self.dtype: str = view.dtype.decode()
        self.shape: Tuple[int, ...] = tuple(view.shape[i] for i in range(view.ndim))
        self.strides: Tuple[int, ...] = tuple(view.strides[i] for i in range(view.ndim))  # in elements
        self.numel: int = view.numel
        self.nbytes: int = view.nbytes

    @property
    def data_ptr(self) -> int:
        """The address of the first byte (the mapping)."""
        return self._v.data or 0

    def _open(self) -> None:
        if not self._v.priv_:
            raise ValueError("the tensor view is closed")

    @property
    def __array_interface__(self) -> Dict[str, Any]:
        self._open()
        code = _NUMPY.get(self.dtype)
        if code is None:
            raise UnsupportedError(-5, f"numpy has no dtype for {self.dtype} (DLPack exports it)")
        return {"version": 3, "shape": self.shape, "typestr": ("<" if _little() else ">") + code,
                "data": (self.data_ptr, True), "strides": None}

    def numpy(self) -> Any:
        """A read-only numpy array over the mapping (no copy; its base keeps this view alive)."""
        import numpy

        return numpy.asarray(self)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (kDLCPU, 0)

    def __dlpack__(self, stream: Optional[int] = None) -> Any:
        """A "dltensor" capsule (DLPack 0.6, kDLCPU) over the mapping; the view lives until the
        consumer calls the deleter."""
        if stream is not None and stream != -1:
            raise BufferError("a CPU tensor takes no stream")
        self._open()
        m = DLManagedTensor()
        rc = _lib.lib.mpk_tensor_view_dltensor(ctypes.byref(self._v), ctypes.byref(m.dl_tensor))
        if rc:
            raise UnsupportedError(rc, "mpk_tensor_view_dltensor refused the view")
        m.deleter = _deleter
        addr = ctypes.addressof(m)
        _live[addr] = (m, self)
        return _pyapi.PyCapsule_New(addr, _CAPSULE_NAME, _capsule_destructor_c)

    def close(self) -> None:
        """Unmap now (arrays still referencing the memory must be gone: prefer dropping references)."""
        _lib.lib.mpk_tensor_view_close(ctypes.byref(self._v))

    def __del__(self) -> None:
        v = getattr(self, "_v", None)
        if v is not None and v.priv_:
            _lib.lib.mpk_tensor_view_close(ctypes.byref(v))

    def __repr__(self) -> str:
        return f"TensorView({self.layer!r}, role={self.role!r}, dtype={self.dtype}, shape={self.shape})"


def _little() -> bool:
    import sys

    return sys.byteorder == "little"


# ------------------------------------------------------------------------------ the gate


@dataclass(frozen=True)
class GateTensor:
    """One tensor as the load gate saw it (mpk_mt_gate_tensor)."""

    layer: str
    role: str
    file: str
    status: str      #: "verified", "present", "missing", "no checksum", "bad sidecar", "mismatch", "unreadable"
    authority: str   #: "sidecar", "map", "merge record", "none"
    size: int
    dtype: Optional[str]
    shape: Optional[Tuple[int, ...]]
    size_ok: bool
    merged: bool


_ROLES = ("weight", "weight_quantized", "scale", "zero_point")


class GatedTensors:
    """A package variant's merged weights under the load gate (mpk_mt_variant_gate_open).

    The gate holds the inference directory against merges (a shared lock) until :meth:`close`;
    open the views in between. Views outlive it (their mappings are their own).
    """

    def __init__(self, path: PathLike, variant: Optional[str], presence_only: bool, workers: int) -> None:
        from .mt import Manifest

        self._gate: Any = POINTER(_lib.mpk_mt_variant_gate)()
        self._map: Any = POINTER(_lib.mpk_mt_handoff)()
        opts = _lib.options(_lib.mpk_mt_gate_options)
        opts.presence_only = int(presence_only)
        opts.workers = workers
        err = _lib.mpk_error()
        _check(_lib.lib.mpk_mt_variant_gate_open(path_bytes(path), None if variant is None else variant.encode(),
                                                 ctypes.byref(opts), ctypes.byref(self._gate), ctypes.byref(err)), err)
        g = self._gate.contents
        self.dir = os.fspath(path) if not isinstance(path, bytes) else os.fsdecode(path)
        self.variant: str = _lib.s(g.variant) or ""
        self.weight_handoff: str = _lib.s(g.weight_handoff) or ""
        self.map_absent = bool(g.map_absent)
        self.ready = True
        self.tensors: List[GateTensor] = []
        self.problems: List[Problem] = []
        if g.report:
            r = g.report.contents
            self.ready = bool(r.ready)
            self.problems = problems_from_c(r.problems, r.n_problems)
            for i in range(r.n_tensors):
                t = r.tensors[i]
                self.tensors.append(GateTensor(
                    layer=_lib.s(t.layer) or "", role=_lib.s(_lib.lib.mpk_mt_role_name(t.role)) or "",
                    file=_lib.s(t.file) or "", status=_lib.s(_lib.lib.mpk_mt_tensor_status_name(t.status)) or "",
                    authority=_lib.s(_lib.lib.mpk_mt_authority_name(t.authority)) or "", size=t.size,
                    dtype=_lib.s(t.dtype), shape=tuple(t.shape[j] for j in range(t.ndim)) if t.shape else None,
                    size_ok=bool(t.size_ok), merged=bool(t.merged)))
        self._inference_dir: Optional[str] = None
        self.installed = False  #: an installed model (<cache>/<name>), not a package directory
        if not self.map_absent:
            # The public API's gate does not hand out its map or its directory handle: the map is
            # read again (it is the file the gate read) and the views are opened by path, while the
            # gate holds the directory against merges (docs/python.md, "Tensor views").
            # An installed model (mpk_mt_installed_open finds its record) has the package paths
            # flattened: <paths[stage]>/x is <stage>/x (mpk_mt_installed_path).
            from .mt import installed_path

            manifest = Manifest.load(path)
            v = manifest.variant(self.variant)
            inference = v.paths.get("inference", os.path.dirname(self.weight_handoff))
            map_rel = self.weight_handoff
            self.installed = _is_installed(path)
            if self.installed:
                inference = os.path.dirname(installed_path(manifest, self.variant, inference + "/x"))
                map_rel = installed_path(manifest, self.variant, map_rel)
            self._inference_dir = os.path.join(self.dir, inference)
            err = _lib.mpk_error()
            _check(_lib.lib.mpk_mt_handoff_load(os.fsencode(os.path.join(self.dir, map_rel)),
                                                ctypes.byref(self._map), ctypes.byref(err)), err)

    def raise_if_not_ready(self) -> None:
        if not self.ready:
            if self.problems:
                raise self.problems[0].exception()
            raise UnsupportedError(-5, "the load gate is not ready")

    def open(self, layer: str, role: str = "weight") -> TensorView:
        """The view of a layer's tensor (its trainingBaseLayerName, or its inference initializer name)
        for a role; fail-closed: only when the gate verified every tensor (``ready``)."""
        self.raise_if_not_ready()
        if not self._map or self._inference_dir is None:
            raise KeyError(layer)
        r = _ROLES.index(role)
        m = self._map.contents
        for i in range(m.n_entries):
            e = m.entries[i]
            names = {_lib.s(e.training_base_layer_name), _lib.s(e.inference_initializer_names[r])}
            if layer in names and e.external_data_location[r]:
                view = _lib.mpk_tensor_view()
                err = _lib.mpk_error()
                _check(_lib.lib.mpk_mt_tensor_open(self._inference_dir.encode(), ctypes.byref(e), r,
                                                   ctypes.byref(view), ctypes.byref(err)), err)
                return TensorView(view, os.path.join(self._inference_dir, _lib.s(e.external_data_location[r]) or ""),
                                  _lib.s(e.training_base_layer_name) or "", role)
        raise KeyError(layer)

    def views(self) -> Dict[str, TensorView]:
        """Every verified tensor's view, by "layer" (role weight) or "layer:role"."""
        out: Dict[str, TensorView] = {}
        for t in self.tensors:
            out[t.layer if t.role == "weight" else f"{t.layer}:{t.role}"] = self.open(t.layer, t.role)
        return out

    def close(self) -> None:
        """Free the gate (merges may run again) and the map; views stay valid."""
        g, self._gate = self._gate, None
        if g:
            _lib.lib.mpk_mt_variant_gate_free(g)
        m, self._map = self._map, None
        if m:
            _lib.lib.mpk_mt_handoff_free(m)

    def __enter__(self) -> "GatedTensors":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def _is_installed(path: PathLike) -> bool:
    ptr = POINTER(_lib.mpk_mt_installed)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_mt_installed_open(path_bytes(path), ctypes.byref(ptr), ctypes.byref(err))
    _lib.lib.mpk_mt_installed_free(ptr)
    if rc == -4:  # MPK_ENOTFOUND: a package directory
        return False
    _check(rc, err)
    return True


def open_tensors(path: PathLike, variant: Optional[str] = None, *, presence_only: bool = False,
                 workers: int = 0) -> GatedTensors:
    """Run the load gate on a package variant or an installed model (``<cache>/<name>``, as
    :func:`modelpkg.mt.install` leaves it) and hold it for opening views. ``variant`` None: an
    installed model's own, else defaultVariant."""
    return GatedTensors(path, variant, presence_only, workers)


__all__ = ["TensorView", "GateTensor", "GatedTensors", "open_tensors", "DLManagedTensor", "DLTensor"]
