#!/usr/bin/env python3
"""Regenerate the objfile fuzz corpora (fuzz_obj_elf, fuzz_obj_macho, fuzz_obj_tar, fuzz_obj_ar).

Run from the repository root: python3 tests/fuzz/make_obj_seeds.py
Seeds are derived from the real libraries in ../shared/realdata/mlc-libs (their objects trimmed:
every section cut to at most 2 KiB, symbol and string tables kept whole, offsets rewritten) and from
objects built here with clang, lld, llvm-lipo and llvm-ar (small by construction). Each seed is
under 64 KiB. The corpora are committed; rerun only to change them.
"""
import gzip
import hashlib
import io
import os
import struct
import subprocess
import tarfile
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBS = os.path.join(os.path.dirname(ROOT), "shared", "realdata", "mlc-libs")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
KEEP = 2048
MAX_SEED = 64 * 1024


def write(target, data, name=None):
    assert len(data) < MAX_SEED, (target, name, len(data))
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = name or hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def trim_elf64(d):
    """An ELF64 little-endian file with every section cut to KEEP bytes except symbol/string tables."""
    shoff, = struct.unpack_from("<Q", d, 40)
    shent, shnum, shstrndx = struct.unpack_from("<HHH", d, 58)
    out = bytearray(d[:64])
    heads = []
    for i in range(shnum):
        h = bytearray(d[shoff + i * shent: shoff + (i + 1) * shent])
        typ, = struct.unpack_from("<I", h, 4)
        off, size = struct.unpack_from("<QQ", h, 24)
        if i and typ != 8:  # SHT_NOBITS keeps its size, no bytes
            keep = size if typ in (2, 3, 11) else min(size, KEEP)
            while len(out) % 8:
                out.append(0)
            struct.pack_into("<QQ", h, 24, len(out), keep)
            out += d[off: off + keep]
        heads.append(h)
    while len(out) % 8:
        out.append(0)
    struct.pack_into("<QHH", out, 40, len(out), 0, 0)  # e_shoff, then restore the counts below
    struct.pack_into("<HHH", out, 58, shent, shnum, shstrndx)
    struct.pack_into("<HH", out, 54, 0, 0)  # no program headers
    struct.pack_into("<Q", out, 32, 0)
    for h in heads:
        out += h
    return bytes(out)


def trim_macho64(d):
    """A 64-bit little-endian Mach-O with sections cut to KEEP bytes, the symbol table kept whole."""
    ncmds, sizeofcmds = struct.unpack_from("<II", d, 16)
    out = bytearray(d[:32 + sizeofcmds])
    at = 32
    symtab = None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", d, at)
        if cmd == 0x19:
            ns, = struct.unpack_from("<I", d, at + 64)
            for j in range(ns):
                s = at + 72 + j * 80
                sz, = struct.unpack_from("<Q", d, s + 40)
                off, = struct.unpack_from("<I", d, s + 48)
                flags, = struct.unpack_from("<I", d, s + 64)
                keep = min(sz, KEEP)
                if flags & 0xff in (1, 0xc, 0x12):
                    continue
                while len(out) % 8:
                    out.append(0)
                struct.pack_into("<Q", out, s + 40, keep)
                struct.pack_into("<I", out, s + 48, len(out))
                struct.pack_into("<II", out, s + 56, 0, 0)  # no relocations
                out += d[off: off + keep]
        elif cmd == 2:
            symtab = at
        at += size
    if symtab:
        symoff, nsyms, stroff, strsize = struct.unpack_from("<IIII", d, symtab + 8)
        while len(out) % 8:
            out.append(0)
        new_sym = len(out)
        out += d[symoff: symoff + nsyms * 16]
        new_str = len(out)
        out += d[stroff: stroff + strsize]
        struct.pack_into("<II", out, symtab + 8, new_sym, nsyms)
        struct.pack_into("<II", out, symtab + 16, new_str, strsize)
    return bytes(out)


def members(path):
    with tarfile.open(path, "r:gz") as t:
        return [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]


def ar_gnu(items):
    names = b"".join(n.encode() + b"/\n" for n, _ in items if len(n) > 15)
    out = b"!<arch>\n"
    def hdr(name, size):
        return b"%-16s%-12s%-6s%-6s%-8s%-10d`\n" % (name, b"0", b"0", b"0", b"644", size)
    out += hdr(b"/", 4) + b"\0\0\0\0"
    if names:
        out += hdr(b"//", len(names)) + names + (b"\n" if len(names) & 1 else b"")
    pos = 0
    for n, data in items:
        if len(n) > 15:
            name = b"/%d" % names.index(n.encode() + b"/\n")
        else:
            name = n.encode() + b"/"
        out += hdr(name, len(data)) + data + (b"\n" if len(data) & 1 else b"")
    return out


def tar_of(items, fmt):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for n, data in items:
            info = tarfile.TarInfo(n)
            info.size = len(data)
            if fmt == tarfile.PAX_FORMAT:
                info.pax_headers = {"LIBARCHIVE.xattr.com.apple.provenance": "AQAAAAAAAAA="}
            t.addfile(info, io.BytesIO(data))
        d = tarfile.TarInfo("subdir")
        d.type = tarfile.DIRTYPE
        t.addfile(d)
    return buf.getvalue()


def built(tmp):
    src = os.path.join(tmp, "m.c")
    with open(src, "w") as f:
        f.write('const unsigned char __tvm_dev_mblob[64] = "MBLOB-MAGIC-0123456789";\n'
                "extern int imported_fn(int);\n"
                "int exported_fn(int x) { return imported_fn(x) + __tvm_dev_mblob[x & 63]; }\n")
    def sh(cmd):
        subprocess.run(cmd, shell=True, check=True, cwd=tmp)
    for t, o in [("x86_64-linux-gnu", "x64"), ("aarch64-linux-gnu", "a64"), ("i386-linux-gnu", "x86"),
                 ("s390x-linux-gnu", "s390"), ("arm-linux-gnueabihf", "arm32")]:
        sh(f"clang --target={t} -O1 -c m.c -o {o}.o")
    sh("clang --target=x86_64-linux-gnu -fPIC -shared -nostdlib -fuse-ld=lld m.c -o x64.so")
    sh("clang --target=aarch64-linux-gnu -fPIC -shared -nostdlib -fuse-ld=lld -Wl,-z,max-page-size=4096 m.c -o a64.so")
    sh("clang --target=arm64-apple-macos11 -O1 -c m.c -o mac.o")
    sh("clang --target=x86_64-apple-macos11 -O1 -c m.c -o macx.o")
    sh("ld64.lld-14 -dylib -arch x86_64 -platform_version macos 11 11 -undefined dynamic_lookup macx.o -o macx.dylib")
    sh("llvm-lipo-14 -create mac.o macx.o -output fat.o")
    sh("llvm-ar --format=darwin rcs darwin.a mac.o macx.o")
    sh("ar rcs gnu.a x64.o a64.o")
    r = lambda n: open(os.path.join(tmp, n), "rb").read()
    return r


def main():
    with tempfile.TemporaryDirectory() as tmp:
        r = built(tmp)
        for n in ["x64.o", "a64.o", "x86.o", "s390.o", "arm32.o", "x64.so", "a64.so"]:
            write("fuzz_obj_elf", r(n), "built_" + n)
        for n in ["mac.o", "macx.o", "macx.dylib", "fat.o"]:
            write("fuzz_obj_macho", r(n), "built_" + n)
        write("fuzz_obj_ar", r("darwin.a"), "built_darwin.a")
        write("fuzz_obj_ar", r("gnu.a"), "built_gnu.a")
        small = [("lib0.o", r("a64.o")), ("model_q4f16_1_devc.o", r("mac.o")), ("macx.o", r("macx.o"))]
    # The real libraries, trimmed.
    so = open(os.path.join(LIBS, "Llama-2-7b-chat-hf-q4f16_1-mali.so"), "rb").read()
    t_so = trim_elf64(so)
    write("fuzz_obj_elf", t_so, "real_llama_mali_so_trimmed")
    phi = dict(members(os.path.join(LIBS, "phi-2-q4f16_1-android.tar")))
    t_phi_devc = trim_elf64(phi["phi_msft_q4f16_1_devc.o"])
    write("fuzz_obj_elf", t_phi_devc, "real_phi2_devc_o_trimmed")
    t_phi_lib0 = trim_elf64(phi["lib0.o"])
    if len(t_phi_lib0) < MAX_SEED:
        write("fuzz_obj_elf", t_phi_lib0, "real_phi2_lib0_o_trimmed")
    gem = members(os.path.join(LIBS, "gemma-2b-it-q4f16_1-iphone.tar"))
    gd = dict(gem)
    t_gem_devc = trim_macho64(gd["gemma_q4f16_1_devc.o"])
    write("fuzz_obj_macho", t_gem_devc, "real_gemma_devc_o_trimmed")
    t_gem_lib0 = trim_macho64(gd["lib0.o"])
    if len(t_gem_lib0) < MAX_SEED:
        write("fuzz_obj_macho", t_gem_lib0, "real_gemma_lib0_o_trimmed")
    apple = gd["._lib0.o"]
    # Archives of the trimmed real members, as MLC ships them and as ar would hold them.
    android = [("lib0.o", t_phi_lib0 if len(t_phi_lib0) < 32768 else small[0][1]), ("phi_msft_q4f16_1_devc.o", t_phi_devc)]
    iphone = [("._gemma_q4f16_1_devc.o", apple), ("gemma_q4f16_1_devc.o", t_gem_devc), ("._lib0.o", apple)]
    write("fuzz_obj_tar", gzip.compress(tar_of(android, tarfile.GNU_FORMAT)), "real_android_tar_gz_trimmed")
    write("fuzz_obj_tar", gzip.compress(tar_of(iphone, tarfile.PAX_FORMAT)), "real_iphone_tar_gz_trimmed")
    write("fuzz_obj_tar", tar_of(iphone, tarfile.PAX_FORMAT), "real_iphone_tar_trimmed")
    long_name = "a/" + "d" * 120 + "/model_devc.o"
    write("fuzz_obj_tar", tar_of([(long_name, small[0][1]), ("lib0.o", small[1][1])], tarfile.GNU_FORMAT), "gnu_long_name")
    write("fuzz_obj_tar", tar_of([(long_name, small[0][1])], tarfile.PAX_FORMAT), "pax_long_name")
    write("fuzz_obj_tar", tar_of(small, tarfile.USTAR_FORMAT), "ustar")
    write("fuzz_obj_tar", b"\0" * 1024, "empty_tar")
    write("fuzz_obj_ar", ar_gnu(android), "real_android_gnu_ar_trimmed")
    write("fuzz_obj_ar", ar_gnu([("a_member_name_longer_than_sixteen.o", small[1][1]), ("x.o", small[0][1])]), "gnu_long_names")
    write("fuzz_obj_ar", ar_gnu([("broken.o", b"\x7fELF")]), "broken_member")
    # Universal: two trimmed real Mach-O objects as slices (fat32 and fat64 headers).
    for magic, ent in [(0xcafebabe, 20), (0xcafebabf, 32)]:
        slices = [(0x0100000c, 0, t_gem_devc), (0x01000007, 3, small[2][1])]
        hdr = struct.pack(">II", magic, len(slices))
        off = 4096
        body = b""
        for cpu, sub, data in slices:
            if ent == 20:
                hdr += struct.pack(">iiIII", cpu, sub, off + len(body), len(data), 12)
            else:
                hdr += struct.pack(">iiQQII", cpu, sub, off + len(body), len(data), 12, 0)
            body += data + b"\0" * (-len(data) % 4096)
        blob = hdr + b"\0" * (off - len(hdr)) + body
        if len(blob) < MAX_SEED:
            write("fuzz_obj_macho", blob, "universal_%x" % magic)


if __name__ == "__main__":
    main()
