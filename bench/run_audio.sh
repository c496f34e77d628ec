#!/usr/bin/env bash
# run_audio.sh — the audio frontend side by side with sox -v and WebLLM 0.2.86, in one run
# (issue 8's performance targets; docs/PERFORMANCE.md section 7).
#
#   bench/run_audio.sh                 # from the source tree, after building build-bench
#   ROUNDS=7 SECONDS_LONG=600 bench/run_audio.sh
#
# Needs Debian's espeak-ng, sox and python3-numpy (scripts/setup.sh), Node 20, and the WebLLM npm
# bundle (installed into .deps/ by scripts/deps_node.sh webllm). What is timed and how: the
# docstring of bench/audio_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
ROUNDS=${ROUNDS:-5}
SECONDS_LONG=${SECONDS_LONG:-600}
if [ ! -x "$BUILD/modelpkg" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF >/dev/null
  ninja -C "$BUILD" modelpkg_cli >/dev/null
fi
bash scripts/deps_node.sh webllm
exec /usr/bin/python3 bench/audio_bench.py "$BUILD/modelpkg" .deps/node_modules/@mlc-ai/web-llm/lib/index.js \
  --rounds "$ROUNDS" --seconds "$SECONDS_LONG"
