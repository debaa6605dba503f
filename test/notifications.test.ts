// Notifications (API.md 8.2, spec endpoint 16): per user; each source sends once per event to the
// right people (operation failed: the requester; install degraded, API token expiring, secret purge
// scheduled: the workspace's owners and admins); list with the 50-item cap and has_more, unread
// filter exactly true|false, :markRead, :markAllRead, :unreadCount; 90-day retention.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { secretPurgeScheduled } from '../src/modules/notifications/sources.js';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, MANIFEST, SCHEMA, type Caller } from './installs-fixtures.js';
import { assertNamed, ID_IN_TEXT } from './notification-wording.js';

describe('notifications', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let A: Caller;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    A = { user: owner, ws: (await t.workspace(owner, 'Noisy')).id };
    await t.addMember(owner, A.ws, admin, 'admin');
    await t.addMember(owner, A.ws, member, 'member');
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  const list = (u: TestUser, query = '') => t.request('GET', `/v1/notifications${query}`, { token: u.token });
  const ofType = async (u: TestUser, type: string) => (await list(u)).body.data.filter((n: any) => n.type === type);
  const as = (u: TestUser): Caller => ({ user: u, ws: A.ws });

  test('an operation that fails notifies the user who started it, once; tokens notify nobody', async () => {
    const res = await t.request('POST', '/v1/clusters', f.opts(as(admin), { body: { name: 'doomed', local: { faults: [{ action: 'provision', fail_times: 50 }] } } }));
    assert.equal(res.status, 202, res.text);
    const op = await f.waitOp(A, res.body.id);
    assert.equal(op.state, 'FAILED');
    const [n, ...rest] = await ofType(admin, 'operation_failed');
    assert.deepEqual(rest, []);
    assert.deepEqual(Object.keys(n).sort(), ['body', 'context', 'created_at', 'id', 'resource_id', 'resource_type', 'severity', 'title', 'type', 'workspace_id']);
    assert.match(n.id, /^ntf_[0-9a-z]{26}$/);
    assert.deepEqual([n.resource_type, n.resource_id, n.workspace_id, n.severity, n.title], ['operation', op.id, A.ws, 'critical', 'Creating cluster doomed failed']);
    assert.deepEqual(n.context, { operation_id: op.id, operation_type: 'cluster.create', owner_id: op.owner_id }, 'the ids stay in the context');
    assert.ok(n.body.startsWith(`Creating cluster doomed failed: ${op.error.message}`), n.body);
    assertNamed(n, 'doomed');
    assert.equal(n.read_at, undefined, 'read_at is omitted while unread');
    assert.deepEqual(await ofType(owner, 'operation_failed'), [], 'only the requester');
    // Started by an API token: nobody is told (automation reads the operation).
    const token = await t.apiToken(owner, A.ws, { role: 'admin' });
    const byToken = await t.request('POST', '/v1/clusters', { token: token.token, body: { name: 'doomed-2', local: { faults: [{ action: 'provision', fail_times: 50 }] } } });
    assert.equal((await f.waitOp(A, byToken.body.id)).state, 'FAILED');
    for (const u of [owner, admin, member]) assert.ok((await ofType(u, 'operation_failed')).every((x: any) => x.resource_id !== byToken.body.id));
  });

  test('an install going degraded notifies the owners and admins, not members', async () => {
    const cluster = await f.cluster(A);
    const clusterName = (await t.request('GET', `/v1/clusters/${cluster}`, f.opts(A))).body.name;
    const pkg = await f.pkg(A, 'wiki');
    await f.version(A, pkg, '1.0.0');
    const created = await f.healthyInstall(A, pkg, cluster);
    await f.version(A, pkg, '1.1.0', { ...MANIFEST, resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: '{{ values.missing }}' } }] }, SCHEMA);
    const up = await t.request('PATCH', `/v1/installs/${created.owner_id}`, f.opts(as(member), { body: { package_version_pin: { kind: 'pinned', version: '1.1.0' } }, headers: { 'if-match': '*' } }));
    assert.equal((await f.waitOp(A, up.body.id)).state, 'FAILED');
    for (const u of [owner, admin]) {
      const [n, ...rest] = await ofType(u, 'install_degraded');
      assert.deepEqual(rest, []);
      assert.deepEqual([n.resource_type, n.resource_id, n.severity, n.context.operation_id], ['install', created.owner_id, 'warning', up.body.id]);
      assert.equal(n.title, `wiki on ${clusterName} is degraded`);
      assertNamed(n, 'wiki', clusterName);
      assert.ok(n.body.includes('to 1.1.0'), n.body);
    }
    assert.deepEqual(await ofType(member, 'install_degraded'), []);
    const failed = (await ofType(member, 'operation_failed')).filter((n: any) => n.resource_id === up.body.id);
    assert.equal(failed.length, 1, 'the member who asked hears of the failure');
    assert.equal(failed[0].title, `Updating wiki on ${clusterName} to 1.1.0 failed`);
    assertNamed(failed[0]);
  });

  test('a failed deploy names the package, version and cluster; the ids stay in the context', async () => {
    // A workspace of its own: Noisy's clusters quota is taken by the tests above.
    const L: Caller = { user: admin, ws: (await t.workspace(admin, 'Ledger Co')).id };
    const cluster = await f.cluster(L, [{ action: 'deploy', fail_times: 100 }]);
    const clusterName = (await t.request('GET', `/v1/clusters/${cluster}`, f.opts(L))).body.name;
    const pkg = await f.pkg(L, 'ledger');
    await f.version(L, pkg, '2.3.4');
    const res = await f.createInstall(L, { package_id: pkg, package_version_pin: { kind: 'latest' }, cluster_id: cluster });
    assert.equal(res.status, 202, res.text);
    assert.equal((await f.waitOp(L, res.body.id)).state, 'FAILED');
    const [n] = (await ofType(admin, 'operation_failed')).filter((x: any) => x.resource_id === res.body.id);
    assert.equal(n.title, `Deploying ledger 2.3.4 on ${clusterName} failed`);
    assertNamed(n, 'ledger', '2.3.4', clusterName);
    assert.deepEqual(n.context, { operation_id: res.body.id, operation_type: 'install.create', owner_id: res.body.owner_id });
  });

  test('API tokens expiring within 7 days are announced once to owners and admins, whatever the sweeps', async () => {
    const now = clock.now();
    const soon = await t.apiToken(owner, A.ws, { name: 'soon', expires_at: now + 3 * 86_400 });
    const later = await t.apiToken(owner, A.ws, { name: 'later', expires_at: now + 10 * 86_400 });
    await Promise.all([t.runtime.sweepAccount(), t.runtime.sweepAccount(), t.services.notifications.notifyExpiringTokens()]);
    await t.runtime.sweepAccount();
    for (const u of [owner, admin]) {
      const got = await ofType(u, 'api_token_expiring');
      assert.deepEqual(got.map((n: any) => n.resource_id), [soon.id]);
      assert.deepEqual(got[0].context, { api_token_id: soon.id, name: 'soon', expires_at: String(now + 3 * 86_400) });
      assertNamed(got[0], '"soon"');
      assert.ok(got[0].body.includes('workspace Noisy'), got[0].body);
    }
    assert.deepEqual(await ofType(member, 'api_token_expiring'), []);
    clock.offsetMs = 4 * 86_400_000;
    await t.runtime.sweepAccount();
    assert.deepEqual((await ofType(owner, 'api_token_expiring')).map((n: any) => n.resource_id), [later.id, soon.id]);
  });

  test('secret purge scheduled (the function the secrets module calls): owners and admins, once per purge', async () => {
    const send = (purgeAt: number, revision: number) => t.services.db.transaction().execute((tx) =>
      secretPurgeScheduled(tx, { workspaceId: A.ws, secretId: 'sec_01jf8x3q6m2c4y7n0k5t9r1b3d', name: 'db-password', purgeAt, revision }));
    const purgeAt = clock.now() + 7 * 86_400;
    const sent = await Promise.all([send(purgeAt, 2), send(purgeAt, 2), send(purgeAt, 2)]);
    assert.equal(sent.reduce((a, b) => a + b, 0), 2, 'owner and admin, once each');
    assert.equal(await send(purgeAt + 100, 4), 2, 'deleted again after an undelete: a new event');
    const got = await ofType(admin, 'secret_purge_scheduled');
    assert.equal(got.length, 2);
    assert.deepEqual([got[0].resource_type, got[0].resource_id, got[0].context.purge_at], ['secret', 'sec_01jf8x3q6m2c4y7n0k5t9r1b3d', String(purgeAt + 100)]);
    assertNamed(got[0], '"db-password"');
    assert.deepEqual(await ofType(member, 'secret_purge_scheduled'), []);
  });

  test('no notification of this file names a resource by its id (issue 34)', async () => {
    // The check itself would catch the wording before issue 34.
    assert.match('Install inst_01jf8x3q6m2c4y7n0k5t9r1b3d is degraded', ID_IN_TEXT);
    assert.match(`Operation op_01jf8x3q6m2c4y7n0k5t9r1b3d (cluster.create on clu_01jf8x3q6m2c4y7n0k5t9r1b3d) failed`, ID_IN_TEXT);
    let seen = 0;
    for (const u of [owner, admin, member]) {
      for (const n of (await list(u, '?limit=50')).body.data) {
        assertNamed(n);
        seen++;
      }
    }
    assert.ok(seen >= 8, `only ${seen} notifications were checked`);
  });

  test('unread filter, :markRead, :markAllRead and :unreadCount', async () => {
    const reader = await t.user('reader');
    const R: Caller = { user: reader, ws: (await t.workspace(reader, 'Reader')).id };
    for (let i = 0; i < 3; i++) await t.apiToken(reader, R.ws, { name: `t${i}`, expires_at: clock.now() + 86_400 + i });
    await t.runtime.sweepAccount();
    const count = async () => (await t.request('GET', '/v1/notifications:unreadCount', { token: reader.token })).body;
    assert.deepEqual(await count(), { unread_count: 3 });
    const all = (await list(reader)).body.data;
    assert.equal(all.length, 3);
    const marked = await t.request('POST', `/v1/notifications/${all[1].id}:markRead`, { token: reader.token });
    assert.equal(marked.status, 200, marked.text);
    assert.equal(marked.body.id, all[1].id);
    assert.ok(Number.isInteger(marked.body.read_at));
    clock.offsetMs = 60_000;
    const again = await t.request('POST', `/v1/notifications/${all[1].id}%3AmarkRead`, { token: reader.token });
    assert.equal(again.body.read_at, marked.body.read_at, 'marking again keeps the first read_at');
    assert.deepEqual(await count(), { unread_count: 2 });
    assert.deepEqual((await list(reader, '?unread=true')).body.data.map((n: any) => n.id), [all[0].id, all[2].id]);
    assert.deepEqual((await list(reader, '?unread=false')).body.data.map((n: any) => n.id), [all[1].id]);
    for (const bad of ['maybe', 'TRUE', '1', '', 'yes']) {
      const res = await list(reader, `?unread=${bad}`);
      assert.equal(res.status, 400, `unread=${bad}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
    const allRead = await t.request('POST', '/v1/notifications:markAllRead', { token: reader.token });
    assert.deepEqual(allRead.body, { updated: 2 });
    assert.deepEqual(await count(), { unread_count: 0 });
    assert.deepEqual((await t.request('POST', '/v1/notifications:markAllRead', { token: reader.token })).body, { updated: 0 });
    // Another user's notification, or an id of another kind: 404.
    for (const id of [all[0].id, `op_${all[0].id.slice(4)}`, 'x']) {
      assert.equal((await t.request('POST', `/v1/notifications/${id}:markRead`, { token: owner.token })).status, 404);
    }
    assert.equal((await list(owner)).body.data.some((n: any) => n.id === all[0].id), false);
  });

  test('notifications belong to people: workspace tokens get 403 and no token 401 on every route', async () => {
    const token = await t.apiToken(owner, A.ws, { role: 'admin' });
    const some = (await list(owner)).body.data[0].id;
    for (const [method, url] of [['GET', '/v1/notifications'], ['GET', '/v1/notifications:unreadCount'], ['POST', '/v1/notifications:markAllRead'], ['POST', `/v1/notifications/${some}:markRead`]] as const) {
      const res = await t.request(method, url, { token: token.token });
      assert.equal(res.status, 403, `${method} ${url}`);
      assert.equal(res.body.error.reason, 'USER_CREDENTIAL_REQUIRED');
      assert.equal((await t.request(method, url)).status, 401);
    }
  });

  test('at most 50 a page with has_more; the cursor reaches the rest; limit above 50 is 400', async () => {
    const busy = await t.user('busy');
    const B: Caller = { user: busy, ws: (await t.workspace(busy, 'Busy')).id };
    for (let i = 0; i < 60; i++) await t.apiToken(busy, B.ws, { name: `token-${i}`, expires_at: clock.now() + 2 * 86_400 });
    await t.runtime.sweepAccount();
    const first = await list(busy);
    assert.equal(first.status, 200);
    assert.equal(first.body.data.length, 50);
    assert.equal(first.body.has_more, true);
    assert.equal(typeof first.body.next_cursor, 'string');
    const rest = await list(busy, `?cursor=${encodeURIComponent(first.body.next_cursor)}`);
    assert.equal(rest.body.data.length, 10);
    assert.equal(rest.body.has_more, false);
    assert.equal(rest.body.next_cursor, null);
    const ids = [...first.body.data, ...rest.body.data].map((n: any) => n.id);
    assert.equal(new Set(ids).size, 60);
    assert.deepEqual(ids, [...ids].sort().reverse(), 'newest first');
    assert.equal((await list(busy, '?limit=51')).status, 400);
    assert.equal((await list(busy, `?unread=true&cursor=${encodeURIComponent(first.body.next_cursor)}`)).status, 400, 'a cursor is bound to its filter');
    assert.deepEqual((await t.request('GET', '/v1/notifications:unreadCount', { token: busy.token })).body, { unread_count: 60 });
  });

  test('notifications older than 90 days are purged by the workers', async () => {
    const old = await t.user('old');
    const O: Caller = { user: old, ws: (await t.workspace(old, 'Old')).id };
    await t.apiToken(old, O.ws, { name: 'old', expires_at: clock.now() + 86_400 });
    await t.runtime.sweepAccount();
    assert.equal((await list(old)).body.data.length, 1);
    clock.offsetMs = 89 * 86_400_000;
    assert.equal((await t.runtime.sweepAccount()).notifications_purged, 0);
    assert.equal((await list(old)).body.data.length, 1);
    clock.offsetMs = 91 * 86_400_000;
    assert.ok((await t.runtime.sweepAccount()).notifications_purged >= 1);
    assert.deepEqual((await list(old)).body.data, []);
  });
});
