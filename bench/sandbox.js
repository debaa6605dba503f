#!/usr/bin/env node
// `npm run bench:sandbox`: the sandbox engine of issue 13, on the built dist/ (built when stale).
//
//   1. Cold starts: compiling the WebAssembly module; a worker from spawn to ready (a pool of one,
//      created and awaited); a WebAssembly instance from the compiled module (with the copy of its
//      pristine memory); a QuickJS runtime and context; one whole `return 1` run inside the thread
//      (context, prelude, compile, run, dispose); putting the memory back between two runs.
//   2. Latency through the pool (default size): `return 1`, and a run making 10 platform.request
//      calls answered at once by an in-process stub bridge. One run at a time.
//   3. Throughput: runs per second with BENCH_SANDBOX_INFLIGHT runs in flight (default 4 per worker).
//   Budgets (issue 13, which adds HTTP and the database on top in the route): trivial run median
//   < 15 ms, 10-request run median < 40 ms, >= 100 runs/s.
//
// Options (environment): BENCH_SANDBOX_N (1000 trivial runs), BENCH_SANDBOX_REQ_N (300),
// BENCH_SANDBOX_SECONDS (5), BENCH_SANDBOX_WORKERS (the CPU count), BENCH_SANDBOX_INFLIGHT.
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkLine } from './load.js';
import { ensureBuilt, RESULTS, ROOT } from './processes.js';

const N = Number(process.env.BENCH_SANDBOX_N ?? 1000);
const REQ_N = Number(process.env.BENCH_SANDBOX_REQ_N ?? 300);
const SECONDS = Number(process.env.BENCH_SANDBOX_SECONDS ?? 5);
const WORKERS = Number(process.env.BENCH_SANDBOX_WORKERS ?? availableParallelism());
const INFLIGHT = Number(process.env.BENCH_SANDBOX_INFLIGHT ?? WORKERS * 4);
const COLD_N = 10;
const BUDGET = { trivialMedianMs: 15, requestsMedianMs: 40, runsPerSecond: 100 };

const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

function percentiles(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p) => round(sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]);
  return { n: sorted.length, p50: at(50), p90: at(90), p99: at(99), max: round(sorted.at(-1)) };
}

async function timed(n, fn) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await fn(i);
    samples.push(performance.now() - started);
  }
  return percentiles(samples);
}

const stubBody = { items: Array.from({ length: 10 }, (_, i) => ({ id: `inst_${i}`, name: `install-${i}`, state: 'running' })), next_cursor: null };
const stubBridge = { request: async () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: stubBody }) };
const TEN_REQUESTS = `let n = 0;
for (let i = 0; i < 10; i++) n += (await platform.request({ path: '/v1/installs', query: { limit: 10 } })).body.items.length;
return n`;

function check(run, expected) {
  if (!run.ok || JSON.stringify(run.output) !== JSON.stringify(expected)) throw new Error(`unexpected run result: ${JSON.stringify(run)}`);
}

async function coldStarts(engine) {
  const { compileQuickJS, instantiateQuickJS } = engine.quickjs;
  const compile = await timed(COLD_N, () => compileQuickJS());
  const wasmModule = compileQuickJS();
  const worker = await timed(COLD_N, async () => {
    const sandbox = engine.index.createSandbox({ workers: 1 });
    await sandbox.ready();
    await sandbox.close();
  });
  const instance = await timed(50, () => instantiateQuickJS(wasmModule, 64 * 1024 * 1024));
  const quickjs = await instantiateQuickJS(wasmModule, 64 * 1024 * 1024);
  const context = await timed(500, () => {
    const runtime = quickjs.quickjs.newRuntime();
    const ctx = runtime.newContext();
    ctx.dispose();
    runtime.dispose();
  });
  const host = { control: new Int32Array(1), unsafeTestHooks: false, postRequest() {} };
  const limits = { ...engine.index.DEFAULT_LIMITS };
  const runs = [];
  const resets = [];
  for (let i = 0; i < 500; i++) {
    const started = performance.now();
    await new engine.execute.Execution(quickjs, { type: 'run', runId: i + 1, code: 'return 1', inputsJson: '{}', limits }, host).done;
    const ran = performance.now();
    quickjs.reset();
    runs.push(ran - started);
    resets.push(performance.now() - ran);
  }
  return {
    compile_wasm_module_ms: compile,
    worker_spawn_to_ready_ms: worker,
    wasm_instance_ms: instance,
    runtime_and_context_ms: context,
    whole_run_in_thread_ms: percentiles(runs),
    memory_reset_between_runs_ms: percentiles(resets),
  };
}

async function throughput(sandbox) {
  let completed = 0;
  let failed = 0;
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: INFLIGHT }, async (_, lane) => {
      while (performance.now() < end) {
        const run = await sandbox.run({ code: 'return inputs.lane', inputs: { lane }, tenant: `ws_${lane % WORKERS}`, bridge: stubBridge });
        if (run.ok) completed++;
        else failed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { seconds: round(seconds), runs: completed, failed, runs_per_second: Math.round(completed / seconds) };
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const dist = (file) => import(pathToFileURL(join(ROOT, 'dist', 'sandbox', file)).href);
  const engine = { index: await dist('index.js'), quickjs: await dist('quickjs.js'), execute: await dist('execute.js') };

  console.log(`cold starts (${COLD_N} workers, 50 instances, 500 contexts)...`);
  const cold = await coldStarts(engine);

  const sandbox = engine.index.createSandbox({ workers: WORKERS, perTenantConcurrency: WORKERS });
  await sandbox.ready();
  try {
    for (let i = 0; i < 200; i++) check(await sandbox.run({ code: 'return 1', tenant: 'ws_bench', bridge: stubBridge }), 1);
    console.log(`trivial runs (${N}, one at a time, ${WORKERS} workers)...`);
    const trivial = await timed(N, async () => check(await sandbox.run({ code: 'return 1', tenant: 'ws_bench', bridge: stubBridge }), 1));
    console.log(`10-request runs (${REQ_N})...`);
    const requests = await timed(REQ_N, async () => check(await sandbox.run({ code: TEN_REQUESTS, tenant: 'ws_bench', bridge: stubBridge }), 100));
    console.log(`throughput (${SECONDS} s, ${INFLIGHT} runs in flight)...`);
    const sustained = await throughput(sandbox);

    const checks = {
      trivial_run_median_ms: { value: trivial.p50, budget: `< ${BUDGET.trivialMedianMs}`, pass: trivial.p50 < BUDGET.trivialMedianMs },
      ten_request_run_median_ms: { value: requests.p50, budget: `< ${BUDGET.requestsMedianMs}`, pass: requests.p50 < BUDGET.requestsMedianMs },
      runs_per_second: { value: sustained.runs_per_second, budget: `>= ${BUDGET.runsPerSecond}`, pass: sustained.runs_per_second >= BUDGET.runsPerSecond && sustained.failed === 0 },
    };
    const report = {
      benchmark: 'sandbox engine: QuickJS (WebAssembly) worker pool, dist/ build, in-process stub bridge',
      date: new Date().toISOString(),
      node: process.version,
      cpus: availableParallelism(),
      workers: WORKERS,
      cold_starts: cold,
      trivial_run_ms: trivial,
      ten_request_run_ms: requests,
      throughput: { ...sustained, in_flight: INFLIGHT },
      main_rss_mb_after_run: Math.round(process.memoryUsage().rss / 1e6),
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'sandbox.json'), JSON.stringify(report, null, 2) + '\n');
    console.log('');
    for (const [name, p] of Object.entries(cold)) console.log(`${name.padEnd(28)} p50 ${p.p50} ms   p90 ${p.p90} ms   max ${p.max} ms`);
    console.log(`${'trivial run'.padEnd(28)} p50 ${trivial.p50} ms   p90 ${trivial.p90} ms   p99 ${trivial.p99} ms`);
    console.log(`${'10-request run'.padEnd(28)} p50 ${requests.p50} ms   p90 ${requests.p90} ms   p99 ${requests.p99} ms`);
    console.log(`${'throughput'.padEnd(28)} ${sustained.runs_per_second} runs/s (${sustained.runs} runs in ${sustained.seconds} s, ${sustained.failed} failed)`);
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    console.log('\nwritten: bench/results/sandbox.json');
    process.exitCode = report.pass ? 0 : 1;
  } finally {
    await sandbox.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
