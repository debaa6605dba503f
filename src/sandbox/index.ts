// The sandbox engine: untrusted JavaScript in QuickJS (WebAssembly) on a pool of worker threads.
// Snippets and agents build on this interface; it knows neither.
export { createSandbox } from './pool.js';
export { inputsProblem } from './inputs.js';
export { DEFAULT_LIMITS, MAX_OUTPUT_DEPTH } from './limits.js';
export { isForbiddenHeader } from './request.js';
export * from './types.js';
