// The errors a run ends with, worded once (types.ts documents each code and its details).
import { MAX_OUTPUT_DEPTH } from './limits.js';
import type { RunError, RunLimits } from './types.js';

/** Why the engine stopped a run from outside the snippet's own control flow. */
export type AbortReason = 'wall' | 'cpu' | 'requests' | 'cancel';

export function cancelledError(message = 'the run was cancelled'): RunError {
  return { code: 'CANCELLED', message, details: {} };
}

/** `waitedMs`: how long the run waited for a worker, which its wall limit (counted from submission) includes. */
export function abortError(reason: AbortReason, limits: RunLimits, waitedMs = 0): RunError {
  switch (reason) {
    case 'wall': {
      const limitMs = limits.wallMs + waitedMs;
      const waited = waitedMs > 0 ? `, ${waitedMs} ms of which it waited for a sandbox worker` : '';
      return { code: 'TIMEOUT', message: `the run exceeded its wall time of ${limitMs} ms${waited}`, details: { limit: 'wall', limit_ms: limitMs, waited_ms: waitedMs } };
    }
    case 'cpu':
      return { code: 'TIMEOUT', message: `the run exceeded its CPU time of ${limits.cpuMs} ms`, details: { limit: 'cpu', limit_ms: limits.cpuMs } };
    case 'requests':
      return { code: 'REQUEST_LIMIT', message: `the run made more than ${limits.maxRequests} platform requests`, details: { limit: limits.maxRequests } };
    case 'cancel':
      return cancelledError();
  }
}

export const NEVER_SETTLED: RunError = {
  code: 'TIMEOUT',
  message: 'the function awaits a promise that nothing can settle: the sandbox has no timers or events, only platform.request',
  details: { limit: 'never_settled' },
};

/** QuickJS's own stack limit and the thread's native stack running out read the same. */
export const STACK_OVERFLOW: RunError = { code: 'SNIPPET_THREW', message: 'stack overflow', details: { name: 'InternalError', stack: '' } };

export function memoryLimitError(limits: RunLimits): RunError {
  return { code: 'MEMORY_LIMIT', message: `the run used more than its ${limits.memoryBytes} bytes of memory`, details: { limit_bytes: limits.memoryBytes } };
}

export function outputTooLarge(limits: RunLimits): RunError {
  return { code: 'OUTPUT_TOO_LARGE', message: `the output is larger than ${limits.maxOutputBytes} bytes as JSON`, details: { limit_bytes: limits.maxOutputBytes } };
}

/** The prelude's message when a value it serializes is nested past MAX_OUTPUT_DEPTH (prelude.ts words it the same). */
export const TOO_DEEP = `the value is nested deeper than ${MAX_OUTPUT_DEPTH} levels`;

export function outputTooDeep(type: string): RunError {
  return { code: 'INVALID_OUTPUT', message: `the return value is nested deeper than ${MAX_OUTPUT_DEPTH} levels`, details: { type, limit_depth: MAX_OUTPUT_DEPTH } };
}

export function invalidOutput(message: string, type: string): RunError {
  return { code: 'INVALID_OUTPUT', message, details: { type } };
}

export function sandboxFailure(message: string, cause?: unknown): RunError {
  return { code: 'SANDBOX_FAILURE', message, details: cause === undefined ? {} : { reason: String(cause).slice(0, 500) } };
}

/** The pool's watchdog replaced the worker: the run is over whatever the worker was doing. */
export function watchdogTimeout(limits: RunLimits, afterMs: number): RunError {
  return {
    code: 'TIMEOUT',
    message: `the run did not end within its wall time of ${limits.wallMs} ms; its worker was replaced`,
    details: { limit: 'watchdog', limit_ms: afterMs },
  };
}
