#!/usr/bin/env bash
# modelpkg mlc plan end to end: every case of WebLLM's prefill vectors (artifact and legacy) through
# the test program mpk_prefill_case (tests/util/prefill_case.c), compared with its expectation (the same chunks and lengths, or the same error); a plan for
# each example package from a SEGMENTS.json, as text and JSON; refusals and usage errors.
set -euo pipefail
CLI=$1
SRC=$2
SHARED=$3
CASE=$4 # mpk_prefill_case: one conformance case in the mlc plan --json envelope
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PY=/usr/bin/python3

# ---- every conformance case through mpk_prefill_case
for f in prefill_chunks_artifact prefill_chunks_legacy; do
  $PY - "$SHARED/conformance/mlc-webllm/$f.json" "$T/$f" <<'PY'
import json, os, sys
cases = json.load(open(sys.argv[1]))["cases"]
os.makedirs(sys.argv[2])
for i, c in enumerate(cases):
    case = {k: v for k, v in c.items() if not k.startswith("expected") and k != "adapter_outputs_disposed"}
    json.dump(case, open(f"{sys.argv[2]}/{i:02d}.case.json", "w"))
    json.dump(c, open(f"{sys.argv[2]}/{i:02d}.full.json", "w"))
PY
  n=0
  for c in "$T/$f"/*.case.json; do
    full=${c%.case.json}.full.json
    set +e
    "$CASE" "$c" --json >"$T/out.json" 2>"$T/err"
    rc=$?
    set -e
    [ $rc -le 1 ] || fail "$c: exit $rc: $(cat "$T/err")"
    $PY - "$full" "$T/out.json" "$T/err" "$rc" <<'PY' || fail "$c differs from WebLLM"
import json, sys
case, out, err, rc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), int(sys.argv[4])
name = case.get("name", sys.argv[1])
# the one --json envelope (docs/CLI.md): version, command, ok, the command's keys, problems, notes
assert list(out)[:3] == ["modelpkg_version", "command", "ok"] and list(out)[-2:] == ["problems", "notes"], out
assert out["command"] == "mlc plan" and out["ok"] == (rc == 0), out
body = {k: v for k, v in out.items() if k not in ("modelpkg_version", "command", "ok", "problems", "notes")}
if "expected_error" in case:
    first, _, rest = case["expected_error"]["message"].partition("\n")
    assert rc == 1, (name, "accepted", out)
    msg = out["problems"][0]["message"]
    assert first in msg and rest in msg, (name, out)
    assert first in err, (name, err)
elif "expected_chunks" in case and "input" not in case:
    assert rc == 0, (name, err)
    assert body == {"prompt_length": case["expected_prompt_length"], "chunks": case["expected_chunks"]}, (name, out)
else:
    assert rc == 0, (name, err)
    assert body == {"chunks": case["expected_chunks"], "chunk_lens": case["expected_chunk_lens"]}, (name, out)
PY
    n=$((n + 1))
  done
  echo "$f: $n cases as WebLLM"
done
[ "$(ls "$T/prefill_chunks_artifact"/*.case.json | wc -l)" = 15 ] || fail "artifact case count"
[ "$(ls "$T/prefill_chunks_legacy"/*.case.json | wc -l)" = 9 ] || fail "legacy case count"

# ---- a package: Gemma 4 style audio (tokens pair)
G=$SRC/examples/gemma4-audio
cat >"$T/seg.json" <<'EOF'
{"segments": [{"text": [3, 4, 5]}, {"audio": {"rows": 1500}}, {"text": [6]}]}
EOF
out=$("$CLI" mlc plan --package "$G" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/seg.json")
mapfile -t lines <<<"$out"; printf '%s\n' "${lines[@]:0:12}"
grep -q "prefill_chunk_size 1024 (_metadata), context_window_size 4096" <<<"$out" || fail "window line"
grep -q "1506 positions after 0 in the KV cache, 4 prefill calls, 1 adapter item" <<<"$out" || fail "prompt line"
grep -q "token ids \[1, 4\], modality ids \[1, 4\]" <<<"$out" || fail "tokens pair call shapes"
grep -q "embeddings = embed(3 4 5 256000)" <<<"$out" || fail "text chunk"
grep -q "item 0 (audio_embed) rows 1024..1499, token ids: placeholder 258881 x 476" <<<"$out" || fail "second slice"
grep -q "decode:   decode_tokens(token ids \[1, 1\], kv, params)" <<<"$out" || fail "decode line"
"$CLI" mlc plan --package "$G" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/seg.json" --json >"$T/g.json"
$PY - "$T/g.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["generation_inputs"] == "tokens" and r["functions"] == {"embed_tokens": "embed", "prefill": "prefill_tokens", "decode": "decode_tokens"}, r
assert r["prompt_length"] == 1506 and r["prefill_chunk_size"] == 1024 and r["prefill_chunk_size_from"] == "_metadata"
c = r["chunks"]
assert [x["embedding_rows"] for x in c] == [None, [0, 1024], [1024, 476], None]
assert [x["offset"] for x in c] == [0, 4, 1028, 1504] and [x["item"] for x in c] == [None, 0, 0, None]
assert c[3]["token_ids"] == [258883, 6] and set(c[1]["modality_ids"]) == {1}
assert r["items"] == [{"kind": "audio", "segment": 1, "adapter_function": "audio_embed", "rows": 1500, "offset": 4, "chunks": [1, 2]}]
PY

# The same recording does not fit once the KV cache is nearly full: WebLLM's message, at the item.
echo '{"filled_kv_cache_length": 3000, "segments": [{"text": [3]}, {"audio": {"rows": 1500}}]}' >"$T/full.json"
set +e
"$CLI" mlc plan --package "$G" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/full.json" 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] || fail "overflow: exit $rc"
grep -q "full.json: /segments/1: Prompt tokens exceed context window size: number of prompt tokens: 1502; context window size: 4096" "$T/err" \
  || fail "overflow message: $(cat "$T/err")"

# An image the package does not declare.
echo '{"segments": [{"image": {}}]}' >"$T/img.json"
set +e
"$CLI" mlc plan --package "$G" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/img.json" --json >"$T/o" 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] || fail "undeclared image: exit $rc"
$PY -c "import json; e=json.load(open('$T/o'))['problems'][0]; assert e['code']=='unsupported' and e['pointer']=='/segments/0' and 'does not declare an image input' in e['message'], e"

# A malformed SEGMENTS.json names the field.
echo '{"segments": [{"audio": {"rows": 0}}]}' >"$T/bad.json"
set +e
"$CLI" mlc plan --package "$G" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/bad.json" 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] || fail "bad segments: exit $rc"
grep -q "bad.json: /segments/0/audio/rows" "$T/err" || fail "bad segments message: $(cat "$T/err")"

# ---- a package: LLaVA style image (embeds pair); its rows come from num_embeddings
L=$SRC/examples/llava-image
echo '{"segments": [{"text": [1, 2]}, {"image": {}}, {"text": [3]}]}' >"$T/l.json"
out=$("$CLI" mlc plan --package "$L" --lib "$L/lib/llava-image-webgpu.wasm" --segments "$T/l.json")
grep -q "embeds pair: prefill prefill, decode decode, embed_tokens embed" <<<"$out" || fail "llava roles"
grep -q "579 positions" <<<"$out" || fail "llava length"
grep -q "prefill(embeddings \[1, 576, hidden\], kv, params)" <<<"$out" || fail "llava image call"
grep -q "token ids \[1," <<<"$out" && fail "the embeds pair takes no token ids"
grep -q "decode:   decode(embed(token id) as \[1, 1, hidden\], kv, params)" <<<"$out" || fail "llava decode"

# A library bound to another package is refused (the binding's error).
set +e
"$CLI" mlc plan --package "$G" --lib "$L/lib/llava-image-webgpu.wasm" --segments "$T/seg.json" 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] || fail "mismatched library: exit $rc"
# A package without a manifest takes the legacy chunker: said so.
set +e
"$CLI" mlc plan --package "$SRC/examples/legacy-no-manifest" --lib "$G/lib/gemma4-audio-webgpu.wasm" --segments "$T/seg.json" 2>"$T/err"
rc=$?
set -e
[ $rc = 1 ] && grep -q "legacy chunker" "$T/err" && grep -q 'write one with `modelpkg mlc build .*--tasks TASKS.json' "$T/err" || fail "legacy package: exit $rc $(cat "$T/err")"

# ---- usage errors exit 2
for args in "" "--package $G" "--package $G --lib x" "--case a --package $G" "--case" "--bogus" "extra" "--case a --case b"; do
  set +e
  # shellcheck disable=SC2086
  "$CLI" mlc plan $args >/dev/null 2>&1
  rc=$?
  set -e
  [ $rc = 2 ] || fail "usage '$args': exit $rc"
done
help=$("$CLI" mlc plan --help)
case $help in *"usage: modelpkg mlc plan --package DIR"*) ;; *) fail "help" ;; esac
case $help in *--case*) fail "help still offers --case" ;; esac
help=$("$CLI" mlc --help) || fail "mlc help: exit $?"
grep -q "mlc plan --package DIR --lib LIB --segments SEGMENTS.json" <<<"$help" || fail "mlc help lists plan"
echo "ok"
