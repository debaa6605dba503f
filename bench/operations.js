#!/usr/bin/env node
// `npm run bench:operations`: the operations-engine budgets of issue 3.
//
//   1. Latency (SQLite, `svc serve`, local driver, no injected latency): POST /v1/clusters then
//      POST /v1/operations/{id}:wait, one after the other. Budget: median < 50 ms.
//   2. Throughput (SQLite): operations enqueued by an API-only process, then one worker process
//      started; completions per second counted from the database. Budget: >= 200 operations/s.
//   3. Scale-out (PostgreSQL): the same with one, then two worker processes. Budget: two > one.
//      Measured twice: as above (CPU-bound: on a 2-core machine the workers and PostgreSQL share
//      the cores), and with every operation waiting 200 ms on its simulated cluster, as real
//      drivers do (a worker is then bound by its SVC_WORKER_CONCURRENCY slots).
//      Uses BENCH_DATABASE_URL, else starts a throwaway PostgreSQL 15 with .ci/start-postgres
//      (skipped, and reported so, when neither is possible).
//
// Options (environment): BENCH_OPS_LATENCY_N (300), BENCH_OPS_N (2000), BENCH_OPS_PG_N (3000),
// BENCH_OPS_PG_ROUNDS (3: alternating rounds of one and two workers; the medians count),
// BENCH_OPS_PG_IO_N (1500: operations per round of the scale-out with cluster latency).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { call } from './members.js';
import { percentile, round } from './load.js';
import { ensureBuilt, freePort, RESULTS, roomyPlansFile, ROOT, startProcess, stopProcess, waitUntilUp } from './processes.js';

const LATENCY_N = Number(process.env.BENCH_OPS_LATENCY_N ?? 300);
const THROUGHPUT_N = Number(process.env.BENCH_OPS_N ?? 2000);
const PG_N = Number(process.env.BENCH_OPS_PG_N ?? 3000);
const PG_ROUNDS = Number(process.env.BENCH_OPS_PG_ROUNDS ?? 3);
const PG_IO_N = Number(process.env.BENCH_OPS_PG_IO_N ?? 1500);
const IO_LATENCY_MS = 200;
const BUDGET = { medianMs: 50, opsPerSecond: 200 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);

async function startSvc(env, work, name, role = 'all') {
  const port = await freePort();
  const child = startProcess(['bin/svc.js', 'serve', '--role', role], { ...env, PORT: String(port), HOST: '127.0.0.1' }, join(work, `${name}.log`));
  const base = `http://127.0.0.1:${port}`;
  await waitUntilUp(`${base}/readyz`, child);
  return { child, base };
}

/** Starts `count` cluster.create operations, `parallel` at a time; returns their ids. */
async function enqueue(base, workspaceId, count, parallel = 32, latencyMs = 0) {
  const ids = [];
  let next = 0;
  const local = latencyMs ? { local: { faults: [{ action: 'capabilities', latency_ms: latencyMs }] } } : {};
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < count) {
      const i = next++;
      const op = await call(base, 'POST', '/v1/clusters', TOKEN, { name: `c-${i}`, ...local }, { 'svc-context': workspaceId });
      ids.push(op.body.id);
    }
  }));
  return ids;
}

/**
 * Starts the worker processes with `startWorkers` while polling the database for running
 * operations: the time from the first completion to the last.
 */
async function drainTime(countRunning, total, startWorkers) {
  let first = null;
  const polling = (async () => {
    for (;;) {
      const running = await countRunning();
      const now = performance.now();
      if (first === null && running < total) first = now;
      if (running === 0) return (now - first) / 1000;
      // Often enough for a drain of many seconds, rarely enough not to steal the CPU measured.
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const workers = await startWorkers();
  return { seconds: await polling, workers };
}

async function latencyAndThroughput(work) {
  const env = {
    SVC_DATA_DIR: join(work, 'sqlite'), SVC_SECRET_KEY: randomBytes(32).toString('hex'), SVC_PLANS_FILE: await roomyPlansFile(work),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: 'info',
  };
  // 1. latency, one process doing both
  let svc = await startSvc(env, work, 'sqlite-all');
  const ws = (await call(svc.base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench ops' })).body.id;
  const samples = [];
  for (let i = 0; i < LATENCY_N + 30; i++) {
    const t0 = performance.now();
    const op = await call(svc.base, 'POST', '/v1/clusters', TOKEN, { name: `l-${i}` }, { 'svc-context': ws });
    const done = await call(svc.base, 'POST', `/v1/operations/${op.body.id}:wait?timeout=30`, TOKEN, undefined, { 'svc-context': ws });
    if (done.body.state !== 'SUCCEEDED') throw new Error(`operation ended ${done.body.state}`);
    if (i >= 30) samples.push(performance.now() - t0); // the first 30 warm the JIT and caches
  }
  await stopProcess(svc.child);
  samples.sort((a, b) => a - b);
  const latency = { n: samples.length, p50: round(percentile(samples, 50)), p90: round(percentile(samples, 90)), p99: round(percentile(samples, 99)), max: round(samples.at(-1)) };

  // 2. throughput: enqueue with an API-only process, drain with one worker process
  svc = await startSvc(env, work, 'sqlite-api', 'api');
  const ws2 = (await call(svc.base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench throughput' })).body.id;
  await enqueue(svc.base, ws2, THROUGHPUT_N);
  const sqlite = new Database(join(env.SVC_DATA_DIR, 'svc.db'), { readonly: true });
  const running = sqlite.prepare("select count(*) as n from operations where state = 'RUNNING' and workspace_id = ?").pluck();
  const drained = await drainTime(async () => running.get(ws2), THROUGHPUT_N, () => startSvc(env, work, 'sqlite-worker', 'worker'));
  sqlite.close();
  await stopProcess(drained.workers.child);
  await stopProcess(svc.child);
  return { latency, throughput: { operations: THROUGHPUT_N, seconds: round(drained.seconds, 2), per_second: Math.round(THROUGHPUT_N / drained.seconds) } };
}

function postgresUrl(work) {
  if (process.env.BENCH_DATABASE_URL) return process.env.BENCH_DATABASE_URL;
  const r = spawnSync(join(ROOT, '.ci', 'start-postgres'), [join(work, 'pg'), '55491'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** One drain on a fresh database: `count` operations enqueued, then `workers` worker processes. */
async function drainOnPostgres(adminUrl, work, workers, count, latencyMs) {
  const name = `svc_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const env = {
    DATABASE_URL: url.toString(), SVC_DATA_DIR: join(work, `pg-${workers}`), SVC_SECRET_KEY: randomBytes(32).toString('hex'), SVC_PLANS_FILE: await roomyPlansFile(work),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN, LOG_LEVEL: 'info',
    // the simulated cluster's latency is a fault injected at creation, a test hook
    SVC_TEST_HOOKS: '1',
  };
  const api = await startSvc(env, work, `pg-api-${workers}`, 'api');
  const ws = (await call(api.base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench pg' })).body.id;
  await enqueue(api.base, ws, count, 32, latencyMs);
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  const running = async () => Number((await client.query("select count(*) as n from operations where state = 'RUNNING'")).rows[0].n);
  const drained = await drainTime(running, count, () =>
    Promise.all(Array.from({ length: workers }, (_, i) => startSvc(env, work, `pg-worker-${workers}-${i}`, 'worker'))));
  await client.end();
  for (const p of drained.workers) await stopProcess(p.child);
  await stopProcess(api.child);
  await admin.query(`drop database ${name} with (force)`);
  await admin.end();
  return count / drained.seconds;
}

/**
 * Alternating rounds of one and two worker processes (so other load hits both alike); medians
 * count. `latencyMs` > 0 makes every operation wait that long on its (simulated) cluster, as real
 * drivers do: then a worker is bound by its concurrency slots, not by the CPU.
 */
async function scaleOut(adminUrl, work, count, latencyMs = 0) {
  const rates = { 1: [], 2: [] };
  for (let round = 1; round <= PG_ROUNDS; round++) {
    for (const workers of [1, 2]) {
      const rate = await drainOnPostgres(adminUrl, work, workers, count, latencyMs);
      rates[workers].push(Math.round(rate));
      console.log(`  round ${round}, ${workers} worker process${workers > 1 ? 'es' : ''}: ${Math.round(rate)} operations/s`);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    operations_per_round: count,
    capabilities_latency_ms: latencyMs,
    '1_worker': { per_second: median(rates[1]), rounds: rates[1] },
    '2_workers': { per_second: median(rates[2]), rounds: rates[2] },
  };
}

/** The scale-out budget: two worker processes complete more operations per second than one. */
function scaleOutCheck(result) {
  if (!result) return { value: null, budget: '> 1', pass: false, note: 'PostgreSQL not available' };
  const [one, two] = [result['1_worker'].per_second, result['2_workers'].per_second];
  return { value: round(two / one, 2), budget: '> 1', pass: two > one };
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-ops-'));
  try {
    console.log(`SQLite: ${LATENCY_N} cluster.create + :wait in sequence, then ${THROUGHPUT_N} operations drained by one worker process...`);
    const sqlite = await latencyAndThroughput(work);
    console.log(`  latency ms: p50 ${sqlite.latency.p50}, p90 ${sqlite.latency.p90}, p99 ${sqlite.latency.p99}`);
    console.log(`  throughput: ${sqlite.throughput.per_second} operations/s`);
    const pgUrl = postgresUrl(work);
    let postgres = null;
    let postgresIo = null;
    if (pgUrl) {
      console.log(`PostgreSQL: ${PG_N} operations drained by one, then two worker processes, ${PG_ROUNDS} rounds...`);
      postgres = await scaleOut(pgUrl, work, PG_N);
      console.log(`PostgreSQL, every operation waiting ${IO_LATENCY_MS} ms on its cluster: ${PG_IO_N} operations, one then two worker processes...`);
      postgresIo = await scaleOut(pgUrl, work, PG_IO_N, IO_LATENCY_MS);
    } else console.log('PostgreSQL: not available (set BENCH_DATABASE_URL); scale-out not measured');

    const checks = {
      create_wait_median_ms: { value: sqlite.latency.p50, budget: `< ${BUDGET.medianMs}`, pass: sqlite.latency.p50 < BUDGET.medianMs },
      sqlite_operations_per_second: { value: sqlite.throughput.per_second, budget: `>= ${BUDGET.opsPerSecond}`, pass: sqlite.throughput.per_second >= BUDGET.opsPerSecond },
      postgres_two_workers_over_one: scaleOutCheck(postgres),
      postgres_two_workers_over_one_waiting_on_clusters: scaleOutCheck(postgresIo),
    };
    const report = {
      benchmark: 'operations engine: cluster.create on the local driver',
      date: new Date().toISOString(),
      node: process.version,
      workflow: 'cluster.create (3 steps: provision, read_capabilities, activate), local driver, no injected latency',
      sqlite_create_and_wait_latency_ms: sqlite.latency,
      sqlite_one_worker_process: sqlite.throughput,
      postgres_scale_out: postgres,
      postgres_scale_out_waiting_on_clusters: postgresIo,
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'operations.json'), JSON.stringify(report, null, 2) + '\n');
    console.log('');
    for (const [name, c] of Object.entries(checks)) console.log(`${c.pass ? 'PASS' : 'FAIL'}  ${name.padEnd(32)} ${String(c.value).padStart(8)}  (budget ${c.budget})`);
    console.log('\nwritten: bench/results/operations.json');
    process.exitCode = report.pass ? 0 : 1;
  } finally {
    const pgDir = join(work, 'pg');
    const stop = `/usr/lib/postgresql/15/bin/pg_ctl -D '${pgDir}' stop -m immediate`;
    // pg_ctl refuses to run as root; .ci/start-postgres started it as the postgres user then.
    spawnSync('bash', ['-c', `[ -d '${pgDir}' ] || exit 0; if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "${stop}"; else ${stop}; fi`], { stdio: 'ignore' });
    if (process.env.BENCH_KEEP === '1') console.log(`kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
