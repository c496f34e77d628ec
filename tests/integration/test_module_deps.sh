#!/usr/bin/env bash
# Which module may include which (docs/ARCHITECTURE.md, "Modules"): every `#include "<module>/..."`
# under src/ must follow the table below, and src/cli may include only the public headers and its
# own. A new dependency is a design decision: change the table and the document together.
# usage: test_module_deps.sh SOURCE_DIR
set -uo pipefail
SRC="$1/src"
declare -A may=(
  [core]=""
  [fetch]="core"
  [media]="core"
  [objfile]="core"
  [mlc]="core objfile"
  [ort]="core"
  [mt]="core fetch ort"
)
bad=0
for mod in "${!may[@]}"; do
  [ -d "$SRC/$mod" ] || { echo "FAIL: src/$mod is missing (update this table)"; bad=1; continue; }
  while IFS= read -r hit; do
    file="${hit%%:*}"; rest="${hit#*:}"; line="${rest%%:*}"
    inc="$(sed -E 's/.*#include "([^/"]+)\/.*/\1/' <<<"$rest")"
    [ "$inc" = "$mod" ] && continue
    case " ${may[$mod]} " in *" $inc "*) continue ;; esac
    echo "FAIL: ${file#"$1"/}:$line: module $mod includes $inc/ (allowed: ${may[$mod]:-none})"; bad=1
  done < <(grep -rnE '#include "[a-z]+/' "$SRC/$mod" --include='*.[ch]' | grep -v '"modelpkg/')
done
# Every module directory is in the table (a new one is a decision too).
for d in "$SRC"/*/; do
  m="$(basename "$d")"
  [ "$m" = cli ] && continue
  [ -n "${may[$m]+set}" ] || { echo "FAIL: src/$m is not in the module table"; bad=1; }
done
# The CLI is a client of the public API: "modelpkg.h", "modelpkg/<module>.h" and its own headers.
while IFS= read -r hit; do
  file="${hit%%:*}"; rest="${hit#*:}"; line="${rest%%:*}"
  inc="$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$rest")"
  case "$inc" in modelpkg.h | modelpkg/*.h) continue ;; esac
  [ -f "$SRC/cli/$inc" ] && [ "${inc#*/}" = "$inc" ] && continue
  echo "FAIL: ${file#"$1"/}:$line: the CLI includes \"$inc\" (only the public headers and src/cli's own)"; bad=1
done < <(grep -rnE '#include "' "$SRC/cli" --include='*.[ch]')
[ "$bad" -eq 0 ] && echo "module dependencies: ok"
exit "$bad"
