// A sandbox worker thread: one run at a time, each with a fresh QuickJS runtime and context on the
// thread's WebAssembly instance, whose memory is put back to its pristine bytes after every run
// (quickjs.ts says why). The instance itself is replaced when it broke, when a run grew its memory
// (resetting a large memory would cost every later run), or for a run with another memory limit.
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Execution, type ExecutionHost } from './execute.js';
import { DEFAULT_LIMITS } from './limits.js';
import type { FromWorker, RunMessage, ToWorker, WorkerInit, WorkerRunResult } from './protocol.js';
import { instantiateQuickJS, type QuickJSInstance } from './quickjs.js';
import { sandboxFailure } from './run-errors.js';

/** An instance whose memory grew past this is replaced rather than reset. */
const RESET_MAX_BYTES = 24 * 1024 * 1024;

/**
 * The nice value of a worker thread. Untrusted code gets the CPU only when the API's main thread
 * (and, on one machine, the database) does not want it: with as many workers as cores, busy
 * snippets would otherwise take an equal share and the API's latency would grow with them.
 */
const WORKER_NICENESS = 10;

/** Linux: a thread's id is a pid to setpriority(2), which then applies to that thread alone. */
function lowerThreadPriority(): void {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, WORKER_NICENESS);
  } catch {
    // Not Linux, or not permitted: the thread keeps the process's priority.
  }
}
lowerThreadPriority();

const init = workerData as WorkerInit;
const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);

let instance: Promise<QuickJSInstance> | null = null;
let instanceBytes = 0;
let current: Execution | null = null;

const host: ExecutionHost = {
  control: new Int32Array(init.control),
  unsafeTestHooks: init.unsafeTestHooks,
  postRequest: (runId, requestId, json) => post({ type: 'request', runId, requestId, json }),
};

function replaceInstance(memoryBytes: number): void {
  instance = instantiateQuickJS(init.wasmModule, memoryBytes);
  // A failure surfaces when a run awaits this instance; until then it must not crash the thread.
  instance.catch(() => {});
  instanceBytes = memoryBytes;
}

async function execute(run: RunMessage): Promise<WorkerRunResult> {
  if (!instance || instanceBytes !== run.limits.memoryBytes) replaceInstance(run.limits.memoryBytes);
  const used = await instance!;
  current = new Execution(used, run, host);
  const result = await current.done;
  current = null;
  return result;
}

/** Between runs: nothing of the last run may remain for the next. */
async function cleanUp(): Promise<void> {
  const used = await instance!;
  if (used.broken || used.memory.buffer.byteLength > RESET_MAX_BYTES) replaceInstance(instanceBytes);
  else used.reset();
}

port.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'run':
      execute(message).then(
        async (result) => {
          post({ type: 'done', runId: message.runId, result });
          await cleanUp();
        },
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

// Run one trivial snippet before reporting ready, so the first real run does not pay for the first
// compilation of the interpreter's hot paths.
await execute({ type: 'run', runId: -1, code: 'return 1', inputsJson: '{}', limits: { ...DEFAULT_LIMITS, memoryBytes: init.memoryBytes } });
await cleanUp();
post({ type: 'ready' });
