#!/usr/bin/env bash
# The CLI is a client of the public API: no file under src/cli includes anything with quotes but
# the CLI's own headers (internal headers live under src/ and are not on its include path either).
# Prints FILE:LINE for each offender. usage: test_cli_public_api.sh SOURCE_DIR
set -euo pipefail
SRC=$1
cd "$SRC/src/cli"
own=$(ls ./*.h | sed 's|^\./||')
bad=0
checked=0
for f in *.c *.h; do
  checked=$((checked + 1))
  while IFS=: read -r line text; do
    name=$(printf '%s\n' "$text" | sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p')
    [ -n "$name" ] || continue
    ok=0
    for h in $own; do [ "$name" = "$h" ] && ok=1; done
    if [ $ok = 0 ]; then
      echo "src/cli/$f:$line: includes \"$name\": the CLI uses only <modelpkg.h> and its own headers" >&2
      bad=$((bad + 1))
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
done
[ "$checked" -gt 10 ] || { echo "FAIL: only $checked files under src/cli" >&2; exit 1; }
if [ $bad -gt 0 ]; then
  echo "FAIL: $bad internal include(s) in src/cli" >&2
  exit 1
fi
echo "ok: $checked files in src/cli include only the CLI's own headers"
