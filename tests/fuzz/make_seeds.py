#!/usr/bin/env python3
"""Regenerate the fuzz seed corpora from the conformance vectors in ../shared (stdlib only).

Run from the repository root: python3 tests/fuzz/make_seeds.py
The corpora are committed; rerun this only when the vectors change.
"""
import base64
import hashlib
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def write(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def cases(name):
    with open(os.path.join(SHARED, "conformance", "mlc-webllm", name), encoding="utf-8") as f:
        return json.load(f)["cases"]


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


for c in cases("model_package_parse.json"):
    write("fuzz_mlc_package", dumps(c["input"]))
for c in cases("load_model_package_manifest.json"):
    write("fuzz_mlc_package", base64.b64decode(c["input_base64"]))
for c in cases("request_checks.json"):  # Float32Arrays as {"$float32array": [...]}, as mpk_mlc_request_check reads them
    write("fuzz_mlc_request", dumps(c["request"]))
for text in ['{"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},'
             '{"type":"image_url","image_url":{"url":"http://x","detail":null}}]},{"role":"tool","content":"t"}]}',
             '{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"format":"pcm_f32",'
             '"data":{"$float32array":3},"sample_rate":16000.0}},"x",null,{"type":5}]}]}',
             '{"messages":[{"role":"user","content":"a"},{"role":"system","content":{}}]}']:
    write("fuzz_mlc_request", text)
for c in cases("resolve_chat_completion.json"):
    write("fuzz_mlc_package", dumps(c["model_package"]))
    write("fuzz_mlc_artifact", dumps(c["compiled_program"]))
for c in cases("compiled_program_parse.json"):
    write("fuzz_mlc_artifact", dumps(c["input"]))
for c in cases("canonical_json.json"):
    write("fuzz_canonical_json", dumps(c["value"]))
for c in cases("interface_id.json"):
    write("fuzz_canonical_json", c.get("tasks_json_text") or dumps(c["tasks"]))

# Tensor caches: the real ones (small enough), and a tiny synthetic one.
for pkg in sorted(os.listdir(os.path.join(SHARED, "realdata", "mlc-packages"))):
    for name in ("tensor-cache.json", "ndarray-cache.json"):
        path = os.path.join(SHARED, "realdata", "mlc-packages", pkg, name)
        if os.path.exists(path) and os.path.getsize(path) < 200000:
            with open(path, "rb") as f:
                write("fuzz_tensor_cache", f.read())
write("fuzz_tensor_cache", dumps({"metadata": {"ParamSize": 2}, "records": [{
    "dataPath": "params_shard_0.bin", "format": "raw-shard", "nbytes": 64,
    "md5sum": "0123456789abcdef0123456789abcdef", "records": [
        {"name": "a", "shape": [8], "dtype": "float32", "format": "raw", "nbytes": 32, "byteOffset": 0},
        {"name": "b", "shape": [16], "dtype": "float16", "format": "raw", "nbytes": 32, "byteOffset": 32}]}]}))

# Library seeds: small real-shaped _metadata wrapped as TVM stores it (u64 LE length + JSON).
meta = {"model_type": "qwen2", "kv_state_kind": "kv_cache",
        "params": [{"name": "w", "shape": [2, 3], "dtype": "float16", "preprocs": []}]}
art = cases("compiled_program_parse.json")[0]["input"]
for m in (meta, dict(meta, artifact=art)):
    text = dumps(m).encode()
    write("fuzz_mlc_metadata", b"\x7fELF" + b"\0" * 12 + b"\x05\0\0\0" + struct.pack("<Q", len(text)) + text + b"\0" * 8)
    write("fuzz_mlc_metadata", text)
write("fuzz_mlc_metadata", dumps(art))
text = dumps(meta).encode()
write("fuzz_mlc_metadata", struct.pack("<Q", len(text) + 9) + text + struct.pack("<Q", len(text)) + text)
write("fuzz_mlc_metadata", b"\0asm\x01\0\0\0" + struct.pack("<Q", 3) + b"{}}")

# Device fit seeds: the real libraries' _metadata (kv_cache, memory_usage, quantization), and
# small variants around the rules (no kv_cache, an unknown kv_cache member, kv_state_kind none,
# a sliding window, a huge head_dim, a named dimension).
META_DIR = os.path.join(SHARED, "realdata", "mlc-lib-metadata")
for name in sorted(os.listdir(META_DIR)):
    if name.endswith(".metadata.json"):
        with open(os.path.join(META_DIR, name), "rb") as f:
            write("fuzz_mlc_fit", f.read())
fit = {"model_type": "llama", "quantization": "q4f16_1", "context_window_size": 64,
       "sliding_window_size": -1, "kv_state_kind": "kv_cache",
       "params": [{"name": "embed", "shape": ["vocab_size", 8], "dtype": "float16", "preprocs": []},
                  {"name": "w", "shape": [8, 8], "dtype": "uint32", "preprocs": []}],
       "kv_cache": {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4},
       "memory_usage": {"prefill": 4096, "decode": 512, "batch_prefill": 4096}}
for m in (fit, dict(fit, quantization="q0f32"), dict(fit, quantization="q4bf16_0"),
          {k: v for k, v in fit.items() if k != "kv_cache"},
          dict(fit, kv_cache=dict(fit["kv_cache"], kv_lora_rank=512)),
          dict(fit, kv_state_kind="none"), dict(fit, context_window_size=-1, sliding_window_size=32),
          dict(fit, kv_cache=dict(fit["kv_cache"], head_dim=2**40)), dict(fit, tensor_parallel_shards=2)):
    write("fuzz_mlc_fit", dumps(m))

# MobileTransformers manifests: the fixture's, as committed and compact, and variants around the
# reader's rules (version gate, nulls, unknown fields, paths, patterns, digests, sizes, ids).
TINY_MANIFEST = os.path.join(SHARED, "conformance", "mobiletransformers", "tiny_package",
                             "mobiletransformers_manifest.json")
with open(TINY_MANIFEST, "rb") as f:
    raw = f.read()
write("fuzz_mt_manifest", raw)
mt = json.loads(raw)
write("fuzz_mt_manifest", dumps(mt))


def mt_variant(**changes):
    m = json.loads(raw)
    m["variants"][0].update(changes)
    return m


first_file = sorted(mt["fileSizes"])[0]
for m in (dict(mt, schemaVersion="1.7", futureField={"x": [1, None]}), dict(mt, schemaVersion="2.0"),
          dict(mt, minReaderVersion="1.5"), dict(mt, schemaVersion=" 1.0"),
          dict(mt, trainableParameterCount=34, trainingParameterCount=80), dict(mt, trainableParameterCount=-1),
          dict(mt, androidRuntime=None, license=None, trustRemoteCode=None, exportedAt=None),
          dict(mt, license=dict(mt["license"], noticeFile="../NOTICE")),
          {k: v for k, v in mt.items() if k != "sha256"},
          dict(mt, fileSizes=dict(mt["fileSizes"], **{"../escape": 1})),
          dict(mt, sha256=dict(mt["sha256"], **{first_file: mt["sha256"][first_file].upper()})),
          dict(mt, fileSizes=dict(mt["fileSizes"], **{first_file: 2 ** 60})),
          dict(mt, requiredFiles=["/abs/path"]), dict(mt, weightHandoff="a\\b"),
          dict(mt, downloadPlan={"cpu-int4": dict(mt["downloadPlan"]["cpu-int4"], core=["shared/*.json"])}),
          dict(mt, variants=mt["variants"] + [mt["variants"][0]]), dict(mt, variants=[]),
          mt_variant(abi=None, quantization=None, colour="blue"), mt_variant(id="a/../b"),
          mt_variant(supportedEngines="native"), mt_variant(paths={"tokenizer": "shared/tok\u00e9nizer"}),
          dict(mt, baseModelId="org/Mod\u00e8le-\U0001f680")):
    write("fuzz_mt_manifest", dumps(m))

# Weight handoff maps: the 1.1 conformance map (as committed, compact, entries reversed), the tiny
# package's 1.0 maps, a quantized entry with per-role dtypes/shapes, and variants around each rule.
MT_CONF = os.path.join(SHARED, "conformance", "mobiletransformers")
with open(os.path.join(MT_CONF, "android_test_federated_handoff.json"), "rb") as f:
    hraw = f.read()
write("fuzz_mt_handoff", hraw)
hm = json.loads(hraw)
write("fuzz_mt_handoff", dumps(hm))
write("fuzz_mt_handoff", dumps(dict(hm, entries=hm["entries"][::-1])))
for v in ("cpu-int4", "cpu-fp16"):
    with open(os.path.join(MT_CONF, "tiny_package", "variants", v, "inference", "weight_handoff_map.json"), "rb") as f:
        write("fuzz_mt_handoff", f.read())


def h_entry(i=0, **changes):
    d = json.loads(hraw)
    d["entries"][i].update(changes)
    return d


qn = {"weight_quantized": "l0.qweight", "scale": "l0.scales", "zero_point": "l0.qzeros"}
quant = h_entry(inferenceInitializerNames=qn, mergedTensorNames=dict(qn), dtype="uint8",
                externalDataLocation={r: n + ".bin" for r, n in qn.items()},
                quantization={"weightQuantizedName": "l0.qweight", "scaleName": "l0.scales",
                              "zeroPointName": "l0.qzeros"},
                tensorDtypes={"weight_quantized": "uint8", "scale": "float16", "zero_point": "uint8"},
                tensorShapes={"weight_quantized": [8, 2], "scale": [8, 1], "zero_point": [8, 1]})
write("fuzz_mt_handoff", dumps(quant))
q2 = json.loads(dumps(quant))
q2["entries"][0]["quantization"]["scaleName"] = "derived"
second = hm["entries"][1]
for d in (dict(hm, schemaVersion="2.0"), dict(hm, schemaVersion="1.9", futureField=[1, None]),
          dict(hm, handoffMode="model_input"), dict(hm, handoffMode="adapter"),
          dict(hm, externalDataLayout="single_file"), dict(hm, frozenBaseBlob="../x"),
          dict(hm, mergerModels={"lora": "merger_lora.onnx"}), {k: v for k, v in hm.items() if k != "engines"},
          q2, dict(hm, entries=hm["entries"] + [second]),
          h_entry(1, externalDataLocation=hm["entries"][0]["externalDataLocation"]),
          h_entry(dtype="float64"), h_entry(shape=[4, 0]), h_entry(transposePolicy="already_transposed_for_inference"),
          h_entry(transposePolicy="sideways"), h_entry(externalDataLocation={"weight": "sub/w.bin"}),
          h_entry(sha256={"weight": "ab" * 32}), h_entry(sha256={"weight": "AB" * 32}),
          h_entry(mergedTensorNames={"weight": "other"}), h_entry(inferenceInitializerNames={"bias": "x"}),
          h_entry(quantization=None, genaiInputNames={"weight": "w"}, trainingBaseLayerName="caf\u00e9-\U0001f680")):
    write("fuzz_mt_handoff", dumps(d))

# Safetensors: 8-byte little-endian header length, JSON header, data. Files as the reference
# serializer writes them (sorted by dtype alignment, header padded with spaces to 8 bytes), a LoRA
# adapter with PEFT names and metadata, every dtype, empty and scalar tensors, a header out of data
# order, and one file per refusal rule (docs/safetensors.md).
ST_SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
            "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def st_file(header, data, pad=True, n=None):
    text = (header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if n is None else n) + text + data


def st_tensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] laid out in order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    return header, data


def f32(*v):
    return struct.pack("<%df" % len(v), *v)


lora = [("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", "F32", [2, 6], f32(*range(12))),
        ("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", "F32", [4, 2], f32(*[0.5] * 8))]
h, d = st_tensors(lora, {"format": "pt"})
write("fuzz_safetensors", st_file(h, d))
write("fuzz_safetensors", st_file(h, d, pad=False))
h, d = st_tensors([("adapter_A", "F16", [2, 3], struct.pack("<6H", 0x3c00, 0x0001, 0x7c00, 0xfc00, 0x7e00, 0x8000)),
                   ("adapter_B", "BF16", [3, 2], struct.pack("<6H", 0x3f80, 0x0001, 0x7f80, 0xffc1, 0x4049, 0)),
                   ("weight", "F64", [2], struct.pack("<2d", 0.1, 1e-40)),
                   ("scale", "F64", [], struct.pack("<d", 1e39))])
write("fuzz_safetensors", st_file(h, d))
every = [("t%02d" % i, dt, [3], bytes(range(3 * sz))) for i, (dt, sz) in enumerate(sorted(ST_SIZES.items()))]
write("fuzz_safetensors", st_file(*st_tensors(every)))
write("fuzz_safetensors", st_file(*st_tensors([("empty", "F32", [0, 4], b""), ("scalar", "I32", [], b"\1\0\0\0"),
                                                ("e2", "U8", [2, 0], b"")])))
write("fuzz_safetensors", st_file({}, b""))
write("fuzz_safetensors", st_file({"__metadata__": {"framework": "pt"}}, b""))
write("fuzz_safetensors", st_file("{}\r \t\n", b"", pad=False))
h, d = st_tensors([("a", "U8", [4], b"abcd"), ("b", "U16", [2], b"efgh"), ("c", "F32", [1], b"ijkl")])
write("fuzz_safetensors", st_file(dict(reversed(list(h.items()))), d))
# Refusals: one rule broken each.
good_h, good_d = st_tensors([("a", "F32", [2], f32(1, 2)), ("b", "F32", [2], f32(3, 4))])
full = st_file(good_h, good_d)
write("fuzz_safetensors", full[:7])
write("fuzz_safetensors", full[:-1])
write("fuzz_safetensors", full + b"\0")
write("fuzz_safetensors", st_file(good_h, good_d, n=100000001))
write("fuzz_safetensors", st_file(good_h, good_d, n=len(full)))
write("fuzz_safetensors", st_file(" " + json.dumps(good_h), good_d))
write("fuzz_safetensors", st_file(json.dumps(good_h) + "\0\0", good_d, pad=False))


def st_variant(name, **changes):
    h = json.loads(json.dumps(good_h))
    h[name].update(changes)
    return st_file(h, good_d)


for data in (st_variant("a", dtype="F17"), st_variant("a", dtype="f32"), st_variant("a", extra=1),
             st_variant("a", shape=[3]), st_variant("a", shape=[-2]), st_variant("a", shape=[2.0]),
             st_variant("a", shape=[1] * 17), st_variant("a", data_offsets=[8, 0]),
             st_variant("b", data_offsets=[4, 12]), st_variant("b", data_offsets=[12, 20]),
             st_variant("b", data_offsets=[16, 24]), st_variant("a", data_offsets=[0, 8, 8]),
             st_variant("a", shape=[0, 2 ** 32, 2 ** 32], data_offsets=[0, 0])):
    write("fuzz_safetensors", data)
hole = json.loads(json.dumps(good_h))
hole["b"]["data_offsets"] = [12, 20]
write("fuzz_safetensors", st_file(hole, good_d + b"\0" * 4))
write("fuzz_safetensors", st_file(dict(good_h, __metadata__={"n": 1}), good_d))
write("fuzz_safetensors", st_file(dict(good_h, __metadata__=None), good_d))
write("fuzz_safetensors", st_file(dict(good_h, **{"": good_h["a"]}), good_d))
text = json.dumps(good_h, separators=(",", ":"))
write("fuzz_safetensors", st_file(text[:-1] + ',"a":' + json.dumps(good_h["a"]) + "}", good_d))

# fuzz_mt_select: the same manifests drive selection and plans (the target parses them), plus repo
# ids for the sanitize rule (the target runs it on every input's bytes).
write("fuzz_mt_select", raw)
for m in (mt, dict(mt, variants=mt["variants"][::-1]), mt_variant(abi=["x86_64"]),
          mt_variant(minMemoryMb=8192), dict(mt, fileSizes=dict(mt["fileSizes"], **{first_file: 2 ** 40}))):
    write("fuzz_mt_select", dumps(m))
with open(os.path.join(MT_CONF, "sanitize_repo_id_cases.json"), encoding="utf-8") as f:
    for c in json.load(f)["cases"]:
        if isinstance(c.get("input"), str):
            write("fuzz_mt_select", c["input"])


# fuzz_wav: the first byte picks the output rate (16000, 8000, 44100, 22050); then a WAV file.
# Every WAV case of the WebLLM vectors, and synthetic files around the reader's rules.
def riff(*chunks):
    body = b"".join(cid + struct.pack("<I", len(p)) + p + (b"\0" if len(p) % 2 else b"") for cid, p in chunks)
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body


def fmt(tag, ch, rate, bits, ext_sub=None):
    align = ch * bits // 8
    p = struct.pack("<HHIIHH", tag, ch, rate, rate * align, align, bits)
    if ext_sub is not None:
        p += struct.pack("<HHI", 22, bits, 3) + struct.pack("<H", ext_sub) + bytes(
            [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71])
    return (b"fmt ", p)


for c in cases("audio_decode.json"):
    if c["input"].get("format") == "wav" and isinstance(c["input"].get("data"), str):
        try:
            wav = base64.b64decode(c["input"]["data"].split(",", 1)[-1])
        except Exception:
            continue
        write("fuzz_wav", b"\0" + wav)
tone16 = struct.pack("<8h", 0, 1000, 2000, 1000, 0, -1000, -2000, -32768)
for sel, wav in ((0, riff(fmt(1, 1, 16000, 16), (b"data", tone16))),
                 (1, riff(fmt(1, 2, 48000, 16), (b"data", tone16))),
                 (2, riff(fmt(1, 1, 8000, 8), (b"data", bytes(range(0, 256, 16))))),
                 (3, riff(fmt(1, 2, 44100, 24), (b"data", bytes(range(24))))),
                 (0, riff(fmt(1, 1, 22050, 32), (b"data", tone16))),
                 (1, riff(fmt(3, 1, 96000, 32), (b"data", struct.pack("<4f", 0.5, -0.5, 1.5, 0)))),
                 (2, riff(fmt(3, 3, 11025, 64), (b"data", struct.pack("<6d", 0.1, 0.2, 0.3, -0.1, -0.2, -0.3)))),
                 (0, riff(fmt(0xFFFE, 2, 16000, 16, ext_sub=1), (b"data", tone16))),
                 (0, riff(fmt(0xFFFE, 1, 16000, 32, ext_sub=3), (b"data", struct.pack("<2f", 0.25, -0.25)))),
                 (0, riff((b"data", tone16), fmt(1, 1, 16000, 16))),               # data before fmt
                 (0, riff((b"LIST", b"odd"), fmt(1, 1, 16000, 16), (b"data", tone16))),  # padded chunk
                 (0, riff(fmt(6, 1, 8000, 8), (b"data", b"\x55" * 8))),           # A-law: refused
                 (0, riff(fmt(1, 1, 16000, 12), (b"data", tone16))),              # 12-bit: refused
                 (0, riff(fmt(1, 1, 500000, 16), (b"data", tone16))),             # rate over 384 kHz
                 (0, riff(fmt(3, 1, 16000, 32), (b"data", struct.pack("<f", float("inf")))))):
    write("fuzz_wav", bytes([sel]) + wav)
big = riff(fmt(1, 1, 16000, 16), (b"data", tone16))
write("fuzz_wav", b"\0" + big[:-4])                                    # truncated data chunk
write("fuzz_wav", b"\0" + big[:40] + struct.pack("<I", 0xFFFFFFFF) + big[44:])  # 4 GiB declared


# ---- issue 16: the parsers that had no target.
EX = os.path.join(ROOT, "examples")


def read(*parts):
    with open(os.path.join(*parts), "rb") as f:
        return f.read()


# fuzz_txn_journal: journals as core/txn.c writes them (canonical JSON, "\n", "sha256:<hex>\n") for
# the transaction name "fuzz", and one broken rule each.
def journal(entries, name="fuzz", fmt_="modelpkg-txn-journal", version=1, extra=None, digest=None):
    doc = {"entries": entries, "format": fmt_, "name": name, "version": version}
    if extra:
        doc.update(extra)
    body = (json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    return body + b"sha256:" + (digest or hashlib.sha256(body).hexdigest()).encode() + b"\n"


def jentry(final="w.bin", temp=None, size=4, sha="0" * 64):
    return {"final": final, "temp": temp or final + ".fuzz-txn.Ab12Cd", "size": size, "sha256": "sha256:" + sha}


for j in (journal([]), journal([jentry()]), journal([jentry(), jentry("b.bin", size=0)]),
          journal([jentry(), jentry()]), journal([jentry("../x")]), journal([jentry("a/b")]),
          journal([jentry(temp="w.bin.fuzz-txn.Ab12C")]), journal([jentry(temp="other.fuzz-txn.Ab12Cd")]),
          journal([jentry(size=-1)]), journal([jentry(sha="A" * 64)]), journal([jentry()], name="merge"),
          journal([jentry()], fmt_="other"), journal([jentry()], version=2), journal([jentry()], extra={"x": 1}),
          journal([jentry()], digest="0" * 64), journal([dict(jentry(), extra=1)]), journal([jentry(".fuzz.txn-journal")])):
    write("fuzz_txn_journal", j)
    write("fuzz_txn_journal", b"\0" + j[:-72])  # the target appends the checksum line
write("fuzz_txn_journal", journal([jentry()])[:-10])
write("fuzz_txn_journal", b"")
write("fuzz_txn_journal", b"{}\nsha256:" + b"0" * 64 + b"\n")

# fuzz_mt_training_config / fuzz_mt_optimum_config: the tiny package's files and variants.
TINY = os.path.join(EX, "mt-tiny", "variants", "cpu-fp16")
tc_raw = read(TINY, "train", "training_config.json")
tc = json.loads(tc_raw)
write("fuzz_mt_training_config", tc_raw)
layer = sorted(tc["peft_mapping"])[0]
for d in (dict(tc, rank=0), dict(tc, alpha="x"), dict(tc, alpha=None, rank=None), dict(tc, peft_mapping={}),
          dict(tc, peft_mapping=[]), dict(tc, peft_mapping={layer: tc["peft_mapping"][layer]}),
          dict(tc, peft_mapping={"model.layers.9.self_attn.q_proj.base_layer": tc["peft_mapping"][layer]}),
          dict(tc, trainable_tensor_specs={"x": {"dtype": "float32", "shape": [2, 6]}}),
          dict(tc, trainable_tensor_specs=[]), dict(tc, peft_mapping={layer: {"weight": 1}}), [tc]):
    write("fuzz_mt_training_config", dumps(d))
oc_raw = read(TINY, "inference", "optimum_config.json")
oc = json.loads(oc_raw)
write("fuzz_mt_optimum_config", oc_raw)
for d in (dict(oc, inferenceGraphPrecision="float32"), dict(oc, inferenceGraphPrecision=""),
          dict(oc, inferenceGraphPrecision=None), dict(oc, inferenceGraphPrecision=16),
          {k: v for k, v in oc.items() if k != "inferenceGraphPrecision"}, [oc], "x"):
    write("fuzz_mt_optimum_config", dumps(d))

# fuzz_mlc_chat_config: the examples' chat configs and the real packages', and variants.
for name in ("gemma4-audio", "llava-image", "legacy-no-manifest"):
    p = os.path.join(EX, name, "mlc-chat-config.json")
    if os.path.exists(p):
        write("fuzz_mlc_chat_config", read(p))
for pkg in sorted(os.listdir(os.path.join(SHARED, "realdata", "mlc-packages"))):
    p = os.path.join(SHARED, "realdata", "mlc-packages", pkg, "mlc-chat-config.json")
    if os.path.exists(p) and os.path.getsize(p) < 100000:
        write("fuzz_mlc_chat_config", read(p))
cc = json.loads(read(EX, "gemma4-audio", "mlc-chat-config.json"))
mc = cc.get("model_config", {})
for d in (dict(cc, context_window_size=-1), dict(cc, context_window_size=2 ** 60), dict(cc, model_config=None),
          {k: v for k, v in cc.items() if k != "model_config"}, dict(cc, model_config=dict(mc, vocab_size=0)),
          dict(cc, model_config=dict(mc, vocab_size=1.5)), dict(cc, model_config=dict(mc, hidden_size=-4)),
          dict(cc, sliding_window_size=64, context_window_size=-1), [cc], {}):
    write("fuzz_mlc_chat_config", dumps(d))

# fuzz_audio_base64: every input_audio.data of the WebLLM vectors, and the decoder's rules.
for c in cases("audio_decode.json"):
    if isinstance(c["input"].get("data"), str):
        write("fuzz_audio_base64", c["input"]["data"])
tone = riff(fmt(1, 1, 16000, 16), (b"data", tone16))
b64 = base64.b64encode(tone).decode()
for s in (b64, "data:audio/wav;base64," + b64, "data:AUDIO/WAVE;base64," + b64, "data:audio/x-wav;base64," + b64,
          "data:audio/mp3;base64," + b64, " " + b64[:10] + "\n" + b64[10:] + "\t", b64.rstrip("="), b64 + "=",
          b64[:-1], "https://example.com/a.wav", "HTTP:x", "QQ", "QQ=", "QQ==", "Q", "====", "", "data:",
          base64.b64encode(riff(fmt(1, 2, 44100, 24), (b"data", bytes(range(24))))).decode()):
    write("fuzz_audio_base64", s)

# fuzz_mt_build: the example's BUILD.json and variants of it.
bj_raw = read(EX, "mt-tiny.build.json")
bj = json.loads(bj_raw)
write("fuzz_mt_build", bj_raw)
for d in (dict(bj, defaultVariant="nope"), {k: v for k, v in bj.items() if k != "variants"},
          dict(bj, schemaVersion="9.0"), dict(bj, fileSizes={"x": 1}), dict(bj, exportedAt=None),
          dict(bj, variants=bj.get("variants", [])[:1]), dict(bj, variants=[]), dict(bj, unknownField=[1, {}]),
          dict(bj, requiredFiles=["../x"]), [bj], {}):
    write("fuzz_mt_build", dumps(d))

# fuzz_mlc_build: the tasks of the example package, the interface_id vectors' tasks, wrappers.
gm = json.loads(read(EX, "gemma4-audio", "mlc-model-manifest.json"))
progs = {"generation": {"kind": "token_generation", "exports": {"embed_tokens": "e", "prefill_tokens": "p",
         "decode_tokens": "d", "create_kv_cache": "k"}, "adapters": {"audio": "a"}}}
write("fuzz_mlc_build", dumps(gm["tasks"]))
write("fuzz_mlc_build", dumps({"tasks": gm["tasks"], "programs": progs}))
for c in cases("interface_id.json"):
    write("fuzz_mlc_build", c.get("tasks_json_text") or dumps(c["tasks"]))
    if "tasks" in c:
        write("fuzz_mlc_build", dumps({"tasks": c["tasks"], "programs": progs}))
bad = json.loads(dumps({"tasks": gm["tasks"], "programs": progs}))
first = sorted(bad["tasks"])[0]
bad["tasks"][first]["executor"] = "other"
write("fuzz_mlc_build", dumps(bad))
write("fuzz_mlc_build", dumps({"tasks": {}, "programs": {}}))
