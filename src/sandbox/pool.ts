// The sandbox pool in the main thread: worker threads sized to the machine, admission with a
// per-tenant cap and bounded queues, the bridge between a run's `platform.request` messages and
// the caller's SandboxBridge, and a watchdog that replaces a worker that does not answer in time.
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { checkInputs } from './inputs.js';
import { DEFAULT_MAX_STACK_BYTES, resolveLimits } from './limits.js';
import type { FromWorker, WorkerInit, WorkerRunResult } from './protocol.js';
import { compileQuickJS } from './quickjs.js';
import { checkPlatformRequest, serializePlatformResponse } from './request.js';
import { cancelledError, invalidOutput, sandboxFailure, watchdogTimeout } from './run-errors.js';
import { spawnWorkerThread } from './thread.js';
import {
  SandboxBusyError,
  SandboxClosedError,
  type BusyReason,
  type RunError,
  type RunLimits,
  type RunRequest,
  type RunResult,
  type Sandbox,
  type SandboxOptions,
  type SandboxStats,
} from './types.js';

interface Job {
  id: number;
  request: RunRequest;
  tenant: string;
  limits: RunLimits;
  inputsJson: string;
  /** performance.now() at submission: the run's wall time limit counts from here */
  submittedAt: number;
  resolve(result: RunResult): void;
  queueTimer: NodeJS.Timeout | null;
  onAbort: (() => void) | null;
}

interface ActiveRun {
  job: Job;
  startedAt: number;
  watchdog: NodeJS.Timeout;
  bridgeAbort: AbortController;
  requests: number;
}

interface PoolWorker {
  thread: Worker;
  control: Int32Array;
  state: 'starting' | 'idle' | 'busy' | 'dead';
  active: ActiveRun | null;
}

const ZERO_STATS = { cpu_time_ms: 0, wall_time_ms: 0, heap_used_bytes: 0, request_count: 0 };

function failed(error: RunError, stats = ZERO_STATS): RunResult {
  return { ok: false, error, logs: [], stats };
}

/** The limits of a run that waited `waitedMs` for a worker: what is left of its wall time (and CPU within it). */
function shortened(limits: RunLimits, waitedMs: number): RunLimits {
  const wallMs = limits.wallMs - waitedMs;
  return { ...limits, wallMs, cpuMs: Math.min(limits.cpuMs, wallMs) };
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const result = value ?? fallback;
  if (!Number.isInteger(result) || result < 0) throw new RangeError(`sandbox option ${name} must be a non-negative integer, got ${String(value)}`);
  return result;
}

export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const size = Math.max(1, positiveInteger('workers', options.workers, availableParallelism()));
  const perTenantConcurrency = Math.max(1, positiveInteger('perTenantConcurrency', options.perTenantConcurrency, Math.ceil(size / 2)));
  const perTenantQueue = positiveInteger('perTenantQueue', options.perTenantQueue, 16);
  const maxQueue = positiveInteger('maxQueue', options.maxQueue, 128);
  const queueTimeoutMs = positiveInteger('queueTimeoutMs', options.queueTimeoutMs, 10_000);
  const graceMs = positiveInteger('watchdogGraceMs', options.watchdogGraceMs, 2_000);
  const maxStackBytes = positiveInteger('maxStackBytes', options.maxStackBytes, DEFAULT_MAX_STACK_BYTES);
  const baseLimits = options.limits ?? {};
  const defaults = resolveLimits(baseLimits, undefined, maxStackBytes);
  const wasmModule = compileQuickJS();

  const workers = new Set<PoolWorker>();
  const queue: Job[] = [];
  const runningByTenant = new Map<string, number>();
  const queuedByTenant = new Map<string, number>();
  let nextJobId = 1;
  let closed = false;
  let replaced = 0;
  let runs = 0;
  let startupFailures = 0;
  let respawnTimer: NodeJS.Timeout | null = null;
  const waiters: { until: () => boolean; resolve: () => void }[] = [];

  const bump = (map: Map<string, number>, tenant: string, by: number) => {
    const next = (map.get(tenant) ?? 0) + by;
    if (next === 0) map.delete(tenant);
    else map.set(tenant, next);
  };

  function notify(): void {
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i]!.until()) waiters.splice(i, 1)[0]!.resolve();
    }
  }

  function waitFor(until: () => boolean): Promise<void> {
    if (until()) return Promise.resolve();
    return new Promise((resolve) => waiters.push({ until, resolve }));
  }

  function spawn(): void {
    const control = new Int32Array(new SharedArrayBuffer(4));
    const init: WorkerInit = { wasmModule, control: control.buffer as SharedArrayBuffer, memoryBytes: defaults.memoryBytes, unsafeTestHooks: options.unsafeTestHooks === true };
    const worker: PoolWorker = { thread: spawnWorkerThread(init, maxStackBytes), control, state: 'starting', active: null };
    workers.add(worker);
    worker.thread.on('message', (message: FromWorker) => onMessage(worker, message));
    worker.thread.on('error', (error) => replace(worker, 'the sandbox worker crashed', undefined, error));
    worker.thread.on('exit', () => replace(worker, 'the sandbox worker exited'));
    // Starting and busy workers keep the process alive (someone awaits them); idle ones do not, so
    // a process that never closes its sandbox can still exit.
  }

  function onMessage(worker: PoolWorker, message: FromWorker): void {
    if (worker.state === 'dead') return;
    if (message.type === 'ready') {
      startupFailures = 0;
      worker.state = 'idle';
      worker.thread.unref();
      dispatch();
      notify();
    } else if (message.type === 'request') {
      void serveRequest(worker, message.runId, message.requestId, message.json);
    } else if (message.type === 'done' && worker.active?.job.id === message.runId) {
      settle(worker, worker.active, fromWorker(message.result));
      worker.state = 'idle';
      worker.thread.unref();
      dispatch();
      notify();
    }
  }

  function fromWorker(result: WorkerRunResult): RunResult {
    if (!result.ok) return result;
    try {
      return { ok: true, output: JSON.parse(result.outputJson), logs: result.logs, stats: result.stats };
    } catch {
      return { ok: false, error: invalidOutput('the output is not valid JSON', 'string'), logs: result.logs, stats: result.stats };
    }
  }

  /** Takes the worker out of the pool, ends its run with `reason`, starts a replacement. */
  function replace(worker: PoolWorker, reason: string, error?: RunError, threadError?: unknown): void {
    if (worker.state === 'dead') return;
    const wasStarting = worker.state === 'starting';
    worker.state = 'dead';
    workers.delete(worker);
    void worker.thread.terminate();
    options.onWorkerReplaced?.(reason, threadError);
    const active = worker.active;
    if (active) {
      const stats = { ...ZERO_STATS, wall_time_ms: Math.round(performance.now() - active.startedAt), request_count: active.requests };
      settle(worker, active, failed(error ?? sandboxFailure(reason), stats));
    }
    if (closed) return notify();
    replaced++;
    // A worker that cannot even start (a broken install) is retried with a growing delay.
    if (wasStarting) startupFailures++;
    const delay = startupFailures === 0 ? 0 : Math.min(30_000, 100 * 2 ** startupFailures);
    if (delay === 0) spawn();
    else {
      const respawn = () => {
        respawnTimer = null;
        if (!closed) while (workers.size < size) spawn();
      };
      respawnTimer ??= setTimeout(respawn, delay);
      respawnTimer.unref();
    }
    notify();
  }

  /** Checks the request again (the worker is not trusted to have), asks the bridge, answers. */
  async function serveRequest(worker: PoolWorker, runId: number, requestId: number, json: string): Promise<void> {
    const active = worker.active;
    if (!active || active.job.id !== runId) return;
    active.requests++;
    let answer: string;
    try {
      const checked = active.requests > active.job.limits.maxRequests ? null : checkPlatformRequest(JSON.parse(json));
      if (checked === null) answer = JSON.stringify({ error: 'platform.request: the request limit of the run is reached' });
      else if (!checked.ok) answer = JSON.stringify({ error: checked.message });
      else {
        const response = await active.job.request.bridge.request(checked.value, { signal: active.bridgeAbort.signal });
        const serialized = serializePlatformResponse(response);
        answer = serialized.ok ? `{"response":${serialized.value}}` : JSON.stringify({ error: serialized.message });
      }
    } catch {
      // The bridge's own failure says nothing the sandboxed code should learn about the host.
      answer = JSON.stringify({ error: 'platform.request: the platform could not serve the request' });
    }
    if (worker.active === active && worker.state === 'busy') worker.thread.postMessage({ type: 'response', runId, requestId, json: answer });
  }

  function settle(worker: PoolWorker, active: ActiveRun, result: RunResult): void {
    clearTimeout(active.watchdog);
    active.bridgeAbort.abort();
    worker.active = null;
    const { job } = active;
    bump(runningByTenant, job.tenant, -1);
    if (job.onAbort) job.request.signal?.removeEventListener('abort', job.onAbort);
    job.resolve(result);
  }

  /** When a busy worker is free at the latest (its run's wall limit), in ms from now: a retry hint. */
  function soonestFreeMs(): number {
    const now = performance.now();
    let soonest = Infinity;
    for (const worker of workers) {
      if (worker.active) soonest = Math.min(soonest, worker.active.startedAt + worker.active.job.limits.wallMs - now);
    }
    return Number.isFinite(soonest) ? Math.max(0, Math.ceil(soonest)) : 1_000;
  }

  function busy(reason: BusyReason, tenant: string): SandboxBusyError {
    return new SandboxBusyError(reason, tenant, soonestFreeMs());
  }

  function start(worker: PoolWorker, job: Job): void {
    worker.state = 'busy';
    worker.thread.ref();
    bump(runningByTenant, job.tenant, 1);
    runs++;
    // Time spent waiting for a worker counts against the wall limit (the queue timer refused the run
    // before it ran out): the run ends within its limit of its submission, as the caller was told.
    const waitedMs = Math.max(0, Math.min(Math.floor(performance.now() - job.submittedAt), job.limits.wallMs - 1));
    if (waitedMs > 0) job.limits = shortened(job.limits, waitedMs);
    const deadline = job.limits.wallMs + graceMs;
    const watchdog = setTimeout(() => {
      replace(worker, 'the sandbox worker did not answer', watchdogTimeout(job.limits, deadline));
    }, deadline);
    worker.active = { job, startedAt: performance.now(), watchdog, bridgeAbort: new AbortController(), requests: 0 };
    worker.thread.postMessage({ type: 'run', runId: job.id, code: job.request.code, inputsJson: job.inputsJson, limits: job.limits, waitedMs });
  }

  /** Gives idle workers the oldest queued runs whose tenant is under its cap. */
  function dispatch(): void {
    for (const worker of workers) {
      if (worker.state !== 'idle') continue;
      const index = queue.findIndex((job) => (runningByTenant.get(job.tenant) ?? 0) < perTenantConcurrency);
      if (index === -1) return;
      const job = queue.splice(index, 1)[0]!;
      unqueue(job);
      start(worker, job);
    }
  }

  function unqueue(job: Job): void {
    bump(queuedByTenant, job.tenant, -1);
    if (job.queueTimer) clearTimeout(job.queueTimer);
    job.queueTimer = null;
  }

  function removeQueued(job: Job): boolean {
    const index = queue.indexOf(job);
    if (index === -1) return false;
    queue.splice(index, 1);
    unqueue(job);
    if (job.onAbort) job.request.signal?.removeEventListener('abort', job.onAbort);
    return true;
  }

  function cancel(job: Job): void {
    if (removeQueued(job)) {
      job.resolve(failed(cancelledError('the run was cancelled before it started')));
      return;
    }
    for (const worker of workers) {
      if (worker.active?.job !== job) continue;
      // The interrupt handler sees the flag while the snippet computes; the message while it waits.
      Atomics.store(worker.control, 0, job.id);
      worker.thread.postMessage({ type: 'cancel', runId: job.id });
    }
  }

  function run(request: RunRequest): Promise<RunResult> {
    if (closed) return Promise.reject(new SandboxClosedError());
    let limits: RunLimits;
    let inputsJson: string;
    try {
      if (typeof request.code !== 'string') throw new TypeError('sandbox run: code must be a string');
      if (typeof request.tenant !== 'string' || request.tenant.length === 0) throw new TypeError('sandbox run: tenant must be a non-empty string');
      if (typeof request.bridge?.request !== 'function') throw new TypeError('sandbox run: bridge.request must be a function');
      inputsJson = checkInputs(request.inputs ?? {});
      limits = resolveLimits(baseLimits, request.limits, maxStackBytes);
    } catch (error) {
      return Promise.reject(error);
    }
    const tenant = request.tenant;
    return new Promise<RunResult>((resolve, reject) => {
      const job: Job = { id: nextJobId++, request, tenant, limits, inputsJson, submittedAt: performance.now(), resolve, queueTimer: null, onAbort: null };
      if (request.signal?.aborted) return resolve(failed(cancelledError('the run was cancelled before it started')));
      const underCap = (runningByTenant.get(tenant) ?? 0) < perTenantConcurrency;
      const idle = underCap ? [...workers].find((w) => w.state === 'idle') : undefined;
      if (!idle) {
        if ((queuedByTenant.get(tenant) ?? 0) >= perTenantQueue) return reject(busy('tenant_queue_full', tenant));
        if (queue.length >= maxQueue) return reject(busy('queue_full', tenant));
      }
      if (request.signal) {
        job.onAbort = () => cancel(job);
        request.signal.addEventListener('abort', job.onAbort, { once: true });
      }
      if (idle) return start(idle, job);
      queue.push(job);
      bump(queuedByTenant, tenant, 1);
      // It waits until the queue timeout or until it could no longer run within its own wall limit,
      // whichever comes first, and is refused then.
      const byTimeLimit = limits.wallMs - 1 < queueTimeoutMs;
      job.queueTimer = setTimeout(() => {
        if (removeQueued(job)) reject(busy(byTimeLimit ? 'time_limit' : 'queue_timeout', tenant));
      }, byTimeLimit ? limits.wallMs - 1 : queueTimeoutMs);
    });
  }

  for (let i = 0; i < size; i++) spawn();

  return {
    run,
    stats(): SandboxStats {
      let idle = 0;
      let busy = 0;
      for (const worker of workers) {
        if (worker.state === 'idle') idle++;
        else if (worker.state === 'busy') busy++;
      }
      return { workers: workers.size, idle, busy, queued: queue.length, replaced, runs };
    },
    ready: () => waitFor(() => closed || [...workers].every((w) => w.state !== 'starting')),
    async close(): Promise<void> {
      if (!closed) {
        closed = true;
        if (respawnTimer) clearTimeout(respawnTimer);
        for (const job of [...queue]) {
          removeQueued(job);
          job.resolve(failed(cancelledError('the sandbox closed before the run started')));
        }
      }
      await waitFor(() => [...workers].every((w) => w.state !== 'busy'));
      await Promise.all([...workers].map((w) => ((w.state = 'dead'), w.thread.terminate())));
      workers.clear();
    },
  };
}
