#!/usr/bin/env node
// `npm run bench:cli`: the command-line client's start-up budgets of issue 10.
//
//   `svc --help` and `svc clusters list --json` (against a running local `svc serve` on SQLite,
//   logged in with a session token, one cluster): median wall time of 20 runs each, budget < 250 ms.
//   A bare `node -e ''` is measured the same way for comparison. It also reports which modules the
//   `clusters list` process loads (through a --import hook), and fails if Fastify, Kysely or a
//   database driver is among them.
//
// Options (environment): BENCH_CLI_RUNS (20).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call } from './members.js';
import { ensureBuilt, freePort, RESULTS, ROOT, startProcess, stopProcess, waitUntilUp } from './processes.js';

const RUNS = Number(process.env.BENCH_CLI_RUNS ?? 20);
const BUDGET_MS = 250;
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
const FORBIDDEN = /node_modules\/(fastify|@fastify|kysely|better-sqlite3|pg|pino|@kubernetes)\//;

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(args, env) {
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8' });
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  }
  return { median_ms: Math.round(median(samples) * 10) / 10, min_ms: Math.round(Math.min(...samples) * 10) / 10 };
}

ensureBuilt();
const work = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = startProcess(['bin/svc.js', 'serve'], {
  SVC_DATA_DIR: join(work, 'data'), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn',
  SVC_BOOTSTRAP_EMAIL: 'bench@example.test', SVC_BOOTSTRAP_PASSWORD: 'bench password', SVC_BOOTSTRAP_TOKEN: TOKEN,
}, join(work, 'server.log'));
let failed = false;
try {
  await waitUntilUp(`${base}/readyz`, server);
  const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench' })).body.id;
  await call(base, 'POST', '/v1/clusters', TOKEN, { name: 'bench' }, { 'svc-context': ws });
  const config = join(work, 'config');
  mkdirSync(join(config, 'svc'), { recursive: true, mode: 0o700 });
  writeFileSync(join(config, 'svc', 'config.json'), JSON.stringify({ api_url: base, hosts: { [base]: { token: TOKEN, token_kind: 'session', context: ws } } }), { mode: 0o600 });
  const env = { PATH: process.env.PATH, HOME: work, XDG_CONFIG_HOME: config };

  const bare = time(['-e', ''], env);
  const help = time(['bin/svc.js', '--help'], env);
  const list = time(['bin/svc.js', 'clusters', 'list', '--json'], env);

  // What a list loads: every module URL resolved in the process, through a loader hook.
  const hook = join(work, 'hook.mjs');
  const seen = join(work, 'modules.txt');
  writeFileSync(hook, `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(
    `import { appendFileSync } from 'node:fs'; export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(seen)}, r.url + '\\n'); return r; }`,
  )}));\n`);
  const traced = spawnSync(process.execPath, ['--import', hook, 'bin/svc.js', 'clusters', 'list', '--json'], { cwd: ROOT, env, encoding: 'utf8' });
  if (traced.status !== 0) throw new Error(`traced run failed: ${traced.stderr}`);
  const urls = [...new Set(readFileSync(seen, 'utf8').trim().split('\n'))].filter((u) => !u.startsWith('data:'));
  const packages = [...new Set(urls.filter((u) => u.includes('/node_modules/')).map((u) => /node_modules\/((@[^/]+\/)?[^/]+)/.exec(u)[1]))].sort();
  const own = urls.filter((u) => u.startsWith('file://') && !u.includes('/node_modules/')).map((u) => u.replace(`file://${ROOT}/`, '')).sort();
  const builtins = urls.filter((u) => u.startsWith('node:')).sort();
  const forbidden = urls.filter((u) => FORBIDDEN.test(u));

  const result = {
    date: new Date().toISOString(), runs: RUNS, budget_ms: BUDGET_MS,
    bare_node: bare, help, clusters_list_json: list,
    list_imports: { packages, own_modules: own, builtins, forbidden },
    pass: help.median_ms < BUDGET_MS && list.median_ms < BUDGET_MS && forbidden.length === 0,
  };
  failed = !result.pass;
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(join(RESULTS, 'cli.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`node -e '':                 median ${bare.median_ms} ms`);
  console.log(`svc --help:                 median ${help.median_ms} ms (budget < ${BUDGET_MS})`);
  console.log(`svc clusters list --json:   median ${list.median_ms} ms (budget < ${BUDGET_MS})`);
  console.log(`list imports: ${own.length} own modules, packages: ${packages.join(', ')}; builtins: ${builtins.length}`);
  console.log(forbidden.length ? `FORBIDDEN imports: ${forbidden.join(', ')}` : 'no Fastify, Kysely, pino or database driver loaded');
  console.log(result.pass ? 'PASS' : 'FAIL');
} finally {
  await stopProcess(server);
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
