#!/usr/bin/env python3
"""Seeds for fuzz_mlc_vm from the six real libraries (../shared/realdata/mlc-libs): each real
Relax VM executable with its function table whole and its constants cut to what fits in 24 KiB
(counts rewritten), in both modes (executable / section with the type key), plus hand-made edge
cases. usage: make_vm_seeds.py SHARED_DIR OUT_DIR"""
import hashlib, io, os, re, struct, sys, tarfile

def leb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1; r |= (x & 0x7f) << s; s += 7
        if x < 0x80: return r, i

def wasm_mem(b):
    i = 8; segs = []
    while i < len(b):
        sid = b[i]; i += 1; sz, i = leb(b, i); end = i + sz
        if sid == 11:
            n, j = leb(b, i)
            for _ in range(n):
                fl, j = leb(b, j)
                if fl == 2: _, j = leb(b, j)
                j += 1; v, j = leb(b, j); j += 1
                L, j = leb(b, j); segs.append((v, b[j:j + L])); j += L
        i = end
    m = bytearray(max(a + len(d) for a, d in segs))
    for a, d in segs: m[a:a + len(d)] = d
    return bytes(m)

u64 = lambda b, o: struct.unpack_from('<Q', b, o)[0]
FFI = {70: 0, 5: 1, 69: 2, 65: 3, 1: 4, 3: 5}

def cut(b, o, ffi, budget=24 << 10):
    """The executable at b[o:] (payload length first), constants cut to the budget."""
    p = o + 8 + 8; vl = u64(b, p); p += 8 + vl
    n = u64(b, p); p += 8
    for _ in range(n):
        p += 4; p += 8 + u64(b, p); p += 32
        np_ = u64(b, p); p += 8
        for _ in range(np_): p += 8 + u64(b, p)
    head = bytearray(b[o + 8:p])  # magic .. function table
    nc = u64(b, p); p += 8; out = bytearray(); kept = 0
    for _ in range(nc):
        s = p; t = struct.unpack_from('<i', b, p)[0]; p += 4
        t = FFI.get(t, -1) if ffi else t
        if t == 0:
            p += 16 + 12; nd = struct.unpack_from('<i', b, p - 4)[0]; p += 4 + 8 * nd; p += 8 + u64(b, p)
        elif t == 1: p += 4
        elif t == 2: p += 8 + 8 * u64(b, p)
        elif t == 3: p += 8 + u64(b, p)
        elif t in (4, 5): p += 8
        else: break
        if len(head) + len(out) + (p - s) > budget: continue
        out += b[s:p]; kept += 1
    payload = bytes(head) + struct.pack('<Q', kept) + bytes(out) + struct.pack('<QQ', 0, 0)
    return struct.pack('<Q', len(payload)) + payload

def main():
    shared, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    libs = os.path.join(shared, 'realdata', 'mlc-libs')
    blobs = []
    for f in sorted(os.listdir(libs)):
        p = os.path.join(libs, f)
        if f.endswith('.tar'):
            with tarfile.open(p) as t:
                for m in t.getmembers():
                    if m.name.endswith('_devc.o') and not os.path.basename(m.name).startswith('._'):
                        blobs.append(t.extractfile(m).read())
        elif f.endswith(('.wasm', '.so')):
            b = open(p, 'rb').read()
            blobs.append(wasm_mem(b) if b[:4] == b'\0asm' else b)
    seeds = []
    for b in blobs:
        for key in (b'relax.Executable', b'relax.VMExecutable'):
            for m in re.finditer(re.escape(struct.pack('<Q', len(key)) + key), b):
                ffi = key == b'relax.VMExecutable'
                x = cut(b, m.end(), ffi)
                seeds.append(bytes([int(ffi)]) + x)
                seeds.append(bytes([2]) + b'junk\0\0\0\0' + struct.pack('<Q', len(key)) + key + x + b'\0tail')
                seeds.append(bytes([6]) + struct.pack('<Q', len(key)) + key + x)
                seeds.append(bytes([int(not ffi)]) + x[:4096])  # cut inside the function table
    # edge cases: empty, a lone magic, 10^9 functions, unknown kind, unknown constant type
    magic = struct.pack('<Q', 0xD225DE2F4214151D)
    ver = struct.pack('<Q', 4) + b'0.14'
    def ex(body): return struct.pack('<Q', len(body)) + body
    seeds += [b'\0', b'\0' + ex(magic), b'\0' + ex(magic + ver + struct.pack('<Q', 10**9)),
              b'\0' + ex(magic + ver + struct.pack('<Q', 1) + struct.pack('<i', 7)),
              b'\0' + ex(magic + ver + struct.pack('<Q', 0) + struct.pack('<Q', 1) + struct.pack('<i', 9)),
              b'\2' + struct.pack('<Q', 16) + b'relax.Executable' + ex(magic + ver + struct.pack('<QQQQ', 0, 0, 0, 0))]
    for s in seeds:
        assert len(s) < 64 << 10
        open(os.path.join(dst, hashlib.sha1(s).hexdigest()), 'wb').write(s)
    print(len(seeds), 'seeds,', sum(map(len, seeds)), 'bytes')

main()
