// Provisioned machines on the `local` compute provider, end to end through the real routes: POST
// /v1/machines creates a local server whose in-process agent joins through app.inject (no socket)
// and heartbeats, so the machine.create operation succeeds with the machine ACTIVE; suspend powers
// the server off (its agent stops), resume powers it on (the agent comes back with its kept
// credential, no second join); delete removes the server. A worker bootstrap's own cloud-init boots
// a local server too, and deleting that machine stops its agent by itself (MACHINE_DELETED).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import { createLocalComputeProvider, type LocalComputeProvider } from '../src/drivers/compute/local.js';
import { injectTransport } from '../src/drivers/compute/inject-transport.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

const call = { signal: new AbortController().signal };

describe('machines on the local compute provider', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let cluster: string;
  let provider: LocalComputeProvider;
  const lines: { msg: string; machine_id?: string }[] = [];
  const as = (method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.request(method, url, { token: owner.token, headers: { 'svc-context': ws, ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });

  async function waitOp(id: string) {
    const res = await as('POST', `/v1/operations/${id}:wait?timeout=30`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.state, 'SUCCEEDED', res.text);
    return res.body;
  }

  async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await delay(20);
    }
  }

  const joins = () => lines.filter((l) => l.msg.startsWith('joined as')).length;

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_MACHINE_HEARTBEAT_S: '1' });
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    // What services.ts and the runtime do with it (see the report): the provider under `local`, the app's transport, start/stop.
    provider = createLocalComputeProvider({ db: t.services.db, keyring: t.services.keyring, publicUrl: t.config.publicUrl });
    t.services.computeProviders.set('local', provider);
    provider.attach({ ...injectTransport(t.app), logger });
    await provider.start();
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'L')).id;
    const created = await as('POST', '/v1/clusters', { body: { name: 'edge' } });
    assert.equal(created.status, 202, created.text);
    cluster = (await waitOp(created.body.id)).owner_id;
  });
  after(async () => {
    await provider.stop();
    await t.close();
  });

  test('create, suspend, resume and delete a provisioned local machine', async () => {
    const created = await as('POST', '/v1/machines', { body: { cluster_id: cluster, instance_type: 'local-medium', name: 'runner' } });
    assert.equal(created.status, 202, created.text);
    const machineId = (await waitOp(created.body.id)).owner_id as string;
    const machine = (await as('GET', `/v1/machines/${machineId}`)).body;
    assert.equal(machine.state, 'ACTIVE');
    assert.equal(machine.provider, 'local');
    assert.deepEqual({ cpu: machine.facts.cpu_count, mem: machine.facts.memory_bytes, os: machine.facts.os }, { cpu: 2, mem: 4 * 2 ** 30, os: 'linux' });
    const server = await t.services.db.selectFrom('local_servers').selectAll().where('machine_id', '=', machineId).executeTakeFirstOrThrow();
    assert.equal(machine.facts.hostname, server.name);
    assert.deepEqual(provider.running(), [server.id]);
    assert.equal(joins(), 1);
    // The agent logs its first answered heartbeat after the service recorded it: the line may follow the read above.
    await until('the agent to log its heartbeat', () => lines.some((l) => l.machine_id === machineId && /^heartbeating every 1 s: machine mch_\w+ is ACTIVE$/.test(l.msg)));

    const suspended = await as('POST', `/v1/machines/${machineId}:suspend`, { headers: { 'if-match': machine.etag } });
    assert.equal(suspended.status, 202, suspended.text);
    await waitOp(suspended.body.id);
    assert.deepEqual(provider.running(), []);
    assert.deepEqual(await provider.getServer(server.id, call), { serverId: server.id, status: 'off' });

    const etag = (await as('GET', `/v1/machines/${machineId}`)).body.etag;
    const resumed = await as('POST', `/v1/machines/${machineId}:resume`, { headers: { 'if-match': etag } });
    assert.equal(resumed.status, 202, resumed.text);
    await waitOp(resumed.body.id);
    assert.equal((await as('GET', `/v1/machines/${machineId}`)).body.state, 'ACTIVE');
    assert.deepEqual(provider.running(), [server.id]);
    assert.equal(joins(), 1, 'powered on again, the agent uses its kept credential');

    const current = (await as('GET', `/v1/machines/${machineId}`)).body.etag;
    const deleted = await as('DELETE', `/v1/machines/${machineId}`, { headers: { 'if-match': current } });
    assert.equal(deleted.status, 202, deleted.text);
    await waitOp(deleted.body.id);
    assert.equal((await as('GET', `/v1/machines/${machineId}`)).status, 404);
    assert.deepEqual(provider.running(), []);
    assert.equal(await t.services.db.selectFrom('local_servers').select('id').where('id', '=', server.id).executeTakeFirst(), undefined);
  });

  test('a server booted from a worker bootstrap\'s cloud-init joins; deleted, its agent stops by itself', async () => {
    const b = await as('POST', `/v1/clusters/${cluster}/worker_bootstraps`, { body: {} });
    assert.equal(b.status, 201, b.text);
    const { serverId } = await provider.createServer({ machineId: 'mch_byo_on_local', name: 'byo-1', instanceType: 'local-small', userData: b.body.cloud_init }, call);
    let machineId = '';
    await until('the machine ACTIVE', async () => {
      const list = await as('GET', `/v1/machines?cluster_id=${cluster}&state=ACTIVE`);
      machineId = list.body.data.find((m: any) => m.facts?.hostname === 'byo-1')?.id ?? '';
      return machineId !== '';
    });
    const machine = (await as('GET', `/v1/machines/${machineId}`)).body;
    assert.equal(machine.origin, 'joined');
    const deleted = await as('DELETE', `/v1/machines/${machineId}`, { headers: { 'if-match': machine.etag } });
    await waitOp(deleted.body.id);
    await until('the agent stopped by itself', () => lines.some((l) => l.machine_id === machineId && l.msg.startsWith('stopping: the machine was deleted')));
    const row = await t.services.db.selectFrom('local_servers').selectAll().where('id', '=', serverId).executeTakeFirstOrThrow();
    assert.equal(row.credential_sealed, null);
    await provider.deleteServer(serverId, call);
    // No line of the log holds the token or a machine credential.
    assert.ok(!JSON.stringify(lines).includes(b.body.token));
    assert.ok(!/svcm_[A-Za-z0-9]{20}/.test(JSON.stringify(lines)));
  });
});
