#!/usr/bin/env node
// `npm run bench:installs`: the install budgets of issue 4, on SQLite.
//
//   1. `svc serve` (built dist/, LOG_LEVEL info) with a fresh data dir: a workspace, an admin API
//      token, a local cluster, a package version with two routes and three Kubernetes objects.
//   2. Install latency: POST /v1/installs then POST /v1/operations/{id}:wait, one after the other
//      (install.create: resolve_version, render, apply, wait_healthy, publish_urls on the local
//      driver). Budget: median < 100 ms.
//   3. 10,000 installs in the workspace: the installs made in step 2 are real; the rest are copies
//      of one of them (install row and URL rows, fresh ids and hostnames) written straight into
//      the database, because creating 10,000 through the API would measure step 2 again.
//   4. autocannon, interleaved rounds: GET /v1/installs?limit=50 (first page) and the last page
//      (its cursor found by walking every page) with the API token, and a bare Fastify server
//      returning the first page's JSON. Budgets: first page >= 0.4 x bare req/s; the last page
//      costs at most 1.2 x the first (req/s and server CPU per request).
//
// Options (environment): BENCH_DURATION (10 s per round), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64),
// BENCH_INSTALLS (10000), BENCH_INSTALL_LATENCY_N (100), BENCH_NODE_ARGS (flags for the svc process,
// e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { monotonicFactory } from 'ulid';
import { checkLine, load, measure, percentile, round, row, summary } from './load.js';
import { call } from './members.js';
import { ensureBuilt, freePort, RESULTS, roomyPlansFile, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const INSTALLS = Number(process.env.BENCH_INSTALLS ?? 10_000);
const LATENCY_N = Number(process.env.BENCH_INSTALL_LATENCY_N ?? 100);
const WARM_INSTALLS = 20;
const BUDGET = { ratio: 0.4, lastOverFirst: 1.2, medianMs: 100 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
const DOMAIN = 'preview.localhost';

const MANIFEST = {
  routes: [
    { route_key: 'web', protocol: 'http', service: { name: 'web', port: 80 } },
    { route_key: 'api', protocol: 'http', service: { name: 'api', port: 8080 } },
  ],
  resources: [
    {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' },
      spec: {
        replicas: '{{ values.replicas }}', selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: '{{ values.image }}' }] } },
      },
    },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'api' }, spec: { selector: { app: 'web' }, ports: [{ port: 8080 }] } },
  ],
};
const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 2 },
    image: { type: 'string', maxLength: 200, default: 'nginx:1.27' },
  },
  additionalProperties: false,
};


/** The workspace, token, cluster and package version the benchmark installs. */
async function scenario(base) {
  const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench installs' })).body.id;
  const apiToken = (await call(base, 'POST', '/v1/api_tokens', TOKEN, { name: 'bench', role: 'admin' }, { 'svc-context': ws })).body.token;
  const as = (method, path, body) => call(base, method, path, apiToken, body);
  const clusterOp = (await as('POST', '/v1/clusters', { name: 'bench' })).body;
  const cluster = await as('POST', `/v1/operations/${clusterOp.id}:wait?timeout=30`);
  if (cluster.body.state !== 'SUCCEEDED') throw new Error(`cluster.create ended ${cluster.body.state}`);
  const pkg = (await as('POST', '/v1/packages', { name: 'bench-app', description: 'benchmark package' })).body;
  await as('POST', `/v1/packages/${pkg.id}/versions`, { semver: '1.0.0', input_schema: INPUT_SCHEMA, manifest: MANIFEST });
  return { ws, apiToken, as, clusterId: clusterOp.owner_id, packageId: pkg.id };
}

/** POST /v1/installs + :wait in sequence; the first WARM_INSTALLS warm the JIT and caches. */
async function installLatency(s) {
  const samples = [];
  for (let i = 0; i < LATENCY_N + WARM_INSTALLS; i++) {
    const t0 = performance.now();
    const op = await s.as('POST', '/v1/installs', {
      package_id: s.packageId, package_version_pin: { kind: 'latest' }, cluster_id: s.clusterId, initial_values: { replicas: 1 + (i % 3) },
    });
    const done = await s.as('POST', `/v1/operations/${op.body.id}:wait?timeout=30`);
    if (done.body.state !== 'SUCCEEDED') throw new Error(`install.create ended ${done.body.state}: ${JSON.stringify(done.body.error)}`);
    if (i >= WARM_INSTALLS) samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { n: samples.length, p50: round(percentile(samples, 50)), p90: round(percentile(samples, 90)), p99: round(percentile(samples, 99)), max: round(samples.at(-1)) };
}

/** Copies one real install (its row and URL rows) until the workspace holds `total` installs. */
function seedInstalls(dbFile, workspaceId, total) {
  const db = new Database(dbFile);
  db.pragma('busy_timeout = 10000');
  const nextUlid = monotonicFactory();
  const have = db.prepare('select count(*) from installs where workspace_id = ?').pluck().get(workspaceId);
  const template = db.prepare('select * from installs where workspace_id = ? order by id desc limit 1').get(workspaceId);
  const urls = db.prepare('select * from install_urls where install_id = ?').all(template.id);
  // Column names quoted: installs has a column named `values`.
  const insertOf = (table, row) =>
    db.prepare(`insert into ${table} (${Object.keys(row).map((k) => `"${k}"`).join(', ')}) values (${Object.keys(row).map((k) => '@' + k).join(', ')})`);
  const insertInstall = insertOf('installs', template);
  const insertUrl = urls.length ? insertOf('install_urls', urls[0]) : null;
  const port = new URL(urls[0]?.url ?? 'http://x:8081').port;
  db.transaction(() => {
    for (let i = have; i < total; i++) {
      const body = nextUlid().toLowerCase();
      const id = `inst_${body}`;
      insertInstall.run({ ...template, id });
      for (const u of urls) {
        const hostname = `${u.route_key}-${body}.${DOMAIN}`;
        insertUrl.run({ ...u, install_id: id, hostname, url: `http://${hostname}${port ? `:${port}` : ''}` });
      }
    }
  })();
  const count = db.prepare('select count(*) from installs where workspace_id = ?').pluck().get(workspaceId);
  db.close();
  return { real: have, copied: total - have, count };
}

/** Walks every page; returns the last page's URL (with its cursor) and the page count. */
async function lastPagePath(base, apiToken) {
  let path = '/v1/installs?limit=50';
  let pages = 1;
  for (;;) {
    const page = (await call(base, 'GET', path, apiToken)).body;
    if (!page.has_more) return { path, pages };
    path = `/v1/installs?limit=50&cursor=${encodeURIComponent(page.next_cursor)}`;
    pages++;
  }
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-installs-'));
  const dataDir = join(work, 'data');
  let server;
  let bare;
  try {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = {
      SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: randomBytes(32).toString('hex'), SVC_PLANS_FILE: await roomyPlansFile(work),
      SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', PORT: String(port), HOST: '127.0.0.1',
      SVC_PREVIEW_PORT: String(await freePort()), SVC_PREVIEW_DOMAIN: DOMAIN,
    };
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    server = startProcess([...nodeArgs, 'bin/svc.js', 'serve'], env, join(work, 'server.log'));
    await waitUntilUp(`${base}/readyz`, server);
    const s = await scenario(base);

    console.log(`SQLite: ${LATENCY_N} installs (POST /v1/installs + :wait) in sequence...`);
    const latency = await installLatency(s);
    console.log(`  install.create latency ms: p50 ${latency.p50}, p90 ${latency.p90}, p99 ${latency.p99}`);

    console.log(`seeding the workspace to ${INSTALLS} installs...`);
    const seeded = seedInstalls(join(dataDir, 'svc.db'), s.ws, INSTALLS);
    const headers = { authorization: `Bearer ${s.apiToken}` };
    const first = '/v1/installs?limit=50';
    const last = await lastPagePath(base, s.apiToken);
    const firstPage = await call(base, 'GET', first, s.apiToken);
    const bodyFile = join(work, 'installs.json');
    writeFileSync(bodyFile, firstPage.text);
    console.log(`  ${seeded.count} installs, ${last.pages} pages of 50; a page is ${firstPage.text.length} bytes`);

    const barePort = await freePort();
    bare = startProcess(['bench/bare-server.js'], { PORT: String(barePort), BENCH_BODY_FILE: bodyFile, BENCH_PATH: '/installs' }, join(work, 'bare.log'));
    await waitUntilUp(`http://127.0.0.1:${barePort}/installs`, bare);
    const urls = { first: `${base}${first}`, last: `${base}${last.path}`, bare: `http://127.0.0.1:${barePort}/installs` };

    console.log(`${ROUNDS} interleaved rounds of ${DURATION} s each, ${CONNECTIONS} connections; the median round counts`);
    await load(urls.first, headers, WARMUP, CONNECTIONS);
    await load(urls.last, headers, WARMUP, CONNECTIONS);
    await load(urls.bare, {}, WARMUP, CONNECTIONS);
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const f = await measure(urls.first, headers, DURATION, CONNECTIONS, server.pid);
      const l = await measure(urls.last, headers, DURATION, CONNECTIONS, server.pid);
      const b = await measure(urls.bare, {}, DURATION, CONNECTIONS, bare.pid);
      const r = { first: f, last: l, bare: b, ratio: f.requests.average / b.requests.average, lastCost: f.requests.average / l.requests.average };
      rounds.push(r);
      console.log(`  round ${i + 1}: first ${Math.round(f.requests.average)} req/s, last ${Math.round(l.requests.average)} req/s, bare ${Math.round(b.requests.average)} req/s, ratio ${r.ratio.toFixed(3)}, last/first cost ${r.lastCost.toFixed(3)}`);
    }
    rounds.sort((x, y) => x.ratio - y.ratio);
    const median = rounds[Math.floor(rounds.length / 2)];
    const rss = rssMb(server.pid);
    await stopProcess(server);
    await stopProcess(bare);

    const ratio = round(median.ratio, 3);
    const lastCost = round(median.lastCost, 3);
    const cpuCost = round(median.last.serverCpuUsPerRequest / median.first.serverCpuUsPerRequest, 3);
    const non2xx = median.first.non2xx + median.last.non2xx + median.first.errors + median.last.errors;
    const checks = {
      first_page_over_bare: { value: ratio, budget: `>= ${BUDGET.ratio}`, pass: ratio >= BUDGET.ratio },
      last_page_cost_over_first: { value: lastCost, budget: `<= ${BUDGET.lastOverFirst}`, pass: lastCost <= BUDGET.lastOverFirst },
      last_page_cpu_over_first: { value: cpuCost, budget: `<= ${BUDGET.lastOverFirst}`, pass: cpuCost <= BUDGET.lastOverFirst },
      install_median_ms: { value: latency.p50, budget: `< ${BUDGET.medianMs}`, pass: latency.p50 < BUDGET.medianMs },
      all_2xx: { value: non2xx, budget: '0 non-2xx or errors', pass: non2xx === 0 },
    };
    const report = {
      benchmark: 'installs: GET /v1/installs?limit=50 with an API token over 10,000 installs; install.create latency',
      date: new Date().toISOString(),
      node: process.version,
      database: 'sqlite',
      installs: seeded,
      pages: last.pages,
      page_bytes: firstPage.text.length,
      connections: CONNECTIONS,
      duration_seconds: DURATION,
      rounds: ROUNDS,
      round_ratios: rounds.map((r) => round(r.ratio, 3)),
      first_page: summary(median.first),
      last_page: summary(median.last),
      bare_fastify: summary(median.bare),
      install_create_latency_ms: latency,
      svc_rss_mb_after_run: rss,
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'installs.json'), JSON.stringify(report, null, 2) + '\n');
    console.log('');
    row('first page', median.first);
    row('last page', median.last);
    row('bare Fastify', median.bare);
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    console.log('\nwritten: bench/results/installs.json');
    process.exitCode = report.pass ? 0 : 1;
  } finally {
    if (server) await stopProcess(server);
    if (bare) await stopProcess(bare);
    if (process.env.BENCH_KEEP === '1') console.log(`kept: ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
