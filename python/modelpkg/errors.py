"""The exceptions: one class per library error code (``MPK_E*`` in modelpkg/core.h).

Every exception the library reports is a :class:`Error` carrying what the C ``mpk_error`` holds:
``code`` (the negative ``MPK_E*`` value), ``code_name`` (``"malformed"``, ``"mismatch"``, ... as
``mpk_code_name()`` and the CLI's ``--json`` ``problems[].code`` spell it), ``message`` (the rule,
one line; also as ``rule``), ``file`` (the document, or a logical name such as
``_metadata.artifact``), ``pointer`` (an RFC 6901 JSON pointer into it, ``""`` for the whole
document) and ``offset`` (a byte offset, or ``None``). ``str(e)`` is the library's own
``FILE: POINTER: MESSAGE`` line (``mpk_error_format()``), the line the CLI prints.
"""

from __future__ import annotations

import ctypes
from typing import Dict, Optional, Type

from . import _lib

MPK_EMALFORMED = -1
MPK_EVERSION = -2
MPK_EMISMATCH = -3
MPK_ENOTFOUND = -4
MPK_EUNSUPPORTED = -5
MPK_EIO = -6
MPK_ENOMEM = -7
MPK_ELIMIT = -8
MPK_ENOVARIANT = -9
MPK_ECANCELLED = -10
MPK_EINVAL = -11


class Error(Exception):
    """A failure the library reported, with its location."""

    #: the MPK_E* value this class stands for (0 on the base class: any code)
    CODE = 0

    def __init__(self, code: int, message: str, file: str = "", pointer: str = "",
                 offset: Optional[int] = None, formatted: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.file = file
        self.pointer = pointer
        self.offset = offset
        self._formatted = formatted
        super().__init__(formatted if formatted is not None else message)

    @property
    def rule(self) -> str:
        """The rule that was broken: the one-line message."""
        return self.message

    @property
    def code_name(self) -> str:
        return code_name(self.code)

    def __str__(self) -> str:
        return self._formatted if self._formatted is not None else self.message

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code_name!r}, file={self.file!r}, "
                f"pointer={self.pointer!r}, message={self.message!r})")


class MalformedError(Error):
    """A document breaks its format or schema (MPK_EMALFORMED)."""
    CODE = MPK_EMALFORMED


class VersionError(Error):
    """A document's version is not supported (MPK_EVERSION)."""
    CODE = MPK_EVERSION


class MismatchError(Error):
    """Two artifacts, or an artifact and a device, do not agree (MPK_EMISMATCH)."""
    CODE = MPK_EMISMATCH


class NotFoundError(Error):
    """A file, field or object that must exist does not (MPK_ENOTFOUND)."""
    CODE = MPK_ENOTFOUND


class UnsupportedError(Error):
    """Valid, but not something this version (or build) can do (MPK_EUNSUPPORTED)."""
    CODE = MPK_EUNSUPPORTED


class IoError(Error):
    """Reading or writing failed (MPK_EIO)."""
    CODE = MPK_EIO


class OutOfMemoryError(Error):
    """The library ran out of memory (MPK_ENOMEM)."""
    CODE = MPK_ENOMEM


class LimitError(Error):
    """A size, count or depth limit was exceeded (MPK_ELIMIT)."""
    CODE = MPK_ELIMIT


class NoVariantError(Error):
    """No package variant fits the device (MPK_ENOVARIANT)."""
    CODE = MPK_ENOVARIANT


class CancelledError(Error):
    """A progress callback asked to stop (MPK_ECANCELLED)."""
    CODE = MPK_ECANCELLED


class InvalidArgumentError(Error, ValueError):
    """The caller passed an invalid argument (MPK_EINVAL)."""
    CODE = MPK_EINVAL


_BY_CODE: Dict[int, Type[Error]] = {
    c.CODE: c
    for c in (MalformedError, VersionError, MismatchError, NotFoundError, UnsupportedError, IoError,
              OutOfMemoryError, LimitError, NoVariantError, CancelledError, InvalidArgumentError)
}


def code_name(code: int) -> str:
    """The library's short name of a code ("malformed", "not-found", ...)."""
    n = _lib.lib.mpk_code_name(code)
    return str(n.decode()) if n else f"error {code}"


def format_error(err: "_lib.mpk_error") -> str:
    """The library's one-line form of an mpk_error: FILE: POINTER: MESSAGE."""
    buf = ctypes.create_string_buffer(2048)
    n = _lib.lib.mpk_error_format(ctypes.byref(err), buf, len(buf))
    if n >= len(buf):
        buf = ctypes.create_string_buffer(n + 1)
        _lib.lib.mpk_error_format(ctypes.byref(err), buf, len(buf))
    return buf.value.decode("utf-8", "surrogateescape")


def from_c(err: "_lib.mpk_error", rc: Optional[int] = None) -> Error:
    """The exception for a filled mpk_error (its code, else `rc`)."""
    code = err.code or (rc if rc is not None else 0)
    cls = _BY_CODE.get(code, Error)
    dec = _lib.dec
    return cls(code, dec(err.message) or code_name(code), dec(err.file), dec(err.pointer),
               err.offset if err.offset >= 0 else None, format_error(err) if err.message else None)


def check(rc: int, err: "_lib.mpk_error") -> None:
    """Raise the exception for a failed call (rc < 0); nothing for 0."""
    if rc:
        raise from_c(err, rc)


def make(code: int, file: str, pointer: str, message: str) -> Error:
    """The exception for a refusal the binding itself makes where the CLI does (the same code, file,
    pointer and rule; ``str(e)`` formatted by the library)."""
    e = _lib.mpk_error()
    e.code = code
    e.message = message.encode("utf-8", "surrogateescape")[:511]
    e.file = file.encode("utf-8", "surrogateescape")[:511]
    e.pointer = pointer.encode("utf-8", "surrogateescape")[:511]
    e.offset = -1
    return from_c(e)
