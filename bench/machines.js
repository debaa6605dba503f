#!/usr/bin/env node
// `npm run bench:machines`: the machine budgets of issue 23, on SQLite (built dist/, LOG_LEVEL info).
//
//   1. One `svc serve` with a workspace, a local cluster and BENCH_AGENTS (1,000) machines joined
//      through worker bootstraps (POST /v1/machine_joins), each with its own credential.
//   2. CPU per heartbeat: BENCH_BURST (20,000) heartbeats (POST /v1/machine_heartbeats with facts,
//      as the agent sends them) round-robin over the machines, 16 at a time; the server's CPU time
//      (user + system, /proc) divided by their number. Budget: under 1 ms.
//   3. The steady state: every machine heartbeats every BENCH_INTERVAL_S (15) seconds, spread evenly
//      over the interval as independent agents drift apart, for BENCH_INTERVALS (4) intervals; the
//      server's CPU time over wall time, its worker sweeps included. Budget: under 10 % of a core.
//      Also the heartbeat latency percentiles it saw and that no machine went UNREACHABLE.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { percentile, round } from './load.js';
import { call } from './members.js';
import { cpuSeconds, ensureBuilt, freePort, RESULTS, roomyPlansFile, startProcess, stopProcess, waitUntilUp } from './processes.js';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 1000);
const BURST = Number(process.env.BENCH_BURST ?? 20_000);
const INTERVAL_S = Number(process.env.BENCH_INTERVAL_S ?? 15);
const INTERVALS = Number(process.env.BENCH_INTERVALS ?? 4);
const BUDGET = { cpuMsPerHeartbeat: 1, steadyCorePercent: 10 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
const FACTS = { hostname: 'bench', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8 * 1024 ** 3, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

async function post(base, path, token, body) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`POST ${path} -> ${res.status} ${text}`);
  return JSON.parse(text);
}

async function main() {
  ensureBuilt();
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-machines-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    SVC_DATA_DIR: join(work, 'data'), SVC_SECRET_KEY: randomBytes(32).toString('hex'),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', PORT: String(port), HOST: '127.0.0.1', SVC_PLANS_FILE: await roomyPlansFile(work),
    SVC_MACHINE_HEARTBEAT_S: String(INTERVAL_S),
  };
  const proc = startProcess(['bin/svc.js', 'serve'], env, join(work, 'svc.log'));
  try {
    await waitUntilUp(`${base}/readyz`, proc);
    const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench machines' })).body.id;
    const ctx = { 'svc-context': ws };
    const op = (await call(base, 'POST', '/v1/clusters', TOKEN, { name: 'fleet' }, ctx)).body;
    await call(base, 'POST', `/v1/operations/${op.id}:wait?timeout=30`, TOKEN, undefined, ctx);
    const credentials = [];
    for (let i = 0; i < AGENTS; i++) {
      const b = (await call(base, 'POST', `/v1/clusters/${op.owner_id}/worker_bootstraps`, TOKEN, { ttl_seconds: 3600 }, ctx)).body;
      const joined = await post(base, '/v1/machine_joins', null, { token: b.token, facts: { ...FACTS, hostname: `bench-${i}` } });
      credentials.push(joined.credential);
      await post(base, '/v1/machine_heartbeats', joined.credential, {});
    }
    console.log(`${AGENTS} machines joined and ACTIVE`);

    // 2. CPU per heartbeat.
    let next = 0;
    const cpu0 = cpuSeconds(proc.pid);
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next < BURST) {
        const i = next++;
        await post(base, '/v1/machine_heartbeats', credentials[i % AGENTS], { facts: { ...FACTS, hostname: `bench-${i % AGENTS}` } });
      }
    }));
    const burstCpu = cpuSeconds(proc.pid) - cpu0;
    const burstWall = (performance.now() - t0) / 1000;
    const cpuMsPerHeartbeat = round((burstCpu * 1000) / BURST, 3);
    console.log(`burst: ${BURST} heartbeats in ${round(burstWall, 1)} s (${round(BURST / burstWall, 0)}/s), server CPU ${round(burstCpu, 2)} s: ${cpuMsPerHeartbeat} ms per heartbeat`);

    // 3. The steady state: each agent at its own phase of the interval.
    const latencies = [];
    const steadyCpu0 = cpuSeconds(proc.pid);
    const s0 = performance.now();
    const end = s0 + INTERVALS * INTERVAL_S * 1000;
    const gap = (INTERVAL_S * 1000) / AGENTS;
    await Promise.all(credentials.map(async (credential, i) => {
      let due = s0 + i * gap;
      while (due < end) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const h0 = performance.now();
        await post(base, '/v1/machine_heartbeats', credential, {});
        latencies.push(performance.now() - h0);
        due += INTERVAL_S * 1000;
      }
    }));
    const steadyWall = (performance.now() - s0) / 1000;
    const steadyPercent = round(((cpuSeconds(proc.pid) - steadyCpu0) / steadyWall) * 100, 2);
    latencies.sort((a, b) => a - b);
    const unreachable = (await call(base, 'GET', '/v1/machines?state=UNREACHABLE&limit=100', TOKEN, undefined, ctx)).body.data.length;
    console.log(`steady: ${latencies.length} heartbeats over ${round(steadyWall, 1)} s, server CPU ${steadyPercent} % of a core; ` +
      `latency p50 ${round(percentile(latencies, 50), 2)} ms, p99 ${round(percentile(latencies, 99), 2)} ms; unreachable ${unreachable}`);

    const result = {
      date: new Date().toISOString(), node: process.version, agents: AGENTS, interval_s: INTERVAL_S,
      burst: { heartbeats: BURST, wall_s: round(burstWall, 2), server_cpu_s: round(burstCpu, 2), cpu_ms_per_heartbeat: cpuMsPerHeartbeat },
      steady: {
        heartbeats: latencies.length, wall_s: round(steadyWall, 1), server_core_percent: steadyPercent,
        latency_ms: { p50: round(percentile(latencies, 50), 2), p99: round(percentile(latencies, 99), 2) }, unreachable,
      },
      budgets: BUDGET,
      pass: { cpu_per_heartbeat: cpuMsPerHeartbeat < BUDGET.cpuMsPerHeartbeat, steady: steadyPercent < BUDGET.steadyCorePercent, none_unreachable: unreachable === 0 },
    };
    writeFileSync(join(RESULTS, 'machines.json'), `${JSON.stringify(result, null, 2)}\n`);
    const ok = Object.values(result.pass).every(Boolean);
    console.log(`${ok ? 'PASS' : 'FAIL'} (budgets: < ${BUDGET.cpuMsPerHeartbeat} ms CPU per heartbeat, < ${BUDGET.steadyCorePercent} % of a core for ${AGENTS} agents every ${INTERVAL_S} s)`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await stopProcess(proc);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
