// Types of the modelpkg JavaScript package (js/src/index.js).

/** Bytes of a document or file, its text, or a JSON value (serialized with JSON.stringify). */
export type Document = Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | object;

/** A package's files: name (relative, '/'-separated) -> content; File objects from a folder picker
 * (webkitRelativePath); or a function fetching a file by name (null when absent). */
export type PackageFiles =
  | Map<string, Document>
  | Record<string, Document>
  | File[]
  | FileList
  | ((name: string) => Promise<Document | Response | null | undefined> | Document | null | undefined);

/** A problem as the library reports it (the --json form). */
export interface Problem {
  code: string;
  code_value?: number;
  file: string;
  pointer: string;
  message: string;
  offset: number | null;
}

export declare class ModelpkgError extends Error {
  constructor(problem: Problem);
  /** "malformed", "unsupported-version", "mismatch", "not-found", ... (the --json spelling) */
  readonly code: string;
  /** the C code (MPK_EMALFORMED = -1, ...) */
  readonly codeValue: number | null;
  /** the file the rule concerns ("" when none) */
  readonly file: string;
  /** RFC 6901 JSON pointer into the file ("" when none) */
  readonly pointer: string;
  /** the rule that was broken (the library's message) */
  readonly rule: string;
  /** byte offset into the file, or null */
  readonly offset: number | null;
}
export declare class MalformedError extends ModelpkgError {}
export declare class VersionError extends ModelpkgError {}
export declare class MismatchError extends ModelpkgError {}
export declare class NotFoundError extends ModelpkgError {}
export declare class UnsupportedError extends ModelpkgError {}
export declare class IoError extends ModelpkgError {}
export declare class OutOfMemoryError extends ModelpkgError {}
export declare class LimitError extends ModelpkgError {}
export declare class NoVariantError extends ModelpkgError {}
export declare class CancelledError extends ModelpkgError {}
export declare class InvalidArgumentError extends ModelpkgError {}
/** The library's "FILE@OFFSET: POINTER: RULE" line of a problem. */
export declare function formatProblem(problem: Problem): string;
/** The ModelpkgError subclass for a problem's code. */
export declare function errorFromProblem(problem: Problem): ModelpkgError;

export declare function toBytes(doc: Document | Response): Promise<Uint8Array>;

export declare function version(): Promise<{ version: string; components: string[]; hashImplementation: string }>;
export declare function canonicalJson(doc: Document): Promise<{ text: string; sha256: string }>;
export declare function sha256Id(data: Document): Promise<string>;
export declare function interfaceId(tasks: Document): Promise<string>;

/** mlc-model-manifest.json as WebLLM 0.2.86's parseModelPackageManifest returns it. */
export interface ModelPackage {
  schema: 'mlc.model-package';
  schema_version: number;
  chat_config: string;
  interface_id: string;
  weights: { manifest: string; parameter_schema_id: string };
  tasks: Record<string, { executor: string; inputs: Record<string, unknown>; output: string }>;
}
export declare function parsePackage(doc: Document, options?: { file?: string; checkInterfaceId?: boolean }): Promise<ModelPackage>;

/** _metadata.artifact as WebLLM's parseCompiledProgramArtifact returns it. */
export interface CompiledProgram {
  schema: 'mlc.compiled-program';
  schema_version: number;
  interface_id: string;
  parameter_schema_id: string;
  programs: Record<string, { kind: string; exports: Record<string, string>; adapters: Record<string, string>; adapter_dtypes: Record<string, string> }>;
  resources: { required_features: string[]; max_storage_buffer_binding_size: number; estimated_device_memory_bytes: number };
}
export declare function parseArtifact(doc: Document, options?: { file?: string }): Promise<CompiledProgram>;

/** A compiled library's _metadata. */
export declare function readMetadata(lib: Uint8Array | ArrayBuffer | Blob, options?: { file?: string }): Promise<{
  metadata: Record<string, unknown>; model_type: string | null; kv_state_kind: string | null;
  artifact: CompiledProgram | null; artifact_only: boolean }>;

export interface BoundInput {
  adapter: string;
  adapter_function: string;
  processor: Record<string, unknown>;
  prompt: Record<string, unknown> | null;
  dtype?: string;
}
/** resolveChatCompletionArtifact's binding, plus the kv_state_kind the roles imply. */
export interface Binding {
  executor: string;
  generation: { inputs: 'tokens' | 'embeds'; prefill: string; decode: string };
  audio_input: BoundInput | null;
  image_input: BoundInput | null;
  supported_input_kinds: Array<'audio' | 'image'>;
  kv_state_kind_implied: string;
}
export declare function bind(pkg: Document, artifact: Document, options?: { checkInterfaceId?: boolean; artifactFile?: string }): Promise<Binding>;

export declare function cleanModelUrl(url: string): Promise<string>;
export declare function resourceUrls(url: string, pkg?: Document | null): Promise<{ chatConfigUrl: string; tensorCacheBaseUrl: string; tensorCacheManifestUrl: string }>;
/** WebLLM's request checks of a chat-completion request's messages (docs/mlc-request.md); true, or a
 * MalformedError / UnsupportedError naming the field. inputKinds: WebLLM's supportedInputKinds. */
/** One merged-weight tensor the load gate verified; `data` is a copy of its bytes (float16/bfloat16 as raw Uint16 bits, int4/uint4 as packed bytes). */
export interface MtTensor { layer: string; role: string; dtype: string; shape: number[]; file: string; data: Float32Array | Uint16Array | BigInt64Array | Int32Array | Int8Array | Uint8Array }
/** A device for mtSelect (a field not given filters nothing). */
export interface MtDevice {
  abis?: string[]; executionProvider?: string; quantization?: string; engine?: string; features?: string[];
  memoryMb?: number; apiLevel?: number; preferQuant?: string[]; storageBytes?: number;
}
/** The `modelpkg mt select --json` document (docs/mt-select.md). */
export interface MtSelection {
  ok: boolean; chosen: string | null; summary: string; candidates: Array<{ id: string; rank: number | null; excluded_by: string | null; chosen: boolean; reason: string; [key: string]: unknown }>;
  problems: Problem[]; [key: string]: unknown;
}
export declare function mtSelect(manifest: Document, device?: MtDevice): Promise<MtSelection>;
/** The load gate's view of one entry's role (`modelpkg mt tensors --json`, docs/CLI.md). */
export interface MtGateTensor {
  entry: number; layer: string; role: string; dtype: string; shape: number[]; declared_bytes: number; file: string;
  size: number; size_ok: boolean; status: string; authority: string; hashed: string; [key: string]: unknown;
}
export interface MtTensorsReport {
  ok: boolean; dir: string; variant: string; merged_weights: boolean; tensors: MtGateTensor[]; verified: number;
  problems: Problem[]; notes: string[]; [key: string]: unknown;
}
/** The load gate: the `modelpkg mt tensors --json` document. */
export declare function mtTensors(files: PackageFiles, options?: { variant?: string; name?: string }): Promise<MtTensorsReport>;
/** The tensors once the load gate accepts every one; its first problem thrown otherwise. */
export declare function mtLoadTensors(files: PackageFiles, options?: { variant?: string; name?: string }): Promise<MtTensor[]>;
export declare function checkRequest(request: object, model?: { modelId?: string; modelType?: 'LLM' | 'VLM' | 'embedding'; inputKinds?: Iterable<'audio' | 'image'> | null; file?: string }): Promise<true>;

/** A library: a file name among the package's files, or its bytes (a File keeps its name). */
export type Library = string | Uint8Array | ArrayBuffer | Blob;

export interface CheckOptions {
  lib?: Library;
  deviceFeatures?: string[] | string;
  maxBindingSize?: number;
  noWeights?: boolean;
  variant?: string;
  allVariants?: boolean;
  noHash?: boolean;
  noGraph?: boolean;
  /** the package directory's name in the report (default "model") */
  name?: string;
}
/** The `modelpkg check --json` report (docs/check-report.md): MLC or MobileTransformers. */
export interface CheckReport {
  modelpkg_version: string;
  command: 'check';
  ok: boolean;
  dir: string;
  problems: Problem[];
  notes: string[];
  [key: string]: unknown;
}
export declare function check(files: PackageFiles, options?: CheckOptions): Promise<CheckReport>;

export interface FitOptions {
  lib?: Library;
  context?: number;
  set?: Record<string, number>;
  deviceMemory?: number | string;
  maxBindingSize?: number;
  deviceFeatures?: string[] | string;
  name?: string;
}
/** The `modelpkg fit --json` document (docs/CLI.md). */
export interface FitReport {
  modelpkg_version: string;
  command: 'fit';
  ok: boolean;
  fits: boolean | null;
  problems: Problem[];
  notes: string[];
  [key: string]: unknown;
}
export declare function fit(files: PackageFiles, options?: FitOptions): Promise<FitReport>;

/** A prompt: SEGMENTS.json of `modelpkg mlc plan` (docs/prefill.md). */
export interface PromptSegments {
  filled_kv_cache_length?: number;
  segments: Array<{ text: number[] } | { audio: { rows: number } } | { image: { rows?: number } }>;
}
/** A media input of a planner configuration. */
export interface PrefillInput {
  prompt?: { prefix_token_ids?: number[]; placeholder_token_id: number; suffix_token_ids?: number[] } | null;
  adapter_function?: string | null;
  num_embeddings?: number;
}
/** The fields of mpk_mlc_prefill_config. */
export interface PrefillConfig {
  generation_inputs?: 'tokens' | 'embeds';
  embed_tokens?: string | null;
  prefill?: string | null;
  decode?: string | null;
  audio?: PrefillInput | null;
  image?: PrefillInput | null;
  prefill_chunk_size: number;
  context_window_size?: number;
  sliding_window_size?: number;
  system_prefix_token_ids?: number[] | null;
}
/** A plan: the object of `modelpkg mlc plan --json` (docs/prefill.md). */
export interface PrefillPlan {
  generation_inputs: 'tokens' | 'embeds';
  functions: { embed_tokens: string | null; prefill: string | null; decode: string | null };
  prefill_chunk_size: number;
  prefill_chunk_size_from: string | null;
  context_window_size: number;
  sliding_window_size: number;
  filled_kv_cache_length: number;
  prompt_length: number;
  items: Array<{ kind: 'audio' | 'image'; segment: number; adapter_function: string | null; rows: number; offset: number; chunks: [number, number] }>;
  chunks: Array<{ token_ids: number[]; modality_ids: number[]; embedding_rows: [number, number] | null; offset: number; item: number | null }>;
}
export declare function planPrefill(config: PrefillConfig, segments: PromptSegments | Document, options?: { file?: string }): Promise<PrefillPlan>;
/** `modelpkg mlc plan --json` for a package and its library (the document, envelope included). */
export declare function planPackagePrefill(files: PackageFiles, segments: PromptSegments | Document,
  options: { lib: Library; name?: string }): Promise<PrefillPlan & { modelpkg_version: string; command: 'mlc plan'; ok: true; package: string; lib: string }>;
/** WebLLM's pre-manifest chunker. */
export declare function legacyChunks(items: Array<{ text: number } | { image: number }>, prefillChunkSize: number):
  Promise<Array<{ length: number; pieces: Array<{ item: number; start: number; count: number }> }>>;

/** mobiletransformers_manifest.json as the reference exporter writes it. */
export interface MtManifest {
  schemaVersion: string;
  minReaderVersion: string;
  defaultVariant: string;
  variants: Array<{ id: string; [key: string]: unknown }>;
  [key: string]: unknown;
}
export declare function parseMtManifest(doc: Document, options?: { file?: string }): Promise<MtManifest>;
export declare function mtPlanFiles(doc: Document, options?: { variant?: string; groups?: string[]; file?: string }):
  Promise<Array<{ path: string; size: number | null; sha256: string | null }>>;
export declare function checkVersions(schemaVersion: string, minReaderVersion: string, reader?: string): Promise<true>;
export declare function sanitizeRepoId(repoId: string): Promise<string>;

/** An audio_decode processor (as the package's tasks declare it). */
export interface AudioProcessor { sample_rate_hz: number; min_samples: number; max_samples: number; [key: string]: unknown }
export interface DecodedAudio {
  samples: Float32Array;
  sampleRate: number;
  sourceRate: number;
  sourceChannels: number;
  sourceFrames: number;
  resampled: boolean;
  fromWav: boolean;
  peak: number;
  rms: number;
}
/** The media module (loaded on first use). input: WAV bytes/Blob, input_audio.data text, or mono
 * Float32Array samples with options.sampleRate. */
export declare function decodeAudio(input: Uint8Array | ArrayBuffer | Blob | string | Float32Array, processor: AudioProcessor,
  options?: { sampleRate?: number; file?: string }): Promise<DecodedAudio>;
/** An image_decode processor's resize. */
export interface ImageResize { mode: 'stretch' | 'center_crop'; height: number; width: number }
export interface DecodedImage {
  data: Uint8Array | Uint32Array;
  shape: [1, number, number, 3];
  dtype: 'uint8' | 'uint32';
  format: string;
  sourceWidth: number;
  sourceHeight: number;
  sourceChannels: number;
  sourceBits: number;
  hasAlpha: boolean;
  orientation: number;
  orientationApplied: boolean;
  decodedWidth: number;
  decodedHeight: number;
  jpegScaleNum: number;
  plan: { width: number; height: number; left: number; top: number };
  warning: string;
}
export declare function decodeImage(input: Uint8Array | ArrayBuffer | Blob, processor: { resize: ImageResize; [key: string]: unknown },
  options?: { dtype?: 'uint8' | 'uint32'; ignoreOrientation?: boolean; maxPixels?: number; file?: string }): Promise<DecodedImage>;
export declare function planImageResize(srcWidth: number, srcHeight: number, resize: ImageResize):
  Promise<{ width: number; height: number; left: number; top: number }>;
