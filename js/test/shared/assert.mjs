// A small assert for the checks shared by Node and the browser (no node:assert in a page): each
// failure throws an Error saying what differed.

export function ok(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

export function equal(actual, expected, message) {
  if (actual !== expected) throw new Error(`${message}: got ${JSON.stringify(actual)}, want ${JSON.stringify(expected)}`);
}

// Structural equality of JSON values (object key order ignored, as node:assert's deepStrictEqual).
export function same(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && same(a[k], b[k]));
}

export function deepEqual(actual, expected, message) {
  if (!same(actual, expected))
    throw new Error(`${message}: result differs\nexpected ${JSON.stringify(expected)}\nactual   ${JSON.stringify(actual)}`);
}

// The error a promise rejects with (an assertion failure when it resolves).
export async function rejection(promise, message) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error(`${message}: accepted, should be refused`);
}
