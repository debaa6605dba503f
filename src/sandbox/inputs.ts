// The `inputs` of a run: a JSON object, copied into the sandbox as text. Checked in the host, where
// a bad value is the caller's bug (a TypeError), not the snippet's.
import { MAX_INPUT_BYTES, MAX_INPUT_DEPTH } from './limits.js';

function depthWithin(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return true;
  if (depth >= MAX_INPUT_DEPTH) return false;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    if (!depthWithin(item, depth + 1)) return false;
  }
  return true;
}

/** The inputs as JSON, or a TypeError: not a plain object, not JSON, too deep or too large. */
export function checkInputs(inputs: unknown): string {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) throw new TypeError('sandbox run: inputs must be a JSON object');
  let json: string;
  try {
    json = JSON.stringify(inputs);
  } catch (error) {
    throw new TypeError(`sandbox run: inputs are not JSON-serializable (${(error as Error).message})`);
  }
  if (Buffer.byteLength(json) > MAX_INPUT_BYTES) throw new TypeError(`sandbox run: inputs are larger than ${MAX_INPUT_BYTES} bytes as JSON`);
  // Depth of the JSON text, not of the object: what JSON.stringify kept is what the sandbox sees.
  if (!depthWithin(JSON.parse(json), 0)) throw new TypeError(`sandbox run: inputs are nested deeper than ${MAX_INPUT_DEPTH} levels`);
  return json;
}
