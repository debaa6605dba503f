// machine.create survives the crash of the process running it without a second server: two
// `svc serve` processes share one database and provision on the Hetzner Cloud stand-in. The
// stand-in creates the server but never answers the POST (a lost answer); the process waiting for
// it is killed with SIGKILL; the other takes the job over when its lease expires, finds the server
// by its label and carries on. The test plays the server's cloud-init (join, heartbeat).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { HCLOUD_STANDIN_TOKEN, startHcloudStandin, type HcloudStandin } from './hcloud-standin.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Machine0Crash0Bootstrap0Token000';
const call = svcCaller(TOKEN);

describe(`machine.create across a crash (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  let standin: HcloudStandin;
  const processes: RunningSvc[] = [];

  before(async () => {
    db = await createTestDatabase();
    standin = await startHcloudStandin();
    const env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_LEASE_MS: '1500', SVC_JOB_POLL_MS: '100', SVC_RETRY_BACKOFF_SCALE: '0.01',
      SVC_COMPUTE_PROVIDER: 'hcloud', SVC_HCLOUD_TOKEN: HCLOUD_STANDIN_TOKEN, SVC_HCLOUD_ENDPOINT: standin.endpoint,
    });
    processes.push(await startSvc(env), await startSvc(env));
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await handle?.close();
    await standin?.close();
    await db?.drop();
  });

  test('kill -9 while the server is being created: the other process finds it and makes no second one', { timeout: 240_000 }, async () => {
    const [first] = processes;
    const ws = await call(first!.url, 'POST', '/v1/workspaces', { body: { name: 'Crash' } });
    const scope = { 'svc-context': ws.body.id };
    const cluster = await call(first!.url, 'POST', '/v1/clusters', { headers: scope, body: { name: 'fleet' } });
    assert.equal((await call(first!.url, 'POST', `/v1/operations/${cluster.body.id}:wait`, { headers: scope })).body.state, 'SUCCEEDED');

    standin.faults.dropAnswers = 1;
    standin.faults.dropAnswersOf = 'POST /v1/servers';
    const created = await call(first!.url, 'POST', '/v1/machines', { headers: scope, body: { cluster_id: cluster.body.owner_id, instance_type: 'cx23' } });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const opId: string = created.body.id;
    const machineId: string = created.body.owner_id;

    // The server exists at the provider, its answer lost: whoever holds the job waits for it.
    let holder: string | null = null;
    for (let i = 0; i < 400 && !holder; i++) {
      const job = await handle.db.selectFrom('jobs').select(['locked_by']).where('operation_id', '=', opId).executeTakeFirst();
      if (standin.servers.size === 1 && job?.locked_by) holder = job.locked_by;
      else await sleep(25);
    }
    assert.ok(holder, 'a process waits for the create answer');
    const victim = processes.find((p) => holder!.includes(`:${p.child.pid}:`))!;
    const survivor = processes.find((p) => p !== victim)!;
    victim.child.kill('SIGKILL');
    await victim.exited;

    // The survivor takes the step over, finds the labelled server, waits for it to run and for its agent.
    const server = [...standin.servers.values()][0]!;
    const token = /SVC_JOIN_TOKEN=(svcb_[A-Za-z0-9_-]+)/.exec(server.userData ?? '')![1]!;
    let joined: any = null;
    for (let i = 0; i < 400 && !joined; i++) {
      const m = await call(survivor.url, 'GET', `/v1/machines/${machineId}`, { headers: scope });
      if (m.body.state === 'JOINING') {
        const res = await fetch(`${survivor.url}/v1/machine_joins`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token, facts: { hostname: 'svc-mch', os: 'linux', arch: 'x64', cpu_count: 2, memory_bytes: 1, kernel: '6.1', agent_version: '0.1.0' } }),
        });
        joined = await res.json();
      } else await sleep(50);
    }
    assert.ok(joined?.credential, JSON.stringify(joined));
    const beat = await fetch(`${survivor.url}/v1/machine_heartbeats`, { method: 'POST', headers: { authorization: `Bearer ${joined.credential}`, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(beat.status, 200);

    const done = await call(survivor.url, 'POST', `/v1/operations/${opId}:wait?timeout=60`, { headers: scope });
    assert.equal(done.body.state, 'SUCCEEDED', JSON.stringify(done.body));
    const createStep = done.body.steps.find((s: any) => s.name === 'create_server');
    assert.equal(createStep.attempts, 2, 'the interrupted step ran once more');
    assert.equal(standin.calls.filter((c) => c.method === 'POST' && c.path === '/v1/servers').length, 1, 'one server was created');
    assert.equal(standin.servers.size, 1);
    assert.equal((await call(survivor.url, 'GET', `/v1/machines/${machineId}`, { headers: scope })).body.state, 'ACTIVE');
  });
});
