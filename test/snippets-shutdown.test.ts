// Graceful shutdown with a snippet running (issue 13): on SIGTERM `svc serve` lets the run finish,
// its platform.request calls made while draining are served (not refused with 503), the run is
// recorded, the sandbox's workers stop and the process exits 0.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { startSvc, type RunningSvc } from './processes.js';

const TOKEN = 'SnippetShutdown0Bootstrap0Token0';

describe('graceful shutdown with a snippet run in progress', () => {
  let db: TestDatabase;
  let svc: RunningSvc;
  let env: Record<string, string>;

  before(async () => {
    db = await createTestDatabase();
    env = {
      SVC_DATA_DIR: db.dataDir,
      SVC_SECRET_KEY: randomBytes(32).toString('hex'),
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test',
      SVC_BOOTSTRAP_PASSWORD: 'owner password',
      SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_SANDBOX_WORKERS: '1',
      LOG_LEVEL: 'debug',
      ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    };
    svc = await startSvc(env);
  });
  after(async () => {
    if (svc.child.exitCode === null) svc.child.kill('SIGKILL');
    await db.drop();
  });

  test('the run finishes, its requests during the drain are served, it is recorded, the process exits 0', async () => {
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${svc.url}${path}`, {
        method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() as any };
    };
    const ws = (await call('POST', '/v1/workspaces', { name: 'Drain' })).body.id;
    const scoped = { 'svc-context': ws };
    // Spins past the signal, then calls the API (the server is draining by then).
    const code = "const end = Date.now() + 1500; while (Date.now() < end) {} const r = await platform.request({ path: '/v1/snippets' }); return r.status;";
    const snippet = (await call('POST', '/v1/snippets', { name: 'slow', code, display_type: 'stat' }, scoped)).body;
    const running = call('POST', `/v1/snippets/${snippet.id}/runs`, {}, { ...scoped, 'x-request-id': 'draining-run' });
    await svc.waitForLog((l) => l.reqId === 'draining-run' && l.msg === 'incoming request', 30_000);
    await new Promise((r) => setTimeout(r, 300));
    svc.child.kill('SIGTERM');
    await svc.waitForLog((l) => l.msg === 'shutting down: draining in-flight requests', 10_000);
    const run = await running;
    assert.equal(run.status, 201, JSON.stringify(run.body));
    assert.equal(run.body.state, 'succeeded', JSON.stringify(run.body.error));
    assert.equal(run.body.output, 200);
    assert.deepEqual(await svc.exited, { code: 0, signal: null }, svc.stderr());
    assert.ok(svc.logs.some((l) => l.msg === 'stopped'));

    const again = await startSvc(env);
    try {
      const res = await fetch(`${again.url}/v1/snippets/${snippet.id}/runs`, { headers: { authorization: `Bearer ${TOKEN}`, ...scoped } });
      const page = (await res.json()) as { data: { id: string }[] };
      assert.deepEqual(page.data.map((r) => r.id), [run.body.id]);
    } finally {
      assert.deepEqual(await again.stop(), { code: 0, signal: null });
    }
  });
});
