// Run by .ci/node-lts with the Node.js LTS binary (process.execPath): starts `svc serve` from the
// build (bin/svc.js over dist/) with this node, on a fresh data dir and a fresh PostgreSQL database,
// waits for /readyz, walks the quick start over HTTP (the bootstrap owner signs in, creates a
// workspace and an API token, registers the local cluster and waits for its operation, which the
// job runner completes), then stops it with SIGTERM and expects exit 0. Bounded: a step that does
// not answer within its time fails the walk, and the server is killed whatever happens.
// Usage: node .ci/node-lts-walk.mjs POSTGRES_ADMIN_URL
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = join(import.meta.dirname, '..');
const pg = createRequire(join(ROOT, 'package.json'))('pg');
const admin = process.argv[2];
if (!admin) throw new Error('usage: node .ci/node-lts-walk.mjs POSTGRES_ADMIN_URL');
const EMAIL = 'owner@example.com';
const PASSWORD = 'change me now';

async function sql(text) {
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const name = `svc_node_lts_${randomBytes(4).toString('hex')}`;
const dataDir = mkdtempSync(join(tmpdir(), 'svc-node-lts-'));
const databaseUrl = Object.assign(new URL(admin), { pathname: `/${name}` }).toString();
let server = null;
let log = '';

function fail(message) {
  throw new Error(`${message}\n--- svc serve's output ---\n${log}`);
}

async function call(base, method, path, { token, body, headers = {} } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(40_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

function expect(res, status, what) {
  if (res.status !== status) fail(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  console.log(`node-lts: ${what}: ${res.status}`);
  return res.body;
}

try {
  await sql(`create database ${name}`);
  server = spawn(process.execPath, [join(ROOT, 'bin/svc.js'), 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: '0', SVC_PREVIEW_PORT: '0', LOG_LEVEL: 'info',
      SVC_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, SVC_BOOTSTRAP_EMAIL: EMAIL, SVC_BOOTSTRAP_PASSWORD: PASSWORD,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout.on('data', (d) => (log += d));
  server.stderr.on('data', (d) => (log += d));
  const exited = once(server, 'exit');

  // The URL from the "svc listening on" line, then /readyz 200.
  let base = null;
  for (let i = 0; i < 600 && !base; i++) {
    if (server.exitCode !== null) fail(`svc serve exited (${server.exitCode}) before listening`);
    base = /"msg":"svc listening on (http:\/\/[^ "]+)/.exec(log)?.[1] ?? null;
    if (!base) await sleep(100);
  }
  if (!base) fail('svc serve did not log "svc listening on" within 60 s');
  let ready = false;
  for (let i = 0; i < 300 && !ready; i++) {
    ready = (await fetch(`${base}/readyz`).catch(() => null))?.status === 200;
    if (!ready) await sleep(100);
  }
  if (!ready) fail('GET /readyz did not answer 200 within 30 s');
  console.log(`node-lts: svc serve on ${process.version} is ready at ${base}`);

  // The quick start, as the README's second terminal does it with curl.
  const session = expect(await call(base, 'POST', '/v1/auth/sessions', { body: { email: EMAIL, password: PASSWORD } }), 201, 'sign in as the bootstrap owner');
  const me = expect(await call(base, 'GET', '/v1/me', { token: session.token }), 200, 'GET /v1/me');
  if (me.email !== EMAIL) fail(`GET /v1/me answered ${JSON.stringify(me)}`);
  const ws = expect(await call(base, 'POST', '/v1/workspaces', { token: session.token, body: { name: 'Acme' } }), 201, 'create a workspace');
  const apiToken = expect(await call(base, 'POST', '/v1/api_tokens', { token: session.token, headers: { 'svc-context': ws.id }, body: { name: 'quickstart', role: 'admin' } }), 201, 'create an API token');
  const op = expect(await call(base, 'POST', '/v1/clusters', { token: apiToken.token, body: { name: 'dev' } }), 202, 'register the local cluster');
  const done = expect(await call(base, 'POST', `/v1/operations/${op.id}:wait?timeout=30`, { token: apiToken.token }), 200, 'wait for its operation');
  if (done.state !== 'SUCCEEDED') fail(`the cluster's operation ended ${JSON.stringify(done)}`);
  console.log(`node-lts: the cluster's operation ${done.state}`);

  server.kill('SIGTERM');
  const [code, signal] = await Promise.race([exited, sleep(30_000, undefined, { ref: false }).then(() => [null, 'timeout'])]);
  if (code !== 0) fail(`svc serve did not exit 0 on SIGTERM: ${code ?? signal}`);
  console.log('node-lts: svc serve stopped on SIGTERM (exit 0)');
} finally {
  if (server && server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  await sql(`drop database if exists ${name} with (force)`).catch((err) => console.error(`node-lts: dropping ${name}: ${err.message}`));
  rmSync(dataDir, { recursive: true, force: true });
}
