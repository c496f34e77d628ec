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
run mlc "mlc id" mlc id "$T/m.json"
run mlc "mlc urls" mlc urls https://huggingface.co/org/model
run mt "mt tensors" mt tensors "$SRC/examples/mt-tiny"
run onnx "mt graph" mt graph "$T/empty"
run fetch "mt install" mt install "$T/empty" --repo-id org/name --cache "$T/cache"
run fetch "mlc install" mlc install "$T/empty" --cache "$T/cache2"
run audio "audio" audio "$T/a.wav" --package "$SRC/examples/gemma4-audio"
run image "image" image "$T/a.jpg" --package "$SRC/examples/llava-image"

[ $fail = 0 ] && echo "ok: components \"$comps\"; $n commands of components that are off refused with the library's message"
exit $fail
