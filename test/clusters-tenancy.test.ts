// Clusters across tenants and roles, and clusters in a workspace being deleted: every cluster route
// keeps to the caller's workspace, admin-only writes, new work refused while the workspace goes,
// and the deletion releases every simulated cluster.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('clusters: tenancy, roles, workspace deletion', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let wsA: string;
  let wsB: string;
  let bobCluster: { id: string; etag: string };

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    carol = await t.user('carol');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    await t.addMember(alice, wsA, carol, 'member');
    const res = await t.request('POST', '/v1/clusters', { token: bob.token, headers: { 'svc-context': wsB }, body: { name: 'bobs' } });
    assert.equal(res.status, 202, res.text);
    await t.request('POST', `/v1/operations/${res.body.id}:wait?timeout=20`, { token: bob.token, headers: { 'svc-context': wsB } });
    const got = await t.request('GET', `/v1/clusters/${res.body.owner_id}`, { token: bob.token, headers: { 'svc-context': wsB } });
    bobCluster = got.body;
  });
  after(() => t.close());

  /** Every cluster route against one cluster id. */
  function routes(id: string) {
    return [
      ['GET', `/v1/clusters/${id}`, undefined, {}],
      ['PATCH', `/v1/clusters/${id}`, { name: 'stolen' }, { 'if-match': '*' }],
      ['DELETE', `/v1/clusters/${id}`, undefined, { 'if-match': '*' }],
      ['GET', `/v1/clusters/${id}/capabilities`, undefined, {}],
      ['POST', `/v1/clusters/${id}/capabilities:refresh`, undefined, {}],
    ] as const;
  }

  test("another workspace's cluster is 404 on every route, with a session or an API token", async () => {
    const tokenA = (await t.apiToken(alice, wsA, { role: 'admin' })).token;
    for (const [method, url, body, headers] of routes(bobCluster.id)) {
      const bySession = await t.request(method, url, { token: alice.token, headers: { 'svc-context': wsA, ...headers }, ...(body ? { body } : {}) });
      assert.equal(bySession.status, 404, `${method} ${url}: ${bySession.text}`);
      const byToken = await t.request(method, url, { token: tokenA, headers, ...(body ? { body } : {}) });
      assert.equal(byToken.status, 404, `${method} ${url} (token)`);
    }
    const list = await t.request('GET', '/v1/clusters', { token: alice.token, headers: { 'svc-context': wsA } });
    assert.ok(!list.body.data.some((c: { id: string }) => c.id === bobCluster.id));
    const mine = await t.request('GET', `/v1/clusters/${bobCluster.id}`, { token: bob.token, headers: { 'svc-context': wsB } });
    assert.equal(mine.body.name, 'bobs', 'nothing changed');
    assert.equal(mine.body.state, 'active');
  });

  test('svc-context rules: missing 403, naming a workspace of which the caller is not a member 403, no token 401', async () => {
    const all = [...routes(bobCluster.id), ['GET', '/v1/clusters', undefined, {}], ['POST', '/v1/clusters', { name: 'x' }, {}]] as const;
    for (const [method, url, body, headers] of all) {
      const withBody = body ? { body } : {};
      const none = await t.request(method, url, { token: alice.token, headers, ...withBody });
      assert.equal(none.status, 403, `${method} ${url} without svc-context`);
      const other = await t.request(method, url, { token: alice.token, headers: { 'svc-context': wsB, ...headers }, ...withBody });
      assert.equal(other.status, 403, `${method} ${url} with another workspace`);
      const anonymous = await t.request(method, url, { headers, ...withBody });
      assert.equal(anonymous.status, 401, `${method} ${url} without a token`);
    }
    const tokenA = (await t.apiToken(alice, wsA)).token;
    const mismatch = await t.request('GET', '/v1/clusters', { token: tokenA, headers: { 'svc-context': wsB } });
    assert.equal(mismatch.status, 403);
  });

  test('roles: members read and refresh; creating, renaming and deleting need admin', async () => {
    const ctx = { 'svc-context': wsA };
    const created = await t.request('POST', '/v1/clusters', { token: alice.token, headers: ctx, body: { name: 'shared' } });
    assert.equal(created.status, 202);
    await t.request('POST', `/v1/operations/${created.body.id}:wait?timeout=20`, { token: alice.token, headers: ctx });
    const id = created.body.owner_id;
    const memberToken = (await t.apiToken(alice, wsA)).token;
    for (const token of [carol.token, memberToken]) {
      const headers = token === carol.token ? ctx : {};
      const create = await t.request('POST', '/v1/clusters', { token, headers, body: { name: 'nope' } });
      assert.equal(create.status, 403);
      assert.equal(create.body.error.reason, 'ROLE_TOO_LOW');
      assert.equal((await t.request('PATCH', `/v1/clusters/${id}`, { token, headers: { ...headers, 'if-match': '*' }, body: { name: 'nope' } })).status, 403);
      assert.equal((await t.request('DELETE', `/v1/clusters/${id}`, { token, headers: { ...headers, 'if-match': '*' } })).status, 403);
      assert.equal((await t.request('GET', `/v1/clusters/${id}`, { token, headers })).status, 200);
      assert.equal((await t.request('GET', `/v1/clusters/${id}/capabilities`, { token, headers })).status, 200);
      const refresh = await t.request('POST', `/v1/clusters/${id}/capabilities:refresh`, { token, headers });
      assert.equal(refresh.status, 202, refresh.text);
      await t.request('POST', `/v1/operations/${refresh.body.id}:wait?timeout=20`, { token, headers });
    }
    const adminToken = (await t.apiToken(alice, wsA, { role: 'admin' })).token;
    const byToken = await t.request('POST', '/v1/clusters', { token: adminToken, body: { name: 'by-token' } });
    assert.equal(byToken.status, 202, byToken.text);
    await t.request('POST', `/v1/operations/${byToken.body.id}:wait?timeout=20`, { token: adminToken });
  });

  test('workspace deletion: new clusters refused meanwhile, every cluster released, even one that will not release', async () => {
    const ws = (await t.workspace(alice, 'Doomed')).id;
    const ctx = { 'svc-context': ws };
    const ids: string[] = [];
    for (const [name, local] of [['plain', undefined], ['sticky', { faults: [{ action: 'destroy', fail_times: 100 }] }]] as const) {
      const res = await t.request('POST', '/v1/clusters', { token: alice.token, headers: ctx, body: { name, ...(local ? { local } : {}) } });
      assert.equal(res.status, 202);
      assert.equal((await t.request('POST', `/v1/operations/${res.body.id}:wait?timeout=20`, { token: alice.token, headers: ctx })).body.state, 'SUCCEEDED');
      ids.push(res.body.owner_id);
    }
    // A slow create keeps the deletion in its first step long enough to be seen.
    const slow = await t.request('POST', '/v1/clusters', { token: alice.token, headers: ctx, body: { name: 'slow', local: { faults: [{ action: 'provision', latency_ms: 400 }] } } });
    ids.push(slow.body.owner_id);

    const wsRow = await t.request('GET', `/v1/workspaces/${ws}`, { token: alice.token });
    const del = await t.request('DELETE', `/v1/workspaces/${ws}`, { token: alice.token, headers: { 'if-match': wsRow.body.etag } });
    assert.equal(del.status, 202, del.text);

    const refused = await t.request('POST', '/v1/clusters', { token: alice.token, headers: ctx, body: { name: 'late' } });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'FAILED_PRECONDITION');
    assert.equal(refused.body.error.reason, 'WORKSPACE_DELETING');
    const refresh = await t.request('POST', `/v1/clusters/${ids[0]}/capabilities:refresh`, { token: alice.token, headers: ctx });
    assert.equal(refresh.status, 422);
    assert.equal(refresh.body.error.reason, 'WORKSPACE_DELETING');

    const done = await t.request('POST', `/v1/operations/${del.body.id}:wait?timeout=30`, { token: alice.token, headers: ctx });
    assert.equal(done.body.state, 'SUCCEEDED', done.text);
    const slowOp = await t.services.db.selectFrom('operations').select('state').where('id', '=', slow.body.id).executeTakeFirstOrThrow();
    assert.equal(slowOp.state, 'CANCELLED');
    const clusters = await t.services.db.selectFrom('clusters').select('id').where('id', 'in', ids).execute();
    assert.equal(clusters.length, 0);
    const simulated = await t.services.db.selectFrom('local_clusters').select('cluster_id').where('cluster_id', 'in', ids).execute();
    assert.deepEqual(simulated.map((r) => r.cluster_id), [ids[1]], 'released all but the one whose release was given up');
    assert.equal((await t.request('GET', `/v1/clusters/${ids[0]}`, { token: alice.token, headers: ctx })).status, 403);
  });
});
