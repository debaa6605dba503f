#!/usr/bin/env node
// `npm run bench:kernel`: the per-request budgets of issues 2 and 33, measured on SQLite.
//
//   1. `svc serve` (the built dist/, default settings: LOG_LEVEL info, logs to a file) with a fresh
//      data dir; each scenario of bench/kernel-scenarios.js sets up its workspace and API token
//      through the API: the members list (50 members), the secrets list (30 secrets), GET
//      /v1/quotas, an install read, and :access of a secret's latest version (audited).
//   2. A bare Fastify server (its own process) with one route per scenario, answering the same
//      method with the same body the real route answered during setup.
//   3. autocannon, 64 connections, interleaved rounds: in each round every scenario is measured
//      against svc, then against its bare route, so a burst of other load on this shared machine
//      hits both sides alike. Per scenario the median round (by ratio) counts.
//   Budgets: each scenario's req/s >= its budget x bare's (0.5; :access 0.4); the members list's
//   p99 < 20 ms; the server's resident memory after every scenario < 200 MB.
//
// Options (environment): BENCH_DURATION seconds per round (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64),
// BENCH_SCENARIOS (comma-separated names, all by default), BENCH_CPU_PROF=1 writes a V8 CPU profile of
// the server to bench/results/ (for finding what is slow), BENCH_NODE_ARGS (flags for both processes).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCENARIOS } from './kernel-scenarios.js';
import { call, createUsers, MEMBER_COUNT } from './members.js';
import { checkLine, load, LOAD, measure, round, row, summary } from './load.js';
import { ensureBuilt, freePort, heapMb, RESULTS, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const { duration: DURATION, rounds: ROUNDS, warmup: WARMUP, connections: CONNECTIONS } = LOAD;
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const ONLY = process.env.BENCH_SCENARIOS ? process.env.BENCH_SCENARIOS.split(',') : null;
const BUDGET = { p99Ms: 20, rssMb: 200 };

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const scenarios = SCENARIOS.filter((s) => !ONLY || ONLY.includes(s.name));
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const ownerToken = randomBytes(24).toString('base64').replace(/[^A-Za-z0-9]/g, '').padEnd(32, 'x').slice(0, 32);
  const env = {
    SVC_DATA_DIR: join(work, 'data'),
    SVC_SECRET_KEY: randomBytes(32).toString('hex'),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test',
    SVC_BOOTSTRAP_PASSWORD: 'bench owner password',
    SVC_BOOTSTRAP_TOKEN: ownerToken,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  };
  let server;
  let bare;
  try {
    console.log(`creating ${MEMBER_COUNT - 1} users besides the owner...`);
    const userIds = await createUsers(env, MEMBER_COUNT - 1);

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const profArgs = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}`] : [];
    server = startProcess([...profArgs, 'bin/svc.js', 'serve'], { ...env, PORT: String(port), HOST: '127.0.0.1' }, join(work, 'server.log'));
    await waitUntilUp(`${base}/readyz`, server);

    const bareRoutes = [];
    for (const s of scenarios) {
      const target = await s.setup(base, ownerToken, userIds);
      const first = await call(base, target.method, target.path, target.token);
      const bodyFile = join(work, `${s.name}.json`);
      writeFileSync(bodyFile, first.text);
      Object.assign(s, { target, bodyBytes: first.text.length, barePath: `/${s.name}`, headers: { authorization: `Bearer ${target.token}` } });
      bareRoutes.push({ method: target.method, path: s.barePath, bodyFile });
    }
    const routesFile = join(work, 'bare-routes.json');
    writeFileSync(routesFile, JSON.stringify(bareRoutes));
    const barePort = await freePort();
    bare = startProcess([...profArgs, 'bench/bare-server.js'], { PORT: String(barePort), BENCH_ROUTES_FILE: routesFile }, join(work, 'bare.log'));
    await waitUntilUp(`http://127.0.0.1:${barePort}${scenarios[0].barePath}`, bare, 60_000, { method: scenarios[0].target.method });

    for (const s of scenarios) {
      s.urls = { svc: `${base}${s.target.path}`, bare: `http://127.0.0.1:${barePort}${s.barePath}` };
      s.rounds = [];
      console.log(`${s.name.padEnd(8)} ${s.describe}: ${s.bodyBytes} bytes; bare ${s.target.method} ${s.barePath}`);
    }
    console.log(`${ROUNDS} interleaved rounds of ${DURATION} s per side and scenario, ${CONNECTIONS} connections; the median round counts`);
    for (const s of scenarios) {
      // warm-up: JIT, statement cache, heap at steady size
      await load(s.urls.svc, s.headers, WARMUP, CONNECTIONS, { method: s.target.method });
      await load(s.urls.bare, {}, WARMUP, CONNECTIONS, { method: s.target.method });
    }
    for (let i = 0; i < ROUNDS; i++) {
      for (const s of scenarios) {
        const opts = { method: s.target.method };
        const r = await measure(s.urls.svc, s.headers, DURATION, CONNECTIONS, server.pid, opts);
        const b = await measure(s.urls.bare, {}, DURATION, CONNECTIONS, bare.pid, opts);
        const ratio = r.requests.average / b.requests.average;
        s.rounds.push({ real: r, baseline: b, ratio });
        console.log(`  round ${i + 1} ${s.name.padEnd(8)} svc ${Math.round(r.requests.average)} req/s (p99 ${r.latency.p99} ms, ${r.serverCpuUsPerRequest} us CPU), bare ${Math.round(b.requests.average)} req/s (${b.serverCpuUsPerRequest} us), ratio ${ratio.toFixed(3)}`);
      }
    }
    const rss = rssMb(server.pid);
    const heap = await heapMb(base);
    console.log(`svc memory after the run: rss ${rss} MB, V8 heap used ${heap.used} MB of ${heap.total} MB`);
    await stopProcess(server);
    await stopProcess(bare);

    const checks = {};
    const results = {};
    for (const s of scenarios) {
      const sorted = [...s.rounds].sort((x, y) => x.ratio - y.ratio);
      const { real, baseline, ratio } = sorted[Math.floor(sorted.length / 2)];
      s.median = { real, baseline };
      const non2xx = s.rounds.reduce((n, r) => n + r.real.non2xx + r.real.errors + r.real.timeouts, 0);
      checks[`${s.name}_ratio`] = { value: round(ratio, 3), budget: `>= ${s.budget}`, pass: ratio >= s.budget };
      if (s.name === 'members') checks.members_p99_ms = { value: real.latency.p99, budget: `< ${BUDGET.p99Ms}`, pass: real.latency.p99 < BUDGET.p99Ms };
      checks[`${s.name}_all_2xx`] = { value: non2xx, budget: '0 non-2xx, errors or timeouts', pass: non2xx === 0 };
      results[s.name] = {
        route: `${s.target.method} ${s.describe}`,
        body_bytes: s.bodyBytes,
        round_ratios: s.rounds.map((r) => round(r.ratio, 3)),
        cpu_per_request_ratio: round(real.serverCpuUsPerRequest / baseline.serverCpuUsPerRequest, 2),
        svc: summary(real),
        bare_fastify: summary(baseline),
      };
    }
    checks.rss_mb = { value: rss, budget: `< ${BUDGET.rssMb}`, pass: rss < BUDGET.rssMb };
    const report = {
      benchmark: 'kernel: per-request cost of svc routes with an API token against a bare Fastify route serving the same bytes',
      date: new Date().toISOString(),
      node: process.version,
      database: 'sqlite',
      log_level: env.LOG_LEVEL,
      connections: CONNECTIONS,
      duration_seconds: DURATION,
      rounds: ROUNDS,
      scenarios: results,
      svc_rss_mb_after_run: rss,
      svc_heap_used_mb_after_run: heap.used,
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'kernel.json'), JSON.stringify(report, null, 2) + '\n');

    console.log('');
    for (const s of scenarios) {
      row(`${s.name} svc`, s.median.real);
      row(`${s.name} bare`, s.median.baseline);
    }
    console.log('(server CPU per request is what load elsewhere on the machine disturbs least)');
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    console.log(`\nwritten: bench/results/kernel.json${CPU_PROF ? ' and .cpuprofile files of both servers in bench/results/' : ''}`);
    process.exitCode = report.pass ? 0 : 1;
  } finally {
    if (server) await stopProcess(server);
    if (bare) await stopProcess(bare);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
