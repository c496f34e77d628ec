// The WebLLM 0.2.86 conformance vectors (../shared/conformance/mlc-webllm) through the JS package,
// with the results the C suite asserts (tests/conformance/*.c): WebLLM's recorded results, or the
// documented divergences (docs/conformance.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import * as mpk from '../src/index.js';
import { vectorsOr, webllmMessage } from './helpers.mjs';

function allSafeIntegers(v) {
  if (Array.isArray(v)) return v.every(allSafeIntegers);
  if (v && typeof v === 'object') return Object.values(v).every(allSafeIntegers);
  return typeof v !== 'number' || Number.isSafeInteger(v);
}

test('canonical_json.json: the Python producer\'s text and sha256; fractions and unsafe integers refused at their pointer', async (t) => {
  const cases = vectorsOr(t, 'canonical_json.json');
  if (!cases) return;
  let accepted = 0, refused = 0;
  for (const c of cases) {
    const doc = JSON.stringify(c.value);
    if (allSafeIntegers(c.value)) {
      const r = await mpk.canonicalJson(doc);
      assert.equal(r.text, c.python_canonical_json);
      assert.equal(r.sha256, c.python_sha256);
      assert.equal(await mpk.sha256Id(r.text), c.python_sha256);
      accepted++;
    } else {
      await assert.rejects(mpk.canonicalJson(doc), (e) => e instanceof mpk.MalformedError && e.pointer === '/n/2');
      refused++;
    }
  }
  assert.deepEqual([accepted, refused], [6, 1]);
});

test('interface_id.json: the Python producer\'s id and canonical text; WebLLM\'s where they agree', async (t) => {
  const cases = vectorsOr(t, 'interface_id.json');
  if (!cases) return;
  for (const c of cases) {
    const tasks = c.tasks !== undefined ? JSON.stringify(c.tasks) : c.tasks_json_text;
    if (c.name === 'lone_surrogate_in_name') {
      await assert.rejects(mpk.interfaceId(tasks), (e) => e instanceof mpk.MalformedError && /invalid JSON/.test(e.rule));
      continue;
    }
    const id = await mpk.interfaceId(tasks);
    assert.equal(id, c.python_interface_id, c.name);
    assert.equal(id === c.interface_id, c.webllm_equals_python === true, c.name);
    const canon = await mpk.canonicalJson({ tasks: c.normalized_tasks });
    assert.equal(canon.text, c.python_canonical_json, c.name);
  }
  assert.equal(cases.length, 15);
});

// A parse vector file: each case's expected object, or WebLLM's error message opening ours.
async function runParseCases(cases, parse, divergent = () => false) {
  let ran = 0;
  for (const c of cases) {
    ran++;
    if (await divergent(c)) continue;
    if (c.expected_error) {
      let err = null;
      try {
        await parse(c);
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof mpk.ModelpkgError, `${c.name}: accepted, WebLLM rejects`);
      const msg = webllmMessage(err);
      assert.ok(msg.startsWith(c.expected_error.message), `${c.name}: expected\n  ${c.expected_error.message}\ngot\n  ${msg}`);
    } else {
      assert.deepEqual(await parse(c), c.expected, c.name);
    }
  }
  return ran;
}

test('model_package_parse.json: parseModelPackageManifest, every case', async (t) => {
  const cases = vectorsOr(t, 'model_package_parse.json');
  if (!cases) return;
  const ran = await runParseCases(cases, (c) => mpk.parsePackage(JSON.stringify(c.input), { checkInterfaceId: false }));
  assert.equal(ran, 83);
});

test('load_model_package_manifest.json: bytes, then the interface_id self-check; two documented divergences', async (t) => {
  const cases = vectorsOr(t, 'load_model_package_manifest.json');
  if (!cases) return;
  let divergent = 0;
  const bytes = (c) => Buffer.from(c.input_base64, 'base64');
  const ran = await runParseCases(cases, (c) => mpk.parsePackage(bytes(c)), async (c) => {
    const rule = { duplicate_key_last_wins: /duplicate object key/, invalid_utf8_byte_becomes_replacement_char: /invalid JSON/ }[c.name];
    if (!rule) return false;
    // WebLLM keeps the last duplicate / decodes U+FFFD; modelpkg refuses at the byte
    await assert.rejects(mpk.parsePackage(bytes(c)), (e) => e instanceof mpk.MalformedError && rule.test(e.rule) && e.offset > 0);
    divergent++;
    return true;
  });
  assert.equal(ran, 12);
  assert.equal(divergent, 2);
});

test('compiled_program_parse.json: parseCompiledProgramArtifact, every case', async (t) => {
  const cases = vectorsOr(t, 'compiled_program_parse.json');
  if (!cases) return;
  assert.equal(await runParseCases(cases, (c) => mpk.parseArtifact(JSON.stringify(c.input))), 41);
});

test('resolve_chat_completion.json: the binding, or WebLLM\'s refusal as a MismatchError', async (t) => {
  const cases = vectorsOr(t, 'resolve_chat_completion.json');
  if (!cases) return;
  for (const c of cases) {
    // the vectors use placeholder ids: the sidecar's self-check is not part of this step
    const bound = mpk.bind(JSON.stringify(c.model_package), JSON.stringify(c.compiled_program), { checkInterfaceId: false });
    if (c.expected_error) {
      await assert.rejects(bound, (e) => e instanceof mpk.MismatchError && e.rule.startsWith(c.expected_error.message), c.name);
    } else {
      assert.deepEqual(await bound, c.expected, c.name);
    }
  }
  assert.equal(cases.length, 35);
});

test('resource_urls.json: resolveModelPackageResourceURLs, every case', async (t) => {
  const cases = vectorsOr(t, 'resource_urls.json');
  if (!cases) return;
  for (const c of cases) {
    const pkg = c.model_package ? JSON.stringify(c.model_package) : null;
    assert.deepEqual(await mpk.resourceUrls(c.model_url, pkg), c.expected, c.name);
  }
  assert.ok(cases.length >= 4);
});

test('cleanModelUrl as WebLLM 0.2.86 computes it; bad URLs refused', async () => {
  const cases = [
    ['https://huggingface.co/mlc-ai/M', 'https://huggingface.co/mlc-ai/M/resolve/main/'],
    ['https://huggingface.co/mlc-ai/M/resolve/v1.0/', 'https://huggingface.co/mlc-ai/M/resolve/v1.0/'],
    ['HTTPS://HF.co:443/a/../M', 'https://hf.co/M/resolve/main/'],
    ['https://h/resolve/', 'https://h/resolve/resolve/main/'],
    ['https://h/m /', 'https://h/m%20/resolve/main/'],
  ];
  for (const [url, want] of cases) assert.equal(await mpk.cleanModelUrl(url), want, url);
  await assert.rejects(mpk.cleanModelUrl('ftp://h/m'), (e) => e instanceof mpk.UnsupportedError && /ftp/.test(e.rule));
  await assert.rejects(mpk.cleanModelUrl('models/m'), mpk.InvalidArgumentError);
});
