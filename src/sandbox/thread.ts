// Starting a worker thread from the compiled dist/ (worker.js) or from src/ under tsx (worker.ts,
// the tests): on Node 20 a worker does not inherit tsx's loader, so it registers it first.
import { Worker } from 'node:worker_threads';
import type { WorkerInit } from './protocol.js';

const MiB = 1024 * 1024;

/** True when this module is the TypeScript source (tests run it through tsx). */
const fromSource = import.meta.url.endsWith('.ts');

export const WORKER_URL = new URL(fromSource ? './worker.ts' : './worker.js', import.meta.url);

/**
 * The native stack of a worker thread. QuickJS's stack limit counts its C stack in the WebAssembly
 * memory; each interpreted frame also takes native stack for the WebAssembly frames, measured at up
 * to ~8x as much (JSON.stringify of deep nesting). 32x leaves a margin so QuickJS's own "stack
 * overflow" error comes first; were the native stack exhausted anyway, the instance is discarded.
 */
export function workerStackMb(maxStackBytes: number): number {
  return Math.max(4, Math.ceil((maxStackBytes * 32) / MiB));
}

export function spawnWorkerThread(init: WorkerInit, maxStackBytes: number): Worker {
  const options = {
    workerData: init,
    // The worker's own heap holds only bounded strings (code, logs, outputs); QuickJS's memory is
    // the WebAssembly memory, bounded per run. A runaway here kills the thread, not the process.
    resourceLimits: { stackSizeMb: workerStackMb(maxStackBytes), maxOldGenerationSizeMb: 128 },
    // Not the parent's flags: some only make sense for the main script (--input-type, --eval).
    execArgv: [],
    stdout: false,
    stderr: false,
  };
  if (!fromSource) return new Worker(WORKER_URL, options);
  // Resolved here, from this file: the bootstrap itself has no location to resolve packages from.
  const tsx = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER_URL.href)}); });`;
  return new Worker(bootstrap, { ...options, eval: true });
}
