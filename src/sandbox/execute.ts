// One run inside a worker: a fresh QuickJS runtime and context on the worker's instance, the
// prelude, the snippet as an async function, then a loop that runs the context's jobs whenever a
// `platform.request` answer arrives, until the function's promise settles or a limit ends the run.
//
// Every entry into the interpreter runs under the interrupt handler (wall and CPU deadlines,
// cancellation, the request limit); the wall timer covers the time spent waiting for answers.
// An exception out of the WebAssembly instance itself (a trap, the host stack exhausted) marks the
// instance broken: the run still gets a result, and the worker replaces the instance.
import type { QuickJSContext, QuickJSDeferredPromise, QuickJSHandle, QuickJSRuntime } from 'quickjs-emscripten-core';
import { LogBuffer } from './logs.js';
import { PRELUDE, PRELUDE_FILENAME } from './prelude.js';
import type { RunMessage, WorkerRunResult } from './protocol.js';
import { RunMeter } from './meter.js';
import { memoryExhausted, type QuickJSInstance } from './quickjs.js';
import { MAX_OUTPUT_DEPTH } from './limits.js';
import { checkPlatformRequest, MAX_REQUEST_JSON_BYTES } from './request.js';
import {
  abortError,
  invalidOutput,
  memoryLimitError,
  NEVER_SETTLED,
  outputTooDeep,
  outputTooLarge,
  sandboxFailure,
  STACK_OVERFLOW,
  TOO_DEEP,
  type AbortReason,
} from './run-errors.js';
import { LOG_LEVELS, type LogLevel, type RunError } from './types.js';

export const SNIPPET_FILENAME = 'snippet.js';

export interface ExecutionHost {
  postRequest(runId: number, requestId: number, json: string): void;
  /** [0] holds the id of a run the pool wants cancelled */
  control: Int32Array;
  unsafeTestHooks: boolean;
}

interface Helpers {
  describeError: QuickJSHandle;
  serializeOutput: QuickJSHandle;
  parseJson: QuickJSHandle;
}

type Outcome = { ok: true; outputJson: string } | { ok: false; error: RunError };

export class Execution {
  readonly done: Promise<WorkerRunResult>;
  private resolveDone!: (result: WorkerRunResult) => void;
  private finished = false;
  private runtime: QuickJSRuntime | null = null;
  private context: QuickJSContext | null = null;
  private helpers: Helpers | null = null;
  private promise: QuickJSHandle | null = null;
  private releaseReserve: () => void = () => {};
  private readonly pending = new Map<number, QuickJSDeferredPromise>();
  private nextRequestId = 1;
  private requestCount = 0;
  private abortReason: AbortReason | null = null;
  private readonly logs: LogBuffer;
  private readonly meter: RunMeter;
  private wallTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly instance: QuickJSInstance,
    private readonly run: RunMessage,
    private readonly host: ExecutionHost,
  ) {
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.logs = new LogBuffer(run.limits.maxLogLines, run.limits.maxLogBytes);
    this.meter = new RunMeter(run.limits.wallMs, run.limits.cpuMs);
    // Fires only while the worker waits for answers: the interpreter is never running then.
    this.wallTimer = setTimeout(() => this.abort('wall'), run.limits.wallMs);
    this.guard(() => this.start());
  }

  get runId(): number {
    return this.run.runId;
  }

  /** The answer to a `platform.request`, as `{"response":...}` or `{"error":"..."}` JSON. */
  answer(requestId: number, json: string): void {
    const deferred = this.pending.get(requestId);
    if (!deferred || this.finished) return;
    this.pending.delete(requestId);
    this.guard(() => {
      const context = this.context!;
      const text = context.newString(json);
      const parsed = this.meter.inside(() => context.callFunction(this.helpers!.parseJson, context.undefined, text));
      text.dispose();
      if (parsed.error) {
        deferred.dispose();
        return this.finishThrown(parsed.error);
      }
      // Resolving looks up `then` on the value, which a snippet may have defined: interpreter time.
      this.meter.inside(() => deferred.resolve(parsed.value));
      parsed.value.dispose();
      deferred.dispose();
      this.pump();
    });
  }

  abort(reason: AbortReason): void {
    if (this.finished) return;
    this.abortReason ??= reason;
    this.guard(() => this.finishAborted());
  }

  private start(): void {
    const { limits } = this.run;
    this.releaseReserve = this.instance.reserve();
    const runtime = this.instance.quickjs.newRuntime();
    this.runtime = runtime;
    runtime.setMemoryLimit(limits.memoryBytes);
    runtime.setMaxStackSize(limits.stackBytes);
    runtime.setInterruptHandler(() => this.shouldInterrupt());
    const context = runtime.newContext();
    this.context = context;

    const hostLog = context.newFunction('hostLog', (level, message) => this.hostCall(() => this.onLog(level, message)));
    const hostRequest = context.newFunction('hostRequest', (json) => this.hostCall(() => this.onRequest(json)));
    const testHooks = this.host.unsafeTestHooks ? this.testHooks(context) : null;
    const inputs = context.newString(this.run.inputsJson);
    const maxLogChars = context.newNumber(limits.maxLogBytes);
    const maxOutputDepth = context.newNumber(MAX_OUTPUT_DEPTH);
    const prelude = context.unwrapResult(context.evalCode(PRELUDE, PRELUDE_FILENAME, { type: 'global', strict: true }));
    const api = context.unwrapResult(
      context.callFunction(prelude, context.undefined, hostLog, hostRequest, inputs, maxLogChars, maxOutputDepth, testHooks ?? context.undefined),
    );
    for (const handle of [prelude, hostLog, hostRequest, inputs, maxLogChars, maxOutputDepth, testHooks]) handle?.dispose();
    this.helpers = {
      describeError: context.getProp(api, 'describeError'),
      serializeOutput: context.getProp(api, 'serializeOutput'),
      parseJson: context.getProp(api, 'parseJson'),
    };
    api.dispose();

    this.meter.startCpu();
    const compiled = this.meter.inside(() =>
      context.evalCode(`(async function () {${this.run.code}\n})`, SNIPPET_FILENAME, { type: 'global', strict: true }),
    );
    if (compiled.error) return this.finishThrown(compiled.error);
    const called = this.meter.inside(() => context.callFunction(compiled.value, context.undefined));
    compiled.value.dispose();
    if (called.error) return this.finishThrown(called.error);
    this.promise = called.value;
    this.pump();
  }

  /** Runs pending jobs, then ends the run if the function settled or can no longer settle. */
  private pump(): void {
    if (this.finished) return;
    const context = this.context!;
    const jobs = this.meter.inside(() => this.runtime!.executePendingJobs());
    if (jobs.error) return this.finishThrown(jobs.error);
    if (this.abortReason) return this.finishAborted();
    const state = context.getPromiseState(this.promise!);
    if (state.type === 'fulfilled') return this.finishValue(state.value);
    if (state.type === 'rejected') return this.finishThrown(state.error);
    if (this.pending.size === 0) return this.finish({ ok: false, error: NEVER_SETTLED });
  }

  private shouldInterrupt(): boolean {
    this.abortReason ??= this.meter.exceeded() ?? (Atomics.load(this.host.control, 0) === this.run.runId ? 'cancel' : null);
    return this.abortReason !== null;
  }

  /**
   * Tests only (SandboxOptions.unsafeTestHooks): host functions that misbehave the way no real one
   * may, for the watchdog and crash tests. __sandboxTestBlockHost() blocks this thread in host code
   * for ever; __sandboxTestCrashHost() ends the thread.
   */
  private testHooks(context: QuickJSContext): QuickJSHandle {
    const hooks = context.newObject();
    const block = context.newFunction('__sandboxTestBlockHost', () => {
      for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    });
    const crash = context.newFunction('__sandboxTestCrashHost', () => process.exit(1));
    context.setProp(hooks, '__sandboxTestBlockHost', block);
    context.setProp(hooks, '__sandboxTestCrashHost', crash);
    block.dispose();
    crash.dispose();
    return hooks;
  }

  /**
   * A host function's body. quickjs-emscripten would turn a host exception into an error inside the
   * sandbox carrying the host's stack (file paths): a bug here must surface as a plain message.
   */
  private hostCall(body: () => QuickJSHandle): QuickJSHandle {
    try {
      return body();
    } catch (error) {
      // A trap or the host stack exhausted inside the instance: its state is suspect from now on.
      if (error instanceof WebAssembly.RuntimeError || error instanceof RangeError) this.instance.broken = true;
      return this.context!.newString('platform: internal error');
    }
  }

  private onLog(levelHandle: QuickJSHandle, messageHandle: QuickJSHandle | undefined): QuickJSHandle {
    const context = this.context!;
    const level = context.typeof(levelHandle) === 'string' ? context.getString(levelHandle) : '';
    const length = messageHandle ? this.stringLength(messageHandle) : undefined;
    if (!(LOG_LEVELS as readonly string[]).includes(level) || length === undefined || length > this.run.limits.maxLogBytes) {
      this.logs.drop();
    } else {
      this.logs.add(level as LogLevel, context.getString(messageHandle!), this.meter.elapsedMs());
    }
    return this.logs.accepting ? context.true : context.false;
  }

  /** Returns the promise of the answer, or a string: the message of a TypeError the prelude throws. */
  private onRequest(jsonHandle: QuickJSHandle): QuickJSHandle {
    const context = this.context!;
    const refuse = (message: string) => context.newString(message);
    const length = this.stringLength(jsonHandle);
    if (length === undefined) return refuse('platform.request: expects an object { method, path, query?, body?, headers? }');
    if (length > MAX_REQUEST_JSON_BYTES) return refuse(`platform.request: the request is larger than ${MAX_REQUEST_JSON_BYTES} bytes as JSON`);
    const json = context.getString(jsonHandle);
    if (Buffer.byteLength(json) > MAX_REQUEST_JSON_BYTES) return refuse(`platform.request: the request is larger than ${MAX_REQUEST_JSON_BYTES} bytes as JSON`);
    let raw: unknown;
    try {
      raw = JSON.parse(json);
    } catch {
      return refuse('platform.request: the request is not JSON-serializable');
    }
    const checked = checkPlatformRequest(raw);
    if (!checked.ok) return refuse(checked.message);
    if (this.requestCount >= this.run.limits.maxRequests) {
      // Not only a thrown error the snippet could catch: the run ends at the next interrupt check.
      this.abortReason ??= 'requests';
      return refuse(`platform.request: a run may make at most ${this.run.limits.maxRequests} requests`);
    }
    this.requestCount++;
    const requestId = this.nextRequestId++;
    const deferred = context.newPromise();
    this.pending.set(requestId, deferred);
    this.host.postRequest(this.run.runId, requestId, JSON.stringify(checked.value));
    return deferred.handle;
  }

  /** The UTF-16 length of a string in the sandbox, read without copying it out; undefined for other types. */
  private stringLength(handle: QuickJSHandle): number | undefined {
    const context = this.context!;
    if (context.typeof(handle) !== 'string') return undefined;
    const length = context.getProp(handle, 'length');
    const value = context.getNumber(length);
    length.dispose();
    return value;
  }

  private finishValue(value: QuickJSHandle): void {
    const context = this.context!;
    const type = context.typeof(value);
    const serialized = this.meter.inside(() => context.callFunction(this.helpers!.serializeOutput, context.undefined, value));
    value.dispose();
    if (serialized.error) {
      if (this.abortReason) {
        serialized.error.dispose();
        return this.finishAborted();
      }
      const thrown = this.describe(serialized.error);
      if (thrown.code === 'MEMORY_LIMIT') return this.finish({ ok: false, error: thrown });
      if (thrown.details.name === 'RangeError' && thrown.message === TOO_DEEP) return this.finish({ ok: false, error: outputTooDeep(type) });
      return this.finish({ ok: false, error: invalidOutput(`the return value is not JSON-serializable: ${thrown.message}`, type) });
    }
    const length = this.stringLength(serialized.value);
    if (length === undefined) {
      serialized.value.dispose();
      return this.finish({ ok: false, error: invalidOutput(`the return value is a ${type}, which JSON cannot represent`, type) });
    }
    const max = this.run.limits.maxOutputBytes;
    // A UTF-16 length above the byte limit is too large without copying it out of the sandbox.
    const outputJson = length > max ? null : context.getString(serialized.value);
    serialized.value.dispose();
    if (outputJson === null || Buffer.byteLength(outputJson) > max) return this.finish({ ok: false, error: outputTooLarge(this.run.limits) });
    this.finish({ ok: true, outputJson });
  }

  private finishThrown(thrown: QuickJSHandle): void {
    if (this.abortReason) {
      thrown.dispose();
      return this.finishAborted();
    }
    this.finish({ ok: false, error: this.describe(thrown) });
  }

  /** What an uncaught exception was; consumes the handle. */
  private describe(thrown: QuickJSHandle): RunError {
    const context = this.context!;
    this.releaseReserve();
    const described = this.meter.inside(() => context.callFunction(this.helpers!.describeError, context.undefined, thrown));
    thrown.dispose();
    let info = { name: 'Error', message: 'the thrown value could not be described', stack: '' };
    if (described.error) described.error.dispose();
    else {
      info = JSON.parse(context.getString(described.value)) as typeof info;
      described.value.dispose();
    }
    if (info.name === 'InternalError' && info.message === 'out of memory') return memoryLimitError(this.run.limits);
    // When even the error object could not be allocated, QuickJS throws null.
    const unallocated = described.error || (info.name === 'object' && info.message === 'null');
    if (unallocated && memoryExhausted(this.instance)) return memoryLimitError(this.run.limits);
    return { code: 'SNIPPET_THREW', message: info.message, details: { name: info.name, stack: info.stack } };
  }

  private finishAborted(): void {
    this.finish({ ok: false, error: abortError(this.abortReason ?? 'cancel', this.run.limits, this.run.waitedMs) });
  }

  /** Measures, releases the QuickJS runtime and reports. Idempotent. */
  private finish(outcome: Outcome): void {
    if (this.finished) return;
    this.finished = true;
    if (this.wallTimer) clearTimeout(this.wallTimer);
    this.releaseReserve();
    let heapUsed = 0;
    if (!this.instance.broken && this.runtime) {
      try {
        heapUsed = this.heapUsedBytes();
        for (const deferred of this.pending.values()) deferred.dispose();
        this.promise?.dispose();
        if (this.helpers) for (const handle of Object.values(this.helpers)) handle.dispose();
        this.context?.dispose();
        this.runtime.dispose();
      } catch {
        // A handle the run still held makes QuickJS abort, which Emscripten remembers: a new instance.
        this.instance.broken = true;
      }
    }
    this.pending.clear();
    const stats = this.meter.stats(heapUsed, this.requestCount);
    const logs = this.logs.finish(this.meter.elapsedMs());
    this.resolveDone(outcome.ok ? { ok: true, outputJson: outcome.outputJson, logs, stats } : { ok: false, error: outcome.error, logs, stats });
  }

  private heapUsedBytes(): number {
    const context = this.context!;
    const usage = this.runtime!.computeMemoryUsage();
    try {
      const used = context.getProp(usage, 'memory_used_size');
      const bytes = context.typeof(used) === 'number' ? context.getNumber(used) : 0;
      used.dispose();
      return bytes;
    } finally {
      usage.dispose();
    }
  }

  /**
   * Runs `step`; an exception escaping it came out of the WebAssembly instance (or is a bug here):
   * the instance is marked broken and the run ends with the closest honest error.
   */
  private guard(step: () => void): void {
    try {
      step();
    } catch (error) {
      this.instance.broken = true;
      if (this.finished) return;
      if (this.abortReason) return this.finishAborted();
      if (error instanceof RangeError && /call stack/i.test(error.message)) return this.finish({ ok: false, error: STACK_OVERFLOW });
      if (memoryExhausted(this.instance)) return this.finish({ ok: false, error: memoryLimitError(this.run.limits) });
      this.finish({ ok: false, error: sandboxFailure('the sandbox failed while running the code', error) });
    }
  }
}
