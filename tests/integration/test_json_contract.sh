#!/usr/bin/env bash
# One --json contract for every command that reports (docs/CLI.md "JSON documents"): on success, on
# refusal and on a usage error, exactly one JSON document on stdout whose keys start with
# modelpkg_version, command, ok and end with problems, notes; ok is true exactly when problems is
# empty and the exit status is 0. Each run is under a timeout.
# usage: test_json_contract.sh MODELPKG SOURCE_DIR
set -uo pipefail
MPK="$1"; SRC="$2"
EX="$SRC/examples"; G="$EX/gemma4-audio"; GLIB="$G/lib/gemma4-audio-webgpu.wasm"; L="$EX/llava-image"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
pass=0; fail=0

# A short WAV (16 kHz mono, 0.1 s) and a small PNG, written with the standard library.
python3 - "$T" <<'EOF'
import math, struct, sys, wave, zlib
d = sys.argv[1]
with wave.open(d + "/tone.wav", "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 5))) for i in range(1600)))
W, H = 64, 48
raw = b"".join(b"\0" + bytes(v for x in range(W) for v in (x * 4 % 256, y * 5 % 256, (x + y) % 256)) for y in range(H))
def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
open(d + "/pic.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
                                 + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
EOF
echo '{"segments": [{"text": [3, 4, 5]}, {"audio": {"rows": 1500}}, {"text": [6]}]}' > "$T/seg.json"
echo '{"segments": [{"text": [3]}' > "$T/badseg.json"

# run NAME WANT_STATUS COMMAND... -- runs with --json appended, checks the status and the document.
run() {
  local name="$1" want="$2"; shift 2
  local rc
  timeout 20 "$@" --json > "$T/out.json" 2> "$T/err.txt"; rc=$?
  if [ "$rc" -ne "$want" ]; then
    fail=$((fail + 1)); echo "FAIL: $name: exit $rc, wanted $want"; head -5 "$T/err.txt"; return
  fi
  if python3 - "$T/out.json" "$rc" "$name" <<'EOF'; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; head -c 600 "$T/out.json"; echo; fi
import json, sys
path, rc, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path).read()
try:
    d = json.loads(text)
except ValueError as e:
    sys.exit(f"{name}: stdout is not one JSON document: {e}")
keys = list(d)
assert keys[:3] == ["modelpkg_version", "command", "ok"], (name, keys)
assert keys[-2:] == ["problems", "notes"], (name, keys)
assert isinstance(d["ok"], bool) and isinstance(d["problems"], list) and isinstance(d["notes"], list), name
assert d["ok"] == (not d["problems"]), (name, "ok must be true exactly when problems is empty")
assert d["ok"] == (rc == 0), (name, "ok must agree with the exit status", rc)
for p in d["problems"]:
    assert list(p) >= ["code", "file", "pointer", "message"] or set(["code", "file", "pointer", "message", "offset"]) <= set(p), (name, p)
    assert p["message"], (name, p)
if rc == 2:
    assert any(p["code"] == "invalid-argument" for p in d["problems"]), (name, "a usage error is an invalid-argument problem")
EOF
}

# The same command's key list on success and on refusal.
same_keys() {
  local name="$1" a="$2" b="$3"
  if python3 -c 'import json,sys; a,b=(list(json.load(open(f))) for f in sys.argv[1:3]); sys.exit(0 if a == b else f"{a} != {b}")' "$a" "$b"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name: success and refusal documents differ in keys"; fi
}
keep() { cp "$T/out.json" "$T/$1.json"; }

run check_mlc_ok 0 "$MPK" check "$G" --lib "$GLIB" --device-features shader-f16; keep check_ok
run check_mlc_refused 1 "$MPK" check "$T/nope"; keep check_no
same_keys check "$T/check_ok.json" "$T/check_no.json"
run check_mt_ok 0 "$MPK" check "$EX/mt-tiny"
run check_usage 2 "$MPK" check "$G" --no-such-option
run fit_ok 0 "$MPK" fit "$G" --lib "$GLIB"; keep fit_ok
run fit_refused 1 "$MPK" fit "$T/nope" --lib "$GLIB"; keep fit_no
same_keys fit "$T/fit_ok.json" "$T/fit_no.json"
run fit_usage 2 "$MPK" fit "$G" --set vocab_size=0
run mlc_id_ok 0 "$MPK" mlc id "$G"; keep id_ok
run mlc_id_refused 1 "$MPK" mlc id "$EX/legacy-no-manifest"; keep id_no
same_keys mlc_id "$T/id_ok.json" "$T/id_no.json"
run mlc_plan_ok 0 "$MPK" mlc plan --package "$G" --lib "$GLIB" --segments "$T/seg.json"; keep plan_ok
run mlc_plan_refused 1 "$MPK" mlc plan --package "$G" --lib "$GLIB" --segments "$T/badseg.json"; keep plan_no
same_keys mlc_plan "$T/plan_ok.json" "$T/plan_no.json"
run mt_select_ok 0 "$MPK" mt select "$EX/mt-tiny"; keep sel_ok
run mt_select_refused 1 "$MPK" mt select "$T/nope"; keep sel_no
same_keys mt_select "$T/sel_ok.json" "$T/sel_no.json"
run mt_select_usage 2 "$MPK" mt select "$EX/mt-tiny" --abi arm65-v8a
run mt_plan_ok 0 "$MPK" mt plan "$EX/mt-tiny" --variant cpu-fp16; keep mplan_ok
run mt_plan_refused 1 "$MPK" mt plan "$EX/mt-tiny" --variant no-such-variant; keep mplan_no
same_keys mt_plan "$T/mplan_ok.json" "$T/mplan_no.json"
run mt_graph_ok 0 "$MPK" mt graph "$EX/mt-tiny"; keep graph_ok
run mt_graph_refused 1 "$MPK" mt graph "$T/nope"; keep graph_no
same_keys mt_graph "$T/graph_ok.json" "$T/graph_no.json"
run mt_inspect_ok 0 "$MPK" mt inspect "$EX/mt-tiny"
run mt_inspect_refused 1 "$MPK" mt inspect "$T/nope"
cp -r "$EX/mt-tiny" "$T/pkg"
run mt_merge_ok 0 "$MPK" mt merge "$T/pkg" --adapter "$EX/mt-tiny.adapter.safetensors" --dry-run; keep merge_ok
run mt_merge_refused 1 "$MPK" mt merge "$T/pkg" --adapter "$T/tone.wav"; keep merge_no
run mt_merge_usage 2 "$MPK" mt merge "$T/nope" --adapter "$EX/mt-tiny.adapter.safetensors"
same_keys mt_merge "$T/merge_ok.json" "$T/merge_no.json"
cp -r "$EX/mt-tiny" "$T/merged"
"$MPK" mt merge "$T/merged" --adapter "$EX/mt-tiny.adapter.safetensors" >/dev/null
run mt_restore_ok 0 "$MPK" mt restore "$T/pkg"; keep restore_ok
run mt_restore_refused 1 "$MPK" mt restore "$T/merged"; keep restore_no
run mt_restore_usage 2 "$MPK" mt restore "$T/nope"
same_keys mt_restore "$T/restore_ok.json" "$T/restore_no.json"
run mt_install_ok 0 "$MPK" mt install "$EX/mt-tiny" --repo-id org/Tiny --cache "$T/cache"; keep inst_ok
run mt_install_refused 1 "$MPK" mt install "$T/nope" --repo-id org/Tiny --cache "$T/cache"; keep inst_no
same_keys mt_install "$T/inst_ok.json" "$T/inst_no.json"
run mt_install_usage 2 "$MPK" mt install "$EX/mt-tiny" --cache "$T/cache"
cp -r "$G" "$T/mlcsrc" && chmod -R u+w "$T/mlcsrc" && echo '{}' > "$T/mlcsrc/tokenizer.json"
run mlc_install_ok 0 "$MPK" mlc install "$T/mlcsrc" --cache "$T/mlccache" --lib "$GLIB"; keep mi_ok
run mlc_install_refused 1 "$MPK" mlc install "$G" --cache "$T/mlccache"; keep mi_no
same_keys mlc_install "$T/mi_ok.json" "$T/mi_no.json"
run mlc_install_usage 2 "$MPK" mlc install "$G"
run mt_list_ok 0 "$MPK" mt list --cache "$T/cache"; keep list_ok
run mt_list_refused 1 "$MPK" mt list --cache "$T/nope"; keep list_no
same_keys mt_list "$T/list_ok.json" "$T/list_no.json"
run mt_list_usage 2 "$MPK" mt list
run mt_gc_ok 0 "$MPK" mt gc --cache "$T/cache" --dry-run; keep gc_ok
run mt_gc_refused 1 "$MPK" mt gc --cache "$T/nope"; keep gc_no
same_keys mt_gc "$T/gc_ok.json" "$T/gc_no.json"
run mt_gc_usage 2 "$MPK" mt gc
run mt_remove_refused 1 "$MPK" mt remove --cache "$T/cache" --repo-id org/NotThere; keep rm_no
run mt_remove_ok 0 "$MPK" mt remove --cache "$T/cache" --repo-id org/Tiny; keep rm_ok
same_keys mt_remove "$T/rm_ok.json" "$T/rm_no.json"
run mt_remove_usage 2 "$MPK" mt remove --cache "$T/cache"
run audio_ok 0 "$MPK" audio "$T/tone.wav" --package "$G" -o "$T/a.f32"; keep audio_ok
run audio_refused 1 "$MPK" audio "$T/pic.png" --package "$G" -o "$T/a.f32"; keep audio_no
same_keys audio "$T/audio_ok.json" "$T/audio_no.json"
run audio_usage 2 "$MPK" audio "$T/tone.wav" --package "$G" -o -
run image_ok 0 "$MPK" image "$T/pic.png" --package "$L" -o "$T/i.raw"; keep image_ok
run image_refused 1 "$MPK" image "$T/tone.wav" --package "$L" -o "$T/i.raw"; keep image_no
same_keys image "$T/image_ok.json" "$T/image_no.json"

# ---- the commands that had no --json (issue 17): mt tensors, mt build / reseal, mlc build, mlc id,
# mlc metadata, mlc embed, mt handoff fmt / build; and the MT check's refusal, and usage errors of each.
mkdir -p "$T/bad-mt" && echo '{' > "$T/bad-mt/mobiletransformers_manifest.json"
run check_mt_ok2 0 "$MPK" check "$EX/mt-tiny" --no-hash; keep check_mt_ok
run check_mt_refused 1 "$MPK" check "$T/bad-mt"; keep check_mt_no
same_keys check_mt "$T/check_mt_ok.json" "$T/check_mt_no.json"
run check_mt_usage 2 "$MPK" check "$EX/mt-tiny" --variant a --all-variants
mkdir -p "$T/both" && touch "$T/both/mobiletransformers_manifest.json" "$T/both/mlc-model-manifest.json"
run check_both_refused 1 "$MPK" check "$T/both"
run mt_tensors_ok 0 "$MPK" mt tensors "$EX/mt-tiny" --variant cpu-int4; keep tens_ok
run mt_tensors_refused 1 "$MPK" mt tensors "$EX/mt-tiny" --variant no-such-variant; keep tens_no
same_keys mt_tensors "$T/tens_ok.json" "$T/tens_no.json"
run mt_tensors_usage 2 "$MPK" mt tensors "$EX/mt-tiny" --jobs 0
# mt parity without ONNX Runtime (its success document: tests/e2e/test_mt_parity.sh)
run mt_parity_refused 1 env MPK_ORT_LIBRARY="$T/no-such-libonnxruntime.so" "$MPK" mt parity "$EX/mt-tiny" --ort-library "$T/no-such-libonnxruntime.so"
run mt_parity_usage 2 "$MPK" mt parity "$EX/mt-tiny" --seed 1 --tokens "$T/t.json"
cp -r "$EX/mt-tiny" "$T/seal"
run mt_build_ok 0 "$MPK" mt build "$T/seal" --describe "$EX/mt-tiny.build.json" --dry-run; keep mtb_ok
run mt_build_refused 1 "$MPK" mt build "$T/seal" --describe "$T/no-such.json"; keep mtb_no
same_keys mt_build "$T/mtb_ok.json" "$T/mtb_no.json"
run mt_build_usage 2 "$MPK" mt build "$T/seal"
run mt_reseal_ok 0 "$MPK" mt reseal "$T/seal" --dry-run
run mt_reseal_refused 1 "$MPK" mt reseal "$T/bad-mt"
run mt_reseal_usage 2 "$MPK" mt reseal "$T/seal" --describe x.json
mkdir -p "$T/mb"
cp "$G/mlc-chat-config.json" "$G/tensor-cache.json" "$G/params_shard_0.bin" "$T/mb/"
python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["tasks"]))' "$G/mlc-model-manifest.json" > "$T/tasks.json"
run mlc_build_ok 0 "$MPK" mlc build "$T/mb" --tasks "$T/tasks.json" --lib "$GLIB" --required-features shader-f16; keep mb_ok
run mlc_build_refused 1 "$MPK" mlc build "$T/mb" --tasks "$T/no-such.json" --lib "$GLIB"; keep mb_no
same_keys mlc_build "$T/mb_ok.json" "$T/mb_no.json"
run mlc_build_usage 2 "$MPK" mlc build "$T/mb" --tasks "$T/tasks.json" --lib "$GLIB" --params x
run mlc_id_usage 2 "$MPK" mlc id
run mlc_metadata_ok 0 "$MPK" mlc metadata "$GLIB"; keep md_ok
run mlc_metadata_refused 1 "$MPK" mlc metadata "$T/tone.wav"; keep md_no
same_keys mlc_metadata "$T/md_ok.json" "$T/md_no.json"
run mlc_metadata_usage 2 "$MPK" mlc metadata
SOLIB="$SRC/../shared/realdata/mlc-libs/Llama-2-7b-chat-hf-q4f16_1-mali.so"
run mlc_functions_ok 0 "$MPK" mlc functions "$SOLIB"; keep fn_ok
run mlc_functions_refused 1 "$MPK" mlc functions "$T/tone.wav"; keep fn_no
same_keys mlc_functions "$T/fn_ok.json" "$T/fn_no.json"
run mlc_functions_usage 2 "$MPK" mlc functions
run mlc_plan_usage 2 "$MPK" mlc plan --package "$G"
run mlc_urls_ok 0 "$MPK" mlc urls https://huggingface.co/o/m --manifest "$G"; keep urls_ok
run mlc_urls_refused 1 "$MPK" mlc urls ftp://h/m; keep urls_no
same_keys mlc_urls "$T/urls_ok.json" "$T/urls_no.json"
run mlc_urls_usage 2 "$MPK" mlc urls
# mlc embed: a small module holding the example's _metadata (with room), the example's artifact
"$MPK" mlc metadata "$GLIB" > "$T/gmd.json"
python3 - "$T/gmd.json" "$T/emb.wasm" "$T/emb.art.json" <<'EOF'
import json, sys
md = json.load(open(sys.argv[1])); json.dump(md.pop("artifact"), open(sys.argv[3], "w"))
t = json.dumps(md, indent=10).encode(); b = len(t).to_bytes(8, "little") + t
def leb(v):
    o = bytearray()
    while True:
        c = v & 0x7F; v >>= 7; o.append(c | (0x80 if v else 0))
        if not v: return bytes(o)
seg = b"\x01\x00\x41\x10\x0b" + leb(len(b)) + b
open(sys.argv[2], "wb").write(b"\0asm\x01\0\0\0" + b"\x05\x03\x01\x00\x01" + b"\x0b" + leb(len(seg)) + seg)
EOF
run mlc_embed_ok 0 "$MPK" mlc embed "$T/emb.wasm" --artifact "$T/emb.art.json" -o "$T/emb.out.wasm"; keep emb_ok
printf '\000asm\001\000\000\000\364\000' > "$T/broken.wasm"   # section id 244: no such section
run mlc_embed_refused 1 "$MPK" mlc embed "$T/broken.wasm" --artifact "$T/emb.art.json" -o "$T/emb.no.wasm"; keep emb_no
same_keys mlc_embed "$T/emb_ok.json" "$T/emb_no.json"
run mlc_embed_usage 2 "$MPK" mlc embed "$T/emb.wasm" -o "$T/emb.u.wasm"
run mlc_compat_refused 1 "$MPK" mlc compat "$GLIB" --runtime "$T/no-such.json"
run mlc_compat_usage 2 "$MPK" mlc compat "$GLIB"
HMAP=$(find "$EX/mt-tiny" -name weight_handoff_map.json -print -quit)
cp "$HMAP" "$T/hm.json" && chmod u+w "$T/hm.json"
run mt_handoff_fmt_ok 0 "$MPK" mt handoff fmt "$T/hm.json"; keep fmt_ok
run mt_handoff_fmt_refused 1 "$MPK" mt handoff fmt "$T/tasks.json"; keep fmt_no
same_keys mt_handoff_fmt "$T/fmt_ok.json" "$T/fmt_no.json"
run mt_handoff_fmt_usage 2 "$MPK" mt handoff fmt
cp -r "$EX/mt-tiny" "$T/hb"
run mt_handoff_build_ok 0 "$MPK" mt handoff build "$T/hb" --variant cpu-fp16 --dry-run; keep hb_ok
run mt_handoff_build_refused 1 "$MPK" mt handoff build "$T/nope"; keep hb_no
same_keys mt_handoff_build "$T/hb_ok.json" "$T/hb_no.json"
run mt_graph_usage 2 "$MPK" mt graph
run mt_inspect_usage 2 "$MPK" mt inspect "$EX/mt-tiny" --variant x

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
