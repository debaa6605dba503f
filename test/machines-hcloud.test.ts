// Provisioned machines on Hetzner Cloud, through the whole service: POST /v1/machines with
// SVC_COMPUTE_PROVIDER=hcloud against the local stand-in of Hetzner's API. The test plays the
// server's cloud-init: it joins with the token of the user data the stand-in received, and
// heartbeats. Success, suspend (power off), resume (power on), delete (the server destroyed), a
// rate-limited and a failing API retried, a server that never boots failing the operation and
// releasing the server, and roles.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { HCLOUD_STANDIN_TOKEN, startHcloudStandin, type HcloudStandin } from './hcloud-standin.js';

const FACTS = { hostname: 'svc-mch', os: 'linux', arch: 'x64', cpu_count: 2, memory_bytes: 4 * 1024 ** 3, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

describe('provisioned machines on the hcloud provider (stand-in)', () => {
  let standin: HcloudStandin;
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let ws: string;
  let cluster: string;
  const as = (user: TestUser, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.request(method, url, { token: user.token, headers: { 'svc-context': ws, ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });
  const waitOp = async (id: string) => (await as(owner, 'POST', `/v1/operations/${id}:wait?timeout=30`)).body;
  const getMachine = (id: string) => as(owner, 'GET', `/v1/machines/${id}`);
  const posts = () => standin.calls.filter((c) => c.method === 'POST' && c.path === '/v1/servers');

  /** The server's cloud-init, played: join with the token of its user data, then heartbeat. */
  async function bootServer(machineId: string): Promise<string> {
    const server = [...standin.servers.values()].find((s) => s.labels['svc-machine'] === machineId);
    assert.ok(server, `a server labelled svc-machine=${machineId}`);
    const token = /SVC_JOIN_TOKEN=(svcb_[A-Za-z0-9_-]+)/.exec(server.userData ?? '')?.[1];
    assert.ok(token, 'the user data carries the join token');
    const joined = await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } });
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.body.machine_id, machineId, 'the server joins as the machine made for it');
    const hb = await t.request('POST', '/v1/machine_heartbeats', { token: joined.body.credential, body: {} });
    assert.equal(hb.body.state, 'ACTIVE');
    return joined.body.credential;
  }

  /** Waits until the operation's machine has its server at the stand-in, then boots it. */
  async function whenServerExists(machineId: string) {
    for (let i = 0; i < 200; i++) {
      if ([...standin.servers.values()].some((s) => s.labels['svc-machine'] === machineId)) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no server for ${machineId}`);
  }

  async function provision(body: Record<string, unknown> = {}) {
    const res = await as(owner, 'POST', '/v1/machines', { body: { cluster_id: cluster, instance_type: 'cx23', ...body } });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.owner_type, 'machine');
    assert.equal(res.body.metadata.type, 'machine.create');
    return res.body as { id: string; owner_id: string };
  }

  before(async () => {
    standin = await startHcloudStandin();
    t = await startTestApp({
      SVC_COMPUTE_PROVIDER: 'hcloud', SVC_HCLOUD_TOKEN: HCLOUD_STANDIN_TOKEN, SVC_HCLOUD_ENDPOINT: standin.endpoint,
      SVC_MACHINE_JOIN_TIMEOUT_S: '5',
    });
    owner = await t.user('owner');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'H')).id;
    await t.addMember(owner, ws, member, 'member');
    const created = await as(owner, 'POST', '/v1/clusters', { body: { name: 'fleet' } });
    assert.equal((await waitOp(created.body.id)).state, 'SUCCEEDED');
    cluster = created.body.owner_id;
  });
  after(async () => {
    await t.close();
    await standin.close();
  });

  test('create: one server with the cloud-init, JOINING, then ACTIVE when its agent joins; suspend powers it off, resume on; delete destroys it', async () => {
    const before = posts().length;
    const op = await provision({ name: 'runner' });
    const id = op.owner_id;
    assert.equal((await getMachine(id)).body.origin, 'provisioned');
    await whenServerExists(id);
    const post = posts().at(-1)!;
    assert.equal(post.body.server_type, 'cx23');
    assert.deepEqual(post.body.labels, { 'svc-machine': id });
    assert.match(post.body.user_data, /^#cloud-config\n/);
    assert.ok(post.body.user_data.includes('svc machine join --server http://svc.test --state-dir'), post.body.user_data);
    kept.set(id, await bootServer(id));
    const done = await waitOp(op.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.deepEqual(done.steps.map((s: any) => s.name), ['create_server', 'wait_running', 'wait_joined']);
    assert.equal(posts().length, before + 1, 'one server for one request');
    const m = (await getMachine(id)).body;
    assert.deepEqual([m.state, m.provider, m.instance_type, m.name, m.reconciling], ['ACTIVE', 'hcloud', 'cx23', 'runner', false]);
    // The operation's record holds no token.
    assert.ok(!JSON.stringify(done).includes('svcb_'));

    const suspend = await as(owner, 'POST', `/v1/machines/${id}:suspend`, { headers: { 'if-match': m.etag } });
    assert.equal((await waitOp(suspend.body.id)).state, 'SUCCEEDED');
    assert.ok(standin.calls.some((c) => c.path.endsWith('/actions/poweroff')));
    const suspended = (await getMachine(id)).body;
    assert.equal(suspended.state, 'SUSPENDED');
    // Resume powers on and waits for the agent's next heartbeat after it.
    const resume = await as(owner, 'POST', `/v1/machines/${id}:resume`, { headers: { 'if-match': suspended.etag } });
    assert.equal(resume.status, 202, resume.text);
    // The agent on the powered-on server heartbeats again with the credential it kept (played by waitResumed).
    const live = await t.services.db.selectFrom('machine_credentials').select('id').where('machine_id', '=', id).where('revoked_at', 'is', null).execute();
    assert.equal(live.length, 1, 'one live credential');
    const resumed = await waitResumed(id, resume.body.id);
    assert.equal(resumed.state, 'SUCCEEDED', JSON.stringify(resumed));
    assert.ok(standin.calls.some((c) => c.path.endsWith('/actions/poweron')));
    assert.equal((await getMachine(id)).body.state, 'ACTIVE');

    const del = await as(owner, 'DELETE', `/v1/machines/${id}`, { headers: { 'if-match': '*' } });
    assert.equal((await waitOp(del.body.id)).state, 'SUCCEEDED');
    assert.ok(![...standin.servers.values()].some((s) => s.labels['svc-machine'] === id), 'the server is destroyed');
    assert.equal((await getMachine(id)).status, 404);
  });

  /** The credentials the played agents keep, by machine. */
  const kept = new Map<string, string>();
  /** Heartbeats as the machine's agent with its kept credential until the operation ends. */
  async function waitResumed(id: string, opId: string) {
    const credential = kept.get(id);
    for (let i = 0; i < 400; i++) {
      if (credential) await t.request('POST', '/v1/machine_heartbeats', { token: credential, body: {} });
      const op = (await as(owner, 'GET', `/v1/operations/${opId}`)).body;
      if (op.done) return op;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('resume did not end');
  }

  test('a rate-limited and a failing API are retried: the machine is made, with one server', async () => {
    standin.faults.rateLimited = 2;
    standin.faults.retryAfterSeconds = 1;
    standin.faults.serverErrors = 1;
    const before = posts().length;
    const op = await provision();
    await whenServerExists(op.owner_id);
    kept.set(op.owner_id, await bootServer(op.owner_id));
    const done = await waitOp(op.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.ok(done.steps[0].attempts > 1, 'create_server was retried');
    assert.equal(posts().length - before, 1);
  });

  test('a server that never boots: machine.create fails after the join timeout and machine.delete releases the server', async () => {
    standin.faults.neverBoots = true;
    try {
      const op = await provision();
      const done = await waitOp(op.id);
      assert.equal(done.state, 'FAILED', JSON.stringify(done));
      assert.match(done.error.message, /waiting for server \d+ to boot \(it is starting\)/);
      const cleanup = (await as(owner, 'GET', `/v1/operations?owner_id=${op.owner_id}`)).body.data.find((o: any) => o.metadata.type === 'machine.delete');
      assert.ok(cleanup);
      assert.equal(cleanup.metadata.reason, 'machine.create failed');
      assert.equal((await waitOp(cleanup.id)).state, 'SUCCEEDED');
      assert.ok(![...standin.servers.values()].some((s) => s.labels['svc-machine'] === op.owner_id), 'the server is destroyed');
      assert.equal((await getMachine(op.owner_id)).status, 404);
    } finally {
      standin.faults.neverBoots = false;
    }
  });

  test('roles and bad input: members 403; an unknown instance type or cluster, a past expiry, unknown fields 400/404', async () => {
    const body = { cluster_id: cluster, instance_type: 'cx23' };
    const count = posts().length;
    assert.equal((await as(member, 'POST', '/v1/machines', { body })).status, 403);
    const badType = await as(owner, 'POST', '/v1/machines', { body: { ...body, instance_type: 'cx22' } });
    assert.equal(badType.status, 400);
    assert.match(badType.body.error.field_violations[0].description, /cx23/);
    assert.equal((await as(owner, 'POST', '/v1/machines', { body: { ...body, expires_at: 1 } })).status, 400);
    assert.equal((await as(owner, 'POST', '/v1/machines', { body: { ...body, cluster_id: 'clu_00000000000000000000000000' } })).status, 404);
    assert.equal((await as(owner, 'POST', '/v1/machines', { body: { ...body, flavor: 'big' } })).status, 400);
    assert.equal(posts().length, count, 'nothing reached the provider');
  });
});
