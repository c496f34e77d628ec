#!/usr/bin/env node
// Derive a runtime description (docs/mlc-library.md, "Runtime descriptions") from WebLLM's published
// bundle, by parsing its JavaScript: what the tvmjs runtime inside it gives a compiled library (the
// import object it instantiates a library with, the global functions it registers) and what it
// needs from one (the global functions it looks up by name, the VM functions it calls by name, the
// WebAssembly exports it calls).
//
//   node scripts/runtime_from_webllm.mjs [BUNDLE] > data/runtimes/webllm-0.2.86.json
//
// BUNDLE defaults to .deps/node_modules/@mlc-ai/web-llm/lib/index.js (scripts/deps_node.sh webllm);
// its package.json (two directories up) gives the name and version. No network, no dependency: a
// small JavaScript tokenizer (strings, template literals, comments, regular expressions) and the
// brace structure (classes, methods, functions, try blocks) are enough for what is read here:
//
// - provides.imports: the keys of the object literals tvmjs's Environment.environment() merges into
//   the "env" import (Object.assign(defaultEnv, initEnv, newEnv)), and the import object of the
//   WASI layer WebLLM instantiates with (createPolyfillWASI() -> new EmccWASI(): its
//   `info = {"env": X, "wasi_snapshot_preview1": X}` with X an object literal in the same function).
// - provides.globals: the string literals given to registerFunc and to the functions that forward
//   their first parameter to it (found, not listed: registerAsyncServerFunc adds "__async.").
// - requires.globals: the string literals given to getGlobalFunc / getGlobalFuncInternal (required)
//   and getGlobalFuncInternalOptional (optional), and to the functions that forward their first
//   parameter to one of them (getKVCheckpointFunc, ...).
// - requires.functions: string literals given to getRequiredVMFunctionByName and vm.getFunction.
// - requires.exports: `exports.NAME` read (not assigned) by the runtime; optional when the runtime
//   compares it with undefined.
// Each requirement's "when" comes from where it is: inside class LLMChatPipeline "chat", inside
// EmbeddingPipeline "embedding", inside a class WebLLM never instantiates (tvmjs's RPCServer) or
// through an optional lookup or in a method whose every caller catches (try) "optional", else
// "always". A call whose argument is not a string literal is listed in "notes", never guessed.
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bundle = resolve(process.argv[2] || join(here, "..", ".deps/node_modules/@mlc-ai/web-llm/lib/index.js"));
// Every failure is one line naming the bundle, exit 1 (nothing is written to stdout).
process.on("uncaughtException", (e) => {
  process.stderr.write(`runtime_from_webllm: ${bundle}: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
const pkg = JSON.parse(readFileSync(join(dirname(bundle), "..", "package.json"), "utf8"));
const bytes = readFileSync(bundle);
const src = bytes.toString("utf8");

// ------------------------------------------------------------------------------------ tokenizer
const KEYWORDS_BEFORE_EXPR = new Set(["return", "typeof", "case", "in", "of", "new", "delete", "void", "throw",
  "instanceof", "yield", "await", "else", "do"]);
function tokenize(s) {
  const toks = [];
  const braces = []; // "{" for a block/object, "${" for a template substitution
  let i = 0, line = 1;
  const push = (t, v, start) => toks.push({ t, v, line, start });
  const regexAllowed = () => {
    const p = toks[toks.length - 1];
    if (!p) return true;
    if (p.t === "num" || p.t === "str" || p.t === "tmpl" || p.t === "regex") return false;
    if (p.t === "id") return KEYWORDS_BEFORE_EXPR.has(p.v);
    return !(p.v === ")" || p.v === "]" || p.v === "}");
  };
  // A template literal from i (just after ` or after the } closing a substitution).
  const template = () => {
    const start = i;
    for (;;) {
      if (i >= s.length) throw new Error(`unterminated template literal at line ${line}`);
      const c = s[i];
      if (c === "\\") { i += 2; continue; }
      if (c === "\n") line++;
      if (c === "`") { i++; push("tmpl", s.slice(start, i - 1), start); return; }
      if (c === "$" && s[i + 1] === "{") { i += 2; braces.push("${"); push("tmpl", null, start); return; }
      i++;
    }
  };
  while (i < s.length) {
    const c = s[i];
    if (c === "\n") { line++; i++; continue; }
    if (c === " " || c === "\t" || c === "\r" || c === "\f" || c === "\v" || c === "\uFEFF" || c === "\u00a0") { i++; continue; }
    if (c === "/" && s[i + 1] === "/") { while (i < s.length && s[i] !== "\n") i++; continue; }
    if (c === "/" && s[i + 1] === "*") {
      const e = s.indexOf("*/", i + 2);
      if (e < 0) throw new Error(`unterminated comment at line ${line}`);
      for (let k = i; k < e; k++) if (s[k] === "\n") line++;
      i = e + 2;
      continue;
    }
    if (c === '"' || c === "'") {
      const start = i;
      let v = "";
      i++;
      for (;;) {
        if (i >= s.length || s[i] === "\n") throw new Error(`unterminated string at line ${line}`);
        const d = s[i];
        if (d === c) { i++; break; }
        if (d === "\\") {
          const e = s[i + 1];
          const simple = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", v: "\v", 0: "\0" };
          if (e in simple) { v += simple[e]; i += 2; }
          else if (e === "x") { v += String.fromCharCode(parseInt(s.slice(i + 2, i + 4), 16)); i += 4; }
          else if (e === "u" && s[i + 2] === "{") { const z = s.indexOf("}", i); v += String.fromCodePoint(parseInt(s.slice(i + 3, z), 16)); i = z + 1; }
          else if (e === "u") { v += String.fromCharCode(parseInt(s.slice(i + 2, i + 6), 16)); i += 6; }
          else if (e === "\n") { line++; i += 2; }
          else { v += e; i += 2; }
          continue;
        }
        v += d;
        i++;
      }
      push("str", v, start);
      continue;
    }
    if (c === "`") { i++; template(); continue; }
    if (/[A-Za-z_$]/.test(c) || c.charCodeAt(0) > 127) {
      const start = i;
      while (i < s.length && (/[A-Za-z0-9_$]/.test(s[i]) || s.charCodeAt(i) > 127)) i++;
      push("id", s.slice(start, i), start);
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(s[i + 1]))) {
      const start = i;
      while (i < s.length && /[0-9A-Za-z_.]/.test(s[i])) {
        if ((s[i] === "e" || s[i] === "E") && (s[i + 1] === "+" || s[i + 1] === "-")) i++;
        i++;
      }
      push("num", s.slice(start, i), start);
      continue;
    }
    if (c === "/" && regexAllowed()) {
      const start = i;
      let cls = false;
      i++;
      for (;;) {
        if (i >= s.length || s[i] === "\n") throw new Error(`unterminated regular expression at line ${line}`);
        const d = s[i];
        if (d === "\\") { i += 2; continue; }
        if (d === "[") cls = true;
        else if (d === "]") cls = false;
        else if (d === "/" && !cls) { i++; break; }
        i++;
      }
      while (i < s.length && /[a-z]/.test(s[i])) i++;
      push("regex", s.slice(start, i), start);
      continue;
    }
    if (c === "{") { braces.push("{"); push("punc", "{", i); i++; continue; }
    if (c === "}") {
      if (braces.pop() === "${") { i++; template(); continue; }
      push("punc", "}", i); i++; continue;
    }
    const three = s.slice(i, i + 4);
    const ops = [">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!=", "<=", ">=",
      "&&", "||", "??", "?.", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "**"];
    const op = ops.find((o) => three.startsWith(o));
    if (op) { push("punc", op, i); i += op.length; continue; }
    push("punc", c, i);
    i++;
  }
  return toks;
}

const toks = tokenize(src);
const N = toks.length;
// A punctuator's or identifier's text (a string literal "{" is not a brace): toks[k].v for the rest.
const V = (k) => (k >= 0 && k < N && (toks[k].t === "punc" || toks[k].t === "id") ? toks[k].v : undefined);

// Matching brackets.
const match = new Array(N).fill(-1);
{
  const st = [];
  for (let k = 0; k < N; k++) {
    const t = toks[k];
    if (t.t !== "punc") continue;
    if (t.v === "(" || t.v === "[" || t.v === "{") st.push(k);
    else if (t.v === ")" || t.v === "]" || t.v === "}") {
      const o = st.pop();
      if (o === undefined) throw new Error(`unbalanced ${t.v} at line ${t.line}`);
      match[o] = k;
      match[k] = o;
    }
  }
  if (st.length) throw new Error(`unclosed bracket at line ${toks[st[st.length - 1]].line}`);
}
const paramsOf = (open) => { // identifiers that are parameters in the list (a, b = 1, ...c)
  const out = [];
  let depth = 0, first = true;
  for (let k = open + 1; k < match[open]; k++) {
    const v = V(k);
    if (v === "(" || v === "[" || v === "{") depth++;
    else if (v === ")" || v === "]" || v === "}") depth--;
    else if (depth === 0 && v === ",") first = true;
    else if (depth === 0 && first && toks[k].t === "id") { out.push(v); first = false; }
    else if (depth === 0 && v !== "...") first = false;
  }
  return out;
};

// What each "{" opens: class, function/method (name, parameters), arrow function, try, or a block.
const scopeAt = new Array(N).fill(null); // the innermost scope for each token
{
  const stack = [{ kind: "top", name: null, params: [] }];
  for (let k = 0; k < N; k++) {
    const v = V(k);
    if (v === "{" ) {
      const top = stack[stack.length - 1];
      let sc = { kind: "block", parent: top };
      const p = V(k - 1);
      if (p === ")" && match[k - 1] >= 0) {
        const open = match[k - 1];
        const before = toks[open - 1];
        if (before && before.t === "id" && V(open - 2) === "function") sc = { kind: "function", name: before.v, params: paramsOf(open) };
        else if (before && before.t === "id" && top.kind === "class") sc = { kind: "method", name: before.v, params: paramsOf(open) };
        else if (before && before.t === "id" && !["if", "for", "while", "switch", "catch", "with"].includes(before.v) && V(open - 2) !== ".")
          sc = { kind: "method", name: before.v, params: paramsOf(open) }; // method shorthand in an object literal
        else if (before && before.v === "function") sc = { kind: "function", name: null, params: paramsOf(open) };
      } else if (p === "=>") {
        const q = k - 2;
        if (V(q) === ")") sc = { kind: "arrow", name: null, params: paramsOf(match[q]) };
        else sc = { kind: "arrow", name: null, params: [V(q)] };
      } else if (p === "try" || p === "finally") sc = { kind: p };
      else {
        // class NAME [extends X[.Y]] {
        let q = k - 1;
        while (q >= 0 && (toks[q].t === "id" || V(q) === ".") && V(q) !== "class") q--;
        if (V(q) === "class" && toks[q + 1].t === "id") sc = { kind: "class", name: toks[q + 1].v };
      }
      sc.parent = top;
      sc.open = k;
      stack.push(sc);
    }
    scopeAt[k] = stack[stack.length - 1];
    if (v === "}") stack.pop();
  }
}
const enclosing = (k, kinds) => { for (let s = scopeAt[k]; s; s = s.parent) if (kinds.includes(s.kind)) return s; return null; };
const inTry = (k) => { for (let s = scopeAt[k]; s; s = s.parent) { if (s.kind === "try") return true; if (s.kind === "function" || s.kind === "method") return false; } return false; };
const where = (k) => {
  const fn = enclosing(k, ["function", "method"]);
  const cls = enclosing(k, ["class"]);
  const parts = [cls && cls.name, fn && (fn.name || "<anonymous>")].filter(Boolean);
  return `${parts.join(".") || "<top level>"} (lib/index.js:${toks[k].line})`;
};
const className = (k) => { const c = enclosing(k, ["class"]); return c ? c.name : null; };

// The argument of a call at "(" index `open`: {lit} | {prefix, ident} | {ident} | {expr}.
function firstArg(open) {
  let end = open + 1, depth = 0;
  for (; end < match[open]; end++) {
    const v = V(end);
    if (v === "(" || v === "[" || v === "{") depth++;
    else if (v === ")" || v === "]" || v === "}") depth--;
    else if (depth === 0 && v === ",") break;
  }
  const a = toks.slice(open + 1, end);
  if (a.length === 1 && a[0].t === "str") return { lit: a[0].v };
  if (a.length === 1 && a[0].t === "id") return { ident: a[0].v };
  if (a.length === 3 && a[0].t === "str" && a[1].v === "+" && a[2].t === "id") return { prefix: a[0].v, ident: a[2].v };
  return { expr: a.length ? src.slice(a[0].start, toks[end].start).trim() : "" };
}
// Calls of `name(`: not a definition (a method or function whose ")" is followed by "{").
function calls(names) {
  const out = [];
  for (let k = 1; k < N - 1; k++) {
    if (toks[k].t !== "id" || !names.has(toks[k].v) || V(k + 1) !== "(") continue;
    if (V(k - 1) === "function") continue;
    if (V(match[k + 1] + 1) === "{" && V(k - 1) !== ".") continue; // a definition
    out.push({ k, name: toks[k].v, arg: firstArg(k + 1), receiver: V(k - 1) === "." ? V(k - 2) : null });
  }
  return out;
}

// Seeds and the functions that forward their first parameter to one (found to a fixpoint).
const kinds = new Map([
  ["getGlobalFunc", { kind: "lookup", optional: false, prefix: "" }],
  ["getGlobalFuncInternal", { kind: "lookup", optional: false, prefix: "" }],
  ["getGlobalFuncInternalOptional", { kind: "lookup", optional: true, prefix: "" }],
  ["registerFunc", { kind: "register", optional: false, prefix: "" }],
]);
const seeds = new Set(kinds.keys());
for (let changed = true; changed;) {
  changed = false;
  for (const c of calls(new Set(kinds.keys()))) {
    const fn = enclosing(c.k, ["function", "method", "arrow"]);
    if (!fn || !fn.name || !c.arg.ident || fn.params[0] !== c.arg.ident || seeds.has(fn.name) || kinds.has(fn.name)) continue;
    const base = kinds.get(c.name);
    kinds.set(fn.name, { ...base, prefix: (c.arg.prefix || "") + base.prefix, via: c.name });
    changed = true;
  }
}
// Methods whose every caller catches: what they look up is optional to WebLLM.
const callSites = new Map();
for (let k = 1; k < N - 1; k++)
  if (toks[k].t === "id" && V(k - 1) === "." && V(k + 1) === "(") {
    if (!callSites.has(toks[k].v)) callSites.set(toks[k].v, []);
    callSites.get(toks[k].v).push(k);
  }
const protectedMethods = new Set();
for (let changed = true; changed;) {
  changed = false;
  for (const [name, sites] of callSites) {
    if (protectedMethods.has(name)) continue;
    if (sites.every((k) => inTry(k) || (enclosing(k, ["method"]) && protectedMethods.has(enclosing(k, ["method"]).name)))) {
      protectedMethods.add(name);
      changed = true;
    }
  }
}
const NOT_INSTANTIATED = new Set(["RPCServer"]); // tvmjs's RPC server: WebLLM never creates one
const PIPELINES = new Map([["LLMChatPipeline", "chat"], ["EmbeddingPipeline", "embedding"]]);
function when(k, optional) {
  if (optional) return "optional";
  const cls = className(k);
  if (NOT_INSTANTIATED.has(cls)) return "optional";
  for (let s = scopeAt[k]; s; s = s.parent)
    if (s.kind === "method" && protectedMethods.has(s.name)) return "optional";
  return PIPELINES.get(cls) || "always";
}

const notes = [];
const provided = new Map(), required = new Map();
const strength = { always: 0, chat: 1, embedding: 1, optional: 2 };
const addReq = (map, name, w, at) => {
  const old = map.get(name);
  if (!old) map.set(name, { name, when: w, where: at });
  else if (old.when !== w && strength[w] <= strength[old.when]) {
    // the strongest need wins; chat and embedding together are "always"
    const merged = strength[w] === 1 && strength[old.when] === 1 ? "always" : w;
    map.set(name, { name, when: merged, where: strength[w] < strength[old.when] ? at : old.where });
  }
};
for (const c of calls(new Set(kinds.keys()))) {
  const info = kinds.get(c.name);
  const fn = enclosing(c.k, ["function", "method", "arrow"]);
  if (!c.arg.lit) {
    if (fn && c.arg.ident && fn.params[0] === c.arg.ident && (seeds.has(fn.name) || kinds.has(fn.name))) continue; // a forwarder
    const shown = c.arg.expr ?? (c.arg.prefix ? JSON.stringify(c.arg.prefix) + " + " : "") + c.arg.ident;
    notes.push(fn && c.arg.ident && fn.params[0] === c.arg.ident
      ? `${where(c.k)}: ${c.name}(${shown}) passes on a name its caller gives (an unnamed function: its callers are not followed; not listed)`
      : `${where(c.k)}: ${c.name}(${shown}) names a global function only known at run time (not listed)`);
    continue;
  }
  const name = info.prefix + c.arg.lit;
  if (info.kind === "register") {
    if (!NOT_INSTANTIATED.has(className(c.k)) && !provided.has(name)) provided.set(name, { name, where: where(c.k) });
  } else addReq(required, name, when(c.k, info.optional), where(c.k));
}

// VM functions called by name.
const functions = new Map();
for (const c of calls(new Set(["getRequiredVMFunctionByName", "getFunction"]))) {
  if (c.name === "getFunction" && c.receiver !== "vm") continue; // a module's function, not the VM's
  if (!c.arg.lit) {
    notes.push(`${where(c.k)}: ${c.name}(${c.arg.expr ?? c.arg.ident}) names a VM function only known at run time ` +
      `(the model's ABI or artifact: not listed)`);
    continue;
  }
  addReq(functions, c.arg.lit, when(c.k, false), where(c.k));
}

// WebAssembly exports the runtime reads: exports.NAME not assigned; optional when compared with undefined.
const exportsUsed = new Map(), exportsChecked = new Set();
for (let k = 2; k < N - 1; k++) {
  if (V(k - 2) !== "exports" || V(k - 1) !== "." || toks[k].t !== "id") continue;
  if (V(k - 3) !== "." || !["lib", "this"].includes(V(k - 4))) continue; // the library's, not an artifact's "exports"
  if (V(k + 1) === "=") continue; // a CommonJS export
  if ((V(k + 1) === "===" || V(k + 1) === "!==") && V(k + 2) === "undefined") exportsChecked.add(V(k));
  if (!NOT_INSTANTIATED.has(className(k))) addReq(exportsUsed, V(k), "always", where(k));
}
for (const name of exportsChecked) if (exportsUsed.has(name)) exportsUsed.get(name).when = "optional";

// The import object.
const imports = new Map();
const objectKeys = (open) => { // keys of an object literal at "{"
  const keys = [];
  let depth = 0, expectKey = true;
  for (let k = open + 1; k < match[open]; k++) {
    const v = V(k);
    if (v === "(" || v === "[" || v === "{") { depth++; continue; }
    if (v === ")" || v === "]" || v === "}") { depth--; continue; }
    if (depth) continue;
    if (v === ",") { expectKey = true; continue; }
    if (expectKey && (toks[k].t === "id" || toks[k].t === "str") && V(k + 1) === ":") keys.push(toks[k].v);
    expectKey = false;
  }
  return keys;
};
const literalNamed = (name, from, to) => { // `name = {` or `name: {` within [from, to)
  for (let k = from; k < to - 2; k++)
    if (toks[k].t === "id" && toks[k].v === name && (V(k + 1) === "=" || V(k + 1) === ":") && V(k + 2) === "{") return k + 2;
  return -1;
};
const addImport = (module, name, at) => { const key = module + "\0" + name; if (!imports.has(key)) imports.set(key, { module, name, where: at }); };
// (1) Environment.environment(initEnv): Object.assign(a, initEnv, b): a's and b's keys join "env".
{
  let found = false;
  for (let k = 0; k < N; k++) {
    const sc = scopeAt[k];
    if (!(sc && sc.kind === "method" && sc.name === "environment" && sc.open === k && className(k) === "Environment")) continue;
    for (let q = k; q < match[k]; q++) {
      if (V(q) !== "Object" || V(q + 1) !== "." || V(q + 2) !== "assign" || V(q + 3) !== "(") continue;
      for (let a = q + 4; a < match[q + 3]; a++) {
        if (toks[a].t !== "id" || sc.params.includes(V(a))) continue;
        const lit = literalNamed(V(a), k, q);
        if (lit < 0) continue;
        for (const key of objectKeys(lit)) addImport("env", key, where(lit));
        found = true;
      }
    }
  }
  if (!found) throw new Error("Environment.environment(): no Object.assign of object literals found");
}
// (2) createPolyfillWASI(): return new X(); X's `info = {MODULE: Y, ...}` with Y an object literal.
{
  let ctor = null;
  for (let k = 0; k < N - 4; k++)
    if (V(k) === "function" && V(k + 1) === "createPolyfillWASI") {
      const body = match[k + 2] + 1;
      for (let q = body; q < match[body]; q++) if (V(q) === "new" && toks[q + 1].t === "id") { ctor = V(q + 1); break; }
    }
  if (!ctor) throw new Error("createPolyfillWASI(): no `new X()` found");
  let done = false;
  for (let k = 0; k < N - 3 && !done; k++) {
    if (!(V(k) === "function" && V(k + 1) === ctor && V(k + 2) === "(")) continue;
    const body = match[k + 2] + 1;
    const info = literalNamed("info", body, match[body]);
    if (info < 0) throw new Error(`${ctor}: no import object "info" found`);
    for (let q = info + 1; q < match[info]; q++) {
      if (!((toks[q].t === "str" || toks[q].t === "id") && V(q + 1) === ":" && toks[q + 2].t === "id")) continue;
      const lit = literalNamed(V(q + 2), body, match[body]);
      if (lit < 0) throw new Error(`${ctor}: the import module ${toks[q].v} is not an object literal`);
      for (const key of objectKeys(lit)) addImport(toks[q].v, key, where(lit));
      done = true;
    }
  }
  if (!done) throw new Error(`${ctor}: not found`);
}

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const out = {
  schema: "modelpkg.runtime",
  schema_version: 1,
  name: `WebLLM ${pkg.version}`,
  source: {
    package: `${pkg.name}@${pkg.version}`,
    file: "lib/index.js",
    sha256: createHash("sha256").update(bytes).digest("hex"),
    generator: "scripts/runtime_from_webllm.mjs",
  },
  provides: {
    imports: [...imports.values()].sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : byName(a, b))),
    globals: [...provided.values()].sort(byName),
  },
  requires: {
    globals: [...required.values()].sort(byName),
    functions: [...functions.values()].sort(byName),
    exports: [...exportsUsed.values()].sort(byName),
  },
  notes: [...new Set(notes)],
};
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
