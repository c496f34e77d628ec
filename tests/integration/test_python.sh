#!/usr/bin/env bash
# The Python binding (python/, importable as modelpkg; docs/python.md): its pytest suite — the
# conformance vectors through the binding, the tiny fixture sealed byte-identical, check reports
# equal to `modelpkg check --json`, the ctypes structs probed against the headers, tensor views —
# run by Debian's /usr/bin/python3 (python3-pytest, python3-numpy) against this build's
# libmodelpkg.so and modelpkg. Without /usr/bin/python3 or its pytest the test is skipped (exit 77,
# a SKIP line naming it); without numpy only the tensor-view, audio and image tests are (pytest
# names them).
# usage: test_python.sh LIBMODELPKG MODELPKG SOURCE_DIR SHARED_DIR
set -uo pipefail
LIB="$1"; MPK="$2"; SRC="$3"; SHARED="$4"
. "$SRC/tests/integration/expect.sh"
need_tool /usr/bin/python3
need_py pytest
have_py numpy || skip_case "tensor views, audio and images (tests/test_tensors.py, tests/test_media.py)" "/usr/bin/python3 module numpy"
# -p no:cacheprovider and no bytecode: nothing is written into the source tree.
exec env MODELPKG_LIBRARY="$LIB" MODELPKG_CLI="$MPK" MPK_SHARED_DIR="$SHARED" PYTHONDONTWRITEBYTECODE=1 \
  /usr/bin/python3 -m pytest -q -rs -p no:cacheprovider "$SRC/python/tests"
