#!/usr/bin/env bash
# modelpkg mlc embed: the Gemma 4 and LLaVA artifacts of the examples written into the three real
# WebAssembly libraries (three runtime generations): each output validates (wasm-validate, Debian's
# wabt), compiles in Node's WebAssembly.compile, reads back with `mlc metadata` byte-exactly with
# the given artifact, differs from its input only inside the _metadata text, and binds with `check`.
# Then hand-built modules (a full bind; no room; a split or duplicated _metadata) and the refusals:
# an artifact too large, a non-wasm input, a broken module, an invalid artifact, OUT == LIB, an
# existing OUT without --force; none leaves an output file.
# usage: test_mlc_embed.sh MODELPKG SRC SHARED
set -uo pipefail
. "$(dirname "$0")/expect.sh"
cli="$1" src="$2" shared="$3"
need_tool /usr/bin/python3
py=/usr/bin/python3
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
libs="$shared/realdata/mlc-libs"
G="$src/examples/gemma4-audio" L="$src/examples/llava-image"

# ---- the artifacts, from the examples' libraries (pretty-printed: the minifier has work to do)
for ex in "$G/lib/gemma4-audio-webgpu.wasm:gemma4" "$L/lib/llava-image-webgpu.wasm:llava"; do
  "$cli" mlc metadata "${ex%%:*}" >"$tmp/${ex##*:}.md.json" || bad "metadata of ${ex%%:*}"
  "$py" - "$tmp/${ex##*:}.md.json" "$tmp/${ex##*:}.art.json" <<'EOF' || bad "artifact of ${ex##*:}"
import json, sys
md = json.load(open(sys.argv[1]))
json.dump(md["artifact"], open(sys.argv[2], "w"), indent=2)
EOF
done

# verify LIB OUT ART OFFSET: OUT is LIB except inside its _metadata text, which reads back with
# `mlc metadata` byte-exactly, holds ART as "artifact" and every other member of LIB's _metadata.
cat >"$tmp/verify.py" <<'EOF'
import json, sys
lib, out, art, md_out, offset = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
a, b = open(lib, "rb").read(), open(out, "rb").read()
text = open(md_out, "rb").read()
n = len(text)
assert len(a) == len(b), "sizes differ"
assert b[offset:offset + n] == text, "mlc metadata does not print the bytes at the reported offset"
assert int.from_bytes(b[offset - 8:offset], "little") == n, "length prefix"
assert a[:offset] == b[:offset] and a[offset + n:] == b[offset + n:], "bytes outside the _metadata changed"
old = json.loads(a[offset:offset + n])
new = json.loads(text)
assert new.pop("artifact") == json.load(open(art)), "artifact differs"
old.pop("artifact", None)
assert old == new, "other _metadata members changed"
assert text.endswith(b"}"), "text must end with }"
EOF

# check_bind JSON PROGRAM: `check --json` bound the package's task to the embedded artifact (the
# interface_id agreed, the binding resolved), and what it reports besides is only what says the
# library is another model's (its parameters, model_type, quantization, resources) or, once the
# function table is checked, the artifact's role functions this library does not have.
cat >"$tmp/bind.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
b = d.get("binding")
assert b and b["executor"] == "generation" and b["prefill"] and b["decode"], "no binding: %r" % (d["problems"],)
allowed = ("/params", "/model_type", "/quantization", "/artifact/resources", "/records/", "/artifact/programs/")
for p in d["problems"]:
    ptr = p.get("pointer") or ""
    assert p["code"] == "mismatch", p
    assert ptr.startswith(allowed) or (ptr == "" and "parameters" in p["message"]) or "function" in p["message"], p
    assert "interface" not in p["message"], p
EOF

have_wv=false; case_needs wasm-validate "wasm-validate of the outputs" && have_wv=true
have_node=false; case_needs node "WebAssembly.compile of the outputs" && have_node=true

for lib in "$libs"/Phi-3-*.wasm "$libs"/TinyLlama-*.wasm "$libs"/snowflake-*.wasm; do
  name="$(basename "$lib" .wasm)"
  for art in gemma4 llava; do
    out="$tmp/$name.$art.wasm" md="$tmp/$name.$art.md"
    expect "embed_${name}_$art" 0 'embedded at byte [0-9]+ \([0-9]+ bytes, [0-9]+ of them padding\)' -- \
      "$cli" mlc embed "$lib" --artifact "$tmp/$art.art.json" -o "$out"
    [ -f "$out" ] || { bad "no output for $name $art"; continue; }
    if $have_wv; then
      expect "validate_${name}_$art" 0 '' -- wasm-validate "$out"
    fi
    if $have_node; then
      expect "compile_${name}_$art" 0 '^compiled$' -- node -e \
        'WebAssembly.compile(require("fs").readFileSync(process.argv[1])).then(() => console.log("compiled"), e => { console.error(String(e)); process.exit(1) })' "$out"
    fi
    "$cli" mlc metadata "$out" >"$md" || bad "mlc metadata $out"
    off="$("$py" -c 'import sys; a=open(sys.argv[1],"rb").read(); t=open(sys.argv[2],"rb").read(); print(a.find(t))' "$out" "$md")"
    check "roundtrip_${name}_$art" "$py" "$tmp/verify.py" "$lib" "$out" "$tmp/$art.art.json" "$md" "$off"
    pkg="$G"; [ "$art" = llava ] && pkg="$L"
    "$cli" check "$pkg" --lib "$out" --json >"$tmp/check.json"
    check "bind_${name}_$art" "$py" "$tmp/bind.py" "$tmp/check.json"
  done
done

# ---- replacing an artifact: LLaVA's over the Gemma 4 one already embedded; the same room again
P="$(ls "$libs"/Phi-3-*.wasm)" PG="$tmp/$(basename "$P" .wasm).gemma4.wasm"
expect replace 0 'embedded at byte' -- "$cli" mlc embed "$PG" --artifact "$tmp/llava.art.json" -o "$tmp/replaced.wasm"
"$cli" mlc metadata "$tmp/replaced.wasm" >"$tmp/replaced.md" || bad "metadata of replaced"
check replace_roundtrip "$py" "$tmp/verify.py" "$P" "$tmp/replaced.wasm" "$tmp/llava.art.json" "$tmp/replaced.md" \
  "$("$py" -c 'import sys; a=open(sys.argv[1],"rb").read(); t=open(sys.argv[2],"rb").read(); print(a.find(t))' "$tmp/replaced.wasm" "$tmp/replaced.md")"
check replace_same_as_direct cmp -s "$tmp/replaced.wasm" "$tmp/$(basename "$P" .wasm).llava.wasm"

# ---- hand-built modules: memory, the gemma4 _metadata without its artifact in a data segment
cat >"$tmp/mkwasm.py" <<'EOF'
import json, sys
mode, md_path, out = sys.argv[1], sys.argv[2], sys.argv[3]
md = json.load(open(md_path)); md.pop("artifact", None)
text = (json.dumps(md, separators=(",", ":")) if mode == "compact" else json.dumps(md, indent=10)).encode()  # room to spare
blob = len(text).to_bytes(8, "little") + text
def leb(v):
    o = bytearray()
    while True:
        c = v & 0x7F; v >>= 7
        o.append(c | (0x80 if v else 0))
        if not v: return bytes(o)
def sec(i, body): return bytes([i]) + leb(len(body)) + body
def active(addr, data): return b"\x00\x41" + leb(addr) + b"\x0b" + leb(len(data)) + data
segs = [active(1024, b"before"), active(4096, blob)]
if mode == "split":      # the length prefix and the text in two adjacent segments
    segs = [active(4096, blob[:8]), active(4104, blob[8:])]
if mode == "duplicate":  # another copy in a passive segment, outside memory
    segs.append(b"\x01" + leb(len(blob)) + blob)
m = b"\0asm\x01\0\0\0" + sec(5, b"\x01\x00\x01") + sec(11, leb(len(segs)) + b"".join(segs))
open(out, "wb").write(m)
EOF
for mode in pretty compact split duplicate; do "$py" "$tmp/mkwasm.py" $mode "$tmp/gemma4.md.json" "$tmp/$mode.wasm" || bad "mkwasm $mode"; done
expect hand_embed 0 'embedded at byte' -- "$cli" mlc embed "$tmp/pretty.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/pretty.out.wasm"
$have_wv && expect hand_validate 0 '' -- wasm-validate "$tmp/pretty.out.wasm"
"$cli" check "$G" --lib "$tmp/pretty.out.wasm" --json >"$tmp/hand.json"
# the package's own _metadata with its own artifact: nothing says "another model" any more
check hand_binds "$py" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["binding"]["prefill"] == "prefill_tokens", d["problems"]
bad = [p for p in d["problems"] if "function" not in p["message"]]
assert not bad, bad' "$tmp/hand.json"

# ---- refusals: each leaves no output file (and no temporary file beside it)
expect too_large 1 'needs [0-9]+ bytes, and only [0-9]+ are available' -- \
  "$cli" mlc embed "$tmp/compact.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/r1.wasm"
expect split 1 'not laid out by one data segment alone' -- \
  "$cli" mlc embed "$tmp/split.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/r2.wasm"
expect duplicate 1 'would not read back' -- \
  "$cli" mlc embed "$tmp/duplicate.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/r3.wasm"
expect not_wasm_so 1 'WebAssembly libraries only, not into this ELF.*rodata' -- \
  "$cli" mlc embed "$libs/Llama-2-7b-chat-hf-q4f16_1-mali.so" --artifact "$tmp/gemma4.art.json" -o "$tmp/r4.wasm"
expect not_wasm_tar 1 'WebAssembly libraries only, not into this .*(tar|gzip).*_devc\.o' -- \
  "$cli" mlc embed "$libs/phi-2-q4f16_1-android.tar" --artifact "$tmp/gemma4.art.json" -o "$tmp/r5.wasm"
expect not_wasm_json 1 'not a compiled library' -- \
  "$cli" mlc embed "$tmp/gemma4.art.json" --artifact "$tmp/gemma4.art.json" -o "$tmp/r6.wasm"
# a module with a section id no WebAssembly version has (244)
printf '\000asm\001\000\000\000\364\000' > "$tmp/broken.wasm"
expect broken_module 1 'WebAssembly module: unknown section id' -- \
  "$cli" mlc embed "$tmp/broken.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/r7.wasm"
"$py" -c 'import json,sys; a=json.load(open(sys.argv[1])); a["schema"]="mlc.other"; json.dump(a, open(sys.argv[2],"w"))' \
  "$tmp/gemma4.art.json" "$tmp/bad.art.json"
expect invalid_artifact 1 'bad\.art\.json.*schema' -- \
  "$cli" mlc embed "$P" --artifact "$tmp/bad.art.json" -o "$tmp/r8.wasm"
printf '{"schema":' >"$tmp/broken.art.json"
expect broken_artifact 1 'broken\.art\.json' -- "$cli" mlc embed "$P" --artifact "$tmp/broken.art.json" -o "$tmp/r9.wasm"
expect missing_artifact 1 'nope\.json' -- "$cli" mlc embed "$P" --artifact "$tmp/nope.json" -o "$tmp/r10.wasm"
cp "$P" "$tmp/self.wasm"
expect out_is_lib 1 'is the input library' -- \
  "$cli" mlc embed "$tmp/self.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/self.wasm" --force
ln -s self.wasm "$tmp/self-link.wasm"
expect out_is_lib_link 1 'is the input library' -- \
  "$cli" mlc embed "$tmp/self.wasm" --artifact "$tmp/gemma4.art.json" -o "$tmp/self-link.wasm" --force
check input_unchanged cmp -s "$P" "$tmp/self.wasm"
printf 'keep me\n' >"$tmp/exists.wasm"
expect exists 1 'exists; give --force to replace it' -- \
  "$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json" -o "$tmp/exists.wasm"
check exists_kept "$py" -c 'import sys; assert open(sys.argv[1]).read() == "keep me\n"' "$tmp/exists.wasm"
expect force 0 'embedded at byte' -- "$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json" -o "$tmp/exists.wasm" --force
check force_replaced cmp -s "$tmp/exists.wasm" "$PG"
for r in 1 2 3 4 5 6 7 8 9 10; do [ ! -e "$tmp/r$r.wasm" ] || bad "refusal r$r left an output file"; done
leftovers=("$tmp"/*.tmp.*); [ ! -e "${leftovers[0]}" ] && ok no_temporary_files || bad "temporary files left: ${leftovers[*]}"

# ---- --json, standard output, usage errors
expect json 0 '"metadata_offset": [0-9]+' -- \
  "$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json" -o "$tmp/j.wasm" --json
expect json_refusal 1 '"code": "unsupported"' -- \
  "$cli" mlc embed "$libs/Llama-2-7b-chat-hf-q4f16_1-mali.so" --artifact "$tmp/gemma4.art.json" -o "$tmp/j2.wasm" --json
"$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json" -o - >"$tmp/stdout.wasm" 2>/dev/null || bad "embed to stdout"
check stdout_same cmp -s "$tmp/stdout.wasm" "$PG"
expect no_artifact 2 'missing --artifact' -- "$cli" mlc embed "$P" -o "$tmp/u.wasm"
expect no_output 2 'missing -o' -- "$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json"
expect json_stdout 2 'standard output' -- "$cli" mlc embed "$P" --artifact "$tmp/gemma4.art.json" -o - --json
expect listed 0 'embed' -- "$cli" mlc --help
finish
