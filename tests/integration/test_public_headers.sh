#!/usr/bin/env bash
# Each public header compiles on its own, twice included, as C11 and as C++17, with
# -Wall -Wextra -Werror -pedantic; every MPK_*_OPTIONS_INIT initializer is usable under the same flags
# in both languages. The harness first proves it can fail (a header that does not compile alone).
# usage: test_public_headers.sh SOURCE_DIR C_COMPILER [C_COMPILER_FLAGS...] (a cross build's --sysroot)
set -uo pipefail
SRC="$1"; CC="$2"; CC_FLAGS=("${@:3}")
CXX=""
for c in c++ g++ clang++; do
  if command -v "$c" >/dev/null 2>&1; then CXX="$c"; break; fi
done
if [ -z "$CXX" ]; then echo "SKIP: no C++ compiler (c++, g++ or clang++) to compile the headers as C++17"; exit 77; fi
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
FLAGS=(-Wall -Wextra -Werror -pedantic -fsyntax-only)
fail=0

# compile LANG FILE: 0 when it compiles cleanly
compile() {
  if [ "$1" = c ]; then "$CC" "${CC_FLAGS[@]}" -std=c11 "${FLAGS[@]}" -I"$SRC/include" -I"$TMP" -x c "$2" 2>"$TMP/out"
  else "$CXX" -std=c++17 "${FLAGS[@]}" -I"$SRC/include" -I"$TMP" -x c++ "$2" 2>"$TMP/out"; fi
}

# The harness must fail on a header that does not compile alone (size_t without <stddef.h>).
printf 'int broken(size_t n);\n' > "$TMP/broken.h"
printf '#include "broken.h"\n' > "$TMP/broken.c"
for lang in c cxx; do
  if compile "$lang" "$TMP/broken.c"; then echo "FAIL: the harness accepted a broken header ($lang)"; fail=1; fi
done

headers=(modelpkg.h)
for h in "$SRC"/include/modelpkg/*.h; do headers+=("modelpkg/$(basename "$h")"); done
for h in "${headers[@]}"; do
  printf '#include <%s>\n#include <%s>\nint mpk_header_test_anchor_;\n' "$h" "$h" > "$TMP/one.c"
  for lang in c cxx; do
    if compile "$lang" "$TMP/one.c"; then echo "ok: $h ($lang)"
    else echo "FAIL: $h does not compile on its own as ${lang/cxx/C++17}"; sed -n '1,20s/^/  /p' "$TMP/out"; fail=1; fi
  done
done

# Every options initializer, used as documented.
inits=$(grep -ho '^#define MPK_[A-Z_]*_OPTIONS_INIT ' "$SRC"/include/modelpkg/*.h | awk '{print $2}')
n=0
{
  echo '#include <modelpkg.h>'
  echo 'size_t mpk_init_test_(void);'
  echo 'size_t mpk_init_test_(void) {'
  echo '  size_t s = 0;'
  for m in $inits; do
    t=$(grep -h "^#define $m " "$SRC"/include/modelpkg/*.h | sed -E 's/.*MPK_OPTIONS_INIT\((mpk_[a-z_]+)\).*/\1/')
    echo "  { $t o = $m; s += o.struct_size; }"
  done
  echo '  return s;'
  echo '}'
} > "$TMP/inits.c"
n=$(echo "$inits" | wc -w)
if [ "$n" -lt 12 ]; then echo "FAIL: found $n options initializers, expected at least 12"; fail=1; fi
for lang in c cxx; do
  if compile "$lang" "$TMP/inits.c"; then echo "ok: $n options initializers ($lang)"
  else echo "FAIL: an options initializer does not compile as ${lang/cxx/C++17}"; sed -n '1,20s/^/  /p' "$TMP/out"; fail=1; fi
done
exit $fail
