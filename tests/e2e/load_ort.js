// onnxruntime-node for the e2e scripts (run_onnx.js, lm_cross_entropy.js): looked up in
// $MPK_NODE_MODULES, then in <repo>/.deps/node_modules (scripts/deps_node.sh installs it there).
// Exit 3 when it cannot be loaded.
'use strict';
const fs = require('fs');
const path = require('path');

module.exports = function loadOrt(who) {
  const dirs = [];
  if (process.env.MPK_NODE_MODULES) dirs.push(process.env.MPK_NODE_MODULES);
  dirs.push(path.resolve(__dirname, '..', '..', '.deps', 'node_modules'));
  const tried = [];
  for (const dir of dirs) {
    const where = path.join(dir, 'onnxruntime-node');
    if (!fs.existsSync(where)) { tried.push(where + ' (absent)'); continue; }
    try {
      return require(where);
    } catch (e) {
      tried.push(where + ' (' + e.message.split('\n')[0] + ')');
    }
  }
  process.stderr.write(who + ': onnxruntime-node cannot be loaded; tried ' + tried.join(', ') + '\n' +
    '  install it with scripts/deps_node.sh (npm install --ignore-scripts onnxruntime-node@1.30.0 into .deps/),\n' +
    '  or point MPK_NODE_MODULES at a node_modules directory that holds it\n');
  process.exit(3);
};
