// Secrets in the workspace account (API.md 8.1 and 8.2): the secrets/secrets quota counted where a
// secret is created (soft-deleted secrets count until purged; a force delete frees the slot), and
// the notification to the workspace's owners and admins when a secret is scheduled for purge.
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
});
