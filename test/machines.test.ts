// Machines brought by their owners through HTTP: worker bootstraps, the agent's join and
// heartbeats, UNREACHABLE and back, suspend, resume, delete, expiry, the quota race, roles,
// tenancy, and the machine credential refused everywhere but its own route.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { maskTokens } from '../src/platform/logging.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { plansFile, roomyPlans } from './plans-fixtures.js';
import { assertNamed } from './notification-wording.js';

const FACTS = { hostname: 'build-01.example.net', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8 * 1024 ** 3, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

describe('machines', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let ws: string;
  let cluster: string;
  const ctx = () => ({ 'svc-context': ws });
  const as = (user: TestUser, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.request(method, url, { token: user.token, headers: { ...ctx(), ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });

  async function waitOp(id: string) {
    const res = await as(owner, 'POST', `/v1/operations/${id}:wait?timeout=30`);
    assert.equal(res.status, 200, res.text);
    return res.body;
  }

  async function bootstrap(body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
    const res = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps`, { body, headers });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  const join = (token: string, facts: Record<string, unknown> = FACTS) => t.request('POST', '/v1/machine_joins', { body: { token, facts } });
  const beat = (credential: string, body: Record<string, unknown> = {}) => t.request('POST', '/v1/machine_heartbeats', { token: credential, body });

  /** A machine that joined and heartbeated once: ACTIVE. */
  async function activeMachine() {
    const b = await bootstrap();
    const joined = await join(b.token);
    assert.equal(joined.status, 201, joined.text);
    const hb = await beat(joined.body.credential, { facts: FACTS });
    assert.equal(hb.status, 200, hb.text);
    assert.equal(hb.body.state, 'ACTIVE');
    return joined.body as { machine_id: string; credential: string; node_name: string };
  }

  const getMachine = (id: string) => as(owner, 'GET', `/v1/machines/${id}`);

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_MACHINE_HEARTBEAT_S: '10' });
    owner = await t.user('owner');
    member = await t.user('member');
    stranger = await t.user('stranger');
    ws = (await t.workspace(owner, 'M')).id;
    await t.addMember(owner, ws, member, 'member');
    await t.workspace(stranger, 'S');
    const created = await as(owner, 'POST', '/v1/clusters', { body: { name: 'edge' } });
    assert.equal(created.status, 202, created.text);
    assert.equal((await waitOp(created.body.id)).state, 'SUCCEEDED');
    cluster = created.body.owner_id;
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
  });

  test('a bootstrap shows its token, command and cloud-init once; reads never show them; a replay answers the same token', async () => {
    const b = await bootstrap({ ttl_seconds: 600 }, { 'idempotency-key': 'wbs-1' });
    assert.match(b.id, /^wbs_/);
    assert.match(b.token, /^svcb_[A-Za-z0-9_-]{43}$/);
    assert.equal(b.status, 'active');
    assert.equal(b.used_by_machine_id, null);
    assert.ok(b.expires_at - b.created_at === 600);
    assert.equal(b.command, `svc machine join --server http://svc.test --token ${b.token}`);
    assert.match(b.cloud_init, /^#cloud-config\n/);
    assert.ok(b.cloud_init.includes(`SVC_JOIN_TOKEN=${b.token}`));
    const replay = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps`, { body: { ttl_seconds: 600 }, headers: { 'idempotency-key': 'wbs-1' } });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.token, b.token);
    const got = await as(member, 'GET', `/v1/clusters/${cluster}/worker_bootstraps/${b.id}`);
    assert.equal(got.status, 200);
    assert.equal(got.body.token, undefined);
    assert.equal(got.body.command, undefined);
    const list = await as(member, 'GET', `/v1/clusters/${cluster}/worker_bootstraps`);
    assert.ok(list.body.data.some((x: any) => x.id === b.id));
    assert.ok(list.body.data.every((x: any) => x.token === undefined));
    // Stored as a hash only.
    const row = await t.services.db.selectFrom('worker_bootstraps').selectAll().where('id', '=', b.id).executeTakeFirstOrThrow();
    assert.ok(!JSON.stringify(row).includes(b.token));
  });

  test('a member can read but not create or revoke bootstraps; bounds and unknown clusters', async () => {
    assert.equal((await as(member, 'POST', `/v1/clusters/${cluster}/worker_bootstraps`, { body: {} })).status, 403);
    const tooLong = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps`, { body: { ttl_seconds: 86_401 } });
    assert.equal(tooLong.status, 400);
    assert.equal((await as(owner, 'POST', '/v1/clusters/clu_00000000000000000000000000/worker_bootstraps', { body: {} })).status, 404);
    const b = await bootstrap();
    assert.equal((await as(member, 'POST', `/v1/clusters/${cluster}/worker_bootstraps/${b.id}:revoke`, { headers: { 'if-match': b.etag } })).status, 403);
  });

  test('join: a used, revoked, expired or unknown token joins nothing', async () => {
    const unknown = await join('svcb_' + 'x'.repeat(43));
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.reason, 'JOIN_TOKEN_REJECTED');

    const used = await bootstrap();
    assert.equal((await join(used.token)).status, 201);
    const again = await join(used.token);
    assert.equal(again.status, 401);
    assert.match(again.body.error.message, /used/);

    const revoked = await bootstrap();
    const stale = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps/${revoked.id}:revoke`, { headers: { 'if-match': '"99"' } });
    assert.equal(stale.status, 409);
    const rev = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps/${revoked.id}:revoke`, { headers: { 'if-match': revoked.etag } });
    assert.equal(rev.status, 200, rev.text);
    assert.equal(rev.body.status, 'revoked');
    const afterRevoke = await join(revoked.token);
    assert.equal(afterRevoke.status, 401);
    assert.match(afterRevoke.body.error.message, /revoked/);
    const revokeTwice = await as(owner, 'POST', `/v1/clusters/${cluster}/worker_bootstraps/${revoked.id}:revoke`, { headers: { 'if-match': '*' } });
    assert.equal(revokeTwice.status, 422);

    const expiring = await bootstrap({ ttl_seconds: 60 });
    clock.offsetMs = 61_000;
    try {
      const late = await join(expiring.token);
      assert.equal(late.status, 401);
      assert.match(late.body.error.message, /expired/);
      assert.equal((await as(owner, 'GET', `/v1/clusters/${cluster}/worker_bootstraps/${expiring.id}`)).body.status, 'expired');
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('two agents racing with one token make one machine', async () => {
    const b = await bootstrap();
    const before = (await as(owner, 'GET', `/v1/machines?cluster_id=${cluster}&limit=100`)).body.data.length;
    const results = await Promise.all(Array.from({ length: 6 }, () => join(b.token)));
    assert.deepEqual(results.map((r) => r.status).sort(), [201, 401, 401, 401, 401, 401]);
    const list = (await as(owner, 'GET', `/v1/machines?cluster_id=${cluster}&limit=100`)).body.data;
    assert.equal(list.length, before + 1);
  });

  test('join, heartbeat: JOINING then ACTIVE, a ready node of the cluster; facts and node name', async () => {
    const b = await bootstrap();
    const joined = await join(b.token);
    assert.equal(joined.status, 201, joined.text);
    assert.match(joined.body.credential, /^svcm_[A-Za-z0-9]{43}$/);
    assert.equal(joined.body.heartbeat_interval_seconds, 10);
    assert.match(joined.body.node_name, /^build-01-[0-9a-z]{5}$/);
    const id = joined.body.machine_id;
    const m = (await getMachine(id)).body;
    assert.equal(m.state, 'JOINING');
    assert.equal(m.origin, 'joined');
    assert.equal(m.provider, 'byo');
    assert.deepEqual(m.facts, FACTS);
    assert.equal(m.html_url, `http://svc.test/machines/${id}`);
    const used = (await as(owner, 'GET', `/v1/clusters/${cluster}/worker_bootstraps/${b.id}`)).body;
    assert.deepEqual([used.status, used.used_by_machine_id], ['used', id]);

    const hb = await beat(joined.body.credential);
    assert.deepEqual(hb.body, { machine_id: id, state: 'ACTIVE', schedulable: true, heartbeat_interval_seconds: 10 });
    const active = (await getMachine(id)).body;
    assert.equal(active.state, 'ACTIVE');
    assert.ok(active.last_heartbeat_at >= active.created_at);
    assert.notEqual(active.etag, m.etag);
    const caps = await as(member, 'GET', `/v1/clusters/${cluster}/capabilities`);
    const node = caps.body.nodes.find((n: any) => n.name === joined.body.node_name);
    assert.ok(node, JSON.stringify(caps.body.nodes.map((n: any) => n.name)));
    assert.equal(node.ready, true);
    assert.equal(node.cpu_capacity, '4');
    assert.equal(node.architecture, 'amd64');
    // A refresh reads the same node from the simulated cluster.
    const refresh = await as(owner, 'POST', `/v1/clusters/${cluster}/capabilities:refresh`);
    assert.equal((await waitOp(refresh.body.id)).state, 'SUCCEEDED');
    const again = await as(member, 'GET', `/v1/clusters/${cluster}/capabilities`);
    assert.ok(again.body.nodes.some((n: any) => n.name === joined.body.node_name && n.ready));
    // Audit: the join is recorded as the machine's.
    const audit = await as(owner, 'GET', `/v1/audit_events?resource_id=${b.id}`);
    assert.deepEqual(audit.body.data.map((e: any) => [e.action, e.actor.type]), [['worker_bootstrap.use', 'machine'], ['worker_bootstrap.create', 'user']]);
  });

  test('the machine credential is refused by every other route, and the heartbeat route refuses every other credential', async () => {
    const { credential } = await activeMachine();
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    let checked = 0;
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        if (!op['x-svc-auth'] || op['x-svc-auth'] === 'none' || op['x-svc-auth'] === 'machine') continue;
        const url = path.replace(/\{[^}]+\}/g, 'x_00000000000000000000000000');
        const res = await t.request(method.toUpperCase(), url, { token: credential, headers: { 'svc-context': ws } });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.error.reason, 'MACHINE_CREDENTIAL_NOT_ALLOWED', `${method} ${path}`);
        checked++;
      }
    }
    assert.ok(checked > 60, `only ${checked} routes checked`);
    const asUser = await t.request('POST', '/v1/machine_heartbeats', { token: owner.token, body: {} });
    assert.equal(asUser.status, 403);
    assert.equal(asUser.body.error.reason, 'MACHINE_CREDENTIAL_REQUIRED');
    assert.equal((await t.request('POST', '/v1/machine_heartbeats', { body: {} })).status, 401);
    assert.equal((await beat('svcm_' + 'A'.repeat(43))).status, 401);
  });

  test('three missed heartbeats: UNREACHABLE, admins notified once; a heartbeat makes it ACTIVE and supersedes the notice', async () => {
    const { machine_id: id, credential, node_name } = await activeMachine();
    clock.offsetMs = 31_000;
    try {
      const swept = await t.runtime.sweepMachines();
      assert.ok(swept.unreachable >= 1);
      await t.runtime.sweepMachines();
      assert.equal((await getMachine(id)).body.state, 'UNREACHABLE');
      const caps = await as(owner, 'GET', `/v1/clusters/${cluster}/capabilities`);
      assert.equal(caps.body.nodes.find((n: any) => n.name === node_name).ready, false);
      const mine = (u: TestUser) => t.request('GET', '/v1/notifications?limit=50', { token: u.token })
        .then((r) => r.body.data.filter((n: any) => n.type === 'machine_unreachable' && n.resource_id === id));
      assert.equal((await mine(owner)).length, 1);
      // Named by its node (it has no name of its own) and its cluster, never by id.
      const [told] = await mine(owner);
      assertNamed(told, node_name, 'edge');
      assert.equal(told.title, `Machine ${node_name} on edge is unreachable`);
      assert.equal(told.context.machine_id, id);
      assert.equal((await mine(member)).length, 0, 'members are not told');
      const hb = await beat(credential);
      assert.equal(hb.body.state, 'ACTIVE');
      assert.equal((await getMachine(id)).body.state, 'ACTIVE');
      const [notice] = await mine(owner);
      assert.ok(notice.read_at !== null && notice.context.superseded_by === 'heartbeat', JSON.stringify(notice));
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('PATCH with if-match: name and expiry; stale etag 409; past expiry 400; members 403', async () => {
    const { machine_id: id } = await activeMachine();
    const m = (await getMachine(id)).body;
    assert.equal((await as(member, 'PATCH', `/v1/machines/${id}`, { body: { name: 'x' }, headers: { 'if-match': m.etag } })).status, 403);
    const renamed = await as(owner, 'PATCH', `/v1/machines/${id}`, { body: { name: 'builder' }, headers: { 'if-match': m.etag } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'builder');
    const stale = await as(owner, 'PATCH', `/v1/machines/${id}`, { body: { name: 'y' }, headers: { 'if-match': m.etag } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.metadata.etag, renamed.body.etag);
    const past = await as(owner, 'PATCH', `/v1/machines/${id}`, { body: { expires_at: 1 }, headers: { 'if-match': '*' } });
    assert.equal(past.status, 400);
    assert.equal((await as(owner, 'PATCH', `/v1/machines/${id}`, { body: { names: 'typo' }, headers: { 'if-match': '*' } })).status, 400);
  });

  test('suspend cordons (heartbeats say unschedulable), resume uncordons; wrong states 422, members 403', async () => {
    const { machine_id: id, credential } = await activeMachine();
    const m = (await getMachine(id)).body;
    assert.equal((await as(member, 'POST', `/v1/machines/${id}:suspend`, { headers: { 'if-match': m.etag } })).status, 403);
    assert.equal((await as(owner, 'POST', `/v1/machines/${id}:resume`, { headers: { 'if-match': m.etag } })).status, 422);
    const suspend = await as(owner, 'POST', `/v1/machines/${id}:suspend`, { headers: { 'if-match': m.etag } });
    assert.equal(suspend.status, 202, suspend.text);
    assert.equal(suspend.body.owner_type, 'machine');
    assert.equal(suspend.body.metadata.type, 'machine.suspend');
    assert.equal((await waitOp(suspend.body.id)).state, 'SUCCEEDED');
    const suspended = (await getMachine(id)).body;
    assert.deepEqual([suspended.state, suspended.reconciling], ['SUSPENDED', false]);
    const hb = await beat(credential);
    assert.deepEqual([hb.body.state, hb.body.schedulable], ['SUSPENDED', false]);
    const resume = await as(owner, 'POST', `/v1/machines/${id}:resume`, { headers: { 'if-match': suspended.etag } });
    assert.equal(resume.status, 202, resume.text);
    assert.equal((await waitOp(resume.body.id)).state, 'SUCCEEDED');
    assert.equal((await getMachine(id)).body.state, 'ACTIVE');
    assert.equal((await beat(credential)).body.schedulable, true);
  });

  test('delete: 202 machine.delete; the node goes, the agent is told its machine was deleted; audited', async () => {
    const { machine_id: id, credential, node_name } = await activeMachine();
    const m = (await getMachine(id)).body;
    assert.equal((await as(member, 'DELETE', `/v1/machines/${id}`, { headers: { 'if-match': m.etag } })).status, 403);
    const del = await as(owner, 'DELETE', `/v1/machines/${id}`, { headers: { 'if-match': m.etag } });
    assert.equal(del.status, 202, del.text);
    const second = await as(owner, 'DELETE', `/v1/machines/${id}`, { headers: { 'if-match': '*' } });
    assert.equal(second.status, 202);
    const done = await waitOp(del.body.id);
    assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
    assert.deepEqual(done.steps.map((s: any) => s.name), ['drain_operations', 'cordon_and_drain', 'destroy_server', 'remove_node', 'revoke_credential', 'remove']);
    assert.ok(second.body.id === del.body.id || second.body.done);
    assert.equal((await getMachine(id)).status, 404);
    const hb = await beat(credential);
    assert.equal(hb.status, 401);
    assert.equal(hb.body.error.reason, 'MACHINE_DELETED');
    const caps = await as(owner, 'GET', `/v1/clusters/${cluster}/capabilities`);
    assert.ok(!caps.body.nodes.some((n: any) => n.name === node_name));
    const audit = await as(owner, 'GET', `/v1/audit_events?resource_id=${id}`);
    assert.deepEqual(audit.body.data.map((e: any) => e.action), ['machine.delete']);
  });

  test('a cluster with machines cannot be deleted', async () => {
    await activeMachine();
    const c = (await as(owner, 'GET', `/v1/clusters/${cluster}`)).body;
    const res = await as(owner, 'DELETE', `/v1/clusters/${cluster}`, { headers: { 'if-match': c.etag } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.reason, 'CLUSTER_HAS_MACHINES');
  });

  test('expiry: notices 72 h and 24 h before, once each; at expires_at the service deletes the machine', async () => {
    const { machine_id: id } = await activeMachine();
    const expiresAt = clock.now() + 100 * 3600;
    const set = await as(owner, 'PATCH', `/v1/machines/${id}`, { body: { expires_at: expiresAt, name: 'expiring-one' }, headers: { 'if-match': '*' } });
    assert.equal(set.status, 200, set.text);
    const notices = () => t.request('GET', '/v1/notifications?limit=50', { token: owner.token })
      .then((r) => r.body.data.filter((n: any) => n.type === 'machine_expiry' && n.resource_id === id).map((n: any) => {
        assertNamed(n, 'Machine expiring-one on edge expires');
        return n.context.notice;
      }).sort());
    try {
      clock.offsetMs = 10 * 3600_000; // 90 h left: nothing yet
      await t.runtime.sweepMachines();
      assert.deepEqual(await notices(), []);
      clock.offsetMs = 30 * 3600_000; // 70 h left
      await t.runtime.sweepMachines();
      await t.runtime.sweepMachines();
      assert.deepEqual(await notices(), ['72h']);
      clock.offsetMs = 80 * 3600_000; // 20 h left
      await t.runtime.sweepMachines();
      await t.runtime.sweepMachines();
      assert.deepEqual(await notices(), ['24h', '72h']);
      // Keep it heartbeating in the moved clock, so it is not also UNREACHABLE.
      clock.offsetMs = 100 * 3600_000 + 1000;
      const swept = await t.runtime.sweepMachines();
      assert.ok(swept.expired >= 1);
      const ops = await as(owner, 'GET', `/v1/operations?owner_id=${id}`);
      const del = ops.body.data.find((o: any) => o.metadata.type === 'machine.delete');
      assert.ok(del, JSON.stringify(ops.body));
      assert.equal(del.metadata.reason, 'expired');
      assert.equal((await waitOp(del.id)).state, 'SUCCEEDED');
      assert.equal((await getMachine(id)).status, 404);
      const audit = await as(owner, 'GET', `/v1/audit_events?resource_id=${id}`);
      assert.deepEqual(audit.body.data.map((e: any) => [e.action, e.actor.type]), [['machine.delete', 'system']]);
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('tenancy: another workspace sees none of it', async () => {
    const { machine_id: id } = await activeMachine();
    const b = await bootstrap();
    const theirs = { 'svc-context': (await t.request('GET', '/v1/workspaces', { token: stranger.token })).body.data[0].id };
    const get = await t.request('GET', `/v1/machines/${id}`, { token: stranger.token, headers: theirs });
    assert.equal(get.status, 404);
    const list = await t.request('GET', '/v1/machines', { token: stranger.token, headers: theirs });
    assert.deepEqual(list.body.data, []);
    assert.equal((await t.request('GET', `/v1/clusters/${cluster}/worker_bootstraps/${b.id}`, { token: stranger.token, headers: theirs })).status, 404);
    assert.equal((await t.request('DELETE', `/v1/machines/${id}`, { token: stranger.token, headers: { ...theirs, 'if-match': '*' } })).status, 404);
    assert.equal((await t.request('GET', `/v1/machines/${id}`, { token: stranger.token, headers: ctx() })).status, 403);
  });
});

test('log lines never carry a bootstrap token or a machine credential', () => {
  const line = '{"msg":"x svcb_4Zq0YvT1nJb8mW2x-Kc6Lr9Ps3Df7Gh5Aa1Bb2Cc3Dd4 and svcm_3fQk9ZrT2mW8xLc5Np7Hs1Dv4Gb6Jy0Ka2Pe9Ru3Tw"}';
  assert.equal(maskTokens(line), '{"msg":"x svcb_[masked] and svcm_[masked]"}');
});

describe('machines: the compute/machines quota', () => {
  test('concurrent joins against the limit: exactly the limit join, the others are 429 and keep their tokens', async () => {
    const t = await startTestApp({ SVC_PLANS_FILE: plansFile({ 'compute/machines': 3 }) });
    try {
      const owner = await t.user('owner');
      const ws = (await t.workspace(owner, 'Q')).id;
      const headers = { 'svc-context': ws };
      const created = await t.request('POST', '/v1/clusters', { token: owner.token, headers, body: { name: 'q' } });
      await t.request('POST', `/v1/operations/${created.body.id}:wait?timeout=30`, { token: owner.token, headers });
      const cluster = created.body.owner_id;
      const tokens: string[] = [];
      for (let i = 0; i < 8; i++) {
        const b = await t.request('POST', `/v1/clusters/${cluster}/worker_bootstraps`, { token: owner.token, headers, body: {} });
        tokens.push(b.body.token);
      }
      const results = await Promise.all(tokens.map((token) => t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } })));
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 201, 201, 429, 429, 429, 429, 429]);
      assert.ok(results.filter((r) => r.status === 429).every((r) => r.body.error.reason === 'QUOTA_EXCEEDED' && r.body.error.metadata.metric === 'compute/machines'));
      const quotas = await t.request('GET', '/v1/quotas', { token: owner.token, headers });
      const entry = quotas.body.data.find((q: any) => q.metric === 'compute/machines');
      assert.deepEqual([entry.usage, entry.limit], [3, 3]);
      const list = await t.request('GET', `/v1/clusters/${cluster}/worker_bootstraps?limit=100`, { token: owner.token, headers });
      assert.equal(list.body.data.filter((b: any) => b.status === 'active').length, 5);
    } finally {
      await t.close();
    }
  });
});
