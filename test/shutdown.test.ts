// Graceful shutdown of `svc serve` (issue 2, scope 1): on SIGTERM the instance stops accepting
// connections, finishes the requests it has already received, closes the database and exits 0.
//
// Deterministic in-flight requests without a slow route: each request sends its headers and half
// of its JSON body, then waits. The server has received it (its "incoming request" debug log line is
// read before SIGTERM is sent) and cannot answer until the rest of the body arrives, which the
// test sends only after the server has begun draining.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { startSvc, type RunningSvc } from './processes.js';

const TOKEN = 'Shutdown0Test0Bootstrap0Token000';
const IN_FLIGHT = 12;
const GRACE_MS = 15_000;

interface Result {
  status: number;
  body: string;
  connection: string | undefined;
}

/** Starts a POST whose body is only half sent; `finish()` sends the rest. */
function halfSentPost(agent: http.Agent, base: URL, path: string, requestId: string, body: string) {
  const bytes = Buffer.from(body);
  const half = Math.floor(bytes.length / 2);
  let req!: http.ClientRequest;
  const response = new Promise<Result>((resolve, reject) => {
    req = http.request({
      agent, host: base.hostname, port: base.port, method: 'POST', path,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'content-length': String(bytes.length),
        'x-request-id': requestId,
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, connection: res.headers.connection }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  req.write(bytes.subarray(0, half));
  return { response, finish: () => req.end(bytes.subarray(half)) };
}

function connectOutcome(port: number): Promise<'connected' | string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('graceful shutdown on SIGTERM', () => {
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
      SVC_SHUTDOWN_GRACE_MS: String(GRACE_MS),
      // the "incoming request" line the test waits for is logged at debug
      LOG_LEVEL: 'debug',
      ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
      // One owner creates more workspaces than free allows: a roomier free, quotas still enforced.
      ...roomyPlans(),
    };
    svc = await startSvc(env);
  });
  after(async () => {
    if (svc.child.exitCode === null) svc.child.kill('SIGKILL');
    await db.drop();
  });

  test('in-flight requests complete with 2xx, new connections are refused, the process exits 0 well within the grace period', async () => {
    const base = new URL(svc.url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT + 4 });
    try {
      // Idle keep-alive connections too: the drain must close them rather than wait for them.
      const warm = await Promise.all(
        Array.from({ length: 4 }, () => fetch(`${svc.url}/healthz`, { headers: { connection: 'keep-alive' } }).then((r) => r.status)),
      );
      assert.deepEqual(warm, [200, 200, 200, 200]);

      const requests = Array.from({ length: IN_FLIGHT }, (_, i) =>
        halfSentPost(agent, base, '/v1/workspaces', `inflight-${i}`, JSON.stringify({ name: `Drain ${i}`, slug: `drain-${i}-ws` })),
      );
      // Every request has reached the server before the signal.
      await Promise.all(requests.map((_, i) => svc.waitForLog((l) => l.reqId === `inflight-${i}` && l.msg === 'incoming request', 30_000)));

      svc.child.kill('SIGTERM');
      await svc.waitForLog((l) => l.msg === 'shutting down: draining in-flight requests', 30_000);

      // The listener is closed while the in-flight requests are still open (a 30 s deadline only
      // keeps a broken drain from hanging the test).
      let outcome = await connectOutcome(Number(base.port));
      for (let i = 0; outcome === 'connected' && i < 1500; i++) {
        await new Promise((r) => setTimeout(r, 20));
        outcome = await connectOutcome(Number(base.port));
      }
      assert.equal(outcome, 'ECONNREFUSED', 'a new connection was accepted after SIGTERM');
      assert.equal(svc.child.exitCode, null, 'the process exited before its in-flight requests finished');

      for (const r of requests) r.finish();
      const results = await Promise.all(requests.map((r) => r.response));
      for (const [i, r] of results.entries()) {
        assert.equal(r.status, 201, `request ${i}: ${r.status} ${r.body}`);
        assert.equal(JSON.parse(r.body).name, `Drain ${i}`);
        assert.equal(r.connection, 'close', 'a drained response keeps its socket open');
      }

      const exit = await svc.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, svc.stderr());
      assert.ok(svc.logs.some((l) => l.msg === 'stopped'), 'the database was closed and "stopped" logged');
      // Which mechanism ended the drain, not how long it took: the last request finishing, not the
      // grace period running out.
      assert.ok(!svc.logs.some((l) => l.msg === 'grace period over; closing remaining connections'), 'the drain waited for the grace period');
    } finally {
      agent.destroy();
    }

    // Everything the drained requests wrote was committed: a new instance sees all the workspaces.
    const again = await startSvc(env);
    try {
      const res = await fetch(`${again.url}/v1/workspaces?limit=100`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const page = (await res.json()) as { data: { name: string }[] };
      assert.equal(page.data.filter((w) => w.name.startsWith('Drain ')).length, IN_FLIGHT);
    } finally {
      assert.deepEqual(await again.stop(), { code: 0, signal: null });
    }
  });
});
