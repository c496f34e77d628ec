"""Small conversions shared by the modules."""

from __future__ import annotations

import json
import os
from typing import Any, Optional, Union

JsonInput = Union[str, bytes, bytearray, memoryview, Any]
PathLike = Union[str, "os.PathLike[str]", bytes]


def json_bytes(value: JsonInput) -> bytes:
    """JSON text for the library: bytes as given, str as UTF-8, any other value serialized.

    A Python value (dict, list, ...) is written with ``json.dumps(ensure_ascii=True,
    allow_nan=False)``: non-ASCII characters travel as \\u escapes, which the library reads back
    exactly (a lone surrogate stays an escape, and the library refuses it as invalid JSON, as it
    refuses one in a text).
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return json.dumps(value, ensure_ascii=True, allow_nan=False).encode("ascii")


def path_bytes(p: PathLike) -> bytes:
    """A path argument as the bytes the C library takes."""
    return os.fsencode(p)


def opt_path(p: Optional[PathLike]) -> Optional[bytes]:
    return None if p is None else os.fsencode(p)


def opt_str(v: Optional[str]) -> Optional[bytes]:
    return None if v is None else v.encode("utf-8")
