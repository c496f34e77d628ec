"""modelpkg.audio and modelpkg.image against the native CLI: the arrays equal the raw tensors
`modelpkg audio -o` / `modelpkg image -o` write, on the examples' processors with generated
recordings and images and the bundled photo; the conformance vectors audio_decode.json (71 cases:
the C suite's decisions, messages, lengths, bit-exact copies, resampling at least as close to the
ideal as WebLLM's) and image_resize.json (plans, rgba_to_rgb, uint32_widening); progress and
cancellation; refusals naming the file."""

from __future__ import annotations

import base64
import json
import math
import struct
import subprocess
import wave
import zlib
from pathlib import Path
from typing import Any, List

import pytest

import modelpkg
from conftest import EXAMPLES, REPO, load_cases

np = pytest.importorskip("numpy")
from modelpkg import audio, image  # noqa: E402

GEMMA = EXAMPLES / "gemma4-audio"
LLAVA = EXAMPLES / "llava-image"
LLAVA_LIB = LLAVA / "lib" / "llava-image-webgpu.wasm"
PHOTO = REPO / "tests" / "data" / "image" / "stm32f3-discovery.jpg"


@pytest.fixture(autouse=True)
def _media() -> None:
    for c in ("audio", "image"):
        if not modelpkg.has_component(c):
            pytest.skip(f"SKIP: libmodelpkg built without the {c} component")


def run(cli: str, *args: Any, ok: bool = True) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    p = subprocess.run([cli, *map(str, args)], capture_output=True)
    if ok:
        assert p.returncode == 0, p.stderr.decode()
    return p


# ---------------------------------------------------------------------------------- audio


def write_wav(path: Path, rate: int, channels: int, seconds: float, width: int = 2) -> Path:
    n = int(rate * seconds)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(width)
        w.setframerate(rate)
        frames = bytearray()
        for i in range(n):
            for c in range(channels):
                v = 0.6 * math.sin(2 * math.pi * (440 + 110 * c) * i / rate) + 0.1 * math.sin(i * 0.37)
                frames += struct.pack("<h", int(v * 32767)) if width == 2 else bytes([int(v * 127) + 128])
        w.writeframes(bytes(frames))
    return path


AUDIO_INPUTS = [(44100, 2, 1.0, 2), (16000, 1, 0.5, 2), (8000, 1, 0.25, 1), (48000, 2, 2.5, 2)]


@pytest.mark.parametrize("rate,channels,seconds,width", AUDIO_INPUTS)
def test_audio_equals_the_cli(cli, tmp_path, rate, channels, seconds, width):
    wav = write_wav(tmp_path / "in.wav", rate, channels, seconds, width)
    out = tmp_path / "out.f32"
    run(cli, "audio", wav, "--package", GEMMA, "-o", out)
    want = out.read_bytes()
    a = audio.convert(str(wav), package=GEMMA)
    assert a.samples.dtype == np.float32 and a.samples.ndim == 1
    assert a.samples.astype("<f4").tobytes() == want
    assert audio.decode(wav.read_bytes(), package=GEMMA).astype("<f4").tobytes() == want  # bytes
    assert audio.decode(wav, package=GEMMA, threads=1).astype("<f4").tobytes() == want
    doc = json.loads(run(cli, "audio", wav, "--package", GEMMA, "--json").stdout)
    assert doc["output"]["samples"] == len(a.samples) and doc["output"]["resampled"] == a.resampled
    assert a.wav is not None and doc["source"]["channels"] == a.wav.channels and doc["source"]["frames"] == a.source_frames
    assert doc["processor"]["input"] == a.target.input == "audio"
    assert math.isclose(doc["output"]["peak"], a.peak, rel_tol=1e-9)
    # base64 text, as --base64 reads it
    b64 = tmp_path / "in.b64"
    b64.write_text("data:audio/wav;base64," + base64.b64encode(wav.read_bytes()).decode())
    run(cli, "audio", b64, "--base64", "--package", GEMMA, "-o", out)
    assert out.read_bytes() == want
    assert audio.decode_data(b64.read_text(), package=GEMMA).astype("<f4").tobytes() == want
    # options over the package
    run(cli, "audio", wav, "--rate", "24000", "--max-samples", "1000000", "-o", out)
    assert audio.decode(wav, rate=24000, max_samples=1000000).astype("<f4").tobytes() == out.read_bytes()


def test_audio_progress_and_cancel(cli, tmp_path):
    wav = write_wav(tmp_path / "in.wav", 44100, 2, 3.0)
    want = audio.decode(wav, package=GEMMA)
    seen: List[Any] = []
    a = audio.convert(wav, package=GEMMA, progress=lambda d, t: seen.append((d, t)))
    assert np.array_equal(a.samples, want) and seen and seen[-1] == (len(want), len(want))
    with pytest.raises(modelpkg.CancelledError):
        audio.convert(wav, package=GEMMA, progress=lambda d, t: True)

    class Boom(Exception):
        pass

    def boom(d: int, t: int) -> bool:
        raise Boom()

    with pytest.raises(Boom):
        audio.convert(wav, package=GEMMA, progress=boom)
    with pytest.raises(ValueError):
        audio.convert(wav.read_bytes(), package=GEMMA, progress=lambda d, t: False)


def test_audio_refusals_name_the_file(cli, tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x04\x00\x00\x00WAVE")
    with pytest.raises(modelpkg.Error) as e:
        audio.decode(bad, package=GEMMA)
    assert e.value.file == str(bad)
    assert str(e.value) in run(cli, "audio", bad, "--package", GEMMA, ok=False).stderr.decode()
    short = write_wav(tmp_path / "short.wav", 16000, 1, 0.001)  # 16 samples, min_samples is 161
    with pytest.raises(modelpkg.LimitError) as e2:
        audio.decode(short, package=GEMMA)
    assert "161" in e2.value.rule and e2.value.file == str(short)
    with pytest.raises(modelpkg.MalformedError) as e3:  # no audio input in the image package
        audio.decode(short, package=LLAVA)
    assert e3.value.file == str(LLAVA / "mlc-model-manifest.json") and "audio_decode" in e3.value.rule
    with pytest.raises(ValueError):
        audio.decode(short)  # no processor


def hex_f32(h: str) -> Any:
    return np.frombuffer(bytes.fromhex(h), "<f4")


def ideal(x: Any, src: float, dst: float, n: int) -> Any:
    t = np.arange(n) * src / dst
    fc = (dst / src if dst < src else 1.0) / 2
    d = t[:, None] - np.arange(len(x))[None, :]
    return (x[None, :] * 2 * fc * np.sinc(2 * fc * d)).sum(axis=1)


def test_audio_decode_vectors():
    ran = refused = exact = converted = 0
    for c in load_cases("audio_decode.json")["cases"]:
        name, inp, proc = c["name"], c["input"], c["processor"]
        kw = dict(rate=proc["sample_rate_hz"], min_samples=proc["min_samples"], max_samples=proc["max_samples"])
        x = None
        try:
            if inp["format"] == "pcm_f32":
                if "data_f32_hex" in inp:
                    x = hex_f32(inp["data_f32_hex"]).astype(np.float32)
                    a = audio.convert(x, source_rate=inp["sample_rate"], **kw)
                else:  # not a Float32Array: refused as WebLLM refuses it
                    a = audio.convert(inp["pcm_as_plain_array"], source_rate=inp["sample_rate"], **kw)
            else:
                a = audio.convert_data(inp.get("data"), **kw)
        except modelpkg.Error as e:
            assert "expected_error" in c, f"{name}: refused ({e}), WebLLM accepts"
            assert e.message.startswith(c["expected_error"]["message"]), (name, e.message)
            refused += 1
            ran += 1
            continue
        assert "expected_error" not in c, f"{name}: accepted, WebLLM refuses"
        want = hex_f32(c["expected_f32_hex"])
        assert len(want) == c["expected_length"] == len(a.samples), name
        if not a.resampled:
            assert a.samples.astype("<f4").tobytes() == want.tobytes(), name
            exact += 1
        else:
            if x is None:  # the WAV downmixed at its own rate
                x = audio.convert_data(inp["data"], rate=int(a.source_rate), min_samples=1, max_samples=1 << 40).samples
            ref = ideal(x.astype(np.float64), a.source_rate, proc["sample_rate_hz"], len(want))
            ours = math.sqrt(np.mean((a.samples - ref) ** 2))
            theirs = math.sqrt(np.mean((want - ref) ** 2))
            assert ours <= theirs * 1.0001 + 1e-7, (name, ours, theirs)
            converted += 1
        ran += 1
    assert ran == 71 and refused and exact and converted


# ---------------------------------------------------------------------------------- image


def png(rgb_or_rgba: bytes, w: int, h: int, channels: int) -> bytes:
    raw = b"".join(b"\0" + rgb_or_rgba[y * w * channels:(y + 1) * w * channels] for y in range(h))

    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    ct = {3: 2, 4: 6}[channels]
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, ct, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def gen_png(path: Path, w: int, h: int, channels: int = 3) -> Path:
    px = bytes((x * 7 + y * 3 + c * 50) % 256 for y in range(h) for x in range(w) for c in range(channels))
    path.write_bytes(png(px, w, h, channels))
    return path


IMAGE_INPUTS = [(PHOTO, []), ("gen:640x480", []), ("gen:97x211:4", []), (PHOTO, ["--ignore-orientation"]),
                ("gen:50x50", ["--mode", "stretch", "--width", "33", "--height", "17"])]


def image_input(tmp_path: Path, spec: Any) -> Path:
    if isinstance(spec, Path):
        if not spec.exists():
            pytest.skip(f"{spec} not found")
        return spec
    dims = spec[4:].split(":")
    w, h = map(int, dims[0].split("x"))
    return gen_png(tmp_path / "gen.png", w, h, int(dims[1]) if len(dims) > 1 else 3)


def kwargs_of(args: List[str]) -> Any:
    kw: Any = {}
    it = iter(args)
    for a in it:
        if a == "--ignore-orientation":
            kw["ignore_orientation"] = True
        else:
            v = next(it)
            kw[a[2:]] = int(v) if v.isdigit() else v
    return kw


@pytest.mark.parametrize("i", range(len(IMAGE_INPUTS)))
@pytest.mark.parametrize("dtype", [None, "uint32"])
def test_image_equals_the_cli(cli, tmp_path, i, dtype):
    src, args = IMAGE_INPUTS[i]
    f = image_input(tmp_path, src)
    out = tmp_path / "out.raw"
    dt = ["--dtype", dtype] if dtype else []
    run(cli, "image", f, "--package", LLAVA, *args, *dt, "-o", out)
    kw = kwargs_of(args)
    im = image.convert(f, package=LLAVA, dtype=dtype, **kw)
    t = im.tensor
    assert t.shape[0] == 1 and t.shape[3] == 3 and t.dtype == np.dtype("<u4" if dtype else "u1")
    assert t.tobytes() == out.read_bytes()
    assert image.decode(f.read_bytes(), package=LLAVA, dtype=dtype, **kw).tobytes() == out.read_bytes()
    rows: List[Any] = []
    assert image.decode(f, package=LLAVA, dtype=dtype, progress=lambda d, n: rows.append((d, n)), **kw).tobytes() \
        == out.read_bytes()
    assert rows[-1] == (t.shape[1], t.shape[1])
    doc = json.loads(run(cli, "image", f, "--package", LLAVA, *args, *dt, "--json").stdout)
    assert doc["plan"] == im.plan.__dict__ and doc["source"]["format"] == im.format
    assert doc["output"]["shape"] == list(t.shape) and doc["output"]["dtype"] == im.target.dtype
    assert doc["output"]["dtype_from"] == im.target.dtype_from
    assert doc["decoded"] == {"width": im.decoded_width, "height": im.decoded_height, "jpeg_scale_num": im.jpeg_scale_num}


def test_image_lib_dtype(cli, tmp_path):
    out = tmp_path / "out.raw"
    run(cli, "image", PHOTO, "--package", LLAVA, "--lib", LLAVA_LIB, "-o", out)
    im = image.convert(PHOTO, package=LLAVA, lib=LLAVA_LIB)
    assert im.target.dtype_from == "lib" and im.tensor.tobytes() == out.read_bytes()
    other = "uint8" if im.target.dtype == "uint32" else "uint32"
    with pytest.raises(modelpkg.MismatchError) as e:
        image.convert(PHOTO, package=LLAVA, lib=LLAVA_LIB, dtype=other)
    assert e.value.file == str(LLAVA_LIB)
    assert str(e.value) in run(cli, "image", PHOTO, "--package", LLAVA, "--lib", LLAVA_LIB, "--dtype", other,
                               ok=False).stderr.decode()


def test_image_cancel_and_refusals(cli, tmp_path):
    with pytest.raises(modelpkg.CancelledError):
        image.convert(PHOTO, package=LLAVA, progress=lambda d, n: d > 3)
    bad = tmp_path / "bad.gif"
    bad.write_bytes(b"GIF89a" + b"\0" * 64)
    with pytest.raises(modelpkg.Error) as e:
        image.decode(bad, package=LLAVA)
    assert e.value.file == str(bad) and "gif" in e.value.rule.lower()
    assert str(e.value) in run(cli, "image", bad, "--package", LLAVA, ok=False).stderr.decode()
    with pytest.raises(modelpkg.LimitError):
        image.decode(PHOTO, package=LLAVA, max_pixels=100)
    with pytest.raises(modelpkg.MalformedError) as e2:  # no image input in the audio package
        image.decode(PHOTO, package=GEMMA)
    assert e2.value.file == str(GEMMA / "mlc-model-manifest.json")
    with pytest.raises(modelpkg.InvalidArgumentError):
        image.decode(PHOTO, mode="fill", width=3, height=3)


def test_image_resize_vectors():
    v = load_cases("image_resize.json")
    for c in v["cases"]:
        r = c["resize"]
        p = image.plan_resize(c["source_width"], c["source_height"], r["mode"], r["width"], r["height"])
        assert p.__dict__ == c["expected"], c
    assert len(v["cases"]) >= 12
    with pytest.raises(modelpkg.InvalidArgumentError) as e:
        image.plan_resize(0, 10, "center_crop", 336, 336)
    assert "source width" in e.value.message
    # rgba_to_rgb: a 2x2 RGBA PNG drawn at 2x2 (stretch and center_crop): alpha dropped, colour as stored
    blk = v["rgba_to_rgb"]
    f = png(bytes(blk["rgba"]), blk["width"], blk["height"], 4)
    for mode in image.MODES:
        im = image.convert(f, mode=mode, width=blk["width"], height=blk["height"])
        assert im.has_alpha and im.format == "png"
        assert list(im.tensor.reshape(-1)) == blk["expected_rgb"]
    # uint32_widening: each value one little-endian uint32
    w = v["uint32_widening"]
    t = image.decode(png(bytes(w["rgb"]), 2, 2, 3), mode="stretch", width=2, height=2, dtype="uint32")
    assert t.tobytes().hex() == w["expected_bytes_hex"] and t.shape == (1, 2, 2, 3)
