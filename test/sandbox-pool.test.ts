// The sandbox pool (issue 13, scope 2): its size, the watchdog that replaces a worker that does not
// come back, fairness between tenants, bounded queues, closing, the main thread staying responsive
// while runaway code runs, and the compiled (dist) layout starting its workers without tsx.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { createSandbox, SandboxBusyError, SandboxClosedError, type RunResult, type Sandbox } from '../src/sandbox/index.js';
import { ROOT } from './paths.js';
import { assertHealthy, expectError, expectOk, noBridge, recordingBridge } from './sandbox-fixtures.js';

const pools: Sandbox[] = [];
after(() => Promise.all(pools.map((p) => p.close())));

function pool(options: Parameters<typeof createSandbox>[0]): Sandbox {
  const sandbox = createSandbox(options);
  pools.push(sandbox);
  return sandbox;
}

/** A bridge whose answers wait until `open()`: keeps runs busy without burning CPU. */
function gatedBridge() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const recording = recordingBridge(async () => {
    await gate;
    return { status: 200, headers: {}, body: 'through the gate' };
  });
  return { ...recording, open };
}

const waitingCode = 'return (await platform.request({ path: "/v1/wait" })).body';

/** Starts a run of `tenant` that holds its worker (waiting on the gate) until `open()`. */
async function occupyWorker(sandbox: Sandbox, tenant: string) {
  const gate = gatedBridge();
  const running = sandbox.run({ code: waitingCode, tenant, bridge: gate.bridge });
  await until(() => gate.seen.length === 1, 'the run to reach the bridge');
  return { running, open: gate.open };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (!condition()) {
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('pool size', () => {
  test('defaults to one worker per CPU', async () => {
    const sandbox = pool({});
    await sandbox.ready();
    assert.equal(sandbox.stats().workers, availableParallelism());
    await assertHealthy(sandbox, availableParallelism());
  });
});

describe('the watchdog', () => {
  test('replaces a worker stuck in host code, and the pool returns to full size', async () => {
    const sandbox = pool({ workers: 2, watchdogGraceMs: 300, unsafeTestHooks: true });
    await sandbox.ready();
    const started = performance.now();
    const result = expectError(await sandbox.run({ code: '__sandboxTestBlockHost()', tenant: 'a', bridge: noBridge, limits: { wallMs: 200 } }), 'TIMEOUT');
    assert.equal(result.error.details.limit, 'watchdog');
    assert.ok(performance.now() - started >= 450, 'not before the wall time plus the grace');
    assert.equal(sandbox.stats().replaced, 1);
    await assertHealthy(sandbox, 2);
  });

  test('replaces a worker stuck in an uninterruptible native loop', async () => {
    const sandbox = pool({ workers: 1, watchdogGraceMs: 300 });
    await sandbox.ready();
    const result = expectError(await sandbox.run({ code: 'return new Array(2 ** 32 - 1).join("")', tenant: 'a', bridge: noBridge, limits: { wallMs: 200 } }), 'TIMEOUT');
    assert.equal(result.error.details.limit, 'watchdog');
    assert.equal(sandbox.stats().replaced, 1);
    await assertHealthy(sandbox, 1);
  });

  test('a bridge that never answers combined with a stuck worker: the run ends, its request is aborted', async () => {
    const sandbox = pool({ workers: 1, watchdogGraceMs: 300, unsafeTestHooks: true });
    await sandbox.ready();
    const { bridge, signals } = recordingBridge(() => new Promise(() => {}));
    const result = await sandbox.run({ code: 'platform.request({ path: "/v1/never" }); __sandboxTestBlockHost()', tenant: 'a', bridge, limits: { wallMs: 200 } });
    expectError(result, 'TIMEOUT');
    assert.equal(signals.length, 1);
    assert.equal(signals[0]!.aborted, true);
    await assertHealthy(sandbox, 1);
  });

  test('a worker that dies mid-run: SANDBOX_FAILURE, and a replacement', async () => {
    const reasons: string[] = [];
    const sandbox = pool({ workers: 1, unsafeTestHooks: true, onWorkerReplaced: (reason) => reasons.push(reason) });
    await sandbox.ready();
    const result = expectError(await sandbox.run({ code: 'console.log("before"); __sandboxTestCrashHost()', tenant: 'a', bridge: noBridge }), 'SANDBOX_FAILURE');
    assert.equal(result.error.message, 'the sandbox worker exited');
    assert.equal(sandbox.stats().replaced, 1);
    assert.deepEqual(reasons, ['the sandbox worker exited']);
    await assertHealthy(sandbox, 1);
  });
});

describe('fairness and bounded queues', () => {
  test('one tenant saturating gets SandboxBusyError while another tenant still runs', async () => {
    const sandbox = pool({ workers: 2, perTenantConcurrency: 1, perTenantQueue: 1 });
    await sandbox.ready();
    const gate = gatedBridge();
    const first = sandbox.run({ code: waitingCode, tenant: 'ws_noisy', bridge: gate.bridge });
    const second = sandbox.run({ code: waitingCode, tenant: 'ws_noisy', bridge: gate.bridge });
    await until(() => gate.seen.length === 1, 'the first run to reach the bridge');
    assert.deepEqual([sandbox.stats().busy, sandbox.stats().queued], [1, 1], 'the second waits: the tenant is at its cap');
    const third = sandbox.run({ code: waitingCode, tenant: 'ws_noisy', bridge: gate.bridge });
    await assert.rejects(third, (error: unknown) => error instanceof SandboxBusyError && error.reason === 'tenant_queue_full' && error.tenant === 'ws_noisy');
    // The other tenant runs at once on the worker the noisy one may not take.
    const quiet = expectOk(await sandbox.run({ code: 'return "quiet ran"', tenant: 'ws_quiet', bridge: noBridge }));
    assert.equal(quiet.output, 'quiet ran');
    assert.equal(gate.seen.length, 1, 'the noisy tenant’s second run is still waiting');
    gate.open();
    for (const result of await Promise.all([first, second])) assert.equal(expectOk(result).output, 'through the gate');
    await assertHealthy(sandbox, 2);
  });

  test('the global queue is bounded, and a run waits at most queueTimeoutMs', async () => {
    const sandbox = pool({ workers: 1, perTenantConcurrency: 1, perTenantQueue: 10, maxQueue: 2, queueTimeoutMs: 400 });
    await sandbox.ready();
    const gate = await occupyWorker(sandbox, 'a');
    const queued: Promise<RunResult>[] = [sandbox.run({ code: 'return 1', tenant: 'a', bridge: noBridge }), sandbox.run({ code: 'return 2', tenant: 'b', bridge: noBridge })];
    await assert.rejects(sandbox.run({ code: 'return 3', tenant: 'c', bridge: noBridge }), (e: unknown) => e instanceof SandboxBusyError && e.reason === 'queue_full');
    for (const waiting of queued) await assert.rejects(waiting, (e: unknown) => e instanceof SandboxBusyError && e.reason === 'queue_timeout');
    assert.equal(sandbox.stats().queued, 0);
    gate.open();
    expectOk(await gate.running);
    await assertHealthy(sandbox, 1);
  });

  test('a cancelled queued run leaves the queue at once', async () => {
    const sandbox = pool({ workers: 1 });
    await sandbox.ready();
    const gate = await occupyWorker(sandbox, 'a');
    const controller = new AbortController();
    const queued = sandbox.run({ code: 'return 1', tenant: 'b', bridge: noBridge, signal: controller.signal });
    assert.equal(sandbox.stats().queued, 1);
    controller.abort();
    expectError(await queued, 'CANCELLED');
    assert.equal(sandbox.stats().queued, 0);
    gate.open();
    expectOk(await gate.running);
  });
});

describe('closing', () => {
  test('cancels queued runs, lets running ones end, then refuses new runs', async () => {
    const sandbox = pool({ workers: 1 });
    await sandbox.ready();
    const gate = await occupyWorker(sandbox, 'a');
    const queued = sandbox.run({ code: 'return 1', tenant: 'b', bridge: noBridge });
    const closing = sandbox.close();
    expectError(await queued, 'CANCELLED');
    await assert.rejects(sandbox.run({ code: 'return 1', tenant: 'c', bridge: noBridge }), SandboxClosedError);
    gate.open();
    assert.equal(expectOk(await gate.running).output, 'through the gate');
    await closing;
    assert.equal(sandbox.stats().workers, 0);
  });
});

describe('the main thread while runaway code runs', () => {
  test('4 infinite loops occupy 4 workers; the event loop keeps turning while they run', async () => {
    const sandbox = pool({ workers: 4, perTenantConcurrency: 4 });
    await sandbox.ready();
    // A wall limit far away, and an abort at the end: the loops run until the test has counted.
    const abort = new AbortController();
    const runaways = Array.from({ length: 4 }, () => sandbox.run({ code: 'while (true) {}', tenant: 'ws_runaway', bridge: noBridge, signal: abort.signal, limits: { wallMs: 10 * 60_000 } }));
    await until(() => sandbox.stats().busy === 4, 'the four runs to start');
    // Order of events, not latency (bench/hostile.js measures that): 200 turns of the main
    // thread's event loop complete while the four loops still run.
    for (let turns = 0; turns < 200; turns++) {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.equal(sandbox.stats().busy, 4, 'the loops were still running while the event loop turned');
    abort.abort();
    for (const result of await Promise.all(runaways)) expectError(result, 'CANCELLED');
    await assertHealthy(sandbox, 4);
  });
});

describe('the compiled layout (dist)', () => {
  test('starts worker.js without tsx and runs code', () => {
    // The same TypeScript-to-JavaScript step as `npm run build`, for src/sandbox only, into a
    // directory under node_modules so that the compiled files resolve the same packages.
    const cache = join(ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    const out = mkdtempSync(join(cache, 'sandbox-dist-'));
    try {
      const sourceDir = join(ROOT, 'src', 'sandbox');
      for (const file of readdirSync(sourceDir).filter((f) => f.endsWith('.ts'))) {
        const { outputText } = ts.transpileModule(readFileSync(join(sourceDir, file), 'utf8'), {
          compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
          fileName: file,
        });
        writeFileSync(join(out, file.replace(/\.ts$/, '.js')), outputText);
      }
      const script = `
        import { createSandbox } from ${JSON.stringify(pathToFileURL(join(out, 'index.js')).href)};
        import { WORKER_URL } from ${JSON.stringify(pathToFileURL(join(out, 'thread.js')).href)};
        const sandbox = createSandbox({ workers: 1 });
        const result = await sandbox.run({ code: 'return { sum: inputs.a + inputs.b }', inputs: { a: 2, b: 3 }, tenant: 't', bridge: { request: async () => ({ status: 200, headers: {}, body: null }) } });
        await sandbox.close();
        console.log(JSON.stringify({ worker: WORKER_URL.pathname, result }));`;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
      assert.equal(child.status, 0, child.stderr);
      const report = JSON.parse(child.stdout) as { worker: string; result: RunResult };
      assert.ok(report.worker.endsWith('/worker.js'), report.worker);
      assert.deepEqual(expectOk(report.result).output, { sum: 5 });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
