#!/usr/bin/env bash
# The components from the command line (docs/components.md): `modelpkg --version` lists what the
# library holds, and a command of a component that is off exits 1 with the library's message
# "<function>: this modelpkg was built without the <component> component (-DMPK_WITH_<X>=ON)"
# naming that component; a command of a built component never says so.
# usage: test_cli_components.sh CLI SOURCE_DIR
set -uo pipefail
CLI="$1"; SRC="$2"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

comps=$("$CLI" --version | sed -n 's/^components: //p')
[ -n "$comps" ] || { echo "FAIL: modelpkg --version prints no components: line"; exit 1; }
case " $comps " in *" core "*) ;; *) bad "components: \"$comps\" lacks core" ;; esac
has() { case " $comps " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

mkdir -p "$T/empty"
printf 'RIFF' > "$T/a.wav"
printf '\377\330\377' > "$T/a.jpg"
printf '{}' > "$T/m.json"

# run COMPONENT WHAT ARGS...: with COMPONENT off, exit 1 and the message naming it (or a component it
# needs first that is off too); with it built, no such message.
run() {
  local comp="$1" what="$2"; shift 2
  "$CLI" "$@" >"$T/out" 2>"$T/err"; local rc=$?
  if has "$comp"; then
    if grep -q "this modelpkg was built without the $comp component" "$T/err"; then
      bad "$what: $comp is built, yet: $(cat "$T/err")"
    fi
    return
  fi
  [ $rc = 1 ] || bad "$what: exit $rc with $comp off (want 1)"
  if ! grep -qE "^modelpkg: mpk_[a-z0-9_]+: this modelpkg was built without the ($comp|$off_re) component \(-DMPK_WITH_[A-Z]+=ON\)$" "$T/err"; then
    bad "$what: with $comp off, stderr is not the library's message: $(cat "$T/err")"
  fi
  n=$((n + 1))
}
off_re=$(for c in mlc mt fetch audio image onnx; do has "$c" || printf '%s|' "$c"; done | sed 's/|$//')
[ -n "$off_re" ] || off_re=none
n=0
PKG="$SRC/examples/llava-image"
LIB="$PKG/lib/llava-image-webgpu.wasm"
MT="$SRC/examples/mt-tiny"
mkdir -p "$T/mlcpkg"
# Every command of each component (docs/components.md, "The components"), on inputs it would read.
run mlc "check (MLC)" check "$PKG"
run mlc "fit" fit "$PKG"
run mlc "mlc id" mlc id "$T/m.json"
run mlc "mlc metadata" mlc metadata "$LIB"
run mlc "mlc functions" mlc functions "$LIB"
run mlc "mlc compat" mlc compat "$LIB" --runtime "$T/m.json"
run mlc "mlc embed" mlc embed "$LIB" --artifact "$T/m.json" -o "$T/o.wasm"
run mlc "mlc plan" mlc plan --package "$PKG" --lib "$LIB" --segments "$T/m.json"
run mlc "mlc build" mlc build "$T/mlcpkg" --tasks "$T/m.json"
run mlc "mlc urls" mlc urls https://huggingface.co/org/model
run mt "check (MT)" check "$MT" --no-hash
run mt "mt tensors" mt tensors "$MT"
run mt "mt select" mt select "$MT"
run mt "mt plan" mt plan "$MT"
run onnx "mt inspect" mt inspect "$MT"
run mt "mt handoff fmt" mt handoff fmt "$T/m.json"
run mt "mt build" mt build "$T/empty" --describe "$SRC/examples/mt-tiny.build.json" --dry-run
run mt "mt reseal" mt reseal "$MT" --dry-run
run mt "mt merge" mt merge "$T/empty" --adapter "$SRC/examples/mt-tiny.adapter.safetensors"
run mt "mt restore" mt restore "$T/empty"
run mt "mt parity" mt parity "$T/empty"
run onnx "mt graph" mt graph "$T/empty"
run onnx "mt handoff build" mt handoff build "$T/empty"
run fetch "mt install" mt install "$T/empty" --repo-id org/name --cache "$T/cache"
run fetch "mt list" mt list --cache "$T/cache"
run fetch "mt remove" mt remove --cache "$T/cache" --repo-id org/name
run fetch "mt gc" mt gc --cache "$T/cache"
# An installed tree (flattened: inference/ and no variants/, docs/mt-cache.md): mt merge and mt
# restore take the fetch engine's stage lock on it, so without fetch they are refused naming it.
mkdir -p "$T/cache3/tree/inference"
run fetch "mt merge (installed tree)" mt merge "$T/cache3/tree" --adapter "$SRC/examples/mt-tiny.adapter.safetensors"
run fetch "mt restore (installed tree)" mt restore "$T/cache3/tree"
run fetch "mlc install" mlc install "$T/empty" --cache "$T/cache2"
run audio "audio" audio "$T/a.wav" --package "$SRC/examples/gemma4-audio"
run audio "audio --rate" audio "$T/a.wav" --rate 16000 --max-samples 100
run image "image" image "$T/a.jpg" --package "$PKG"
run image "image --mode" image "$T/a.jpg" --mode stretch --width 8 --height 8

# mt without onnx checks everything but the graph, and says so (docs/components.md); with onnx, no
# such note.
if has mt; then
  "$CLI" check "$MT" --no-hash >"$T/out" 2>&1; rc=$?
  if has onnx; then
    grep -q "graph not checked" "$T/out" && bad "check (MT): onnx is built, yet: $(cat "$T/out")"
  else
    [ $rc = 0 ] || bad "check (MT) without onnx: exit $rc: $(cat "$T/out")"
    grep -q 'graph not checked: built without the onnx component' "$T/out" ||
      bad "check (MT) without onnx: no note that the graph was not checked: $(cat "$T/out")"
  fi
fi

[ $fail = 0 ] && echo "ok: components \"$comps\"; $n commands of components that are off refused with the library's message"
exit $fail
