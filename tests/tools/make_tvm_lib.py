#!/usr/bin/env python3
"""Build test TVM model libraries whose Relax VM function table and _metadata we choose, in every
container MLC ships (docs/mlc-library.md, "Test libraries").

The module blob is written as TVM (Relax, 0.14-era) serializes it: u64 byte count of what follows,
u64 module count, then per module its type key (a dmlc string: u64 length + bytes) and its payload.
The relax.Executable payload is a dmlc string holding the header (u64 magic 0xD225DE2F4214151D, the
version string), the function table (u64 count; per function i32 kind -- 0 packed, 1 VM, 2 VM TIR
--, name, i64 start_instr, end_instr, num_args, register_file_size, vector<string> param_names),
the constant section (u64 count; per constant an i32 type: 0 tensor (TVM's SaveDLTensor), 1 data
type, 2 shape tuple, 3 string -- the _metadata JSON is one --) and the code section (vector<i64>
instruction offsets, vector<i64> instruction words: Call = 1, dst, func_idx, num_args, args...;
Ret = 2, result; an argument is kind << 56 | value, kinds 0 register, 1 immediate, 2 constant,
3 function). Each VM function's code calls the packed functions of the table, so a reader of the
code sees which runtime globals the library needs.

The blob becomes `const unsigned char __tvm_dev_mblob[]` in a C source (with the system-lib prefix
`<prefix>___tvm_dev_mblob` in the objects of a static archive, as MLC's Android and iOS builds name
it), compiled with clang and linked with lld into:

  NAME.wasm          WebAssembly (wasm32, --export-all; the blob in data segments split at runs of
                     zeros as wasm-opt leaves MLC's, --split-zeros; imports env.*)
  NAME-x86_64.so     ELF x86-64 shared object
  NAME-aarch64.so    ELF AArch64 shared object
  NAME-arm64.dylib   Mach-O arm64 dylib
  NAME-macho.o       Mach-O arm64 relocatable object (the *_devc.o alone)
  NAME-elf.tar       gzip-compressed tar of ELF AArch64 objects: lib0.o + PREFIX_devc.o (Android)
  NAME-macho.tar     gzip-compressed tar of Mach-O arm64 objects: lib0.o + PREFIX_devc.o (iOS)
  NAME-elf.a         ar archive of the same ELF objects
  NAME-macho.a       ar archive of the same Mach-O objects

plus NAME.blob (the raw module blob), NAME.metadata.json (the _metadata text, byte-exact) and
NAME.functions.json (the table written: name, kind, num_args, param_names).

usage: make_tvm_lib.py OUTDIR [--name NAME] [--preset phi3|gemma4|llava|embedding]
           [--metadata FILE] [--drop FN]... [--arity FN=N]... [--packed FN]... [--add FN=N]...
           [--formats wasm,elf-x86_64,...] [--type-key relax.Executable]
Exit 77 (a skip) when clang or an lld flavour is missing. Standard library only.
"""
import argparse
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile

EXEC_MAGIC = 0xD225DE2F4214151D
TENSOR_MAGIC = 0xDD5E40F096B4A13F
PACKED, VM, VM_TIR = 0, 1, 2
OP_CALL, OP_RET = 1, 2
ARG_REGISTER, ARG_IMMEDIATE, ARG_CONST, ARG_FUNC = 0, 1, 2, 3
VOID_REGISTER = 1 << 54
FORMATS = ["wasm", "elf-x86_64", "elf-aarch64", "macho-dylib", "macho-o", "tar-elf", "tar-macho", "ar-elf",
           "ar-macho"]

KV_CREATOR_PARAMS = ["max_batch_size_", "max_total_seq_len_", "prefill_chunk_size_", "page_size_",
                     "support_sliding_window_"]
RUNTIME_GLOBALS = ["vm.builtin.check_tensor_info", "vm.builtin.match_shape", "vm.builtin.alloc_storage",
                   "vm.builtin.alloc_tensor", "vm.builtin.kv_state_clear",
                   "vm.builtin.paged_attention_kv_cache_create_reduced", "vm.builtin.copy"]

# The VM functions of each preset: (name, params). Their order follows the real libraries' tables.
PRESETS = {
    # Phi-3-mini-4k-instruct-q4f16_1 (web-llm v0_2_48): the legacy chat + batch ABI.
    "phi3": [
        ("decode", ["input_embed", "paged_kv_cache", "packed_params"]),
        ("batch_prefill", ["input_embeds", "logit_positions", "paged_kv_cache", "packed_params"]),
        ("create_tir_paged_kv_cache", KV_CREATOR_PARAMS),
        ("softmax_with_temperature", ["logits", "temperature"]),
        ("batch_verify", ["input_embeds", "paged_kv_cache", "packed_params"]),
        ("alloc_embedding_tensor", []),
        ("embed", ["input_ids", "packed_params"]),
        ("prefill", ["input_embed", "paged_kv_cache", "packed_params"]),
        ("batch_decode", ["input_embeds", "paged_kv_cache", "packed_params"]),
        ("_metadata", []),
    ],
    # A Gemma 4 library with the token pair (spec 000's example artifact).
    "gemma4": [
        ("embed", ["input_ids", "packed_params"]),
        ("prefill_tokens", ["input_embeds", "token_ids", "modality_ids", "paged_kv_cache", "packed_params"]),
        ("decode_tokens", ["token_ids", "paged_kv_cache", "packed_params"]),
        ("create_tir_paged_kv_cache", KV_CREATOR_PARAMS),
        ("audio_embed", ["samples", "packed_params"]),
        ("softmax_with_temperature", ["logits", "temperature"]),
        ("_metadata", []),
    ],
    # LLaVA: the embedding pair is its existing prefill/decode; image_embed(pixels, params).
    "llava": [
        ("embed", ["input_ids", "packed_params"]),
        ("prefill", ["input_embed", "paged_kv_cache", "packed_params"]),
        ("decode", ["input_embed", "paged_kv_cache", "packed_params"]),
        ("create_tir_paged_kv_cache", KV_CREATOR_PARAMS),
        ("image_embed", ["pixel_values", "packed_params"]),
        ("softmax_with_temperature", ["logits", "temperature"]),
        ("_metadata", []),
    ],
    # snowflake-arctic-embed-s (web-llm v0_2_80): WebLLM's embedding pipeline, no decode.
    "embedding": [
        ("_metadata", []),
        ("argsort_probs", ["probs"]),
        ("prefill", ["inputs", "attention_mask", "packed_params"]),
        ("sample_with_top_p", ["sorted_probs", "sorted_indices", "uniform_samples", "sample_indices", "top_p"]),
        ("softmax_with_temperature", ["logits", "temperature"]),
    ],
}
KERNELS = ["fused_rope", "rms_norm", "fused_dequantize_NT_matmul"]


def u64(n):
    return struct.pack("<Q", n)


def i64(n):
    return struct.pack("<q", n)


def i32(n):
    return struct.pack("<i", n)


def dstr(b):
    if isinstance(b, str):
        b = b.encode("utf-8")
    return u64(len(b)) + b


def vec64(values):
    return u64(len(values)) + b"".join(i64(v) for v in values)


def arg(kind, value):
    return (kind << 56) | value


def default_metadata(preset, model_type):
    params = [{"name": "model.embed_tokens.weight", "shape": [32, 8], "dtype": "float16", "preprocs": []},
              {"name": "model.layers.0.mlp.weight", "shape": [8, 8], "dtype": "float16", "preprocs": []}]
    md = {"model_type": model_type, "quantization": "q0f16", "context_window_size": 4096,
          "prefill_chunk_size": 1024, "sliding_window_size": -1, "attention_sink_size": -1,
          "tensor_parallel_shards": 1, "kv_state_kind": "kv_cache", "params": params,
          "memory_usage": {"prefill": 1024, "decode": 256}}
    if preset == "embedding":
        md.pop("kv_state_kind")
        md["max_batch_size"] = 4
    return json.dumps(md, indent=1).encode("utf-8")


def build_table(vm_functions, drops, arities, packed, added):
    """The function table: the VM functions (with the changes asked), then the packed ones."""
    table = []
    for name, params in vm_functions:
        if name in drops:
            continue
        params = list(params)
        if name in arities:
            n = arities[name]
            params = (params + ["extra_%d" % i for i in range(n)])[:n]
        table.append({"name": name, "kind": PACKED if name in packed else VM, "params": params})
    for name, n in added:
        table.append({"name": name, "kind": VM, "params": ["arg_%d" % i for i in range(n)]})
    for name in packed:
        if not any(f["name"] == name for f in table):
            table.append({"name": name, "kind": PACKED, "params": []})
    for name in RUNTIME_GLOBALS + KERNELS:
        table.append({"name": name, "kind": PACKED, "params": []})
    return table


def executable(table, metadata, version):
    """The relax.Executable payload (before its dmlc-string framing)."""
    packed_idx = [i for i, f in enumerate(table) if f["kind"] == PACKED]
    # Constants: a tensor, a data type, a shape tuple, the _metadata string.
    tensor = (u64(TENSOR_MAGIC) + u64(0) + i32(1) + i32(0) + i32(1) + struct.pack("<BBH", 2, 32, 1) + i64(2) +
              i64(8) + struct.pack("<ff", 1.0, -2.0))
    consts = [i32(0) + tensor, i32(1) + struct.pack("<BBH", 2, 16, 1), i32(2) + vec64([1, 4096]),
              i32(3) + dstr(metadata)]
    meta_const = 3
    # Code: each VM function calls packed functions (round robin, every one at least once), then
    # returns register 0; _metadata passes the string constant to the first packed function.
    offsets, words = [], []
    spans = {}
    vm_funcs = [i for i, f in enumerate(table) if f["kind"] != PACKED]
    per = max(1, -(-len(packed_idx) // max(1, len(vm_funcs))))
    k = 0
    for i in vm_funcs:
        start = len(offsets)
        calls = packed_idx[k:k + per] if packed_idx else []
        k += per
        if table[i]["name"] == "_metadata" and packed_idx:
            calls = [packed_idx[0]]
        for j, fidx in enumerate(calls):
            offsets.append(len(words))
            args = [arg(ARG_CONST, meta_const)] if table[i]["name"] == "_metadata" else \
                [arg(ARG_REGISTER, a) for a in range(min(2, len(table[i]["params"])))] + [arg(ARG_IMMEDIATE, j)]
            words += [OP_CALL, 0, fidx, len(args)] + args
        offsets.append(len(words))
        words += [OP_RET, 0]
        spans[i] = (start, len(offsets))
    glob = u64(len(table))
    for i, f in enumerate(table):
        start, end = spans.get(i, (0, 0))
        nargs = -2 if f["kind"] == PACKED else len(f["params"])
        regs = 0 if f["kind"] == PACKED else len(f["params"]) + 2
        glob += i32(f["kind"]) + dstr(f["name"]) + i64(start) + i64(end) + i64(nargs) + i64(regs)
        glob += u64(len(f["params"])) + b"".join(dstr(p) for p in f["params"])
    return (u64(EXEC_MAGIC) + dstr(version) + glob + u64(len(consts)) + b"".join(consts) + vec64(offsets) +
            vec64(words))


def module_blob(type_key, payload):
    modules = [(type_key, dstr(payload)), ("_lib", b""), ("_import_tree", vec64([0, 1, 1]) + vec64([1]))]
    body = u64(len(modules)) + b"".join(dstr(k) + p for k, p in modules)
    return u64(len(body)) + body


def c_array(name, data, section_attr=""):
    lines = []
    for i in range(0, len(data), 24):
        lines.append("  " + ",".join(str(b) for b in data[i:i + 24]) + ",")
    return ("__attribute__((used%s)) const unsigned char %s[%d] = {\n%s\n};\n" %
            (section_attr, name, len(data), "\n".join(lines)))


KERNEL_C = """
typedef struct { long v; } TVMValue;
extern int TVMBackendGetFuncFromEnv(void *mod, const char *name, void **out);
extern void TVMAPISetLastError(const char *msg);
extern int TVMFuncCall(void *f, TVMValue *args, int *codes, int n, TVMValue *ret, int *ret_code);
void *__tvm_module_ctx = 0;
static void *cached_;
"""

KERNEL_FN = """
int %s(TVMValue *args, int *codes, int n, TVMValue *ret, int *ret_code, void *h) {
  (void)codes; (void)h; (void)ret; (void)ret_code;
  if (n < 0) { TVMAPISetLastError("%s: bad arguments"); return -1; }
  if (!cached_ && TVMBackendGetFuncFromEnv(__tvm_module_ctx, "runtime.%s", &cached_) != 0) return -1;
  return TVMFuncCall(cached_, args, (int *)0, 0, ret, ret_code) + (int)args[0].v;
}
"""


def uleb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sleb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        done = (n == 0 and not b & 0x40) or (n == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


def read_uleb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def split_wasm_zeros(wasm, min_run):
    """Split the active data segments at runs of >= min_run zero bytes, as wasm-opt does to MLC's
    libraries: a reader must lay the segments out at their addresses (zeros between)."""
    out = bytearray(wasm[:8])
    i = 8
    n_segments = None
    sections = []
    while i < len(wasm):
        sid = wasm[i]
        size, j = read_uleb(wasm, i + 1)
        sections.append((sid, wasm[j:j + size]))
        i = j + size
    for sid, body in sections:
        if sid != 11:
            continue
        n, j = read_uleb(body, 0)
        segs = []
        for _ in range(n):
            flag, j = read_uleb(body, j)
            assert flag == 0 and body[j] == 0x41, "only active i32.const segments"
            j += 1
            addr = r = s = 0
            while True:  # sleb128 i32.const
                x = body[j]
                j += 1
                r |= (x & 0x7F) << s
                s += 7
                if x < 0x80:
                    if x & 0x40:
                        r -= 1 << s
                    break
            addr = r
            assert body[j] == 0x0B
            j += 1
            length, j = read_uleb(body, j)
            data = body[j:j + length]
            j += length
            k = 0
            while k < len(data):  # pieces between zero runs
                while k < len(data) and data[k] == 0:
                    k += 1
                start = k
                while k < len(data):
                    if data[k] == 0 and data[k:k + min_run] == bytes(min_run):
                        break
                    k += 1
                if k > start:
                    segs.append((addr + start, data[start:k]))
        new = uleb(len(segs)) + b"".join(b"\x00\x41" + sleb(a) + b"\x0b" + uleb(len(d)) + d for a, d in segs)
        n_segments = len(segs)
        sections = [(x, new if x == 11 else y) for x, y in sections]
        break
    for sid, body in sections:
        if sid == 12 and n_segments is not None:
            body = uleb(n_segments)
        out += bytes([sid]) + uleb(len(body)) + body
    return bytes(out)


def data_wasm(blob, base=1024):
    """A WebAssembly module with no code whose memory holds `blob` at `base` (one active data
    segment, `memory` exported): what a reader of MLC's WebGPU libraries sees of them, built without
    a toolchain (scripts/gen_examples.py's example libraries). Valid: wasm-validate, WebAssembly.compile."""
    pages = -(-(base + len(blob)) // 65536)
    memory = uleb(1) + b"\x00" + uleb(pages)
    export = uleb(1) + uleb(6) + b"memory" + b"\x02" + uleb(0)
    data = uleb(1) + b"\x00\x41" + sleb(base) + b"\x0b" + uleb(len(blob)) + blob
    sec = lambda sid, body: bytes([sid]) + uleb(len(body)) + body
    return b"\0asm\x01\0\0\0" + sec(5, memory) + sec(7, export) + sec(11, data)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.stderr.write("make_tvm_lib: %s failed:\n%s\n" % (" ".join(cmd), r.stdout.decode(errors="replace")))
        sys.exit(1)


def tool(names):
    for n in names:
        p = shutil.which(n)
        if p:
            return p
        for d in ("/usr/lib/llvm-19/bin", "/usr/lib/llvm-16/bin", "/usr/lib/llvm-14/bin"):
            if os.path.exists(os.path.join(d, n)):
                return os.path.join(d, n)
    return None


def tar_gz(path, members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o664
            info.mtime = 1710742020
            t.addfile(info, io.BytesIO(data))
    write(path, gzip.compress(buf.getvalue(), mtime=0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--name", default=None)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="phi3")
    ap.add_argument("--model-type", default=None)
    ap.add_argument("--metadata", help="a file holding the _metadata JSON text, embedded byte-exactly")
    ap.add_argument("--drop", action="append", default=[], help="leave this VM function out")
    ap.add_argument("--arity", action="append", default=[], help="FN=N: give FN N parameters")
    ap.add_argument("--packed", action="append", default=[], help="make FN a packed function (kind 0)")
    ap.add_argument("--add", action="append", default=[], help="FN=N: add a VM function taking N")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--type-key", default="relax.Executable")
    ap.add_argument("--version", default="0.14")
    ap.add_argument("--split-zeros", type=int, default=8, metavar="N",
                    help="split the wasm data segments at runs of >= N zero bytes (0: keep them)")
    ap.add_argument("--prefix", default=None, help="system-lib prefix of the archives' symbols")
    a = ap.parse_args()

    name = a.name or a.preset
    prefix = a.prefix if a.prefix is not None else name.replace("-", "_") + "_"
    formats = [f for f in a.formats.split(",") if f]
    for f in formats:
        if f not in FORMATS:
            ap.error("unknown format %r (formats: %s)" % (f, ", ".join(FORMATS)))
    clang = tool(["clang"])
    lld = tool(["ld.lld"])
    wasm_ld = tool(["wasm-ld"])
    ar = tool(["llvm-ar"])
    needs = [("clang", clang)]
    if any(f in formats for f in ("elf-x86_64", "elf-aarch64", "macho-dylib")):
        needs.append(("ld.lld", lld))
    if "wasm" in formats:
        needs.append(("wasm-ld", wasm_ld))
    if any(f.startswith("ar-") for f in formats):
        needs.append(("llvm-ar", ar))
    for what, path in needs:
        if not path:
            print("SKIP: make_tvm_lib: %s not found (scripts/setup.sh --test installs it)" % what)
            sys.exit(77)
    os.makedirs(a.outdir, exist_ok=True)

    if a.metadata:
        with open(a.metadata, "rb") as f:
            metadata = f.read()
    else:
        metadata = default_metadata(a.preset, a.model_type or {"embedding": "bert"}.get(a.preset, a.preset))
    arities = {}
    for s in a.arity:
        fn, _, n = s.partition("=")
        arities[fn] = int(n)
    added = []
    for s in a.add:
        fn, _, n = s.partition("=")
        added.append((fn, int(n)))
    table = build_table(PRESETS[a.preset], set(a.drop), arities, a.packed, added)
    blob = module_blob(a.type_key, executable(table, metadata, a.version))

    out = lambda suffix: os.path.join(a.outdir, name + suffix)
    write(out(".blob"), blob)
    write(out(".metadata.json"), metadata)
    with open(out(".functions.json"), "w") as f:
        json.dump([{"name": t["name"], "kind": ["packed", "vm", "vm_tir"][t["kind"]],
                    "num_args": -2 if t["kind"] == PACKED else len(t["params"]), "param_names": t["params"]}
                   for t in table], f, indent=1)
        f.write("\n")

    work = out(".build")
    os.makedirs(work, exist_ok=True)
    kernels = KERNEL_C + "".join(KERNEL_FN % (k, k, k) for k in KERNELS)
    src_shared = os.path.join(work, "lib.c")
    write(src_shared, (kernels + c_array("__tvm_dev_mblob", blob)).encode())
    lib0 = os.path.join(work, "lib0.c")
    write(lib0, kernels.replace("void *__tvm_module_ctx = 0;", "void *%s__tvm_module_ctx = 0;\n#define "
                                "__tvm_module_ctx %s__tvm_module_ctx" % (prefix, prefix)).encode())
    devc = os.path.join(work, "devc.c")
    write(devc, ("extern int TVMBackendRegisterSystemLibSymbol(const char *name, void *ptr);\n" +
                 c_array(prefix + "__tvm_dev_mblob", blob) +
                 "__attribute__((constructor)) static void %sregister_blob(void) {\n"
                 "  TVMBackendRegisterSystemLibSymbol(\"__tvm_dev_mblob\", (void *)%s__tvm_dev_mblob);\n}\n" %
                 (prefix, prefix)).encode())
    cflags = ["-O1", "-w", "-fPIC", "-ffunction-sections"]

    def objects(target, suffix):
        o0, o1 = os.path.join(work, "lib0" + suffix), os.path.join(work, "devc" + suffix)
        run([clang, "--target=" + target] + cflags + ["-c", lib0, "-o", o0])
        run([clang, "--target=" + target] + cflags + ["-c", devc, "-o", o1])
        with open(o0, "rb") as f0, open(o1, "rb") as f1:
            return f0.read(), f1.read(), o0, o1

    if "wasm" in formats:
        run([clang, "--target=wasm32", "-nostdlib", "-O1", "-w", "-Wl,--no-entry", "-Wl,--export-all",
             "-Wl,--allow-undefined", "-o", out(".wasm"), src_shared])
        if a.split_zeros:
            with open(out(".wasm"), "rb") as f:
                write(out(".wasm"), split_wasm_zeros(f.read(), a.split_zeros))
    if "elf-x86_64" in formats:
        run([clang, "--target=x86_64-linux-gnu", "-nostdlib", "-fuse-ld=lld", "-shared"] + cflags +
            ["-o", out("-x86_64.so"), src_shared])
    if "elf-aarch64" in formats:
        run([clang, "--target=aarch64-linux-gnu", "-nostdlib", "-fuse-ld=lld", "-shared"] + cflags +
            ["-o", out("-aarch64.so"), src_shared])
    if "macho-dylib" in formats:
        run([clang, "--target=arm64-apple-macos11", "-nostdlib", "-fuse-ld=lld", "-shared",
             "-Wl,-undefined,dynamic_lookup"] + cflags + ["-o", out("-arm64.dylib"), src_shared])
    member = prefix + "devc.o"
    if any(f in formats for f in ("tar-elf", "ar-elf")):
        d0, d1, o0, o1 = objects("aarch64-linux-android", ".elf.o")
        if "tar-elf" in formats:
            tar_gz(out("-elf.tar"), [("lib0.o", d0), (member, d1)])
        if "ar-elf" in formats:
            shutil.copy(o1, os.path.join(work, member))
            if os.path.exists(out("-elf.a")):
                os.unlink(out("-elf.a"))
            run([ar, "rcs", out("-elf.a"), o0, os.path.join(work, member)])
    if any(f in formats for f in ("tar-macho", "ar-macho", "macho-o")):
        d0, d1, o0, o1 = objects("arm64-apple-ios14", ".macho.o")
        if "tar-macho" in formats:
            tar_gz(out("-macho.tar"), [("lib0.o", d0), (member, d1)])
        if "macho-o" in formats:
            write(out("-macho.o"), d1)
        if "ar-macho" in formats:
            shutil.copy(o1, os.path.join(work, member))
            if os.path.exists(out("-macho.a")):
                os.unlink(out("-macho.a"))
            run([ar, "rcs", "--format=darwin", out("-macho.a"), o0, os.path.join(work, member)])
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
