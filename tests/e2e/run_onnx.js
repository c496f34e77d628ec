#!/usr/bin/env node
// Run an ONNX model in ONNX Runtime (npm onnxruntime-node, the native CPU runtime) on float32 inputs
// and write every graph output as JSON: {"name": {"dims": [...], "type": "float32", "data": [...]}}.
// The model's external data (.bin files) is resolved relative to the model file's directory.
//
// usage: node run_onnx.js MODEL.onnx INPUTS.json OUT.json  |  node run_onnx.js --version
//   INPUTS.json: {"name": {"dims": [...], "data": [...]}, ...}
// onnxruntime-node is looked up in $MPK_NODE_MODULES, then in <repo>/.deps/node_modules
// (scripts/deps_node.sh installs it there). Exit 3 when it cannot be loaded.
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  return require('./load_ort.js')('run_onnx');
}

async function main() {
  const [model, inputsFile, outFile] = process.argv.slice(2);
  if (model === '--version') {  // the test's preflight: is the runtime loadable at all?
    process.stdout.write(`onnxruntime-node ${loadOrt().env.versions.node}, node ${process.version}\n`);
    return;
  }
  if (!outFile) {
    process.stderr.write('usage: node run_onnx.js MODEL.onnx INPUTS.json OUT.json\n');
    process.exit(2);
  }
  const ort = loadOrt();
  const spec = JSON.parse(fs.readFileSync(inputsFile, 'utf8'));
  const feeds = {};
  for (const [name, t] of Object.entries(spec)) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (t.data.length !== n) throw new Error(`input ${name}: ${t.data.length} values for dims ${t.dims}`);
    feeds[name] = new ort.Tensor('float32', Float32Array.from(t.data), t.dims);
  }
  // A path, not a buffer: ONNX Runtime then resolves each initializer's external-data location
  // against the model's directory, as a device runtime loading the package does.
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  const results = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const t = results[name];
    // float32 -> JS number is exact, and JSON prints the shortest string that reads back to it.
    out[name] = { dims: Array.from(t.dims), type: t.type, data: Array.from(t.data) };
  }
  fs.writeFileSync(outFile, JSON.stringify(out) + '\n');
  process.stdout.write(`run_onnx: ${path.basename(model)}: ${session.outputNames.map((n) =>
    `${n} [${out[n].dims}] ${out[n].type}`).join(', ')} (onnxruntime-node ${ort.env.versions.node})\n`);
}

main().catch((e) => {
  process.stderr.write('run_onnx: ' + (e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
