// The public contract of the sandbox engine. It knows nothing of snippets, agents, routes or the
// database: a caller hands it code, JSON inputs, limits and a bridge that serves
// `platform.request`, and gets back JSON output or a typed error, the captured console and stats.

/** A value that survives JSON.stringify/JSON.parse unchanged. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export const REQUEST_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type RequestMethod = (typeof REQUEST_METHODS)[number];

/** A `platform.request` call after the engine validated and normalized it. */
export interface PlatformRequest {
  method: RequestMethod;
  /** `/v1/...`, percent-encoded, no query string, no `.`/`..` segments, no scheme or host */
  path: string;
  /** query parameters (from the `query` object and any `?...` in the path), values as strings */
  query: Record<string, string | string[]>;
  /** lower-case names; never a credential, hop-by-hop or forwarding header */
  headers: Record<string, string>;
  /** absent when the snippet sent no body */
  body?: JsonValue;
}

export interface PlatformResponse {
  /** HTTP status, 100..599 */
  status: number;
  headers: Record<string, string>;
  /** the parsed JSON body, or the text of a non-JSON body, or null when empty */
  body: JsonValue;
}

/**
 * Serves `platform.request` for one run, in the host (main thread). The engine validated the
 * request already; the bridge authenticates it as the run's principal. `signal` aborts when the
 * run ends before the answer arrives (the answer is then discarded).
 */
export interface SandboxBridge {
  request(request: PlatformRequest, options: { signal: AbortSignal }): Promise<PlatformResponse>;
}

export interface RunLimits {
  /** wall-clock time of the run, bridge waits included (default 10,000 ms) */
  wallMs: number;
  /** CPU time of the worker thread during the run (default: wallMs) */
  cpuMs: number;
  /** QuickJS heap; enforced as a hard cap on the WebAssembly memory of the run (default 64 MiB) */
  memoryBytes: number;
  /** QuickJS stack (default 256 KiB; at most the pool's maxStackBytes) */
  stackBytes: number;
  /** `platform.request` calls per run; one more ends the run with REQUEST_LIMIT (default 50) */
  maxRequests: number;
  /** serialized output, UTF-8 bytes (default 1 MiB) */
  maxOutputBytes: number;
  /** console lines kept (default 1,000); then one truncation marker */
  maxLogLines: number;
  /** console bytes kept, UTF-8 (default 64 KiB); then one truncation marker */
  maxLogBytes: number;
}

export interface RunRequest {
  /** the body of an async function (strict mode); its return value is the output */
  code: string;
  /** a JSON object, deep-frozen inside the sandbox as the global `inputs` */
  inputs?: Record<string, JsonValue>;
  /** who the run counts against for fairness (a workspace id, for instance) */
  tenant: string;
  limits?: Partial<RunLimits>;
  bridge: SandboxBridge;
  /** aborting it ends the run with CANCELLED (also while it waits in the queue) */
  signal?: AbortSignal;
}

export const LOG_LEVELS = ['log', 'info', 'warn', 'error', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LogLine {
  level: LogLevel;
  /** the console arguments formatted and joined by spaces (objects as JSON) */
  message: string;
  /** milliseconds since the run started */
  at_ms: number;
}

export interface RunStats {
  /** CPU time of the worker thread while it ran this snippet, whole ms */
  cpu_time_ms: number;
  /** from the worker taking the run to its result, whole ms (queue time excluded) */
  wall_time_ms: number;
  /** QuickJS's estimate of its heap when the run ended */
  heap_used_bytes: number;
  /** `platform.request` calls forwarded to the bridge */
  request_count: number;
}

/**
 * Why a run failed:
 * - SNIPPET_THREW: an uncaught exception or rejection (also a syntax error or a stack overflow);
 *   details: `{ name, stack }`.
 * - TIMEOUT: the wall or CPU deadline passed, the promise could never settle, or the watchdog
 *   replaced an unresponsive worker; details: `{ limit: 'wall' | 'cpu' | 'never_settled' | 'watchdog', limit_ms? }`.
 * - MEMORY_LIMIT: the heap reached `memoryBytes`; details: `{ limit_bytes }`.
 * - OUTPUT_TOO_LARGE: the serialized output exceeds `maxOutputBytes`; details: `{ limit_bytes }`.
 * - REQUEST_LIMIT: a request past `maxRequests`; details: `{ limit }`.
 * - INVALID_OUTPUT: the return value is not JSON-serializable, or nested deeper than 64 levels;
 *   details: `{ type }` (and `limit_depth` for the depth).
 * - CANCELLED: the caller's signal aborted the run.
 * - SANDBOX_FAILURE: the engine itself failed (a worker died); the pool replaced the worker.
 */
export const RUN_ERROR_CODES = [
  'SNIPPET_THREW',
  'TIMEOUT',
  'MEMORY_LIMIT',
  'OUTPUT_TOO_LARGE',
  'REQUEST_LIMIT',
  'INVALID_OUTPUT',
  'CANCELLED',
  'SANDBOX_FAILURE',
] as const;
export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

export interface RunError {
  code: RunErrorCode;
  message: string;
  details: { [key: string]: JsonValue };
}

export type RunResult =
  | { ok: true; output: JsonValue; logs: LogLine[]; stats: RunStats }
  | { ok: false; error: RunError; logs: LogLine[]; stats: RunStats };

export interface SandboxOptions {
  /** worker threads (default: os.availableParallelism()) */
  workers?: number;
  /** runs waiting for a worker, all tenants together (default 128) */
  maxQueue?: number;
  /** runs of one tenant executing at once (default ceil(workers / 2)) */
  perTenantConcurrency?: number;
  /** runs of one tenant waiting (default 16) */
  perTenantQueue?: number;
  /**
   * a run waiting longer than this for a worker is refused with SandboxBusyError (default 10,000
   * ms); a run also waits at most its own wall time limit, which counts from submission: a run that
   * waited W ms gets wallMs - W to run, so it ends within its limit either way
   */
  queueTimeoutMs?: number;
  /** how long past a run's wall limit the pool waits before replacing its worker (default 2,000 ms) */
  watchdogGraceMs?: number;
  /** the largest per-run stackBytes; sizes the worker threads' native stacks (default 1 MiB) */
  maxStackBytes?: number;
  /** defaults for every run's limits */
  limits?: Partial<RunLimits>;
  /**
   * Called when a worker is replaced (watchdog, crash, failure to start), for the host's logs:
   * `reason` says what happened, `error` is the thread's error when there is one.
   */
  onWorkerReplaced?: (reason: string, error?: unknown) => void;
  /**
   * Tests only: exposes `__sandboxTestBlockHost()` inside the sandbox, which blocks the worker
   * thread in host code for ever (the watchdog's case), and `__sandboxTestCrashHost()`, which ends
   * the worker thread. Never enable it in production.
   */
  unsafeTestHooks?: boolean;
}

export interface SandboxStats {
  /** live workers (starting, idle or busy): the pool's size whenever it is healthy */
  workers: number;
  idle: number;
  busy: number;
  queued: number;
  /** workers replaced since the pool started (watchdog, crash) */
  replaced: number;
  runs: number;
}

export interface Sandbox {
  /** Runs code in a fresh QuickJS context. Rejects only with SandboxBusyError, SandboxClosedError or TypeError (bad arguments). */
  run(request: RunRequest): Promise<RunResult>;
  stats(): SandboxStats;
  /** Resolves when every worker is ready (a cold pool's first runs wait for this anyway). */
  ready(): Promise<void>;
  /** Refuses new runs, cancels queued ones, lets running ones end, then stops the workers. */
  close(): Promise<void>;
}

/**
 * - tenant_queue_full, queue_full: too many runs wait already.
 * - queue_timeout: the run waited `queueTimeoutMs` for a worker.
 * - time_limit: the run waited as long as its wall time limit (which counts from submission), so
 *   it could no longer finish within it; refused then rather than after the whole queue timeout.
 */
export type BusyReason = 'tenant_queue_full' | 'queue_full' | 'queue_timeout' | 'time_limit';

const BUSY_MESSAGES: Record<BusyReason, (tenant: string) => string> = {
  tenant_queue_full: (tenant) => `too many runs of ${tenant} are running or waiting`,
  queue_full: () => 'too many runs are waiting for the sandbox',
  queue_timeout: () => 'the run waited too long for a sandbox worker',
  time_limit: () => 'no sandbox worker was free before the run\'s time limit ran out',
};

/** The pool cannot take the run now; retry later (an HTTP route answers 429). */
export class SandboxBusyError extends Error {
  override readonly name = 'SandboxBusyError';
  constructor(
    readonly reason: BusyReason,
    readonly tenant: string,
    /** when a busy worker reaches its run's time limit at the latest, in ms from now (a retry hint) */
    readonly retryAfterMs = 1_000,
  ) {
    super(BUSY_MESSAGES[reason](tenant));
  }
}

export class SandboxClosedError extends Error {
  override readonly name = 'SandboxClosedError';
  constructor() {
    super('the sandbox is closed');
  }
}
