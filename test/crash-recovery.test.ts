// Operations survive the crash of the process running them: two `svc serve` processes share one
// database; the one holding an operation's job is killed with SIGKILL in the middle of a slow
// step; the other takes the job over when the lease expires and completes the operation from its
// first unfinished step. Completed steps are not run again, and no database effect is applied twice.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT, freePort, type TestDatabase } from './harness.js';
import { assertOperationInvariants } from './operation-invariants.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Crash0Recovery0Bootstrap0Token00';

const call = svcCaller(TOKEN);

describe(`crash recovery with two svc processes (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  let env: Record<string, string>;
  const processes: RunningSvc[] = [];

  before(async () => {
    db = await createTestDatabase();
    env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      // A dead worker's job is taken over 1.5 s after its last heartbeat.
      SVC_JOB_LEASE_MS: '1500', SVC_JOB_POLL_MS: '100',
    });
    processes.push(await startSvc(env));
    processes.push(await startSvc(env));
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await handle?.close();
    await db?.drop();
  });

  test('kill -9 of the worker running an operation: the other process completes it', { timeout: 240_000 }, async () => {
    const [first] = processes;
    const ws = await call(first!.url, 'POST', '/v1/workspaces', { body: { name: 'Crash' } });
    assert.equal(ws.status, 201);
    const scope = { 'svc-context': ws.body.id };

    // A reference cluster without faults: what a clean run leaves behind.
    const clean = await call(first!.url, 'POST', '/v1/clusters', { headers: scope, body: { name: 'clean' } });
    assert.equal(clean.status, 202, JSON.stringify(clean.body));
    assert.equal((await call(first!.url, 'POST', `/v1/operations/${clean.body.id}:wait`, { headers: scope })).body.state, 'SUCCEEDED');

    // Reading capabilities takes 2.5 s: time to kill whoever runs it.
    const created = await call(first!.url, 'POST', '/v1/clusters', {
      headers: scope,
      body: { name: 'crashy', local: { faults: [{ action: 'capabilities', latency_ms: 2500 }] } },
    });
    assert.equal(created.status, 202);
    const opId: string = created.body.id;
    const clusterId: string = created.body.metadata.cluster_id;

    let holder: string | null = null;
    let before: any = null;
    for (let i = 0; i < 200 && !holder; i++) {
      const op = (await call(first!.url, 'GET', `/v1/operations/${opId}`, { headers: scope })).body;
      const job = await handle.db.selectFrom('jobs').select(['locked_by']).where('operation_id', '=', opId).executeTakeFirst();
      if (op.steps?.[1]?.status === 'running' && job?.locked_by) {
        holder = job.locked_by;
        before = op;
      } else await sleep(25);
    }
    assert.ok(holder, 'some process runs the operation');
    const victim = processes.find((p) => holder!.includes(`:${p.child.pid}:`));
    assert.ok(victim, `the holder ${holder} is one of our processes`);
    const survivor = processes.find((p) => p !== victim)!;
    assert.equal(before.steps[0].status, 'completed');
    victim.child.kill('SIGKILL');
    await victim.exited;

    const done = await call(survivor.url, 'POST', `/v1/operations/${opId}:wait?timeout=30`, { headers: scope });
    assert.equal(done.status, 200);
    assertOperationInvariants(done.body);
    assert.equal(done.body.state, 'SUCCEEDED', JSON.stringify(done.body));
    assert.equal(done.body.last_error, null);
    const [provision, capabilities, ...rest] = done.body.steps;
    // The step finished before the crash was not run again; the interrupted one ran once more.
    assert.deepEqual(provision, before.steps[0]);
    assert.equal(provision.attempts, 1);
    assert.equal(capabilities.attempts, 2);
    assert.equal(capabilities.started_at, before.steps[1].started_at, 'started_at is the first start');
    assert.ok(rest.every((s: any) => s.status === 'completed' && s.attempts === 1));

    const job = await handle.db.selectFrom('jobs').select('id').where('operation_id', '=', opId).execute();
    assert.deepEqual(job, [], 'the job is gone');
    const simulated = await handle.db.selectFrom('local_clusters').select('cluster_id').where('cluster_id', '=', clusterId).execute();
    assert.equal(simulated.length, 1, 'provisioned once');
    // Each database effect applied exactly once: the same etag as the clean run's cluster.
    const crashy = await call(survivor.url, 'GET', `/v1/clusters/${clusterId}`, { headers: scope });
    const reference = await call(survivor.url, 'GET', `/v1/clusters/${clean.body.metadata.cluster_id}`, { headers: scope });
    assert.equal(crashy.body.state, 'active');
    assert.equal(crashy.body.reconciling, false);
    assert.equal(crashy.body.etag, reference.body.etag);
    const caps = await call(survivor.url, 'GET', `/v1/clusters/${clusterId}/capabilities`, { headers: scope });
    assert.equal(caps.status, 200);
    assert.ok(caps.body.nodes.length > 0);
  });

  test('--role api serves HTTP without running operations; --role worker runs them; :wait is pushed across processes', { timeout: 240_000 }, async () => {
    await Promise.all(processes.splice(0).map((p) => p.stop()));
    // Its metrics on an address of their own (SVC_METRICS_ADDRESS), where a scraper reads them without a credential.
    const metricsPort = await freePort();
    const api = await startSvc({ ...env, SVC_ROLE: 'api', SVC_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` });
    processes.push(api);
    const ws = await call(api.url, 'POST', '/v1/workspaces', { body: { name: 'Split' } });
    const scope = { 'svc-context': ws.body.id };
    const created = await call(api.url, 'POST', '/v1/clusters', {
      headers: scope, body: { name: 'split', local: { faults: [{ action: 'capabilities', latency_ms: 2000 }] } },
    });
    assert.equal(created.status, 202);
    await sleep(500);
    const idle = await call(api.url, 'GET', `/v1/operations/${created.body.id}`, { headers: scope });
    assert.deepEqual(idle.body.steps.map((s: any) => s.status), ['pending', 'pending', 'pending'], 'no worker in the API process');

    const worker = await startSvc({ ...env, SVC_ROLE: 'worker' });
    processes.push(worker);
    const done = await call(api.url, 'POST', `/v1/operations/${created.body.id}:wait?timeout=30`, { headers: scope });
    assert.equal(done.body.state, 'SUCCEEDED');
    // The API process hears of the end through the database: LISTEN/NOTIFY on PostgreSQL, which
    // its metrics count (a lost push would leave the count at 0 and the wait to its 1 s safety
    // poll); SQLite has no cross-process push and relies on its 250 ms check.
    const metricsRes = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(metricsRes.status, 200);
    const metrics = await metricsRes.text();
    assert.match(metrics, /^svc_http_requests_total\{method="POST",route="[^"]*:wait",status_code="200"\} 1$/m);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/v1/workspaces`)).status, 404, 'only /metrics is served there');
    assert.equal((await fetch(`${api.url}/metrics`)).status, 404, 'not on the public port without SVC_METRICS_TOKEN');
    if (DIALECT === 'postgres') {
      const received = Number(/^svc_operation_wait_notifications_total\{event="received"\} (\d+)/m.exec(metrics)?.[1]);
      assert.ok(received >= 1, `the API process received no operation notification:\n${metrics.split('\n').filter((l) => l.includes('wait_notifications')).join('\n')}`);
    }

    const probe = await fetch(`${worker.url}/v1/workspaces`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(probe.status, 404, 'a worker process serves no API');
    assert.equal((await fetch(`${worker.url}/healthz`)).status, 200);
  });
});
