// Health probes and Prometheus metrics (issue 2, scope 8).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { createSystem } from '../src/system.js';
import { createTestDatabase, DIALECT, startTestApp, testConfig, type TestApp, type TestDatabase, type TestUser } from './harness.js';

/** The value of one sample line, e.g. `svc_http_requests_total{method="GET",...} 3`; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.lastIndexOf('}'));
    const found = Object.fromEntries([...labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const METRICS_TOKEN = 'scraper-token-0123456789';

describe('health and metrics', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp({ SVC_METRICS_TOKEN: METRICS_TOKEN });
    owner = await t.user('owner');
    ws = (await t.workspace(owner)).id;
  });
  after(() => t.close());

  test('GET /healthz is 200 without credentials and carries x-request-id', async () => {
    const res = await t.request('GET', '/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
    assert.match(String(res.headers['x-request-id']), /^req_[0-9a-f]{16}[0-9a-z]{6,}$/);
  });

  test('GET /readyz is 200 while the database answers', async () => {
    const res = await t.request('GET', '/readyz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  test('/metrics counts requests by route template, method and status code, with latency histograms', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: owner.token })).status, 200);
    assert.equal((await t.request('GET', '/v1/workspaces/ws_01aaaaaaaaaaaaaaaaaaaaaaaa', { token: owner.token })).status, 403);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/members`)).status, 401);
    assert.equal((await t.request('GET', '/v1/no/such/route')).status, 404);

    const res = await t.request('GET', '/metrics', { token: METRICS_TOKEN });
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    const text = res.text;
    assert.match(text, /# TYPE svc_http_requests_total counter/);
    assert.match(text, /# TYPE svc_http_request_duration_seconds histogram/);

    const route = '/v1/workspaces/:id';
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route, status_code: '200' }), 3);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route, status_code: '403' }), 1);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route: '/v1/workspaces/:id/members', status_code: '401' }), 1);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route: 'unmatched', status_code: '404' }), 1);
    assert.equal(sample(text, 'svc_http_request_duration_seconds_count', { method: 'GET', route, status_code: '200' }), 3);
    assert.equal(sample(text, 'svc_http_request_duration_seconds_bucket', { method: 'GET', route, status_code: '200', le: '+Inf' }), 3);
    assert.ok((sample(text, 'svc_http_request_duration_seconds_sum', { method: 'GET', route, status_code: '200' }) ?? -1) >= 0);
    // Labels carry templates, never raw urls: ids must not explode the label space.
    assert.ok(!text.includes(ws), 'a workspace id leaked into a metric label');
    assert.ok(!text.includes('/v1/no/such/route'));
    // Default process metrics are there too.
    assert.match(text, /^process_resident_memory_bytes \d+/m);
  });

  test('/metrics answers only the bearer of SVC_METRICS_TOKEN: none is 401 with a challenge, another token 401, a user\'s token 401', async () => {
    const none = await t.request('GET', '/metrics');
    assert.equal(none.status, 401);
    assert.equal(none.body.error.reason, 'CREDENTIALS_REQUIRED');
    assert.match(String(none.headers['www-authenticate']), /^Bearer/);
    for (const token of [`${METRICS_TOKEN}x`, METRICS_TOKEN.slice(0, -1), owner.token]) {
      const res = await t.request('GET', '/metrics', { token });
      assert.equal(res.status, 401, token);
      assert.equal(res.body.error.reason, 'INVALID_TOKEN');
      assert.ok(!res.text.includes('svc_http_requests_total'));
    }
    const basic = await t.request('GET', '/metrics', { headers: { authorization: `Basic ${Buffer.from(`x:${METRICS_TOKEN}`).toString('base64')}` } });
    assert.equal(basic.status, 401);
  });
});

describe('metrics off the public port by default, or on an address of their own', () => {
  test('without SVC_METRICS_TOKEN, /metrics on the public port is 404 saying how to turn it on, whatever the credential', async () => {
    const t = await startTestApp({ SVC_ROLE: 'api' });
    try {
      const owner = await t.user('owner');
      for (const token of [undefined, owner.token]) {
        const res = await t.request('GET', '/metrics', token ? { token } : {});
        assert.equal(res.status, 404);
        assert.match(res.body.error.message, /SVC_METRICS_TOKEN.*SVC_METRICS_ADDRESS/);
        assert.ok(!res.text.includes('svc_http'));
      }
    } finally {
      await t.close();
    }
  });

  test('bad SVC_METRICS_TOKEN and SVC_METRICS_ADDRESS values stop the start, naming the setting, never the token', () => {
    const base = { SVC_DATA_DIR: '/nonexistent/svc-metrics-config', SVC_SECRET_KEY: 'a'.repeat(64) };
    const bad = (env: Record<string, string>, message: RegExp) =>
      assert.throws(() => loadConfig({ ...base, ...env }), (err: Error) => err instanceof ConfigError && message.test(err.message) && !err.message.includes('short tok'));
    bad({ SVC_METRICS_TOKEN: 'short tok' }, /SVC_METRICS_TOKEN must be at least 16 characters, without spaces/);
    bad({ SVC_METRICS_ADDRESS: 'localhost' }, /SVC_METRICS_ADDRESS must be host:port/);
    bad({ SVC_METRICS_ADDRESS: '127.0.0.1:70000' }, /SVC_METRICS_ADDRESS must be host:port/);
    assert.deepEqual(loadConfig({ ...base, SVC_METRICS_ADDRESS: ':9464' }).metrics.address, { host: '127.0.0.1', port: 9464 });
    assert.deepEqual(loadConfig({ ...base, SVC_METRICS_ADDRESS: '[::1]:9464' }).metrics.address, { host: '::1', port: 9464 });
  });
});

describe('readiness when the database is gone, and draining', () => {
  let database: TestDatabase;

  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database.drop());

  async function appOver(databaseUrl: string | null) {
    const config = testConfig(database, databaseUrl ? { DATABASE_URL: databaseUrl } : {});
    const handle = openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    const { app, beginShutdown } = await createSystem(config, { database: handle, runtime: false });
    return { app, beginShutdown, handle };
  }

  test('GET /readyz is 503 UNAVAILABLE in the error shape once the database handle is closed; /healthz stays 200', async () => {
    const { app, handle } = await appOver(database.databaseUrl);
    try {
      await migrateToLatest(handle.db);
      assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
      await handle.close();
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 503);
      const body = res.json();
      assert.equal(body.error.code, 'UNAVAILABLE');
      assert.equal(body.error.reason, 'DATABASE_DOWN');
      assert.equal(body.error.request_id, res.headers['x-request-id']);
      assert.equal(res.headers['retry-after'], '5');
      assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
    } finally {
      await app.close();
    }
  });

  test('GET /readyz is 503 when the PostgreSQL server does not answer', { skip: DIALECT !== 'postgres' && 'PostgreSQL only' }, async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const { app, handle } = await appOver('postgres://postgres@127.0.0.1:1/svc');
    try {
      const res = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().error.reason, 'DATABASE_DOWN');
    } finally {
      await app.close();
      await handle.close();
    }
  });

  test('after beginShutdown every request, probes included, is 503 SHUTTING_DOWN with connection: close', async () => {
    const { app, handle, beginShutdown } = await appOver(database.databaseUrl);
    try {
      await migrateToLatest(handle.db);
      beginShutdown();
      for (const url of ['/healthz', '/readyz', '/v1/me']) {
        const res = await app.inject({ method: 'GET', url });
        assert.equal(res.statusCode, 503, url);
        assert.equal(res.json().error.reason, 'SHUTTING_DOWN', url);
        assert.equal(res.headers.connection, 'close', url);
        assert.equal(res.headers['retry-after'], '1', url);
      }
    } finally {
      await app.close();
      await handle.close();
    }
  });
});
