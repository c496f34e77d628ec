// A typed use of the package: tsc --strict must accept it (js/test/types.test.mjs).
import * as mpk from '../../src/index.js';

async function main(files: Map<string, Uint8Array>, lib: Blob): Promise<void> {
  const v: { version: string; components: string[] } = await mpk.version();
  const report: mpk.CheckReport = await mpk.check(files, { lib, deviceFeatures: ['shader-f16'], noWeights: true });
  const ok: boolean = report.ok;
  for (const p of report.problems) console.log(p.file, p.pointer, p.message, p.offset ?? -1);
  const lazy = await mpk.check(async (name: string) => (name.endsWith('.json') ? '{}' : null), { name: 'm' });
  const fitted: boolean | null = (await mpk.fit(files, { deviceMemory: '4GiB', set: { vocab_size: 10 } })).fits;
  const pkg: mpk.ModelPackage = await mpk.parsePackage('{}', { checkInterfaceId: false });
  const b: mpk.Binding = await mpk.bind(pkg, { schema: 'mlc.compiled-program' });
  const kinds: Array<'audio' | 'image'> = b.supported_input_kinds;
  const urls = await mpk.resourceUrls('https://huggingface.co/m', null);
  const u: string = urls.tensorCacheBaseUrl + (await mpk.cleanModelUrl('https://h/m'));
  try {
    await mpk.interfaceId({ tasks: {} });
  } catch (e) {
    if (e instanceof mpk.MalformedError) console.log(e.file, e.pointer, e.rule, e.offset, e.codeValue);
    if (e instanceof mpk.ModelpkgError) console.log(mpk.formatProblem({ code: e.code, file: e.file, pointer: e.pointer, message: e.rule, offset: e.offset }));
  }
  const plan: mpk.PrefillPlan = await mpk.planPrefill({ prefill_chunk_size: 4, audio: { prompt: { placeholder_token_id: 1 } } }, { segments: [{ text: [1] }, { audio: { rows: 2 } }] });
  const n: number = plan.chunks[0].token_ids.length + (await mpk.legacyChunks([{ text: 3 }], 2)).length;
  const man: mpk.MtManifest = await mpk.parseMtManifest('{}');
  const paths: string[] = (await mpk.mtPlanFiles('{}', { variant: man.defaultVariant })).map((f) => f.path);
  console.log(paths, await mpk.sanitizeRepoId('a/b'), await mpk.checkVersions('1.0', '1.0'));
  const pcm: Float32Array = (await mpk.decodeAudio(new Float32Array(4), { sample_rate_hz: 16000, min_samples: 1, max_samples: 9 }, { sampleRate: 8000 })).samples;
  const img = await mpk.decodeImage(lib, { resize: { mode: 'center_crop', height: 2, width: 2 } });
  const px: number = img.data[0] + img.shape[1] + (await mpk.planImageResize(4, 3, { mode: 'stretch', height: 2, width: 2 })).left;
  console.log(pcm.length, px);
  const md = await mpk.readMetadata(lib);
  console.log(md.model_type, md.artifact?.schema);
  const accepted: true = await mpk.checkRequest({ messages: [{ role: 'user', content: 'hi' }] }, { modelType: 'VLM', inputKinds: kinds });
  const gate: mpk.MtTensorsReport = await mpk.mtTensors(files, { variant: 'cpu-fp16' });
  const w: mpk.MtTensor[] = await mpk.mtLoadTensors(files);
  const sel: mpk.MtSelection = await mpk.mtSelect('{}', { memoryMb: 4096, preferQuant: ['int4'] });
  console.log(accepted, gate.tensors[0]?.status, w[0]?.data.length, sel.chosen ?? sel.candidates.length);
  console.log(n, v, ok, lazy.dir, fitted, kinds, u, (await mpk.canonicalJson([1])).sha256);
}
void main;
