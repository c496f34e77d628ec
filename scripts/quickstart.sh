#!/usr/bin/env bash
# Quick start: install what is missing, build, generate the bundled examples and check an MLC
# package and a MobileTransformers one.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
python3 scripts/gen_examples.py
echo
echo "\$ modelpkg check examples/gemma4-audio --lib examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm --device-features shader-f16"
build/modelpkg check examples/gemma4-audio --lib examples/gemma4-audio/lib/gemma4-audio-webgpu.wasm \
  --device-features shader-f16
echo
echo "\$ modelpkg check examples/mt-tiny --all-variants"
build/modelpkg check examples/mt-tiny --all-variants
