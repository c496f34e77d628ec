#!/usr/bin/env bash
# Quick start: install what is missing, build the tool, generate the bundled examples and check an
# MLC package and a MobileTransformers one. Set-up and build output go to build/quickstart.log, so
# what the terminal ends with is the two reports (the log's tail is shown when a step fails).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
log=build/quickstart.log
: >"$log"
step() {
  local what=$1; shift
  printf '%s ... ' "$what"
  if "$@" >>"$log" 2>&1; then echo ok; else
    echo "failed (last lines of $log):"; tail -25 "$log" | sed 's/^/  /'; exit 1
  fi
}
step "installing missing Debian packages, fetching the audio sources (scripts/setup.sh)" scripts/setup.sh
step "building the library and the tool (scripts/build.sh tool)" scripts/build.sh tool
step "writing the bundled examples (scripts/gen_examples.py)" python3 scripts/gen_examples.py
echo
echo "\$ modelpkg check examples/gemma4-audio --lib examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm --device-features shader-f16"
build/modelpkg check examples/gemma4-audio --lib examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm \
  --device-features shader-f16
echo
echo "\$ modelpkg check examples/mt-tiny --all-variants"
build/modelpkg check examples/mt-tiny --all-variants
