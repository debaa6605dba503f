// GET /v1/lookup/{id}: the workspace and html_url of an id the caller may read, for each type; the
// same 404 for an id of a workspace the caller may not read (any more), of another workspace's
// token, and for unknown or malformed ids (no existence oracle); the OpenAPI document and the CLI.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';

describe('GET /v1/lookup/{id}', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let alice: TestUser;
  let bob: TestUser;
  let a: Caller;
  let b: Caller;
  /** one id of each type in alice's workspace, with the html_url the resource itself carries */
  const ids: Record<string, { id: string; html_url: string | null }> = {};

  const lookup = (id: string, opts: { token?: string; headers?: Record<string, string> }) => t.request('GET', `/v1/lookup/${id}`, opts);

  function assertNotFound(res: { status: number; body: any }, what: string) {
    assert.equal(res.status, 404, `${what}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.code, 'NOT_FOUND', what);
    assert.equal(res.body.error.message, 'resource not found', `${what}: the same message for every case`);
  }

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    alice = await t.user('alice');
    bob = await t.user('bob');
    a = { user: alice, ws: (await t.workspace(alice, 'A')).id };
    b = { user: bob, ws: (await t.workspace(bob, 'B')).id };
    const clusterId = await f.cluster(a);
    const { pkgId } = await f.packageWithVersion(a);
    const op = await f.healthyInstall(a, pkgId, clusterId);
    const get = async (path: string) => (await t.request('GET', path, f.opts(a))).body;
    ids.operation = { id: op.id, html_url: op.html_url };
    ids.cluster = { id: clusterId, html_url: (await get(`/v1/clusters/${clusterId}`)).html_url };
    ids.install = { id: op.owner_id, html_url: (await get(`/v1/installs/${op.owner_id}`)).html_url };
    ids.package = { id: pkgId, html_url: null };
    const secret = await t.request('POST', '/v1/secrets', f.opts(a, { body: { name: 'db', value: 'v' } }));
    ids.secret = { id: secret.body.id, html_url: secret.body.html_url };
    const snippet = await t.request('POST', '/v1/snippets', f.opts(a, { body: { name: 'answer', code: 'return 42', display_type: 'stat' } }));
    ids.snippet = { id: snippet.body.id, html_url: snippet.body.html_url };
  });
  after(() => t.close());

  test('each type: its workspace and the html_url the resource carries, for a member of any role, without svc-context', async () => {
    const carol = await t.user('carol');
    await t.addMember(alice, a.ws, carol, 'member');
    for (const [type, { id, html_url }] of Object.entries(ids)) {
      for (const user of [alice, carol]) {
        const res = await lookup(id, { token: user.token });
        assert.equal(res.status, 200, `${type}: ${res.text}`);
        assert.deepEqual(res.body, { id, type, workspace_id: a.ws, html_url }, type);
      }
    }
    assert.match(ids.cluster!.html_url!, /^http:\/\/svc\.test\/clusters\/clu_/);
  });

  test('a workspace credential finds the ids of its own workspace only', async () => {
    const own = await t.apiToken(alice, a.ws);
    const other = await t.apiToken(bob, b.ws);
    for (const [type, { id }] of Object.entries(ids)) {
      const res = await lookup(id, { token: own.token });
      assert.equal(res.status, 200, `${type}: ${res.text}`);
      assert.equal(res.body.workspace_id, a.ws);
      assertNotFound(await lookup(id, { token: other.token }), `${type} with a token of another workspace`);
    }
  });

  test('a user who is not a member gets the 404 of an unknown id, whatever svc-context says', async () => {
    for (const [type, { id }] of Object.entries(ids)) {
      assertNotFound(await lookup(id, { token: bob.token }), type);
      assertNotFound(await lookup(id, { token: bob.token, headers: { 'svc-context': a.ws } }), `${type} naming the workspace`);
    }
  });

  test('membership is decided at the call: removed, the same ids are 404', async () => {
    const dave = await t.user('dave');
    await t.addMember(alice, a.ws, dave, 'admin');
    assert.equal((await lookup(ids.cluster!.id, { token: dave.token })).status, 200);
    const removed = await t.request('DELETE', `/v1/workspaces/${a.ws}/members/${dave.id}`, { token: alice.token });
    assert.equal(removed.status, 204, removed.text);
    for (const [type, { id }] of Object.entries(ids)) assertNotFound(await lookup(id, { token: dave.token }), type);
  });

  test('unknown, malformed and other kinds of ids are the same 404 (the id is not validated into a 400)', async () => {
    for (const id of ['clu_00000000000000000000000000', 'op_00000000000000000000000000', 'pkg_zzzzzzzzzzzzzzzzzzzzzzzzzz',
      'clu_x', 'CLU_01KAXQ3M7Y0C9V8T6R5P4N3M2K', 'nothing', '_', 'clu_', `inst_${'a'.repeat(60)}`, `clu_${'a'.repeat(96)}`, a.ws, alice.id,
      ids.cluster!.id.replace('clu_', 'inst_'), encodeURIComponent('clu_"><script>'), 'sec_%2F..%2F']) {
      assertNotFound(await lookup(id, { token: alice.token }), id);
    }
    // Control characters are refused before any route runs, as everywhere (platform/validation.ts).
    assert.equal((await lookup('clu_%00', { token: alice.token })).body.error.reason, 'INVALID_CHARACTERS');
    // Longer than any route parameter: the router's 404.
    assert.equal((await lookup(`clu_${'a'.repeat(120)}`, { token: alice.token })).status, 404);
  });

  test('without a credential: 401', async () => {
    assert.equal((await lookup(ids.cluster!.id, {})).status, 401);
  });

  test('an operation of a deleted workspace: found by the user who requested it there, by nobody else', async () => {
    const ws = await t.workspace(alice, 'Doomed');
    await t.addMember(alice, ws.id, bob, 'admin');
    const del = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token, headers: { 'if-match': ws.etag } });
    assert.equal(del.status, 202, del.text);
    const done = await t.request('POST', `/v1/operations/${del.body.id}:wait?timeout=30`, { token: alice.token, headers: { 'svc-context': ws.id } });
    assert.equal(done.body.state, 'SUCCEEDED', done.text);
    const found = await lookup(del.body.id, { token: alice.token });
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(found.body, { id: del.body.id, type: 'operation', workspace_id: ws.id, html_url: del.body.html_url });
    // What GET /v1/operations/{id} decides the same way.
    assert.equal((await t.request('GET', `/v1/operations/${del.body.id}`, { token: alice.token, headers: { 'svc-context': ws.id } })).status, 200);
    assertNotFound(await lookup(del.body.id, { token: bob.token }), 'a former member who did not request it');
  });

  test('documented in OpenAPI with an example, under its own tag', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const op = doc.paths['/v1/lookup/{id}'].get;
    assert.equal(op.operationId, 'getLookup');
    assert.deepEqual(op.tags, ['lookup']);
    assert.equal(op['x-svc-auth'], 'any');
    assert.ok(op.responses['404'] && op.responses['401']);
    const schema = doc.components.schemas.IdLookup;
    assert.equal(schema.examples[0].type, 'cluster');
    assert.ok(doc.tags.some((tag: { name: string }) => tag.name === 'lookup'));
  });
});
