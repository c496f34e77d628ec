// The page's logic: read the package (a picked folder, or files fetched from a URL), the device's
// WebGPU limits (navigator.gpu when there is an adapter, else what the user enters), then show
// modelpkg's check report and fit verdict. Query parameters fill the form (url, lib, features,
// maxBinding, memory, weights) and run=1 checks at once: how the tests drive it.
import * as modelpkg from '../../js/src/index.js';

const $ = (id) => document.getElementById(id);
const LIB_EXT = /\.(wasm|so|dylib|dll|tar)$/;

function text(tag, content, className) {
  const e = document.createElement(tag);
  if (content != null) e.textContent = content;
  if (className) e.className = className;
  return e;
}

// A value of the report as short text: objects as "key: value" pairs, lists joined.
function show(v) {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length ? v.map(show).join(', ') : '(none)';
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k}: ${show(x)}`).join('; ');
  return String(v);
}

function table(rows, className) {
  const t = text('table', null, className);
  for (const cells of rows) {
    const tr = document.createElement('tr');
    cells.forEach((c, i) => tr.append(text(i === 0 && rows.header !== false ? 'th' : 'td', c)));
    t.append(tr);
  }
  return t;
}

function renderReport(r) {
  const box = $('report');
  box.replaceChildren();
  const skip = new Set(['modelpkg_version', 'command', 'ok', 'problems', 'notes']);
  box.append(text('h3', 'Check report'), table(Object.entries(r).filter(([k]) => !skip.has(k)).map(([k, v]) => [k, show(v)])));
  if (r.problems.length) {
    box.append(text('h3', `Problems (${r.problems.length})`));
    const rows = r.problems.map((p) => [p.file || '—', p.pointer || '—', p.message, p.code]);
    rows.header = false;
    box.append(table(rows, 'problems'));
  }
  if (r.notes.length) {
    box.append(text('h3', 'Notes'));
    const ul = document.createElement('ul');
    for (const n of r.notes) ul.append(text('li', n));
    box.append(ul);
  }
}

function gib(bytes) {
  return bytes == null ? '—' : `${(bytes / 2 ** 30).toFixed(bytes < 2 ** 30 ? 6 : 2)} GiB (${bytes} bytes)`;
}

function renderFit(fit, error) {
  const box = $('fit');
  box.replaceChildren(text('h3', 'Fit on this device'));
  if (error) {
    box.append(text('p', `fit could not run: ${error.message}`, 'fits unknown'));
    return;
  }
  const verdict = fit.fits === true ? ['Fits this device', 'yes'] : fit.fits === false ? ['Does not fit this device', 'no']
    : ['No device limits given: the needs only', 'unknown'];
  box.append(text('p', verdict[0], `fits ${verdict[1]}`));
  const n = fit.needs || {};
  box.append(table([
    ['needs in all', gib(n.total_bytes)],
    ['parameters', gib(n.parameter_bytes)],
    ['KV cache', `${gib(n.kv_cache_bytes)}${n.context ? ` for ${n.context} tokens` : ''}`],
    ['workspace', gib(n.workspace_bytes)],
    ['largest binding', `${n.max_binding_bytes ?? '—'} bytes${n.max_binding_parameter ? ` (${n.max_binding_parameter})` : ''}`],
    ['device', show(fit.device)],
  ]));
  for (const p of fit.problems) box.append(text('p', `${p.pointer ? `${p.pointer}: ` : ''}${p.message}`, 'fits no'));
}

// The device: WebGPU's adapter when there is one; the fields stay editable.
async function detectDevice() {
  const status = $('gpuStatus');
  if (!navigator.gpu) {
    status.textContent = '(no WebGPU in this browser: enter the limits by hand)';
    return;
  }
  const adapter = await navigator.gpu.requestAdapter().catch(() => null);
  if (!adapter) {
    status.textContent = '(WebGPU present, no adapter: enter the limits by hand)';
    return;
  }
  status.textContent = '(from this browser\'s WebGPU adapter)';
  if (!$('features').value) $('features').value = [...adapter.features].sort().join(',');
  if (!$('maxBinding').value) $('maxBinding').value = String(adapter.limits.maxStorageBufferBindingSize);
}

function folderFiles() {
  const picked = [...$('folder').files];
  const sel = $('libInFolder');
  sel.replaceChildren(text('option', '(none)'));
  sel.firstChild.value = '';
  for (const f of picked) {
    const rel = f.webkitRelativePath.split('/').slice(1).join('/') || f.name;
    if (LIB_EXT.test(rel)) {
      const o = text('option', rel);
      o.value = rel;
      sel.append(o);
    }
  }
  if (sel.options.length === 2) sel.selectedIndex = 1;
}

// The directory URL files are fetched from: a hub model URL as WebLLM cleans it, else the URL
// itself as a directory.
async function baseUrl(input) {
  const u = new URL(input, location.href);
  if (u.hostname === 'huggingface.co' || u.hostname === 'hf.co') return modelpkg.cleanModelUrl(u.href);
  return u.href.endsWith('/') ? u.href : `${u.href}/`;
}

async function run(ev) {
  ev?.preventDefault();
  $('failure').hidden = true;
  $('result').hidden = true;
  $('run').disabled = true;
  try {
    const device = {};
    const features = $('features').value.trim();
    if (features) device.deviceFeatures = features.split(/[\s,]+/); // empty: not known, not checked
    if ($('maxBinding').value.trim()) device.maxBindingSize = Number($('maxBinding').value.trim());
    const weights = $('weights').checked;
    let files, lib, name;
    if ($('folder').files.length && !$('url').value) {
      files = [...$('folder').files];
      lib = $('libInFolder').value || undefined;
      name = files[0].webkitRelativePath.split('/')[0] || 'model';
    } else if ($('url').value) {
      const base = await baseUrl($('url').value);
      files = async (n) => {
        const r = await fetch(new URL(n, base));
        return r.ok ? r : null;
      };
      if ($('libUrl').value) {
        const libUrl = new URL($('libUrl').value, location.href);
        const r = await fetch(libUrl);
        if (!r.ok) throw new Error(`${libUrl}: HTTP ${r.status}`);
        lib = new File([await r.blob()], libUrl.pathname.split('/').pop() || 'model-lib.wasm');
      }
      name = new URL(base).pathname.split('/').filter(Boolean).filter((p) => p !== 'resolve' && p !== 'main').pop() || 'model';
    } else {
      throw new Error('Pick a folder or enter a model URL.');
    }
    const common = { lib, name, ...device };
    const report = await modelpkg.check(files, { ...common, noWeights: !weights });
    let fit = null, fitError = null;
    try {
      const memory = $('memory').value.trim();
      fit = await modelpkg.fit(files, { ...common, ...(memory ? { deviceMemory: memory } : {}) });
    } catch (e) {
      fitError = e;
    }
    $('verdict').textContent = report.ok ? `OK: all checks hold (${report.dir})` : `FAILED: ${report.problems.length} problem${report.problems.length === 1 ? '' : 's'} (${report.dir})`;
    $('verdict').className = report.ok ? 'ok' : 'failed';
    renderReport(report);
    renderFit(fit, fitError);
    $('result').hidden = false;
    document.body.dataset.state = 'done';
  } catch (e) {
    $('failure').textContent = e instanceof modelpkg.ModelpkgError ? `${e.name}: ${e.message}` : String(e.message || e);
    $('failure').hidden = false;
    document.body.dataset.state = 'failed';
  } finally {
    $('run').disabled = false;
  }
}

async function main() {
  $('version').textContent = `${(await modelpkg.version()).version} (WebAssembly)`;
  $('folder').addEventListener('change', folderFiles);
  $('source').addEventListener('submit', run);
  const q = new URLSearchParams(location.search);
  for (const [param, id] of [['url', 'url'], ['lib', 'libUrl'], ['features', 'features'], ['maxBinding', 'maxBinding'], ['memory', 'memory']])
    if (q.has(param)) $(id).value = q.get(param);
  if (q.get('weights') === '1') $('weights').checked = true;
  await detectDevice();
  document.body.dataset.state = 'ready';
  if (q.get('run') === '1') await run();
}

main().catch((e) => {
  $('failure').textContent = `modelpkg did not load: ${e.message}`;
  $('failure').hidden = false;
  document.body.dataset.state = 'failed';
});
