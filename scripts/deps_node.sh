#!/usr/bin/env bash
# Install the npm packages the tests need into .deps/node_modules (git-ignored), if missing:
# onnxruntime-node, ONNX Runtime's Node.js binding, which ships the native CPU runtime in the npm
# package itself (tests/e2e, docs/mt-merge-e2e.md). --ignore-scripts: its postinstall only fetches
# optional GPU execution providers from outside the npm registry, which the CPU tests never use.
# Idempotent: does nothing when the pinned version is there and loads. Needs node and npm
# (scripts/setup.sh installs them).
#
# `deps_node.sh webllm` installs WebLLM's bundle (@mlc-ai/web-llm) instead: the reference of the URL
# differential test (test_url_diff: its cleanModelUrl), the audio benchmark and
# scripts/audio_quality.py (its decodeAudioInput).
set -euo pipefail
cd "$(dirname "$0")/.."
ORT_VERSION=1.30.0
WEBLLM_VERSION=0.2.86
DEPS=.deps

# `deps_node.sh js`: what the JavaScript package's tests use (js/test): TypeScript, which checks
# js/src/index.d.ts against a typed use of the API, and puppeteer-core, which drives Debian's
# chromium (it downloads no browser of its own).
TYPESCRIPT_VERSION=5.9.3
PUPPETEER_VERSION=24.43.1
if [ "${1:-}" = js ]; then
  have="$(node -e "
    const v = (p) => require('./$DEPS/node_modules/' + p + '/package.json').version;
    process.stdout.write(v('typescript') + ' ' + v('puppeteer-core'));" 2>/dev/null || true)"
  [ "$have" = "$TYPESCRIPT_VERSION $PUPPETEER_VERSION" ] && exit 0
  echo "deps_node: installing typescript@$TYPESCRIPT_VERSION puppeteer-core@$PUPPETEER_VERSION into $DEPS/node_modules" >&2
  mkdir -p "$DEPS"
  [ -f "$DEPS/package.json" ] || echo '{"private": true, "description": "modelpkg test dependencies (scripts/deps_node.sh)"}' >"$DEPS/package.json"
  npm install --prefix "$DEPS" --ignore-scripts --no-audit --no-fund --save-exact \
    "typescript@$TYPESCRIPT_VERSION" "puppeteer-core@$PUPPETEER_VERSION"
  exit 0
fi

if [ "${1:-}" = webllm ]; then
  have="$(node -e "process.stdout.write(require('./$DEPS/node_modules/@mlc-ai/web-llm/package.json').version)" 2>/dev/null || true)"
  [ "$have" = "$WEBLLM_VERSION" ] && exit 0
  echo "deps_node: installing @mlc-ai/web-llm@$WEBLLM_VERSION into $DEPS/node_modules" >&2
  mkdir -p "$DEPS"
  [ -f "$DEPS/package.json" ] || echo '{"private": true, "description": "modelpkg test dependencies (scripts/deps_node.sh)"}' >"$DEPS/package.json"
  npm install --prefix "$DEPS" --ignore-scripts --no-audit --no-fund --save-exact "@mlc-ai/web-llm@$WEBLLM_VERSION"
  exit 0
fi

have="$(node -e "
  const p = require('./$DEPS/node_modules/onnxruntime-node/package.json');
  require('./$DEPS/node_modules/onnxruntime-node');   // the native binding loads too
  process.stdout.write(p.version);" 2>/dev/null || true)"
if [ "$have" = "$ORT_VERSION" ]; then
  exit 0
fi
echo "deps_node: installing onnxruntime-node@$ORT_VERSION into $DEPS/node_modules${have:+ (found $have)}" >&2
mkdir -p "$DEPS"
# A package.json of our own in .deps, so that npm installs there and not in a parent's project.
[ -f "$DEPS/package.json" ] || echo '{"private": true, "description": "modelpkg test dependencies (scripts/deps_node.sh)"}' >"$DEPS/package.json"
npm install --prefix "$DEPS" --ignore-scripts --no-audit --no-fund --save-exact "onnxruntime-node@$ORT_VERSION"
node -e "require('./$DEPS/node_modules/onnxruntime-node')" ||
  { echo "deps_node: onnxruntime-node@$ORT_VERSION installed but does not load" >&2; exit 1; }
