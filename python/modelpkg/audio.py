"""Audio: a recording to the canonical mono float32 PCM an audio_decode adapter expects (media.h).

    samples = modelpkg.audio.decode("speech.wav", package="examples/gemma4-audio")   # numpy float32

Accepts and refuses what WebLLM 0.2.86's decodeAudioInput does (same messages), then resamples with
libsoxr (SoX's ``rate -v``); the samples are those ``modelpkg audio IN -o OUT.f32`` writes. The
processor (rate, fewest and most samples) is the package's audio_decode input (chat.completions'
first), as ``--package`` reads it, or given (``rate``, ``min_samples``, ``max_samples``).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from typing import Any, List, Optional, Union

from . import _lib
from ._media import cancel, find_input, need
from ._util import PathLike
from .errors import MPK_EINVAL
from .errors import check as _check
from .errors import make as _make
from .report import ProgressFn

#: The source types decode() takes: a path, WAV bytes, or a numpy float32 array (with source_rate).
Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


@dataclass(frozen=True)
class Target:
    """The processor's side: output rate and the accepted output lengths (mpk_audio_target)."""

    sample_rate_hz: int
    min_samples: int
    max_samples: int
    input: Optional[str] = None  #: the package input it came from


@dataclass(frozen=True)
class WavInfo:
    """What a WAV file held (mpk_wav_info)."""

    format_tag: int
    codec: int             #: 1 PCM integer, 3 IEEE float
    codec_name: str
    channels: int
    sample_rate: int
    bits_per_sample: int
    block_align: int
    frames: int
    streaming: bool        #: the data chunk declared 0 or 0xFFFFFFFF bytes: read to the end of the file


@dataclass(frozen=True)
class Audio:
    """Canonical audio and where it came from (mpk_audio)."""

    samples: Any               #: numpy.ndarray, float32, mono, at sample_rate_hz
    sample_rate_hz: int
    source_rate: float
    source_channels: int
    source_frames: int
    resampled: bool            #: False: rates equal, the downmixed samples copied unchanged
    peak: float
    rms: float
    wav: Optional[WavInfo]     #: None for PCM given as an array
    target: Target


def target(package: Optional[PathLike] = None, *, rate: Optional[int] = None, min_samples: Optional[int] = None,
           max_samples: Optional[int] = None) -> Target:
    """The processor, as ``modelpkg audio`` decides it: the package's audio_decode input, the
    options winning over it; without a package ``rate`` and ``max_samples`` are needed."""
    for n, v in (("rate", rate), ("min_samples", min_samples), ("max_samples", max_samples)):
        if v is not None and int(v) < 1:
            raise _make(MPK_EINVAL, "", "", f"{n}: expected a positive integer, got {v}")
    if package is None and (rate is None or max_samples is None):
        raise ValueError("give package, or rate and max_samples")
    t = Target(0, 1, 0)
    if package is not None:
        _, i = find_input(package, "audio_decode")
        a = i.audio
        assert a is not None
        t = Target(a.sample_rate_hz, a.min_samples, a.max_samples, i.name)
    t = Target(rate if rate is not None else t.sample_rate_hz, min_samples if min_samples is not None else t.min_samples,
               max_samples if max_samples is not None else t.max_samples, t.input)
    if t.min_samples > t.max_samples:
        raise _make(MPK_EINVAL, "", "", f"min_samples {t.min_samples} exceeds max_samples {t.max_samples}")
    return t


def _c_target(t: Target, threads: int) -> "_lib.mpk_audio_target":
    c = _lib.mpk_audio_target()
    c.sample_rate_hz, c.min_samples, c.max_samples, c.threads = t.sample_rate_hz, t.min_samples, t.max_samples, threads
    return c


def _wav_info(w: "_lib.mpk_wav_info") -> WavInfo:
    return WavInfo(format_tag=w.format_tag, codec=w.codec, codec_name=_lib.s(_lib.lib.mpk_wav_codec_name(w.codec)) or "",
                   channels=w.channels, sample_rate=w.sample_rate, bits_per_sample=w.bits_per_sample,
                   block_align=w.block_align, frames=w.frames, streaming=bool(w.data_to_eof))


def _result(a: "_lib.mpk_audio", samples: Any, t: Target) -> Audio:
    return Audio(samples=samples, sample_rate_hz=a.sample_rate_hz, source_rate=a.source_rate,
                 source_channels=a.source_channels, source_frames=a.source_frames, resampled=bool(a.resampled),
                 peak=a.peak, rms=a.rms, wav=_wav_info(a.wav) if a.from_wav else None, target=t)


def _expected(wav: Any, n: int, t: Target) -> int:
    """The canonical length a WAV header announces, or 0 when it cannot be read here."""
    info = _lib.mpk_wav_info()
    if _lib.lib.mpk_wav_parse(wav, n, None, ctypes.byref(info), None):
        return 0
    v = _lib.lib.mpk_audio_canonical_length(info.frames, float(info.sample_rate), t.sample_rate_hz)
    return int(v) if v == v and v < 1 << 62 else 0


def _expected_of_file(path: bytes, t: Target) -> int:
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as m:
            buf = (ctypes.c_char * len(m)).from_buffer(m)
            try:
                return _expected(buf, len(m), t)
            finally:
                del buf
    except (OSError, ValueError):
        return 0


class _Sink:
    """The samples as the library streams them (mpk_audio_sink_fn), with progress and cancellation."""

    def __init__(self, progress: ProgressFn, total: int) -> None:
        import numpy

        self.np = numpy
        self.parts: List[Any] = []
        self.done = 0
        self.total = total
        self.progress = progress
        self.exc: Optional[BaseException] = None
        self.c_fn = _lib.AUDIO_SINK_FN(self._call)

    def _call(self, ctx: Any, x: Any, n: int, err: Any) -> int:
        try:
            self.parts.append(self.np.ctypeslib.as_array(x, shape=(n,)).copy())
            self.done += n
            stop = self.progress(self.done, max(self.total, self.done))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            self.exc, stop = exc, True
        return cancel(err) if stop else 0

    def samples(self) -> Any:
        return self.np.concatenate(self.parts) if self.parts else self.np.zeros(0, self.np.float32)


def convert(source: Source, *, package: Optional[PathLike] = None, rate: Optional[int] = None,
            min_samples: Optional[int] = None, max_samples: Optional[int] = None,
            source_rate: Optional[float] = None, file: Optional[str] = None, threads: int = 0,
            progress: Optional[ProgressFn] = None) -> Audio:
    """Canonical audio and its report. ``source``: a WAV file's path (str or PathLike), its bytes, or
    mono PCM as a 1-D numpy float32 array at ``source_rate`` Hz (any other array or sequence is
    refused as WebLLM refuses data that is not a Float32Array). ``file`` names bytes in errors.
    ``threads``: resampling threads (0: one per CPU, at most 4; the samples are the same).
    ``progress(samples done, samples expected)`` (a path only: the library streams files) is called
    as samples are made; a true return value cancels (:class:`modelpkg.CancelledError`)."""
    need("mpk_audio_from_wav", "audio")
    t = target(package, rate=rate, min_samples=min_samples, max_samples=max_samples)
    ct = _c_target(t, threads)
    out = ctypes.POINTER(_lib.mpk_audio)()
    err = _lib.mpk_error()
    import numpy

    if isinstance(source, (str, os.PathLike)):
        path = os.fsencode(source)
        if progress is not None:
            sink = _Sink(progress, _expected_of_file(path, t))
            rc = _lib.lib.mpk_audio_stream_wav_file(path, ctypes.byref(ct), sink.c_fn, None, ctypes.byref(out),
                                                    ctypes.byref(err))
            try:
                if sink.exc is not None:
                    raise sink.exc
                _check(rc, err)
                return _result(out.contents, sink.samples(), t)
            finally:
                _lib.lib.mpk_audio_free(out)
        rc = _lib.lib.mpk_audio_from_wav_file(path, ctypes.byref(ct), ctypes.byref(out), ctypes.byref(err))
    elif progress is not None:
        raise ValueError("progress needs a file path (the library streams files only)")
    elif isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        rc = _lib.lib.mpk_audio_from_wav(data, len(data), None if file is None else file.encode(), ctypes.byref(ct),
                                         ctypes.byref(out), ctypes.byref(err))
    else:
        if source_rate is None:
            raise ValueError("PCM samples need source_rate")
        arr = source if isinstance(source, numpy.ndarray) and source.dtype == numpy.float32 and source.ndim == 1 \
            else None
        if arr is not None:
            arr = numpy.ascontiguousarray(arr)
            ptr: Any = arr.ctypes.data_as(ctypes.c_void_p)
            n = arr.shape[0]
        else:
            ptr, n = None, len(source)
        rc = _lib.lib.mpk_audio_from_pcm_f32(ptr, n, float(source_rate), ctypes.byref(ct), ctypes.byref(out),
                                             ctypes.byref(err))
    return _take(rc, out, err, t)


def _take(rc: int, out: Any, err: "_lib.mpk_error", t: Target) -> Audio:
    import numpy

    try:
        _check(rc, err)
        a = out.contents
        samples = numpy.ctypeslib.as_array(a.samples, shape=(a.n_samples,)).copy() if a.n_samples else \
            numpy.zeros(0, numpy.float32)
        return _result(a, samples, t)
    finally:
        _lib.lib.mpk_audio_free(out)


def convert_data(text: Any, *, package: Optional[PathLike] = None, rate: Optional[int] = None,
                 min_samples: Optional[int] = None, max_samples: Optional[int] = None, threads: int = 0) -> Audio:
    """An OpenAI-style ``input_audio.data`` string: raw base64 of a WAV file, or a
    data:audio/wav;base64, URL (mpk_audio_from_data; ``modelpkg audio --base64``). ``text`` is str
    or bytes; any other value (None, a number: what a JSON request may hold) is refused with
    WebLLM's message."""
    need("mpk_audio_from_data", "audio")
    t = target(package, rate=rate, min_samples=min_samples, max_samples=max_samples)
    ct = _c_target(t, threads)
    if isinstance(text, (str, bytes, bytearray, memoryview)):
        b: Optional[bytes] = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    else:
        b = None
    out = ctypes.POINTER(_lib.mpk_audio)()
    err = _lib.mpk_error()
    rc = _lib.lib.mpk_audio_from_data(b, len(b) if b is not None else 0, ctypes.byref(ct), ctypes.byref(out),
                                      ctypes.byref(err))
    return _take(rc, out, err, t)


def decode(source: Source, **kw: Any) -> Any:
    """:func:`convert`'s samples: a 1-D numpy float32 array (the bytes ``modelpkg audio -o`` writes,
    on a little-endian host)."""
    return convert(source, **kw).samples


def decode_data(text: Any, **kw: Any) -> Any:
    """:func:`convert_data`'s samples."""
    return convert_data(text, **kw).samples


__all__ = ["Target", "WavInfo", "Audio", "target", "convert", "convert_data", "decode", "decode_data"]
