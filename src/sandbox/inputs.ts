// The `inputs` of a run: a JSON object, copied into the sandbox as text. Checked in the host, where
// a bad value is the caller's bug (a TypeError), not the snippet's; callers that take inputs from a
// request ask inputsProblem first and answer 400.
import { MAX_INPUT_BYTES, MAX_INPUT_DEPTH } from './limits.js';

/**
 * True when no container in `value` is nested deeper than `max` levels. Iterative, and it stops at
 * the first container past the bound: linear in what it visits whatever the depth.
 */
export function depthWithin(value: unknown, max: number): boolean {
  const todo: [unknown, number][] = [[value, 0]];
  while (todo.length > 0) {
    const [item, depth] = todo.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth >= max) return false;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') todo.push([child, depth + 1]);
    }
  }
  return true;
}

/**
 * Why `inputs` cannot be a run's inputs (not a plain object, nested deeper than `maxDepth`, not
 * JSON, too large), or its JSON. A caller may hold inputs to a stricter depth than the engine's.
 */
export function inputsProblem(inputs: unknown, maxDepth = MAX_INPUT_DEPTH): { problem: string } | { json: string } {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) return { problem: 'must be a JSON object' };
  // Depth first: JSON.stringify recurses, and a deep enough value would overflow the host's stack.
  if (!depthWithin(inputs, Math.min(maxDepth, MAX_INPUT_DEPTH))) return { problem: `are nested deeper than ${Math.min(maxDepth, MAX_INPUT_DEPTH)} levels` };
  let json: string;
  try {
    json = JSON.stringify(inputs);
  } catch (error) {
    return { problem: `are not JSON-serializable (${(error as Error).message})` };
  }
  if (Buffer.byteLength(json) > MAX_INPUT_BYTES) return { problem: `are larger than ${MAX_INPUT_BYTES} bytes as JSON` };
  return { json };
}

/** The inputs as JSON, or a TypeError: not a plain object, not JSON, too deep or too large. */
export function checkInputs(inputs: unknown): string {
  const checked = inputsProblem(inputs);
  if ('problem' in checked) throw new TypeError(`sandbox run: inputs ${checked.problem}`);
  return checked.json;
}
