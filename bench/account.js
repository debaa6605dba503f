#!/usr/bin/env node
// `npm run bench:account`: the account budgets of issue 12, on SQLite.
//
//   1. Two `svc serve` processes (built dist/, LOG_LEVEL info), each with a fresh data dir and the
//      same plans file: one plan, `free`, whose limits are high enough for the run (so the checks
//      run in full and never refuse). `checked` runs as shipped; `unchecked` has
//      SVC_QUOTAS_ENFORCED=false, which skips every quota check (compute/clusters on the create,
//      operations/running at the operation's admission, the workspace row lock they take).
//   2. POST /v1/clusters latency: one create at a time, alternating between the two processes
//      (which one goes first alternates too), so a burst of other load on this shared machine hits
//      both alike. Only the POST is timed; its operation is then awaited untimed so the next create
//      meets an idle server, and the workspace's cluster count grows alike on both sides.
//      BENCH_ROUNDS rounds; the median round counts. Budget: median(checked) <= 1.1 x median(unchecked).
//   3. autocannon, interleaved rounds: GET /v1/quotas?cluster_id= with the bootstrap user's token
//      and svc-context, which reports every metric of the catalog (the user's workspaces/owned
//      included, one concurrency entry for the cluster), and a bare Fastify server returning the
//      same JSON. Budget: >= 0.4 x bare req/s.
//
// Options (environment): BENCH_DURATION (10 s per round), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64),
// BENCH_CLUSTER_N (200 creates per process and round, after 20 warm-up creates each), BENCH_NODE_ARGS (flags for
// the svc processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkLine, load, measure, percentile, round, row, summary } from './load.js';
import { call } from './members.js';
import { ensureBuilt, freePort, RESULTS, startProcess, stopProcess, waitUntilUp } from './processes.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const CLUSTER_N = Number(process.env.BENCH_CLUSTER_N ?? 200);
const WARM_CREATES = 20;
const BUDGET = { createOverhead: 1.1, ratio: 0.4 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);

// Roomy enough for the run; every metric has a limit, so each check counts and compares for real.
const PLANS = [{
  tier: 'free', display_name: 'Bench',
  limits: {
    'workspaces/owned': 100, 'compute/clusters': 100_000, 'compute/machines': 1_000_000, 'installs/installs': 100_000,
    'secrets/secrets': 100_000, 'snippets/runs': 1_000_000, 'operations/running': 1_000,
  },
}];

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return { n: s.length, p50: round(percentile(s, 50), 2), p90: round(percentile(s, 90), 2), p99: round(percentile(s, 99), 2), max: round(s.at(-1), 2) };
}

/** A `svc serve` with its own data dir; a workspace and an admin API token in it. */
async function startSide(work, name, plansFile, extraEnv) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    SVC_DATA_DIR: join(work, name), SVC_SECRET_KEY: randomBytes(32).toString('hex'),
    SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', PORT: String(port), HOST: '127.0.0.1', SVC_PLANS_FILE: plansFile, ...extraEnv,
  };
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = startProcess([...nodeArgs, 'bin/svc.js', 'serve'], env, join(work, `${name}.log`));
  await waitUntilUp(`${base}/readyz`, proc);
  const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: `Bench ${name}` })).body.id;
  const apiToken = (await call(base, 'POST', '/v1/api_tokens', TOKEN, { name: 'bench', role: 'admin' }, { 'svc-context': ws })).body.token;
  return { name, proc, base, ws, apiToken, created: 0 };
}

/** One timed POST /v1/clusters, then its operation awaited (untimed). */
async function timedCreate(side) {
  const t0 = performance.now();
  const op = (await call(side.base, 'POST', '/v1/clusters', side.apiToken, { name: `bench-${side.created++}` })).body;
  const ms = performance.now() - t0;
  const done = (await call(side.base, 'POST', `/v1/operations/${op.id}:wait?timeout=30`, side.apiToken)).body;
  if (done.state !== 'SUCCEEDED') throw new Error(`${side.name}: cluster.create ended ${done.state}: ${JSON.stringify(done.error)}`);
  return { ms, clusterId: op.owner_id };
}

/**
 * BENCH_ROUNDS rounds of CLUSTER_N creates per side (after WARM_CREATES each, once); each round's
 * medians give a ratio, and the median round counts, as in the other benchmarks: on a shared
 * machine one burst of other load can move a single round's median by more than the budget.
 */
async function createLatency(checked, unchecked) {
  let clusterId = null;
  const rounds = [];
  for (let i = 0; i < WARM_CREATES; i++) {
    for (const side of [checked, unchecked]) {
      const r = await timedCreate(side);
      if (side === checked) clusterId ??= r.clusterId;
    }
  }
  for (let round_ = 0; round_ < ROUNDS; round_++) {
    const samples = { checked: [], unchecked: [] };
    for (let i = 0; i < CLUSTER_N; i++) {
      for (const side of i % 2 ? [checked, unchecked] : [unchecked, checked]) samples[side.name].push((await timedCreate(side)).ms);
    }
    const r = { checked: stats(samples.checked), unchecked: stats(samples.unchecked) };
    r.ratio = r.checked.p50 / r.unchecked.p50;
    rounds.push(r);
    console.log(`  round ${round_ + 1}: median ms checked ${r.checked.p50}, unchecked ${r.unchecked.p50} (x ${r.ratio.toFixed(3)}); p90 ${r.checked.p90} / ${r.unchecked.p90}`);
  }
  rounds.sort((x, y) => x.ratio - y.ratio);
  return { ...rounds[Math.floor(rounds.length / 2)], roundRatios: rounds.map((r) => round(r.ratio, 3)), clusterId };
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-account-'));
  const plansFile = join(work, 'plans.json');
  writeFileSync(plansFile, JSON.stringify(PLANS));
  const started = [];
  let bare;
  try {
    const checked = await startSide(work, 'checked', plansFile, {});
    started.push(checked);
    const unchecked = await startSide(work, 'unchecked', plansFile, { SVC_QUOTAS_ENFORCED: 'false' });
    started.push(unchecked);

    console.log(`POST /v1/clusters: ${ROUNDS} rounds of ${CLUSTER_N} timed creates per process (after ${WARM_CREATES}), alternating checked / unchecked...`);
    const latency = await createLatency(checked, unchecked);
    const overhead = round(latency.ratio, 3);
    await stopProcess(unchecked.proc);

    const quotasPath = `/v1/quotas?cluster_id=${latency.clusterId}`;
    const headers = { authorization: `Bearer ${TOKEN}`, 'svc-context': checked.ws };
    const res = await fetch(`${checked.base}${quotasPath}`, { headers });
    const quotasText = await res.text();
    const entries = JSON.parse(quotasText).data;
    if (res.status !== 200) throw new Error(`GET ${quotasPath} -> ${res.status} ${quotasText}`);
    console.log(`GET ${quotasPath}: ${entries.length} metrics (${entries.map((e) => e.metric).join(', ')}), ${quotasText.length} bytes`);
    const bodyFile = join(work, 'quotas.json');
    writeFileSync(bodyFile, quotasText);
    const barePort = await freePort();
    bare = startProcess(['bench/bare-server.js'], { PORT: String(barePort), BENCH_BODY_FILE: bodyFile, BENCH_PATH: '/quotas' }, join(work, 'bare.log'));
    await waitUntilUp(`http://127.0.0.1:${barePort}/quotas`, bare);
    const urls = { svc: `${checked.base}${quotasPath}`, bare: `http://127.0.0.1:${barePort}/quotas` };

    console.log(`${ROUNDS} interleaved rounds of ${DURATION} s each, ${CONNECTIONS} connections; the median round counts`);
    await load(urls.svc, headers, WARMUP, CONNECTIONS);
    await load(urls.bare, {}, WARMUP, CONNECTIONS);
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const s = await measure(urls.svc, headers, DURATION, CONNECTIONS, checked.proc.pid);
      const b = await measure(urls.bare, {}, DURATION, CONNECTIONS, bare.pid);
      rounds.push({ svc: s, bare: b, ratio: s.requests.average / b.requests.average });
      console.log(`  round ${i + 1}: svc ${Math.round(s.requests.average)} req/s, bare ${Math.round(b.requests.average)} req/s, ratio ${(s.requests.average / b.requests.average).toFixed(3)}`);
    }
    rounds.sort((x, y) => x.ratio - y.ratio);
    const median = rounds[Math.floor(rounds.length / 2)];
    const ratio = round(median.ratio, 3);
    const non2xx = median.svc.non2xx + median.svc.errors + median.svc.timeouts;
    const checks = {
      cluster_create_median_checked_over_unchecked: { value: overhead, budget: `<= ${BUDGET.createOverhead}`, pass: overhead <= BUDGET.createOverhead },
      quotas_over_bare: { value: ratio, budget: `>= ${BUDGET.ratio}`, pass: ratio >= BUDGET.ratio },
      all_2xx: { value: non2xx, budget: '0 non-2xx, errors or timeouts', pass: non2xx === 0 },
    };
    const report = {
      benchmark: 'account: POST /v1/clusters latency with and without the quota check; GET /v1/quotas?cluster_id= against bare Fastify',
      date: new Date().toISOString(),
      node: process.version,
      database: 'sqlite',
      without_check: 'a second svc process with SVC_QUOTAS_ENFORCED=false (every quota check skipped), same build, same plans file, creates alternating',
      cluster_create_latency_ms: { checked: latency.checked, unchecked: latency.unchecked },
      cluster_create_round_ratios: latency.roundRatios,
      quota_metrics: entries.length,
      quotas_body_bytes: quotasText.length,
      connections: CONNECTIONS,
      duration_seconds: DURATION,
      rounds: ROUNDS,
      round_ratios: rounds.map((r) => round(r.ratio, 3)),
      quotas: summary(median.svc),
      bare_fastify: summary(median.bare),
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'account.json'), JSON.stringify(report, null, 2) + '\n');
    console.log('');
    row('GET /v1/quotas', median.svc);
    row('bare Fastify', median.bare);
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    console.log('\nwritten: bench/results/account.json');
    process.exitCode = report.pass ? 0 : 1;
  } finally {
    for (const s of started) await stopProcess(s.proc);
    if (bare) await stopProcess(bare);
    if (process.env.BENCH_KEEP === '1') console.log(`kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
