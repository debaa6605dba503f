#!/usr/bin/env node
// `npm run bench:secrets`: the secret budgets of issue 11, on SQLite.
//
//   1. `svc serve` (built dist/, LOG_LEVEL info) under key A with a fresh data dir: a workspace, an
//      admin API token, a secret whose value is 1 KiB.
//   2. autocannon, interleaved rounds: POST /v1/secrets/{id}/versions/latest:access with the API
//      token (authentication, role check, resolution of `latest`, unwrapping the data key, opening
//      the value, an audit event written in the same transaction), and a bare Fastify POST route
//      returning the same JSON. Budget: access >= 0.4 x bare req/s.
//   3. 10,000 secret versions: 1,000 secrets of 10 versions. The first secret is made through the
//      API; the rest are copies of its row with versions sealed under key A by the service's own
//      keyring (dist/), written straight into the database, because adding 10,000 versions through
//      the API would measure the add route, not the rotation.
//   4. The operator's procedure (README "Rotating the key"): the service restarts under key B with
//      A in SVC_PREVIOUS_SECRET_KEYS and keeps running while `svc admin rotate-keys` runs. Budget:
//      the whole command (process start to exit) < 10 s. Then the service restarts under key B
//      alone, and a sample of seeded versions and the 1 KiB value are read back through :access.
//
// Options (environment): BENCH_DURATION (10 s per round), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64),
// BENCH_VERSIONS (10000), BENCH_NODE_ARGS (flags for the svc processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { checkLine, load, LOAD, measure, row, summary } from './load.js';
import { call } from './members.js';
import { ensureBuilt, freePort, RESULTS, ROOT, rssMb, startProcess, stopProcess, waitUntilUp } from './processes.js';

const { duration: DURATION, rounds: ROUNDS, warmup: WARMUP, connections: CONNECTIONS } = LOAD;
const VERSIONS = Number(process.env.BENCH_VERSIONS ?? 10_000);
const PER_SECRET = 10;
const SAMPLE = 50;
const BUDGET = { ratio: 0.4, rotateSeconds: 10 };
const TOKEN = randomBytes(24).toString('hex').slice(0, 32);
const KEY_A = randomBytes(32).toString('hex');
const KEY_B = randomBytes(32).toString('hex');
// 1 KiB of printable text, as a password file or a PEM would be.
const VALUE = randomBytes(768).toString('base64');

const round = (x, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

async function scenario(base) {
  const ws = (await call(base, 'POST', '/v1/workspaces', TOKEN, { name: 'Bench secrets' })).body.id;
  const apiToken = (await call(base, 'POST', '/v1/api_tokens', TOKEN, { name: 'bench', role: 'admin' }, { 'svc-context': ws })).body.token;
  const as = (method, path, body) => call(base, method, path, apiToken, body);
  const secret = (await as('POST', '/v1/secrets', { name: 'bench-1k', kind: 'api_key', value: VALUE })).body;
  for (let v = 2; v <= PER_SECRET; v++) await as('POST', `/v1/secrets/${secret.id}/versions`, { value: `${VALUE.slice(0, 1000)}-${v}` });
  return { ws, apiToken, as, secretId: secret.id };
}

/**
 * Copies the first secret's row until `total` versions exist, each version sealed under key A by
 * the service's keyring. Returns a sample of (secret id, version id, value) to read back later.
 */
async function seedVersions(dbFile, workspaceId, total) {
  const { Keyring } = await import('../dist/platform/keyring.js');
  const { newId } = await import('../dist/platform/ids.js');
  const { sealVersionValue } = await import('../dist/modules/secrets/secret-values.js');
  const keyring = new Keyring(Buffer.from(KEY_A, 'hex'));
  const db = new Database(dbFile);
  db.pragma('busy_timeout = 10000');
  const have = db.prepare('select count(*) from secret_versions where workspace_id = ?').pluck().get(workspaceId);
  const secret = db.prepare('select * from secrets where workspace_id = ? order by id limit 1').get(workspaceId);
  const version = db.prepare('select * from secret_versions where secret_id = ? order by version_number limit 1').get(secret.id);
  const insertOf = (table, r) =>
    db.prepare(`insert into ${table} (${Object.keys(r).map((k) => `"${k}"`).join(', ')}) values (${Object.keys(r).map((k) => '@' + k).join(', ')})`);
  const insertSecret = insertOf('secrets', secret);
  const insertVersion = insertOf('secret_versions', version);
  const sample = [];
  let made = have;
  db.transaction(() => {
    for (let s = 0; made < total; s++) {
      const secretId = newId('secret');
      const count = Math.min(PER_SECRET, total - made);
      insertSecret.run({ ...secret, id: secretId, name: `bench-copy-${s}`, version_count: count, enabled_version_count: count });
      for (let n = 1; n <= count; n++, made++) {
        const id = newId('secretVersion');
        const value = `${randomBytes(12).toString('hex')}-${VALUE.slice(0, 1000)}`;
        const env = sealVersionValue(keyring, { workspace_id: workspaceId, secret_id: secretId, id }, value);
        insertVersion.run({ ...version, id, secret_id: secretId, version_number: n, key_id: env.keyId, wrapped_key: env.wrappedKey, ciphertext: env.ciphertext });
        if (made % Math.ceil(total / SAMPLE) === 0) sample.push({ secretId, id, value });
      }
    }
  })();
  const count = db.prepare('select count(*) from secret_versions where workspace_id = ?').pluck().get(workspaceId);
  const underA = db.prepare('select count(*) from secret_versions where key_id = ?').pluck().get(keyring.currentKeyId);
  db.close();
  return { real: have, copied: total - have, count, under_key_a: underA, sample };
}

/** Reads every sampled version back through :access; returns how many came back with their value. */
async function readBack(s, sample) {
  let ok = 0;
  for (const v of sample) {
    const res = await s.as('POST', `/v1/secrets/${v.secretId}/versions/${v.id}:access`);
    if (res.body.value === v.value) ok++;
  }
  const latest = await s.as('POST', `/v1/secrets/${s.secretId}/versions/1:access`);
  return { sampled: sample.length + 1, opened: ok + (latest.body.value === VALUE ? 1 : 0) };
}

async function main() {
  ensureBuilt();
  mkdirSync(RESULTS, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-secrets-'));
  const dataDir = join(work, 'data');
  let server;
  let bare;
  const serve = async (keys) => {
    const port = await freePort();
    const env = {
      SVC_DATA_DIR: dataDir, ...keys,
      SVC_BOOTSTRAP_EMAIL: 'owner@bench.test', SVC_BOOTSTRAP_PASSWORD: 'bench owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info', PORT: String(port), HOST: '127.0.0.1',
    };
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const child = startProcess([...nodeArgs, 'bin/svc.js', 'serve'], env, join(work, 'server.log'));
    await waitUntilUp(`http://127.0.0.1:${port}/readyz`, child);
    return { child, base: `http://127.0.0.1:${port}` };
  };
  try {
    let svc = await serve({ SVC_SECRET_KEY: KEY_A });
    server = svc.child;
    const s = await scenario(svc.base);

    const accessPath = `/v1/secrets/${s.secretId}/versions/latest:access`;
    const first = await call(svc.base, 'POST', accessPath, s.apiToken);
    const bodyFile = join(work, 'access.json');
    writeFileSync(bodyFile, first.text);
    const barePort = await freePort();
    bare = startProcess(['bench/bare-server.js'], { PORT: String(barePort), BENCH_BODY_FILE: bodyFile, BENCH_PATH: '/access', BENCH_METHOD: 'POST' }, join(work, 'bare.log'));
    await waitUntilUp(`http://127.0.0.1:${barePort}/access`, bare, 60_000, { method: 'POST' });
    const urls = { access: `${svc.base}${accessPath}`, bare: `http://127.0.0.1:${barePort}/access` };
    const headers = { authorization: `Bearer ${s.apiToken}` };
    const post = { method: 'POST' };

    console.log(`SQLite: :access of a ${Buffer.byteLength(VALUE)}-byte value (a ${first.text.length}-byte response) against a bare Fastify POST route`);
    console.log(`${ROUNDS} interleaved rounds of ${DURATION} s each, ${CONNECTIONS} connections; the median round counts`);
    await load(urls.access, headers, WARMUP, CONNECTIONS, post);
    await load(urls.bare, {}, WARMUP, CONNECTIONS, post);
    const rounds = [];
    for (let i = 0; i < ROUNDS; i++) {
      const a = await measure(urls.access, headers, DURATION, CONNECTIONS, server.pid, post);
      const b = await measure(urls.bare, {}, DURATION, CONNECTIONS, bare.pid, post);
      const r = { access: a, bare: b, ratio: a.requests.average / b.requests.average };
      rounds.push(r);
      console.log(`  round ${i + 1}: access ${Math.round(a.requests.average)} req/s, bare ${Math.round(b.requests.average)} req/s, ratio ${r.ratio.toFixed(3)}`);
    }
    rounds.sort((x, y) => x.ratio - y.ratio);
    const median = rounds[Math.floor(rounds.length / 2)];
    const rss = rssMb(server.pid);
    await stopProcess(bare);
    await stopProcess(server);

    console.log(`seeding ${VERSIONS} secret versions sealed under key A...`);
    const seeded = await seedVersions(join(dataDir, 'svc.db'), s.ws, VERSIONS);
    const auditEvents = new Database(join(dataDir, 'svc.db'), { readonly: true });
    const accessEvents = auditEvents.prepare("select count(*) from audit_events where action = 'secret.version.access'").pluck().get();
    auditEvents.close();
    console.log(`  ${seeded.count} versions (${seeded.real} through the API), ${seeded.under_key_a} under key A; ${accessEvents} access events recorded by the load`);

    // The procedure: restart under B with A as previous; rotate while the service runs.
    svc = await serve({ SVC_SECRET_KEY: KEY_B, SVC_PREVIOUS_SECRET_KEYS: KEY_A });
    server = svc.child;
    const t0 = performance.now();
    const rotation = spawnSync(process.execPath, [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), 'bin/svc.js', 'admin', 'rotate-keys'], {
      cwd: ROOT, encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: KEY_B, SVC_PREVIOUS_SECRET_KEYS: KEY_A, LOG_LEVEL: 'warn' },
    });
    const rotateSeconds = round((performance.now() - t0) / 1000, 2);
    process.stdout.write(`${rotation.stdout.trimEnd().replace(/^/gm, '  | ')}\n`);
    if (rotation.status !== 0) throw new Error(`rotate-keys exited ${rotation.status}: ${rotation.stderr}`);
    const rewrapped = Number(/secret versions: (\d+) re-wrapped/.exec(rotation.stdout)?.[1] ?? NaN);
    await stopProcess(server);

    // Key A removed: everything must still open.
    svc = await serve({ SVC_SECRET_KEY: KEY_B });
    server = svc.child;
    const read = await readBack({ ...s, as: (method, path, body) => call(svc.base, method, path, s.apiToken, body) }, seeded.sample);
    await stopProcess(server);
    console.log(`rotate-keys: ${rewrapped} versions re-wrapped in ${rotateSeconds} s; under key B alone ${read.opened} of ${read.sampled} sampled values open`);

    const ratio = round(median.ratio, 3);
    const non2xx = median.access.non2xx + median.access.errors;
    const checks = {
      access_over_bare: { value: ratio, budget: `>= ${BUDGET.ratio}`, pass: ratio >= BUDGET.ratio },
      rotate_keys_seconds: { value: rotateSeconds, budget: `< ${BUDGET.rotateSeconds}`, pass: rotateSeconds < BUDGET.rotateSeconds },
      rotate_keys_rewrapped_all: { value: rewrapped, budget: `= ${seeded.count}`, pass: rewrapped === seeded.count },
      values_open_under_b_alone: { value: read.opened, budget: `= ${read.sampled}`, pass: read.opened === read.sampled },
      all_2xx: { value: non2xx, budget: '0 non-2xx or errors', pass: non2xx === 0 },
    };
    const report = {
      benchmark: 'secrets: POST :access of a 1 KiB value with an API token vs bare Fastify; svc admin rotate-keys over 10,000 versions',
      date: new Date().toISOString(),
      node: process.version,
      database: 'sqlite',
      value_bytes: Buffer.byteLength(VALUE),
      connections: CONNECTIONS,
      duration_seconds: DURATION,
      rounds: ROUNDS,
      round_ratios: rounds.map((r) => round(r.ratio, 3)),
      access: summary(median.access),
      bare_fastify: summary(median.bare),
      svc_rss_mb_after_run: rss,
      versions: { real: seeded.real, copied: seeded.copied, count: seeded.count },
      rotate_keys: { seconds: rotateSeconds, rewrapped, output: rotation.stdout.trim().split('\n') },
      read_back_under_key_b: read,
      budgets: checks,
      pass: Object.values(checks).every((c) => c.pass),
    };
    writeFileSync(join(RESULTS, 'secrets.json'), JSON.stringify(report, null, 2) + '\n');
    console.log('');
    row(':access', median.access);
    row('bare Fastify', median.bare);
    for (const [name, c] of Object.entries(checks)) checkLine(name, c);
    console.log('\nwritten: bench/results/secrets.json');
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
