// The audit log (API.md 8.1): an event for every listed action, with the actor (user, API token,
// OAuth client) and the request id, never a value; refused requests leave none; members cannot
// read it; filters and cursors; the record of a workspace's deletion outlives the workspace.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { assertError, SecretsApi } from './secrets-fixtures.js';

const VALUE = 'audited-value-0123456789';

describe('audit events', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  let api: SecretsApi;
  let n = 0;

  /** A request id of our own, so each event can be matched to the request that made it. */
  const rid = () => `audit-${++n}`;

  async function events(query = ''): Promise<any[]> {
    const res = await api.call('GET', `/v1/audit_events?limit=100${query}`);
    assert.equal(res.status, 200, res.text);
    return res.body.data;
  }

  async function eventOf(requestId: string, action: string): Promise<any> {
    const found = (await events(`&action=${action}`)).filter((e) => e.request_id === requestId);
    assert.equal(found.length, 1, `one ${action} event for request ${requestId}: ${JSON.stringify(found)}`);
    return found[0];
  }

  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Audited')).id;
    api = new SecretsApi(t, { token: owner.token, ws });
  });
  after(() => t.close());

  test('secret actions by a user: actor, request id, resource and metadata, never the value', async () => {
    const r1 = rid();
    const created = await api.call('POST', '/v1/secrets', { headers: { 'x-request-id': r1 }, body: { name: 'audited', value: VALUE } });
    assert.equal(created.status, 201);
    const s = created.body;
    const create = await eventOf(r1, 'secret.create');
    assert.deepEqual(
      { actor: create.actor, resource_type: create.resource_type, resource_id: create.resource_id, ws: create.workspace_id, metadata: create.metadata },
      { actor: { type: 'user', id: owner.id, name: null, email: owner.email }, resource_type: 'secret', resource_id: s.id, ws, metadata: { name: 'audited', kind: 'generic' } },
    );
    assert.match(create.id, /^aud_[0-9a-z]{26}$/);
    const v1 = await eventOf(r1, 'secret.version.create');
    assert.equal(v1.metadata.version_number, '1');

    const steps: [string, string, () => Promise<string>][] = [];
    const v2 = await api.addVersion(s.id, `${VALUE}-2`);
    const call = (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) => async () => {
      const id = rid();
      const res = await api.call(method, url, { headers: { 'x-request-id': id, ...headers }, body });
      assert.ok(res.status < 300, res.text);
      return id;
    };
    steps.push(['secret.version.access', v2.id, call('POST', `/v1/secrets/${s.id}/versions/latest:access`)]);
    steps.push(['secret.version.disable', v2.id, call('POST', `/v1/secrets/${s.id}/versions/${v2.id}:disable`, { 'if-match': '*' })]);
    steps.push(['secret.version.enable', v2.id, call('POST', `/v1/secrets/${s.id}/versions/${v2.id}:enable`, { 'if-match': '*' })]);
    steps.push(['secret.version.destroy', v2.id, call('POST', `/v1/secrets/${s.id}/versions/${v2.id}:destroy`, { 'if-match': '*' })]);
    steps.push(['secret.update', s.id, call('PATCH', `/v1/secrets/${s.id}`, { 'if-match': '*' }, { labels: { a: 'b' } })]);
    steps.push(['secret.delete', s.id, call('DELETE', `/v1/secrets/${s.id}`, { 'if-match': '*' })]);
    steps.push(['secret.undelete', s.id, call('POST', `/v1/secrets/${s.id}:undelete`, { 'if-match': '*' })]);
    for (const [action, resource, step] of steps) {
      const requestId = await step();
      const e = await eventOf(requestId, action);
      assert.equal(e.resource_id, resource, action);
      assert.deepEqual(e.actor, { type: 'user', id: owner.id, name: null, email: owner.email }, action);
    }
    const access = (await events('&action=secret.version.access'))[0];
    assert.deepEqual(access.metadata, { secret_id: s.id, version_number: '2', requested: 'latest' });
    assert.equal((await eventOf((await events('&action=secret.update'))[0].request_id, 'secret.update')).metadata.fields, 'labels');

    const all = JSON.stringify(await events());
    assert.ok(!all.includes(VALUE), 'no event holds a value');
  });

  test('refused requests leave no event', async () => {
    const s = await api.create({ name: 'refusals', value: VALUE });
    const before = (await events()).length;
    assert.equal((await api.call('PATCH', `/v1/secrets/${s.id}`, { headers: { 'if-match': '"77"' }, body: { name: 'x' } })).status, 409);
    assert.equal((await api.call('POST', '/v1/secrets', { body: { name: 'refusals', value: 'x' } })).status, 409);
    assert.equal((await api.access(s.id, '5')).status, 404);
    assert.equal((await api.as({ token: member.token, ws }).access(s.id, 'latest')).status, 403);
    assert.equal((await events()).length, before);
  });

  test('API token and OAuth client actors; token, client and member changes are recorded', async () => {
    await t.addMember(owner, ws, admin, 'admin');
    const added = await eventOf((await events('&action=workspace.member.add'))[0].request_id, 'workspace.member.add');
    assert.deepEqual(added.metadata, { user_id: admin.id, role: 'admin' });
    assert.match(added.resource_id, /^wsm_/);

    const r = rid();
    const tokenRes = await t.request('POST', '/v1/api_tokens', { token: admin.token, headers: { 'svc-context': ws, 'x-request-id': r }, body: { name: 'deployer', role: 'admin' } });
    assert.equal(tokenRes.status, 201);
    const tokenCreated = await eventOf(r, 'api_token.create');
    assert.deepEqual([tokenCreated.actor, tokenCreated.resource_id, tokenCreated.metadata], [{ type: 'user', id: admin.id, name: null, email: admin.email }, tokenRes.body.id, { name: 'deployer', role: 'admin' }]);
    assert.ok(!JSON.stringify(tokenCreated).includes(tokenRes.body.token));

    const byToken = api.as({ token: tokenRes.body.token });
    const s = await byToken.create({ name: 'by-token', value: VALUE });
    const tokenEvent = (await events(`&resource_id=${s.id}`))[0];
    assert.deepEqual(tokenEvent.actor, { type: 'api_token', id: tokenRes.body.id, name: 'deployer', email: null });
    assert.equal((await events(`&resource_id=${s.id}&action=secret.create`))[0].resource_name, 'by-token', 'the secret by its name');

    const clientRes = await api.call('POST', '/v1/oauth_clients', { body: { name: 'integration', role: 'admin' } });
    assert.equal(clientRes.status, 201);
    assert.equal((await events(`&resource_id=${clientRes.body.id}&action=oauth_client.create`)).length, 1);
    const jwt = await t.request('POST', '/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientRes.body.id, client_secret: clientRes.body.client_secret }).toString(),
    });
    assert.equal(jwt.status, 200, jwt.text);
    assert.equal(await api.as({ token: jwt.body.access_token }).value(s.id, 'latest'), VALUE);
    const read = (await events(`&action=secret.version.access`))[0];
    assert.deepEqual(read.actor, { type: 'oauth_client', id: clientRes.body.id, name: 'integration', email: null });

    const deleteClient = await api.call('DELETE', `/v1/oauth_clients/${clientRes.body.id}`);
    assert.equal(deleteClient.status, 204);
    assert.equal((await events(`&resource_id=${clientRes.body.id}&action=oauth_client.delete`)).length, 1);
    const revoke = rid();
    assert.equal((await t.request('DELETE', `/v1/api_tokens/${tokenRes.body.id}`, { token: owner.token, headers: { 'svc-context': ws, 'x-request-id': revoke } })).status, 204);
    assert.deepEqual((await eventOf(revoke, 'api_token.revoke')).metadata, { name: 'deployer', role: 'admin' });

    await t.addMember(owner, ws, member, 'member');
    const promote = rid();
    assert.equal((await t.request('PATCH', `/v1/workspaces/${ws}/members/${member.id}`, { token: admin.token, headers: { 'x-request-id': promote }, body: { role: 'admin' } })).status, 200);
    assert.deepEqual((await eventOf(promote, 'workspace.member.update')).metadata, { user_id: member.id, from: 'member', role: 'admin' });
    const removal = rid();
    assert.equal((await t.request('DELETE', `/v1/workspaces/${ws}/members/${member.id}`, { token: owner.token, headers: { 'x-request-id': removal } })).status, 204);
    const removed = await eventOf(removal, 'workspace.member.remove');
    assert.deepEqual([removed.actor, removed.metadata], [{ type: 'user', id: owner.id, name: null, email: owner.email }, { user_id: member.id, role: 'admin' }]);
  });

  test('members and member tokens get 403; filters and cursors work and bind', async () => {
    await t.addMember(owner, ws, member, 'member');
    assertError(await t.request('GET', '/v1/audit_events', { token: member.token, headers: { 'svc-context': ws } }), 403, 'PERMISSION_DENIED', 'ROLE_TOO_LOW');
    const viewer = await t.apiToken(owner, ws, { role: 'member' });
    assertError(await t.request('GET', '/v1/audit_events', { token: viewer.token }), 403, 'PERMISSION_DENIED');

    const page1 = await api.call('GET', '/v1/audit_events?limit=2&action=secret.version.create');
    assert.equal(page1.body.data.length, 2);
    assert.equal(page1.body.has_more, true);
    const page2 = await api.call('GET', `/v1/audit_events?limit=2&action=secret.version.create&cursor=${encodeURIComponent(page1.body.next_cursor)}`);
    assert.equal(page2.status, 200);
    assert.ok(page2.body.data.every((e: { action: string; id: string }) => e.action === 'secret.version.create' && e.id < page1.body.data[1].id));
    assertError(await api.call('GET', `/v1/audit_events?limit=2&cursor=${encodeURIComponent(page1.body.next_cursor)}`), 400, 'INVALID_ARGUMENT', 'INVALID_CURSOR');
    assertError(await api.call('GET', '/v1/audit_events?action=secret.read'), 400, 'INVALID_ARGUMENT');
    assert.deepEqual(await events('&resource_id=sec_01jf8x3q6m2c4y7n0k5t9r1b3d'), []);
  });

  test('workspace deletion is recorded with its operation, and the record outlives the workspace', async () => {
    const doomed = await t.workspace(owner, 'Doomed');
    const r = rid();
    const res = await t.request('DELETE', `/v1/workspaces/${doomed.id}`, { token: owner.token, headers: { 'if-match': doomed.etag, 'x-request-id': r } });
    assert.equal(res.status, 202, res.text);
    const done = await t.request('POST', `/v1/operations/${res.body.id}:wait?timeout=30`, { token: owner.token, headers: { 'svc-context': doomed.id } });
    assert.equal(done.body.state, 'SUCCEEDED', done.text);
    const rows = await t.services.db.selectFrom('audit_events').selectAll().where('workspace_id', '=', doomed.id).where('action', '=', 'workspace.delete').execute();
    assert.equal(rows.length, 1);
    assert.deepEqual([rows[0]!.actor_type, rows[0]!.actor_id, rows[0]!.request_id, rows[0]!.resource_id], ['user', owner.id, r, doomed.id]);
    assert.deepEqual(JSON.parse(rows[0]!.metadata), { operation_id: res.body.id });
  });
});
