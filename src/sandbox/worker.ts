// A sandbox worker thread: one run at a time, each in a fresh QuickJS runtime and context on the
// thread's WebAssembly instance. The instance is reused while it is healthy and small; after a trap,
// or a run that grew its memory, the next run gets a new one (that memory goes back to the system).
import { parentPort, workerData } from 'node:worker_threads';
import { Execution, type ExecutionHost } from './execute.js';
import { DEFAULT_LIMITS } from './limits.js';
import type { FromWorker, RunMessage, ToWorker, WorkerInit, WorkerRunResult } from './protocol.js';
import { instantiateQuickJS, type QuickJSInstance } from './quickjs.js';
import { sandboxFailure } from './run-errors.js';

/** An instance whose memory grew past this is replaced after its run. */
const RETAIN_MEMORY_BYTES = 32 * 1024 * 1024;

const init = workerData as WorkerInit;
const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);

let instance: Promise<QuickJSInstance> | null = null;
let current: Execution | null = null;

const host: ExecutionHost = {
  control: new Int32Array(init.control),
  unsafeTestHooks: init.unsafeTestHooks,
  postRequest: (runId, requestId, json) => post({ type: 'request', runId, requestId, json }),
};

async function acquire(memoryBytes: number): Promise<QuickJSInstance> {
  if (instance) {
    const ready = await instance;
    if (!ready.poisoned && ready.memoryBytes === memoryBytes) return ready;
  }
  instance = instantiateQuickJS(init.wasmModule, memoryBytes);
  return instance;
}

async function execute(run: RunMessage): Promise<WorkerRunResult> {
  const used = await acquire(run.limits.memoryBytes);
  current = new Execution(used, run, host);
  const result = await current.done;
  current = null;
  if (used.poisoned || used.memory.buffer.byteLength > RETAIN_MEMORY_BYTES) {
    instance = null;
    // Instantiated now, while the worker is idle, rather than on the next run's clock.
    void acquire(run.limits.memoryBytes);
  }
  return result;
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'run':
      execute(message).then(
        (result) => post({ type: 'done', runId: message.runId, result }),
        (error: unknown) => {
          // Only instantiation can fail here (Execution reports its own failures): let the pool
          // replace this thread.
          post({
            type: 'done',
            runId: message.runId,
            result: {
              ok: false,
              error: sandboxFailure('the sandbox could not start', error),
              logs: [],
              stats: { cpu_time_ms: 0, wall_time_ms: 0, heap_used_bytes: 0, request_count: 0 },
            },
          });
          process.exit(1);
        },
      );
      break;
    case 'response':
      if (current?.runId === message.runId) current.answer(message.requestId, message.json);
      break;
    case 'cancel':
      if (current?.runId === message.runId) current.abort('cancel');
      break;
  }
});

// Instantiate and run one trivial snippet before reporting ready, so the first real run does not
// pay for instantiation or for the first compilation of the interpreter's hot paths.
await acquire(init.memoryBytes);
const contextStarted = performance.now();
await execute({ type: 'run', runId: -1, code: 'return 1', inputsJson: '{}', limits: { ...DEFAULT_LIMITS, memoryBytes: init.memoryBytes } });
post({ type: 'ready', startupMs: performance.now(), contextMs: performance.now() - contextStarted });
