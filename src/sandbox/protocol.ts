// Messages between the pool (main thread) and its workers. Code, inputs, requests and responses
// travel as strings; the worker holds no credentials and no handle to anything in the host.
import type { LogLine, RunError, RunLimits, RunStats } from './types.js';

export interface WorkerInit {
  /** compiled once by the pool; each run gets an instance of its own */
  wasmModule: WebAssembly.Module;
  /** Int32Array[0]: the id of a run to cancel; the interrupt handler polls it */
  control: SharedArrayBuffer;
  /** the memory limit of the first instance made ahead (the pool's default) */
  memoryBytes: number;
  unsafeTestHooks: boolean;
}

export interface RunMessage {
  type: 'run';
  runId: number;
  code: string;
  inputsJson: string;
  /** limits.wallMs is what is left of the run's wall limit after it waited this long for a worker */
  limits: RunLimits;
  waitedMs?: number;
}

export type ToWorker =
  | RunMessage
  | { type: 'response'; runId: number; requestId: number; json: string }
  | { type: 'cancel'; runId: number };

/** A run's outcome as the worker reports it: the output stays JSON text until the pool parses it. */
export type WorkerRunResult =
  | { ok: true; outputJson: string; logs: LogLine[]; stats: RunStats }
  | { ok: false; error: RunError; logs: LogLine[]; stats: RunStats };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'request'; runId: number; requestId: number; json: string }
  | { type: 'done'; runId: number; result: WorkerRunResult };
