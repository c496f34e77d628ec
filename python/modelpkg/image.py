"""Images: a JPEG, PNG or WebP file to the [1, H, W, 3] pixel tensor an image_decode adapter
expects (media.h).

    t = modelpkg.image.decode("photo.jpg", package="examples/llava-image")   # numpy uint8 [1, H, W, 3]

The resize plan is WebLLM 0.2.86's planImageResize, the pixels an antialiased filter's, the EXIF
orientation applied; the tensor is what ``modelpkg image IN -o OUT`` writes. The processor (mode,
width, height) is the package's image_decode input, as ``--package`` reads it; with ``lib`` the
input the library's binding gives the image adapter, and the dtype (uint8 or uint32) its
adapter_dtypes says.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any, Optional, Union

from . import _lib
from ._media import cancel, find_input, manifest_path, need
from ._util import PathLike
from .errors import MPK_EINVAL, MPK_EMALFORMED, MPK_EMISMATCH, MPK_EUNSUPPORTED
from .errors import check as _check
from .errors import make as _make
from .report import ProgressFn

#: Larger files are not read (as the CLI).
MAX_FILE_BYTES = 1 << 30
MODES = ("stretch", "center_crop")

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


@dataclass(frozen=True)
class Target:
    """The processor's resize (mpk_image_target) and the tensor's element type."""

    mode: str                    #: "stretch" or "center_crop"
    width: int
    height: int
    dtype: str = "uint8"         #: "uint8" or "uint32"
    dtype_from: str = "default"  #: "default", "option" or "lib"
    input: Optional[str] = None  #: the package input it came from


@dataclass(frozen=True)
class ResizePlan:
    """planImageResize: the source drawn at width x height, the target window at (left, top)."""

    width: int
    height: int
    left: int
    top: int


@dataclass(frozen=True)
class Image:
    """The tensor and where it came from (mpk_image)."""

    tensor: Any           #: numpy.ndarray [1, height, width, 3], uint8 or little-endian uint32
    format: str           #: "jpeg", "png", "webp"
    source_width: int
    source_height: int
    source_channels: int
    source_bits: int
    has_alpha: bool
    orientation: int
    orientation_applied: bool
    decoded_width: int
    decoded_height: int
    jpeg_scale_num: Optional[int]  #: JPEG: M of the M/8 DCT scale; None for other formats
    plan: ResizePlan
    warning: str          #: a decoder warning that left the pixels whole; "" when none
    target: Target


def _mode(m: str) -> int:
    if m not in MODES:
        raise _make(MPK_EINVAL, "", "", f"mode: expected stretch or center_crop, got '{m}'")
    return MODES.index(m)


def plan_resize(source_width: int, source_height: int, mode: str, width: int, height: int) -> ResizePlan:
    """WebLLM's planImageResize (mpk_image_plan_resize)."""
    need("mpk_image_plan_resize", "image")
    t = _lib.mpk_image_target()
    t.mode, t.width, t.height = _mode(mode), width, height
    p = _lib.mpk_image_plan()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_image_plan_resize(source_width, source_height, ctypes.byref(t), ctypes.byref(p),
                                          ctypes.byref(err)), err)
    return ResizePlan(p.width, p.height, p.left, p.top)


def _lib_input(package: PathLike, lib: PathLike) -> "tuple[Any, str]":
    """The image input the binding gives the image adapter, and its dtype (the CLI's --lib)."""
    from . import mlc

    path = manifest_path(package)
    pkg = mlc.Package.load(path)
    md = mlc.Metadata.load(lib)
    if not md.has_artifact:
        raise _make(MPK_EMALFORMED, os.fsdecode(lib), "",
                    "the library's _metadata has no artifact (no adapter_dtypes to read)")
    b = _lib.mpk_mlc_binding()
    err = _lib.mpk_error()
    _check(_lib.lib.mpk_mlc_resolve(pkg._ptr, md._md.contents.artifact, ctypes.byref(b), ctypes.byref(err)), err)
    if not b.has_image:
        raise _make(MPK_EMALFORMED, path, "", f"the package binds no image input to {os.fsdecode(lib)}")
    found = mlc._input(b.image.input.contents)
    return found, _lib.s(b.image.dtype) or ""


def target(package: Optional[PathLike] = None, *, lib: Optional[PathLike] = None, mode: Optional[str] = None,
           width: Optional[int] = None, height: Optional[int] = None, dtype: Optional[str] = None) -> Target:
    """The processor and dtype, as ``modelpkg image`` decides them (options win over the package;
    with ``lib`` the dtype is the library's, and a different ``dtype`` is refused)."""
    if mode is not None:
        _mode(mode)
    if dtype is not None and dtype not in ("uint8", "uint32"):
        raise _make(MPK_EINVAL, "", "", f"dtype: expected uint8 or uint32, got '{dtype}'")
    for n, v in (("width", width), ("height", height)):
        if v is not None and not 1 <= int(v) <= 65535:
            raise _make(MPK_EINVAL, "", "", f"{n}: expected an integer in 1..65535, got {v}")
    if lib is not None and package is None:
        raise ValueError("lib needs package (the binding names the input)")
    if package is None and (mode is None or width is None or height is None):
        raise ValueError("give package, or mode, width and height")
    t = Target("stretch", 0, 0)
    lib_dtype: Optional[str] = None
    if package is not None:
        if lib is not None:
            found, lib_dtype = _lib_input(package, lib)
        else:
            _, found = find_input(package, "image_decode")
        im = found.image
        assert im is not None
        t = Target(im.resize_mode, im.width, im.height, input=found.name)
    mode_, w, h = mode or t.mode, width or t.width, height or t.height
    if lib_dtype is not None:
        assert lib is not None
        if dtype is not None and dtype != lib_dtype:
            raise _make(MPK_EMISMATCH, os.fsdecode(lib), "",
                        f"adapter_dtypes gives the image adapter {lib_dtype}; --dtype says {dtype}")
        if lib_dtype not in ("uint8", "uint32"):
            raise _make(MPK_EUNSUPPORTED, os.fsdecode(lib), "",
                        f"image adapter dtype {lib_dtype} is neither uint8 nor uint32")
        return Target(mode_, w, h, lib_dtype, "lib", t.input)
    return Target(mode_, w, h, dtype or "uint8", "option" if dtype else "default", t.input)


class _Rows:
    """The tensor's rows as the library makes them (mpk_image_rows_fn), with progress and cancellation."""

    def __init__(self, progress: ProgressFn, t: Target) -> None:
        import numpy

        self.buf = numpy.zeros((t.height, t.width, 3), numpy.uint8)
        self.progress = progress
        self.total = t.height
        self.done = 0
        self.exc: Optional[BaseException] = None
        self.c_fn = _lib.IMAGE_ROWS_FN(self._call)

    def _call(self, ctx: Any, y: int, row: Any, n: int, err: Any) -> int:
        try:
            ctypes.memmove(self.buf[y].ctypes.data, row, n)
            self.done += 1
            stop = self.progress(self.done, self.total)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self.exc, stop = exc, True
        return cancel(err) if stop else 0


def convert(source: Source, *, package: Optional[PathLike] = None, lib: Optional[PathLike] = None,
            mode: Optional[str] = None, width: Optional[int] = None, height: Optional[int] = None,
            dtype: Optional[str] = None, ignore_orientation: bool = False, max_pixels: int = 0,
            max_decode_bytes: int = 0, file: Optional[str] = None, progress: Optional[ProgressFn] = None) -> Image:
    """The tensor and its report. ``source``: an image file's path, or its bytes (``file`` names
    them in errors; default "image"). ``max_pixels`` / ``max_decode_bytes``: bounds (0: the
    library's defaults, 256 Mi pixels and 512 MiB). ``progress(rows done, rows)`` is called as the
    tensor's rows are made (from a library thread, never two at once); a true return value cancels
    (:class:`modelpkg.CancelledError`)."""
    need("mpk_image_from_bytes", "image")
    import numpy

    t = target(package, lib=lib, mode=mode, width=width, height=height, dtype=dtype)
    ct = _lib.mpk_image_target()
    ct.mode, ct.width, ct.height = MODES.index(t.mode), t.width, t.height
    opts = _lib.options(_lib.mpk_image_options)
    opts.ignore_orientation = int(ignore_orientation)
    opts.max_pixels = max_pixels
    opts.max_decode_bytes = max_decode_bytes
    rows = _Rows(progress, t) if progress is not None else None
    if rows is not None:
        opts.rows = rows.c_fn
    if isinstance(source, (str, os.PathLike)):
        name: Optional[bytes] = os.fsencode(source)
        data = _lib.read_file(os.fsencode(source), MAX_FILE_BYTES)
    else:
        name = None if file is None else file.encode()
        data = bytes(source)
    out = ctypes.POINTER(_lib.mpk_image)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_image_from_bytes(data, len(data), name, ctypes.byref(ct), ctypes.byref(opts), ctypes.byref(out),
                                       ctypes.byref(err))
    try:
        if rows is not None and rows.exc is not None:
            raise rows.exc
        _check(rc, err)
        img = out.contents
        shape = (1, img.height, img.width, 3)
        if rows is not None:
            tensor = rows.buf.reshape(shape)
            if t.dtype == "uint32":
                tensor = tensor.astype("<u4")
        else:
            tensor = numpy.empty(shape, numpy.uint8 if t.dtype == "uint8" else numpy.dtype("<u4"))
            _check(_lib.lib.mpk_image_tensor_bytes(out, tensor.itemsize, tensor.ctypes.data_as(ctypes.c_void_p),
                                                   tensor.nbytes, ctypes.byref(err)), err)
        fmt = _lib.s(_lib.lib.mpk_image_format_name(img.format)) or ""
        p = img.plan
        return Image(tensor=tensor, format=fmt, source_width=img.source_width, source_height=img.source_height,
                     source_channels=img.source_channels, source_bits=img.source_bits, has_alpha=bool(img.has_alpha),
                     orientation=img.orientation, orientation_applied=bool(img.orientation_applied),
                     decoded_width=img.decoded_width, decoded_height=img.decoded_height,
                     jpeg_scale_num=img.jpeg_scale_num if fmt == "jpeg" else None,
                     plan=ResizePlan(p.width, p.height, p.left, p.top), warning=_lib.dec(img.warning), target=t)
    finally:
        _lib.lib.mpk_image_free(out)


def decode(source: Source, **kw: Any) -> Any:
    """:func:`convert`'s tensor: numpy [1, H, W, 3], uint8 or little-endian uint32 (the bytes
    ``modelpkg image -o`` writes)."""
    return convert(source, **kw).tensor


__all__ = ["Target", "ResizePlan", "Image", "plan_resize", "target", "convert", "decode", "MODES"]
