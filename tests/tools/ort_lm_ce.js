#!/usr/bin/env node
// The independent reference for modelpkg's cross-entropy: run a decoder-style graph in ONNX Runtime
// through npm onnxruntime-node (not modelpkg's binding) on TOKENS.json and print the mean next-token
// cross-entropy, computed here in double precision, as JSON {"cross_entropy": x, "vocab": V}.
// Inputs fed: input_ids, attention_mask (ones), position_ids (0..n-1), as modelpkg feeds them.
//
// usage: node ort_lm_ce.js MODEL.onnx TOKENS.json      (exit 3: onnxruntime-node cannot be loaded)
// onnxruntime-node: $MPK_NODE_MODULES, else <repo>/.deps/node_modules (scripts/deps_node.sh).
'use strict';
const fs = require('fs');
const path = require('path');

function loadOrt() {
  const dirs = [];
  if (process.env.MPK_NODE_MODULES) dirs.push(process.env.MPK_NODE_MODULES);
  dirs.push(path.resolve(__dirname, '..', '..', '.deps', 'node_modules'));
  for (const dir of dirs) {
    const where = path.join(dir, 'onnxruntime-node');
    if (!fs.existsSync(where)) continue;
    try { return require(where); } catch (e) { /* try the next */ }
  }
  process.stderr.write('ort_lm_ce: onnxruntime-node cannot be loaded (scripts/deps_node.sh)\n');
  process.exit(3);
}

async function main() {
  const [model, tokensFile] = process.argv.slice(2);
  if (!tokensFile) { process.stderr.write('usage: node ort_lm_ce.js MODEL.onnx TOKENS.json\n'); process.exit(2); }
  const ort = loadOrt();
  const ids = JSON.parse(fs.readFileSync(tokensFile, 'utf8'));
  const n = ids.length;
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  const big = (f) => BigInt64Array.from({length: n}, (_, i) => BigInt(f(i)));
  for (const name of session.inputNames) {
    if (name === 'input_ids') feeds[name] = new ort.Tensor('int64', big((i) => ids[i]), [1, n]);
    else if (name === 'attention_mask') feeds[name] = new ort.Tensor('int64', big(() => 1), [1, n]);
    else if (name === 'position_ids') feeds[name] = new ort.Tensor('int64', big((i) => i), [1, n]);
    else { process.stderr.write(`ort_lm_ce: input ${name} is not fed here\n`); process.exit(1); }
  }
  const out = await session.run(feeds);
  const logits = out.logits || out[session.outputNames[0]];
  const vocab = logits.dims[2];
  const d = logits.data;
  let sum = 0;
  for (let t = 0; t + 1 < n; t++) {
    let m = -Infinity;
    for (let v = 0; v < vocab; v++) m = Math.max(m, d[t * vocab + v]);
    let z = 0;
    for (let v = 0; v < vocab; v++) z += Math.exp(d[t * vocab + v] - m);
    sum += m + Math.log(z) - d[t * vocab + ids[t + 1]];
  }
  process.stdout.write(JSON.stringify({cross_entropy: sum / (n - 1), vocab}) + '\n');
}
main().catch((e) => { process.stderr.write(`ort_lm_ce: ${e.message}\n`); process.exit(1); });
