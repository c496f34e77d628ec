#!/usr/bin/env node
// The parity gate's reference, independent of modelpkg: the mean next-token cross-entropy of a
// decoder-style ONNX graph (input_ids int64 [1, n] -> logits [1, n, vocab]) over the token ids of
// TOKENS.json ({"tokens": [...]}), computed in onnxruntime-node with the definition of
// docs/mt-numeric.md: mean over t = 0..n-2 of -log softmax(logits[t])[ids[t+1]], the log-softmax in
// double precision (max-subtracted). The model's external data is resolved relative to its directory.
//
// usage: node lm_cross_entropy.js MODEL.onnx TOKENS.json
//   prints {"cross_entropy": x, "vocab": V, "n_tokens": n} (x printed with 17 significant digits)
'use strict';
const fs = require('fs');

async function main() {
  const [model, tokensFile] = process.argv.slice(2);
  if (!tokensFile) {
    process.stderr.write('usage: node lm_cross_entropy.js MODEL.onnx TOKENS.json\n');
    process.exit(2);
  }
  const ort = require('./load_ort.js')('lm_cross_entropy');
  const ids = JSON.parse(fs.readFileSync(tokensFile, 'utf8')).tokens;
  const n = ids.length;
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  const feeds = { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]) };
  const res = await session.run(feeds);
  const out = res.logits || res[session.outputNames[0]];
  const vocab = out.dims[out.dims.length - 1];
  let sum = 0;
  for (let t = 0; t + 1 < n; t++) {
    const row = out.data.subarray(t * vocab, (t + 1) * vocab);
    let max = -Infinity;
    for (let j = 0; j < vocab; j++) if (row[j] > max) max = row[j];
    let z = 0;
    for (let j = 0; j < vocab; j++) z += Math.exp(row[j] - max);
    sum += -(row[ids[t + 1]] - max - Math.log(z));
  }
  process.stdout.write(JSON.stringify({ cross_entropy: Number((sum / (n - 1)).toPrecision(17)), vocab, n_tokens: n }) + '\n');
}

main().catch((e) => {
  process.stderr.write('lm_cross_entropy: ' + (e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
