// Secrets in the workspace account (API.md 8.1 and 8.2): the secrets/secrets quota counted where a
// secret is created (soft-deleted secrets count until purged; a force delete frees the slot), and
// the notification to the workspace's owners and admins when a secret is scheduled for purge, and
// its supersession once the purge no longer lies ahead (restored, deleted for good, purged).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { plansFile } from './plans-fixtures.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const LIMIT = 3;

describe('secrets in the account: quota and purge notification', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  let api: SecretsApi;

  before(async () => {
    t = await startTestApp({ SVC_SECRET_RETENTION: '3600', SVC_PLANS_FILE: plansFile({ 'secrets/secrets': LIMIT }) });
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Vault')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
    api = new SecretsApi(t, { token: owner.token, ws });
  });
  after(() => {
    clock.offsetMs = 0;
    return t.close();
  });

  const usage = async () => {
    const res = await api.call('GET', '/v1/quotas');
    assert.equal(res.status, 200, res.text);
    const entry = res.body.data.find((q: { metric: string }) => q.metric === 'secrets/secrets');
    return { usage: entry.usage, limit: entry.limit, remaining: entry.remaining };
  };
  const notificationsOf = async (user: TestUser) => {
    const res = await t.request('GET', '/v1/notifications', { token: user.token });
    assert.equal(res.status, 200, res.text);
    return res.body.data.filter((n: { type: string }) => n.type === 'secret_purge_scheduled');
  };

  test('concurrent creates never pass the limit; soft-deleted secrets count until purged; a force delete frees a slot', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => api.call('POST', '/v1/secrets', { body: { name: `s${i}`, value: `v${i}` } })));
    const created = results.filter((r) => r.status === 201);
    assert.equal(created.length, LIMIT, results.map((r) => r.status).join(','));
    for (const r of results.filter((x) => x.status !== 201)) {
      assertError(r, 429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED');
      assert.equal(r.body.error.metadata.metric, 'secrets/secrets');
    }
    const { body: list } = await api.call('GET', '/v1/secrets');
    assert.equal(list.data.length, LIMIT, 'a refused create stored nothing');
    assert.deepEqual(await usage(), { usage: LIMIT, limit: LIMIT, remaining: 0 });

    const first = created[0]!.body;
    const soft = await api.call('DELETE', `/v1/secrets/${first.id}`, { headers: { 'if-match': `"${first.etag}"` } });
    assert.equal(soft.status, 200, soft.text);
    assertError(await api.call('POST', '/v1/secrets', { body: { name: 'while soft-deleted', value: 'x' } }), 429, 'RESOURCE_EXHAUSTED', 'QUOTA_EXCEEDED');

    const forced = await api.call('DELETE', `/v1/secrets/${first.id}?force=true`, { headers: { 'if-match': '*' } });
    assert.equal(forced.status, 204, forced.text);
    assert.deepEqual(await usage(), { usage: LIMIT - 1, limit: LIMIT, remaining: 1 });
    assert.equal((await api.call('POST', '/v1/secrets', { body: { name: 'after force', value: 'x' } })).status, 201);
  });

  test('a soft delete notifies the owners and admins once, naming the purge time; members hear nothing', async () => {
    const { body: page } = await api.call('GET', '/v1/secrets');
    const target = page.data.find((s: { state: string }) => s.state === 'active');
    const before = (await notificationsOf(owner)).length;
    const res = await api.call('DELETE', `/v1/secrets/${target.id}`, { headers: { 'if-match': `"${target.etag}"` } });
    assert.equal(res.status, 200, res.text);
    // Deleting it again (already soft-deleted) is not a new event.
    assert.equal((await api.call('DELETE', `/v1/secrets/${target.id}`, { headers: { 'if-match': '*' } })).status, 200);

    for (const user of [owner, admin]) {
      const mine = (await notificationsOf(user)).filter((n: { resource_id: string }) => n.resource_id === target.id);
      assert.equal(mine.length, 1, `${user.email}: ${JSON.stringify(mine)}`);
      assert.equal(mine[0].workspace_id, ws);
      assert.equal(mine[0].context.purge_at, String(res.body.purge_at));
      assert.equal(mine[0].read_at, undefined, 'unread: read_at omitted');
    }
    assert.equal((await notificationsOf(owner)).length, before + 1);
    assert.deepEqual(await notificationsOf(member), []);

    // Restored and deleted again: a new purge date, a new notification.
    const restored = await api.call('POST', `/v1/secrets/${target.id}:undelete`, { headers: { 'if-match': '*' } });
    assert.equal(restored.status, 200, restored.text);
    clock.offsetMs += 5000;
    const again = await api.call('DELETE', `/v1/secrets/${target.id}`, { headers: { 'if-match': '*' } });
    assert.equal(again.status, 200, again.text);
    assert.notEqual(again.body.purge_at, res.body.purge_at);
    assert.equal((await notificationsOf(admin)).filter((n: { resource_id: string }) => n.resource_id === target.id).length, 2);
  });

  /** The purge notifications of `user` about one secret, newest first. */
  const purgeNoticesOf = async (user: TestUser, secretId: string) =>
    (await notificationsOf(user)).filter((n: { resource_id: string }) => n.resource_id === secretId);
  const unreadCount = async (user: TestUser) => (await t.request('GET', '/v1/notifications:unreadCount', { token: user.token })).body.unread_count;

  /** A fresh secret, soft-deleted: its purge notification is unread for the owner and the admin. */
  async function deletedSecret(name: string): Promise<any> {
    // Frees a slot of the quota first: this describe's secrets share a limit of 3.
    for (const s of (await api.call('GET', '/v1/secrets')).body.data) {
      assert.equal((await api.call('DELETE', `/v1/secrets/${s.id}?force=true`, { headers: { 'if-match': '*' } })).status, 204);
    }
    const created = await api.create({ name, value: 'v' });
    const res = await api.call('DELETE', `/v1/secrets/${created.id}`, { headers: { 'if-match': '*' } });
    assert.equal(res.status, 200, res.text);
    for (const user of [owner, admin]) assert.equal((await purgeNoticesOf(user, created.id))[0].read_at, undefined);
    return res.body;
  }

  /** Every purge notification of the secret, for the owner and the admin, is read and says what superseded it. */
  async function assertSuperseded(secretId: string, by: string, notices = 1): Promise<void> {
    for (const user of [owner, admin]) {
      const mine = await purgeNoticesOf(user, secretId);
      assert.equal(mine.length, notices, JSON.stringify(mine));
      for (const n of mine) {
        assert.equal(typeof n.read_at, 'number', `${user.email}: read`);
        assert.equal(n.context.superseded_by, by);
        assert.equal(n.context.superseded_at, String(n.read_at));
        assert.equal(n.context.secret_id, secretId, 'the rest of the context stays');
      }
    }
  }

  test('restoring a secret supersedes its purge notification: marked read, context.superseded_by = secret.undelete; one already read keeps its read_at', async () => {
    const deleted = await deletedSecret('restored');
    const [ownersNotice] = await purgeNoticesOf(owner, deleted.id);
    clock.offsetMs -= 60_000;
    const read = await t.request('POST', `/v1/notifications/${ownersNotice.id}:markRead`, { token: owner.token });
    clock.offsetMs += 60_000;
    assert.equal(read.status, 200, read.text);
    const unreadBefore = await unreadCount(admin);
    const restored = await api.call('POST', `/v1/secrets/${deleted.id}:undelete`, { headers: { 'if-match': '*' } });
    assert.equal(restored.status, 200, restored.text);
    assert.equal(await unreadCount(admin), unreadBefore - 1, 'nothing new was sent; the notice is no longer unread');
    const [admins] = await purgeNoticesOf(admin, deleted.id);
    assert.deepEqual([admins.context.superseded_by, typeof admins.read_at], ['secret.undelete', 'number']);
    const [owners] = await purgeNoticesOf(owner, deleted.id);
    assert.deepEqual([owners.read_at, owners.context.superseded_by], [read.body.read_at, 'secret.undelete'], 'the first read_at stays');

    // Deleted again in the same second: a new deletion, a new unread notice; the old one stays superseded.
    const again = await api.call('DELETE', `/v1/secrets/${deleted.id}`, { headers: { 'if-match': '*' } });
    assert.equal(again.status, 200, again.text);
    const [fresh, old] = await purgeNoticesOf(admin, deleted.id);
    assert.deepEqual([fresh.read_at, fresh.context.superseded_by, old.id], [undefined, undefined, admins.id]);
  });

  test('deleting a soft-deleted secret for good supersedes its purge notification (secret.delete)', async () => {
    const deleted = await deletedSecret('forced');
    const res = await api.call('DELETE', `/v1/secrets/${deleted.id}?force=true`, { headers: { 'if-match': '*' } });
    assert.equal(res.status, 204, res.text);
    await assertSuperseded(deleted.id, 'secret.delete');
  });

  test('the purge by the workers supersedes the purge notification (secret.purge); a sweep again changes nothing', async () => {
    const deleted = await deletedSecret('purged');
    clock.offsetMs += (deleted.purge_at - clock.now() + 1) * 1000;
    assert.ok(await t.runtime.sweepSecrets() >= 1);
    await assertSuperseded(deleted.id, 'secret.purge');
    const before = await purgeNoticesOf(admin, deleted.id);
    assert.equal(await t.runtime.sweepSecrets(), 0);
    assert.deepEqual(await purgeNoticesOf(admin, deleted.id), before);
  });

  test('a refused undelete (stale etag) supersedes nothing', async () => {
    const deleted = await deletedSecret('refused');
    const res = await api.call('POST', `/v1/secrets/${deleted.id}:undelete`, { headers: { 'if-match': '"1"' } });
    assert.equal(res.status, 409, res.text);
    for (const user of [owner, admin]) {
      const [n] = await purgeNoticesOf(user, deleted.id);
      assert.deepEqual([n.read_at, n.context.superseded_by], [undefined, undefined]);
    }
  });
});
