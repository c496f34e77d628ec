// Errors of the library as JavaScript Error subclasses, one per code of modelpkg/core.h. Each carries
// where the rule was broken: the file, the JSON pointer (RFC 6901) into it, the rule (the library's
// message) and the byte offset (or null). `message` is the library's own "FILE: POINTER: RULE" line.

export class ModelpkgError extends Error {
  constructor(problem) {
    super(formatProblem(problem));
    this.name = new.target.name;
    this.code = problem.code; // "malformed", "mismatch", ...: the --json spelling
    this.codeValue = problem.code_value ?? null; // the C value (MPK_EMALFORMED = -1, ...)
    this.file = problem.file || '';
    this.pointer = problem.pointer || '';
    this.rule = problem.message || '';
    this.offset = problem.offset ?? null;
  }
}
export class MalformedError extends ModelpkgError {}
export class VersionError extends ModelpkgError {}
export class MismatchError extends ModelpkgError {}
export class NotFoundError extends ModelpkgError {}
export class UnsupportedError extends ModelpkgError {}
export class IoError extends ModelpkgError {}
export class OutOfMemoryError extends ModelpkgError {}
export class LimitError extends ModelpkgError {}
export class NoVariantError extends ModelpkgError {}
export class CancelledError extends ModelpkgError {}
export class InvalidArgumentError extends ModelpkgError {}

const BY_CODE = {
  malformed: MalformedError,
  'unsupported-version': VersionError,
  mismatch: MismatchError,
  'not-found': NotFoundError,
  unsupported: UnsupportedError,
  io: IoError,
  'no-memory': OutOfMemoryError,
  limit: LimitError,
  'no-variant': NoVariantError,
  cancelled: CancelledError,
  'invalid-argument': InvalidArgumentError,
};

// The library's mpk_error_format: "FILE@OFFSET: POINTER: RULE", parts omitted when empty.
export function formatProblem(p) {
  let where = p.file ? (p.offset != null && p.offset >= 0 ? `${p.file}@${p.offset}` : p.file) : '';
  if (p.pointer) where += (where ? ': ' : '') + p.pointer;
  return where ? `${where}: ${p.message}` : p.message;
}

// The Error for a problem object ({code, file, pointer, message, offset}) of the library.
export function errorFromProblem(problem) {
  const Cls = BY_CODE[problem.code] || ModelpkgError;
  return new Cls(problem);
}
