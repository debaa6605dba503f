// The sandbox as the API uses it: one pool per process, started by `svc serve` when it serves the
// API, else on the first run (a test app or a worker-only process spawns no worker), closed with the app (running runs end, queued ones are
// cancelled). The engine's refusals become API errors: its fairness queue full or waited out (the
// queue timeout, or the run's own time limit) is 429 RESOURCE_EXHAUSTED with retry-after saying
// when a busy worker's run reaches its limit at the latest; a closed pool (draining) is 503.
import { ApiError } from '../../platform/errors.js';
import {
  createSandbox, SandboxBusyError, SandboxClosedError, type RunRequest, type RunResult, type Sandbox, type SandboxOptions, type SandboxStats,
} from '../../sandbox/index.js';

export interface SnippetRunner {
  run(request: RunRequest): Promise<RunResult>;
  /** null until the first run (or warm) started the pool */
  stats(): SandboxStats | null;
  /** Starts the pool now rather than at the first run (svc serve does, so no request pays for it). */
  warm(): Promise<void>;
  close(): Promise<void>;
}

export function createSnippetRunner(options: SandboxOptions): SnippetRunner {
  let sandbox: Sandbox | null = null;
  let closed = false;

  return {
    async run(request) {
      if (closed) throw shuttingDown();
      sandbox ??= createSandbox(options);
      try {
        return await sandbox.run(request);
      } catch (err) {
        if (err instanceof SandboxBusyError) {
          return Promise.reject(new ApiError('RESOURCE_EXHAUSTED', `${err.message}; retry shortly`, {
            reason: 'SANDBOX_BUSY',
            metadata: { cause: err.reason },
            headers: { 'retry-after': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) },
          }));
        }
        if (err instanceof SandboxClosedError) throw shuttingDown();
        throw err;
      }
    },
    stats: () => sandbox?.stats() ?? null,
    async warm() {
      if (closed) return;
      sandbox ??= createSandbox(options);
      await sandbox.ready();
    },
    async close() {
      closed = true;
      await sandbox?.close();
    },
  };
}

function shuttingDown(): ApiError {
  return new ApiError('UNAVAILABLE', 'the server is shutting down; retry on another instance', { reason: 'SHUTTING_DOWN', headers: { 'retry-after': '1' } });
}
