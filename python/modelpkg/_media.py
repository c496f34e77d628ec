"""What the audio and image frontends share: the package's processor, found as the CLI finds it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Tuple

from . import _lib
from ._util import PathLike
from .errors import MPK_ECANCELLED, MPK_EUNSUPPORTED
from .errors import make as _make

if TYPE_CHECKING:
    from .mlc import Input


def need(symbol: str, component: str) -> None:
    if symbol not in _lib.MEDIA:
        raise _make(MPK_EUNSUPPORTED, "", "", f"this libmodelpkg was built without the {component} component")


def cancel(err: Any) -> int:
    """Fill the library's mpk_error (a pointer) as a cancellation by the progress callback."""
    ce = err.contents
    ce.code, ce.message, ce.file, ce.pointer, ce.offset = MPK_ECANCELLED, b"cancelled by the progress callback", \
        b"", b"", -1
    return MPK_ECANCELLED


def manifest_path(package: PathLike) -> str:
    """DIR/mlc-model-manifest.json for a directory, else the manifest file as given (as the CLI)."""
    p = os.fsdecode(package)
    return os.path.join(p, "mlc-model-manifest.json") if os.path.isdir(p) else p


def find_input(package: PathLike, kind: str) -> Tuple[str, "Input"]:
    """The manifest path and the input of ``kind`` ("audio_decode" / "image_decode"): chat.completions'
    input of that kind, else the first (tasks sorted by name, inputs as WebLLM iterates them)."""
    from . import mlc
    from .errors import MPK_EMALFORMED

    path = manifest_path(package)
    pkg = mlc.Package.load(path)
    found: Optional[mlc.Input] = None
    for t in pkg.tasks:
        for i in t.inputs:
            if i.kind == kind and (found is None or t.name == "chat.completions"):
                found = i
    if found is None:
        raise _make(MPK_EMALFORMED, path, "", f"no task input has an {kind} processor")
    return path, found
