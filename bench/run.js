#!/usr/bin/env node
// `npm run bench`: the kernel budgets of issue 2, measured on SQLite.
//
//   1. `svc serve` (the built dist/, default settings: LOG_LEVEL info, logs to a file) with a fresh
//      data dir; a workspace of 50 members and a workspace API token.
//   2. autocannon: GET /v1/workspaces/{id}/members with the API token, 64 connections, 10 s.
//   3. The same against a bare Fastify server (its own process) returning the same JSON body.
//   Budgets: real >= 0.5 x bare req/s; real p99 < 20 ms; server RSS after the run < 200 MB.
//
// Options (environment): BENCH_DURATION seconds per round (10), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64), BENCH_CPU_PROF=1
// writes a V8 CPU profile of the server to bench/results/ (for finding what is slow).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MEMBER_COUNT, buildScenario, createUsers } from './members.js';
import { checkLine, load as loadWith, measure as measureWith, row, summary } from './load.js';
import { ensureBuilt, freePort, heapMb, RESULTS, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const BUDGET = { ratio: 0.5, p99Ms: 20, rssMb: 200 };
const load = (url, headers, duration) => loadWith(url, headers, duration, CONNECTIONS);
const measure = (url, headers, duration, pid) => measureWith(url, headers, duration, CONNECTIONS, pid);

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
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
    const nodeArgs = [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS}`] : []), ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    server = startProcess([...nodeArgs, 'bin/svc.js', 'serve'], { ...env, PORT: String(port), HOST: '127.0.0.1' }, join(work, 'server.log'));
    await waitUntilUp(`${base}/readyz`, server);
    const scenario = await buildScenario(base, ownerToken, userIds);
    const bodyFile = join(work, 'members.json');
    writeFileSync(bodyFile, scenario.bodyText);
    const headers = { authorization: `Bearer ${scenario.apiToken}` };

    const barePort = await freePort();
    bare = startProcess([...nodeArgs, 'bench/bare-server.js'], { PORT: String(barePort), BENCH_BODY_FILE: bodyFile }, join(work, 'bare.log'));
    await waitUntilUp(`http://127.0.0.1:${barePort}/members`, bare);
    const svcUrl = `${base}${scenario.path}`;
    const bareUrl = `http://127.0.0.1:${barePort}/members`;

    console.log(`svc: GET ${scenario.path} (${MEMBER_COUNT} members, ${scenario.bodyText.length} bytes)`);
    console.log(`bare Fastify: GET /members (the same body)`);
    console.log(`${ROUNDS} interleaved rounds of ${DURATION} s each, ${CONNECTIONS} connections; the median round counts`);
    await load(svcUrl, headers, WARMUP); // warm-up: JIT, statement cache, heap at steady size
    await load(bareUrl, {}, WARMUP);
    // Interleaved rounds, so a burst of other load on this shared machine hits both sides alike.
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const r = await measure(svcUrl, headers, DURATION, server.pid);
      const b = await measure(bareUrl, {}, DURATION, bare.pid);
      rounds.push({ real: r, baseline: b, ratio: r.requests.average / b.requests.average });
      console.log(`  round ${i + 1}: svc ${Math.round(r.requests.average)} req/s (p99 ${r.latency.p99} ms), bare ${Math.round(b.requests.average)} req/s, ratio ${(r.requests.average / b.requests.average).toFixed(3)}`);
    }
    rounds.sort((x, y) => x.ratio - y.ratio);
    const { real, baseline } = rounds[Math.floor(rounds.length / 2)];
    const rss = rssMb(server.pid);
    const heap = await heapMb(base);
    console.log(`svc memory after the run: rss ${rss} MB, V8 heap used ${heap.used} MB of ${heap.total} MB`);
    await stopProcess(server);
    await stopProcess(bare);

    const ratio = Math.round((real.requests.average / baseline.requests.average) * 1000) / 1000;
    const checks = {
      ratio: { value: ratio, budget: `>= ${BUDGET.ratio}`, pass: ratio >= BUDGET.ratio },
      p99_ms: { value: real.latency.p99, budget: `< ${BUDGET.p99Ms}`, pass: real.latency.p99 < BUDGET.p99Ms },
      rss_mb: { value: rss, budget: `< ${BUDGET.rssMb}`, pass: rss < BUDGET.rssMb },
      all_2xx: { value: real.non2xx + real.errors + real.timeouts, budget: '0 non-2xx, errors or timeouts', pass: real.non2xx + real.errors + real.timeouts === 0 },
    };
    const report = {
      benchmark: 'kernel: GET /v1/workspaces/{id}/members with an API token',
      date: new Date().toISOString(),
      node: process.version,
      database: 'sqlite',
      log_level: env.LOG_LEVEL,
      members: MEMBER_COUNT,
      body_bytes: scenario.bodyText.length,
      connections: CONNECTIONS,
      duration_seconds: DURATION,
      rounds: ROUNDS,
      round_ratios: rounds.map((r) => Math.round(r.ratio * 1000) / 1000),
      svc: summary(real),
      bare_fastify: summary(baseline),
      svc_rss_mb_after_run: rss,
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'kernel.json'), JSON.stringify(report, null, 2) + '\n');

    const line = checkLine;
    console.log('');
    row('svc', real);
    row('bare Fastify', baseline);
    console.log(`CPU per request svc / bare: ${(real.serverCpuUsPerRequest / baseline.serverCpuUsPerRequest).toFixed(2)} (load elsewhere on the machine moves req/s more than this)`);
    line('req/s ratio svc / bare', checks.ratio);
    line('svc p99 latency (ms)', checks.p99_ms);
    line('svc resident memory after (MB)', checks.rss_mb);
    line('svc responses all 2xx', checks.all_2xx);
    console.log(`\nwritten: bench/results/kernel.json${CPU_PROF ? ' and a .cpuprofile of the server in bench/results/' : ''}`);
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
