#!/usr/bin/env python3
"""Regenerate the fuzz_obj_wasm seed corpus (stdlib only): the three real WebAssembly libraries in
../shared/realdata/mlc-libs trimmed to their import, memory, export, data count and data sections
(a few short segments, one of them the start of the _metadata), plus hand-made edge cases.

Run from the repository root: python3 tests/fuzz/make_wasm_seeds.py
The corpus is committed; rerun this only when the real files change.
"""
import glob
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_obj_wasm")
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
from make_tvm_lib import read_uleb as rleb, sleb, uleb as leb  # noqa: E402  (one LEB128 writer)


def write(data):
    os.makedirs(CORPUS, exist_ok=True)
    assert len(data) < 65536
    with open(os.path.join(CORPUS, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


def sec(i, body):
    return bytes([i]) + leb(len(body)) + body


def active(addr, data):
    return b"\x00\x41" + sleb(addr) + b"\x0b" + leb(len(data)) + data


HDR = b"\0asm\x01\0\0\0"


def trimmed(path):
    b = open(path, "rb").read()
    i, keep, segs = 8, [], []
    while i < len(b):
        sid = b[i]
        n, j = rleb(b, i + 1)
        end = j + n
        if sid in (0, 1, 2, 5, 6, 7) and n < 16384:
            keep.append((sid, b[j:end]))
        if sid == 11:
            count, k = rleb(b, j)
            for _ in range(count):
                fl, k = rleb(b, k)
                assert fl == 0
                k += 1  # i32.const
                addr = 0
                s = 0
                while True:
                    x = b[k]
                    k += 1
                    addr |= (x & 0x7F) << s
                    s += 7
                    if x < 0x80:
                        break
                k += 1  # end
                size, k = rleb(b, k)
                segs.append((addr, b[k:k + size]))
                k += size
        i = end
    md = [s for s in segs if b'{"model_type"' in s[1]]
    picked = segs[:4] + [(a, d[:160]) for a, d in md[:1]]
    picked = [(a, d[:200]) for a, d in picked]
    data = sec(11, leb(len(picked)) + b"".join(active(a, d) for a, d in picked))
    body = b"".join(sec(s, d) for s, d in keep if s != 0)
    out = HDR + body + sec(12, leb(len(picked))) + data
    write(out)
    write(HDR + body)  # imports and exports only
    custom = [sec(0, d) for s, d in keep if s == 0]
    if custom:
        write(HDR + b"".join(custom) + sec(5, b"\x01\x00\x01") + sec(11, b"\x01" + active(0, b"x")))


for p in sorted(glob.glob(os.path.join(SHARED, "realdata", "mlc-libs", "*.wasm"))):
    trimmed(p)

MEM1 = sec(5, b"\x01\x00\x01")
write(HDR)
write(HDR + MEM1 + sec(11, b"\x02" + active(16, b"hello world") + active(20, b"XY")))  # overlap
write(HDR + MEM1 + sec(11, b"\x03" + b"\x01\x03abc" + b"\x02\x00\x41\x08\x0b\x02hi" + b"\x00\x23\x00\x0b\x01g"))
write(HDR + MEM1 + sec(11, b"\x01" + active(65532, b"abcd")))  # ends at the page's end
write(HDR + MEM1 + sec(11, b"\x01" + active(65533, b"abcd")))  # one byte past
write(HDR + sec(5, b"\x01\x04\x01") + sec(11, b"\x01\x00\x42\x00\x0b\x01z"))  # memory64, i64.const
write(HDR + sec(5, b"\x01\x01\x02\x01"))  # max below min
write(HDR + sec(7, b"\x00") + sec(5, b"\x00"))  # order
write(HDR + b"\x01\x80\x80\x80\x80\x80\x00")  # 6-byte LEB
write(HDR + MEM1 + sec(12, b"\x02") + sec(11, b"\x01" + active(0, b"x")))  # data count mismatch
write(HDR + sec(2, leb(2) + b"\x03env\x04func\x00\x00" + b"\x03env\x03mem\x02\x00\x01") +
      sec(7, b"\x02\x01f\x00\x00\x01m\x02\x00") + sec(11, b"\x01" + active(1, b"q")))
write(HDR + sec(5, b"\x01\x00\x80\x80\x04") + sec(11, b"\x01" + b"\x00\x41" + sleb(-256) + b"\x0b\x01x"))
