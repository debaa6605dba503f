// An in-flight idempotency key names the instance running its request; a retry takes the key over
// at once when that instance is gone (no heartbeat row, a stale heartbeat, or a dead pid on this
// host), and answers 409 IDEMPOTENCY_KEY_IN_USE while it lives, whatever the key's age. Time moves
// through clock.offsetMs, never by sleeping; the last test kills a real `svc serve` process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { clock } from '../src/platform/clock.js';
import { HOST, STALE_HEARTBEAT_MS } from '../src/platform/instance.js';
import { createTestDatabase, DIALECT, startTestApp, type Response, type TestApp, type TestDatabase, type TestUser } from './harness.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

describe(`in-flight idempotency keys of a gone instance (${DIALECT})`, () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Crashes')).id;
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
  });

  const body = { name: 'n', code: 'return 1', display_type: 'json' };
  const create = (key: string): Promise<Response> =>
    t.request('POST', '/v1/snippets', { token: owner.token, headers: { 'svc-context': ws, 'idempotency-key': key }, body });

  /**
   * A key as a crashed request of instance `instanceId` leaves it: a real first request's record
   * (its scope and fingerprint) set back to in flight under that instance.
   */
  async function stageInFlight(instanceId: string | null): Promise<string> {
    const key = randomUUID();
    assert.equal((await create(key)).status, 201);
    const res = await t.services.db.updateTable('idempotency_keys')
      .set({ state: 'in_flight', status_code: null, resource_id: null, claim: `staged-${key}`, instance_id: instanceId, created_at: clock.now() })
      .where('key', '=', key).executeTakeFirst();
    assert.equal(Number(res.numUpdatedRows), 1);
    return key;
  }

  const registerInstance = (id: string, pid: number, host: string | null) =>
    t.services.db.insertInto('instances').values({ id, host, pid, heartbeat_at: clock.nowMs(), started_at: clock.nowMs() }).execute();

  const assertInUse = (res: Response) => {
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.error.reason, 'IDEMPOTENCY_KEY_IN_USE');
  };
  const assertTakenOver = async (key: string, res: Response) => {
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers['idempotent-replayed'], undefined);
    const row = await t.services.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirstOrThrow();
    assert.equal(row.state, 'done');
    assert.equal(row.resource_id, res.body.id);
    const replay = await create(key);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, res.body.id);
  };

  test('a key held by a live instance is 409 however old the key; once its heartbeat is stale it is taken over at once', async () => {
    const instance = `elsewhere:${randomUUID()}`;
    await registerInstance(instance, 1, null);
    const key = await stageInFlight(instance);
    try {
      assertInUse(await create(key));
      // An hour-old key of a live instance is still in flight: liveness is the instance's, not the key's age.
      clock.offsetMs = 60 * 60 * 1000;
      await t.services.db.updateTable('instances').set({ heartbeat_at: clock.nowMs() }).where('id', '=', instance).execute();
      assertInUse(await create(key));
      clock.offsetMs += STALE_HEARTBEAT_MS;
      await assertTakenOver(key, await create(key));
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('a key held by an instance that never registered is taken over at once', async () => {
    const key = await stageInFlight(`unknown:${randomUUID()}`);
    await assertTakenOver(key, await create(key));
  });

  test('on the same host, a key held by an instance whose process is dead is taken over at once; a live pid holds it', { skip: HOST === null }, async () => {
    const child = spawn(process.execPath, ['-e', '']);
    const pid = child.pid!;
    await once(child, 'exit');
    const dead = `here:${pid}:${randomUUID()}`;
    await registerInstance(dead, pid, HOST);
    const deadKey = await stageInFlight(dead);
    await assertTakenOver(deadKey, await create(deadKey));

    const alive = `here:${process.pid}:${randomUUID()}`;
    await registerInstance(alive, process.pid, HOST);
    assertInUse(await create(await stageInFlight(alive)));
  });

  test('a key this instance holds is in flight (409) until its request ends', async () => {
    const key = await stageInFlight(t.services.idempotency.instance.id);
    assertInUse(await create(key));
  });

  test('a key written before instances were recorded is taken over after a minute, as before', async () => {
    const key = await stageInFlight(null);
    try {
      assertInUse(await create(key));
      clock.offsetMs = 60_000;
      await assertTakenOver(key, await create(key));
    } finally {
      clock.offsetMs = 0;
    }
  });
});

const TOKEN = 'Idempotency0Crash0Bootstrap0Tokn';
const call = svcCaller(TOKEN);

describe(`kill -9 during a keyed request (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  const processes: RunningSvc[] = [];

  before(async () => {
    db = await createTestDatabase();
    const env = dbEnv(db, { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN });
    processes.push(await startSvc(env));
    processes.push(await startSvc(env));
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await handle?.close();
    await db?.drop();
  });

  test('the other process takes the key of the killed process\'s run over at once, not 409 for a minute', { timeout: 240_000 }, async () => {
    const [victim, survivor] = processes as [RunningSvc, RunningSvc];
    const ws = await call(victim.url, 'POST', '/v1/workspaces', { body: { name: 'Crash' } });
    assert.equal(ws.status, 201);
    const scope = { 'svc-context': ws.body.id };
    // The code is read when the run starts, not part of the request: the victim spins until killed,
    // the survivor's retry (same key, same body) runs the code as changed in between.
    const snippet = await call(victim.url, 'POST', '/v1/snippets', {
      headers: scope, body: { name: 'spin', code: 'while (true) {}', display_type: 'json' },
    });
    assert.equal(snippet.status, 201);
    const run = { headers: { ...scope, 'idempotency-key': 'run-1' }, body: { overrides: { timeout_ms: 60_000 } } };
    const path = `/v1/snippets/${snippet.body.id}/runs`;
    const pending = call(victim.url, 'POST', path, run).catch((err: Error) => err);

    let held = false;
    for (let i = 0; i < 400 && !held; i++) {
      const row = await handle.db.selectFrom('idempotency_keys').select(['state', 'instance_id']).where('key', '=', 'run-1').executeTakeFirst();
      held = row?.state === 'in_flight' && String(row.instance_id).includes(`:${victim.child.pid}:`);
      if (!held) await sleep(25);
    }
    assert.ok(held, 'the victim holds the key while its run spins');
    assertInUseAt(await call(survivor.url, 'POST', path, run));

    victim.child.kill('SIGKILL');
    await victim.exited;
    assert.ok((await pending) instanceof Error, 'the victim never answered');
    const patched = await call(survivor.url, 'PATCH', `/v1/snippets/${snippet.body.id}`, {
      headers: { ...scope, 'if-match': snippet.body.etag }, body: { code: 'return 42' },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));

    const retried = await call(survivor.url, 'POST', path, run);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    assert.equal(retried.body.state, 'succeeded');
    assert.equal(retried.body.output, 42);
    const runs = await call(survivor.url, 'GET', path, { headers: scope });
    assert.equal(runs.body.data.length, 1, 'the killed run left nothing behind; the retry recorded one run');
  });
});

function assertInUseAt(res: { status: number; body: any }): void {
  assert.equal(res.status, 409, JSON.stringify(res.body));
  assert.equal(res.body.error.reason, 'IDEMPOTENCY_KEY_IN_USE');
}
