#!/usr/bin/env bash
# run_startup.sh — start-up as processes (issue 22): `modelpkg --version`, the start of `modelpkg
# check` (`check --help`: the process, main, the command's dispatch and its options, everything
# before it reads a package), and whole `check` runs of two small packages (examples/mt-tiny,
# examples/gemma4-audio; mt-tiny also without digests or graphs) side by side with `djpeg -version`
# (the issue's yardstick), `true` and a trivial C program (the floor), in one run; then the shared
# objects each loads (LD_DEBUG=libs), and the verdicts of issue 22's targets. What a whole `check`
# costs beyond its start is the check's work, libcrypto's opening and OpenSSL's initialisation
# first (docs/startup.md, "check"): those rows are reported, not judged.
#
#   cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF
#   ninja -C build-bench modelpkg_cli bench_startup
#   bench/run_startup.sh                 # ROUNDS=400 by default
#   ROUNDS=1000 BUILD_DIR=build bench/run_startup.sh
#
# bench_startup runs every peer once per round, interleaved, rotated (bench/bench_startup.c): the
# figures are medians over the rounds, a ratio is the median of the per-round ratios to
# `djpeg -version`. `load` is /proc/loadavg's 1-minute figure before and after (2 shared cores).
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
CLI=${CLI:-$BUILD_DIR/modelpkg}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_startup}
ROUNDS=${ROUNDS:-400}
[ -x "$CLI" ] && [ -x "$BENCH" ] || { echo "build modelpkg_cli and bench_startup first (see the header of $0)" >&2; exit 2; }
command -v djpeg >/dev/null || { echo "djpeg (libjpeg-turbo-progs) is needed" >&2; exit 2; }
TRUE=$(command -v true)
MT=$SRC_DIR/examples/mt-tiny
AUDIO=$SRC_DIR/examples/gemma4-audio
"$CLI" check "$MT" >/dev/null && "$CLI" check "$AUDIO" >/dev/null || { echo "the example packages do not check clean" >&2; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-startup.XXXXXX")
trap 'rm -rf "$T"' EXIT

load() { cut -d' ' -f1 /proc/loadavg; }
echo "modelpkg: $CLI ($("$CLI" --version | tr '\n' ' '))"
echo "rounds: $ROUNDS; load before: $(load)"
"$BENCH" "$ROUNDS" \
  -- "djpeg -version" djpeg -version \
  -- "modelpkg --version" "$CLI" --version \
  -- "modelpkg check --help" "$CLI" check --help \
  -- "modelpkg check mt-tiny" "$CLI" check "$MT" \
  -- "check mt-tiny --no-hash --no-graph" "$CLI" check "$MT" --no-hash --no-graph \
  -- "modelpkg check gemma4" "$CLI" check "$AUDIO" \
  -- "true" "$TRUE" \
  -- "trivial C (floor)" "$BENCH" --floor | tee "$T/times"
echo "load after: $(load)"

# Shared objects whose initialisers ld.so ran (one line each), per command.
libs() { LD_DEBUG=libs "$@" 2>&1 >/dev/null | sed -n 's/.*calling init: //p' >"$T/libs"; wc -l <"$T/libs"; }
echo
echo "shared objects loaded (LD_DEBUG=libs):"
n_djpeg=$(libs djpeg -version)
n_version=$(libs "$CLI" --version)
v_libs=$(tr '\n' ' ' <"$T/libs")
n_mt=$(libs "$CLI" check "$MT")
mt_libs=$(tr '\n' ' ' <"$T/libs")
n_audio=$(libs "$CLI" check "$AUDIO")
printf '  %-24s %s\n' "djpeg -version" "$n_djpeg" "modelpkg --version" "$n_version: $v_libs" \
  "modelpkg check mt-tiny" "$n_mt: $mt_libs" "modelpkg check gemma4" "$n_audio"

ratio() { awk -v p="$1" 'substr($0, 1, length(p)) == p { print $NF }' "$T/times"; }
r_version=$(ratio "modelpkg --version")
r_start=$(ratio "modelpkg check --help")
r_mt=$(ratio "modelpkg check mt-tiny")
r_bare=$(ratio "check mt-tiny --no-hash")
r_audio=$(ratio "modelpkg check gemma4")
verdict() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 <= b + 0) ? "MET" : "NOT MET" }'; }
echo
echo "verdicts (issue 22):"
echo "  modelpkg --version <= 1.2 x djpeg -version:   ${r_version} x  $(verdict "$r_version" 1.2)"
echo "  shared objects loaded by --version <= 5:      ${n_version}    $(verdict "$n_version" 5)"
echo "  modelpkg check starts (check --help) <= 1.2 x: ${r_start} x  $(verdict "$r_start" 1.2)"
echo "the checks themselves (start plus work; reported, not judged):"
echo "  modelpkg check mt-tiny:                       ${r_mt} x  (hashing: $("$CLI" --version | sed -n 's/^hashing: //p'))"
echo "  modelpkg check mt-tiny --no-hash --no-graph:  ${r_bare} x"
echo "  modelpkg check gemma4-audio:                  ${r_audio} x"
