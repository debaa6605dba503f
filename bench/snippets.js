#!/usr/bin/env node
// `npm run bench:snippets`: the snippet budgets of issue 13, through the HTTP API of `svc serve`
// (built dist/, SQLite, default sandbox settings: one worker per CPU, a workspace runs at most half
// of them at once).
//
//   1. The first run after the server started (svc serve starts the sandbox pool before it listens).
//   2. Latency of POST /v1/snippets/{id}/runs, one after the other: `return 1` (budget: median
//      < 15 ms) and a snippet making 10 platform.request calls (GET /v1/snippets?limit=1; budget:
//      median < 40 ms).
//   3. Runs per second, sustained: `return 1` from two workspaces at once (two autocannon loads
//      of BENCH_SNIPPET_CONNECTIONS connections each), so the per-workspace cap does not hide the
//      pool's capacity. Budget: >= 100 runs/s.
//   4. GET /v1/installs p99 (autocannon, 4 connections), idle and then while CPU-bound snippets
//      (`while (true) {}`, 5 s each, started again as they end) keep every worker busy. Budget:
//      saturated p99 < 2 x idle p99.
//
// The daily snippets/runs quota stays enforced (counted on every run) with a plans file whose
// limit the benchmark cannot reach. Options: BENCH_SNIPPET_N (200), BENCH_SNIPPET_REQ_N (100),
// BENCH_DURATION (10 s), BENCH_SNIPPET_CONNECTIONS (4).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { checkLine } from './load.js';
import { call } from './members.js';
import { cpuSeconds, ensureBuilt, freePort, RESULTS, roomyPlansFile, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const N = Number(process.env.BENCH_SNIPPET_N ?? 200);
const REQ_N = Number(process.env.BENCH_SNIPPET_REQ_N ?? 100);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_SNIPPET_CONNECTIONS ?? 4);
const BUDGET = { trivialMedianMs: 15, tenRequestsMedianMs: 40, runsPerSecond: 100, saturatedP99OverIdle: 2 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);

const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p) => round(s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))]);
  return { n: s.length, p50: at(50), p90: at(90), p99: at(99), max: round(s[s.length - 1]) };
}

async function timedRuns(base, token, snippetId, n) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await call(base, 'POST', `/v1/snippets/${snippetId}/runs`, token, {});
    samples.push(performance.now() - started);
    if (res.body.state !== 'succeeded') throw new Error(`run ${res.body.id} ended ${res.body.state}: ${JSON.stringify(res.body.error)}`);
  }
  return samples;
}

function cannon(opts) {
  return autocannon({ connections: CONNECTIONS, duration: DURATION, pipelining: 1, ...opts });
}

async function workspaceWithToken(base, name) {
  const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name })).body.id;
  const token = (await call(base, 'POST', '/v1/api_tokens', TOKEN, { name: 'bench', role: 'admin' }, { 'svc-context': ws })).body.token;
  return { ws, token };
}

async function main() {
  ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-snippets-'));
  const plans = await roomyPlansFile(work);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    SVC_DATA_DIR: join(work, 'data'), SVC_SECRET_KEY: randomBytes(32).toString('hex'), SVC_PLANS_FILE: plans,
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', PORT: String(port), HOST: '127.0.0.1',
  };
  const server = startProcess(['bin/svc.js', 'serve'], env, join(work, 'server.log'));
  let stopLoops = false;
  try {
    await waitUntilUp(`${base}/healthz`, server);
    const a = await workspaceWithToken(base, 'Bench snippets A');
    const b = await workspaceWithToken(base, 'Bench snippets B');
    const create = async (who, name, code) => (await call(base, 'POST', '/v1/snippets', who.token, { name, code, display_type: 'json' })).body.id;
    const trivialA = await create(a, 'trivial', 'return 1');
    const trivialB = await create(b, 'trivial', 'return 1');
    const tenRequests = await create(a, 'ten requests',
      "let n = 0; for (let i = 0; i < 10; i++) n += (await platform.request({ path: '/v1/snippets', query: { limit: 1 } })).body.data.length; return n;");

    console.log('first run after start...');
    const coldStarted = performance.now();
    await call(base, 'POST', `/v1/snippets/${trivialA}/runs`, a.token, {});
    const coldMs = round(performance.now() - coldStarted);

    console.log(`latency: ${N} trivial runs, ${REQ_N} runs of 10 platform.request calls...`);
    await timedRuns(base, a.token, trivialA, 20);
    const trivial = stats(await timedRuns(base, a.token, trivialA, N));
    const ten = stats(await timedRuns(base, a.token, tenRequests, REQ_N));

    console.log(`throughput: ${DURATION} s of trivial runs from two workspaces, ${CONNECTIONS} connections each...`);
    const runLoad = (who, id) => cannon({ url: `${base}/v1/snippets/${id}/runs`, method: 'POST', headers: { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' }, body: '{}' });
    const cpuBefore = cpuSeconds(server.pid);
    const [la, lb] = await Promise.all([runLoad(a, trivialA), runLoad(b, trivialB)]);
    const cpuUsed = cpuSeconds(server.pid) - cpuBefore;
    const runsPerSecond = Math.round(la.requests.average + lb.requests.average);
    const throughput = {
      runs_per_second: runsPerSecond, non_2xx: la.non2xx + lb.non2xx, errors: la.errors + lb.errors,
      // CPU of the whole server process (API thread and sandbox workers) per run: steadier than runs/s on a shared machine.
      server_cpu_ms_per_run: round((cpuUsed * 1000) / Math.max(1, la.requests.total + lb.requests.total), 2),
      latency_ms: { p50: Math.max(la.latency.p50, lb.latency.p50), p99: Math.max(la.latency.p99, lb.latency.p99) },
    };

    console.log('GET /v1/installs p99: idle, then with every worker running a CPU-bound snippet...');
    const installs = () => cannon({ url: `${base}/v1/installs`, headers: { authorization: `Bearer ${a.token}` } });
    const idle = await installs();
    const spin = { a: await create(a, 'spin', 'while (true) {}'), b: await create(b, 'spin', 'while (true) {}') };
    // Each workspace keeps its share of the workers busy (its cap is half the pool), run after run.
    const loop = async (who, id) => {
      while (!stopLoops) {
        await fetch(`${base}/v1/snippets/${id}/runs`, {
          method: 'POST', headers: { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ overrides: { timeout_ms: 5000 } }),
        }).then((r) => r.text()).catch(() => undefined);
      }
    };
    const perWorkspace = Math.ceil(availableParallelism() / 2);
    const loops = [...Array.from({ length: perWorkspace }, () => loop(a, spin.a)), ...Array.from({ length: perWorkspace }, () => loop(b, spin.b))];
    await new Promise((r) => setTimeout(r, 500));
    const busy = await installs();
    stopLoops = true;
    const memory = rssMb(server.pid);
    await Promise.all(loops);

    const checks = {
      trivial_run_median_ms: { value: trivial.p50, budget: `< ${BUDGET.trivialMedianMs}`, pass: trivial.p50 < BUDGET.trivialMedianMs },
      ten_request_run_median_ms: { value: ten.p50, budget: `< ${BUDGET.tenRequestsMedianMs}`, pass: ten.p50 < BUDGET.tenRequestsMedianMs },
      runs_per_second: { value: runsPerSecond, budget: `>= ${BUDGET.runsPerSecond}`, pass: runsPerSecond >= BUDGET.runsPerSecond && throughput.non_2xx === 0 },
      installs_p99_saturated_over_idle: {
        value: round(busy.latency.p99 / Math.max(1, idle.latency.p99), 2), budget: `< ${BUDGET.saturatedP99OverIdle}`,
        pass: busy.latency.p99 < BUDGET.saturatedP99OverIdle * Math.max(1, idle.latency.p99),
      },
    };
    const result = {
      benchmark: 'snippets through the HTTP API (svc serve, dist/, SQLite, default sandbox settings)',
      date: new Date().toISOString(), node: process.version, cpus: availableParallelism(),
      first_run_after_start_ms: coldMs,
      trivial_run_latency_ms: trivial,
      ten_request_run_latency_ms: ten,
      throughput,
      installs_list: {
        idle: { p50: idle.latency.p50, p99: idle.latency.p99, requests_per_second: Math.round(idle.requests.average) },
        saturated: { p50: busy.latency.p50, p99: busy.latency.p99, requests_per_second: Math.round(busy.requests.average) },
      },
      server_rss_mb_saturated: memory,
      checks,
    };
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(join(RESULTS, 'snippets.json'), JSON.stringify(result, null, 2) + '\n');
    console.log(`first run after start: ${coldMs} ms`);
    console.log(`trivial run: median ${trivial.p50} ms, p99 ${trivial.p99} ms; 10 requests: median ${ten.p50} ms, p99 ${ten.p99} ms`);
    console.log(`throughput: ${runsPerSecond} runs/s (p99 ${throughput.latency_ms.p99} ms, non-2xx ${throughput.non_2xx}, server CPU ${throughput.server_cpu_ms_per_run} ms per run)`);
    console.log(`GET /v1/installs p99: idle ${idle.latency.p99} ms, saturated ${busy.latency.p99} ms; RSS ${memory} MB`);
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    process.exitCode = Object.values(checks).every((c) => c.pass) ? 0 : 1;
  } finally {
    stopLoops = true;
    await stopProcess(server);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
