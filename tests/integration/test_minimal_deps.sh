#!/usr/bin/env bash
# The minimal build's library (MPK_MINIMAL=ON, docs/components.md) depends on nothing but libc, libm
# and the dynamic loader (libpthread allowed: older glibc splits it out): readelf -d's NEEDED entries.
# usage: test_minimal_deps.sh LIBRARY
set -uo pipefail
LIB="$1"
command -v readelf >/dev/null 2>&1 || { echo "SKIP: test_minimal_deps: readelf not found"; exit 77; }
needed=$(readelf -d "$LIB" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
[ -n "$needed" ] || { echo "FAIL: readelf -d $LIB lists no NEEDED entry: is it the library?"; exit 1; }
fail=0
while read -r lib; do
  case "$lib" in
    libc.so.6|libm.so.6|libpthread.so.0|ld-linux*.so.*) ;;
    *) echo "FAIL: $LIB needs $lib (the minimal build may need only libc, libm, pthread)"; fail=1 ;;
  esac
done <<<"$needed"
[ $fail = 0 ] && echo "ok: $LIB needs only: $(echo $needed)"
exit $fail
