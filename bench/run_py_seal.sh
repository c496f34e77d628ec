#!/usr/bin/env bash
# run_py_seal.sh — the Python binding's acceptance measurements (issue 24, docs/python.md), each
# with its peers side by side in one run (bench/py_seal.py has the details):
#
#   bench/run_py_seal.sh                          # after scripts/build.sh release (or tool)
#   SIZE_MIB=512 ROUNDS=3 THREAD_MIB=128 TENSOR_MIB=256 bench/run_py_seal.sh   # a quick try
#   ONLY="seal" bench/run_py_seal.sh
#
# seal     an exporter-style script sealing a SIZE_MIB (2048) package through the binding
#          (modelpkg.mt.build, WORKERS threads: 0 = one per CPU) against the reference exporter's
#          pure-Python hashing loop (hashlib.sha256, f.read(1 MiB)), ROUNDS (5) interleaved rounds,
#          warm page cache; the median per-round ratio binding / exporter, target <= 0.3
# threads  two Python threads each sealing a package with a THREAD_MIB (256) MiB file against
#          the two seals one after the other: the median ratio, target <= 0.6 on 2 cores
# view     a TENSOR_MIB (1024) MiB tensor opened as numpy and through DLPack, every page read:
#          RssAnon (/proc/self/status) must not grow by the tensor's size (target < 1/8 of it)
#
# Runs Debian's /usr/bin/python3 (numpy for `view`) with the checkout's binding (python/) and
# BUILD_DIR's library (default build/). Everything lives in one temporary directory, removed at
# the end, also on failure; it needs SIZE_MIB + 1 GiB of disk.
set -euo pipefail
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build}
LIB=${MODELPKG_LIBRARY:-$BUILD_DIR/libmodelpkg.so}
PYTHON=${PYTHON:-/usr/bin/python3}
SIZE_MIB=${SIZE_MIB:-2048}
ROUNDS=${ROUNDS:-5}
WORKERS=${WORKERS:-0}
THREAD_MIB=${THREAD_MIB:-256}
TENSOR_MIB=${TENSOR_MIB:-1024}
ONLY=${ONLY:-seal threads view}
[[ -f $LIB ]] || { echo "run_py_seal.sh: $LIB not found (scripts/build.sh release, or set BUILD_DIR / MODELPKG_LIBRARY)" >&2; exit 2; }
"$PYTHON" -c 'import numpy' 2>/dev/null || { echo "run_py_seal.sh: $PYTHON has no numpy (python3-numpy)" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-pyseal.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
avail_mib=$(df -Pm "$WORK" | awk 'NR==2{print $4}')
(( avail_mib > SIZE_MIB + 1024 )) || { echo "run_py_seal.sh: $WORK has $avail_mib MiB free, needs $((SIZE_MIB + 1024))" >&2; exit 2; }
export PYTHONPATH="$SRC_DIR/python" MODELPKG_LIBRARY="$LIB" PYTHONDONTWRITEBYTECODE=1
for what in $ONLY; do
  case $what in
    seal)    "$PYTHON" "$SRC_DIR/bench/py_seal.py" seal "$WORK/seal" --size-mib "$SIZE_MIB" --rounds "$ROUNDS" --workers "$WORKERS"
             rm -rf "$WORK/seal" ;;
    threads) "$PYTHON" "$SRC_DIR/bench/py_seal.py" threads "$WORK/threads" --file-mib "$THREAD_MIB" --rounds "$ROUNDS"
             rm -rf "$WORK/threads" ;;
    view)    "$PYTHON" "$SRC_DIR/bench/py_seal.py" view "$WORK/view" --tensor-mib "$TENSOR_MIB"
             rm -rf "$WORK/view" ;;
    *) echo "run_py_seal.sh: unknown section '$what' (seal, threads, view)" >&2; exit 2 ;;
  esac
  echo
done
