#!/usr/bin/env bash
# The shared library exports only mpk_ symbols, every one declared in a public header, and every
# function a public header declares with MPK_API is exported. usage: test_exported_symbols.sh LIB SOURCE_DIR
set -uo pipefail
LIB="$1"; SRC="$2"
command -v nm >/dev/null 2>&1 || { echo "SKIP: nm (binutils) is not installed"; exit 77; }
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
nm -D --defined-only "$LIB" > "$TMP/nm" || { echo "FAIL: nm -D cannot read $LIB"; exit 1; }
# Sanitizer runtimes and the toolchain add their own symbols; this test is for plain builds.
if grep -qE ' (__asan|__ubsan|__sanitizer|__lsan)' "$TMP/nm"; then
  echo "SKIP: $LIB is a sanitizer build (its runtime exports its own symbols)"; exit 77
fi
awk '{print $NF}' "$TMP/nm" | sed 's/@.*//' | sort -u > "$TMP/exported"
cat "$SRC"/include/modelpkg.h "$SRC"/include/modelpkg/*.h | tr '\n' ' ' \
  | grep -oE 'MPK_API [^;(]*\(' | grep -oE 'mpk_[a-z0-9_]+ *\($' | tr -d ' (' | sort -u > "$TMP/declared"
fail=0
n=$(wc -l < "$TMP/exported")
if [ "$n" -lt 50 ]; then echo "FAIL: only $n exported symbols: is $LIB the library?"; fail=1; fi
other=$(grep -v '^mpk_' "$TMP/exported")
if [ -n "$other" ]; then echo "FAIL: exported symbols without the mpk_ prefix:"; echo "$other" | sed 's/^/  /'; fail=1; fi
undeclared=$(comm -23 "$TMP/exported" "$TMP/declared" | grep '^mpk_')
if [ -n "$undeclared" ]; then echo "FAIL: exported but declared in no public header (internal functions leaking):"; echo "$undeclared" | sed 's/^/  /'; fail=1; fi
missing=$(comm -13 "$TMP/exported" "$TMP/declared")
if [ -n "$missing" ]; then echo "FAIL: declared MPK_API in a public header but not exported:"; echo "$missing" | sed 's/^/  /'; fail=1; fi
[ $fail = 0 ] && echo "ok: $n exported symbols, all mpk_, all declared in include/, every MPK_API declaration exported"
exit $fail
