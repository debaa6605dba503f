// DELETE /v1/workspaces/{id} (spec endpoint 2): if-match, roles, one operation for concurrent and
// repeated deletions, running operations cancelled first, everything the workspace owned removed,
// its tokens dead, and the requester still able to follow the operation afterwards.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { assertOperationInvariants } from './operation-invariants.js';

describe('workspace deletion', () => {
  /** set when the test has looked at the deletion while it runs: the slow step may then end */
  let slowReleased = false;
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    carol = await t.user('carol');
    // A step that runs until its operation is asked to cancel and the test lets it go (at most
    // 60 s): the deletion must wait for it to drain, and whatever the machine's speed, the
    // deletion is still running while the test looks at it.
    t.services.workflows.register<Record<string, never>>({
      type: 'test.slow',
      cancellable: true,
      steps: [{
        name: 'slow',
        run: async (ctx) => {
          const asked = async () => (await t.services.db.selectFrom('operations').select('cancel_requested').where('id', '=', ctx.operationId).executeTakeFirstOrThrow()).cancel_requested === 1;
          for (let i = 0; i < 3000 && !(slowReleased && (await asked())); i++) await sleep(20);
        },
      }, { name: 'never_after_cancel' }],
    });
  });
  after(() => t.close());

  const as = (user: TestUser, ws: string) => ({ token: user.token, headers: { 'svc-context': ws } });

  async function rowsOf(workspaceId: string): Promise<Record<string, number>> {
    const db = t.services.db;
    const count = async (table: 'clusters' | 'api_tokens' | 'workspace_members' | 'oauth_clients' | 'workspaces') =>
      Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where(table === 'workspaces' ? 'id' : 'workspace_id', '=', workspaceId).executeTakeFirstOrThrow()).n);
    return {
      workspaces: await count('workspaces'),
      members: await count('workspace_members'),
      api_tokens: await count('api_tokens'),
      oauth_clients: await count('oauth_clients'),
      clusters: await count('clusters'),
    };
  }

  test('needs if-match, the current etag, and the admin role', async () => {
    const ws = await t.workspace(alice, 'Needs');
    await t.addMember(alice, ws.id, bob, 'member');
    const missing = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'INVALID_ARGUMENT');
    assert.equal(missing.body.error.field_violations[0].field, 'header.if-match');
    const stale = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token, headers: { 'if-match': '"999"' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.equal(stale.body.error.metadata.etag, ws.etag);
    const member = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: bob.token, headers: { 'if-match': ws.etag } });
    assert.equal(member.status, 403);
    const stranger = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: carol.token, headers: { 'if-match': ws.etag } });
    assert.equal(stranger.status, 403);
    assert.equal((await rowsOf(ws.id)).workspaces, 1, 'nothing changed');
    const get = await t.request('GET', `/v1/workspaces/${ws.id}`, { token: alice.token });
    assert.equal(get.body.state, 'active');
    assert.equal(get.body.etag, ws.etag);
  });

  test('deletes everything the workspace owned; tokens stop working; the requester follows the operation', async () => {
    const ws = await t.workspace(alice, 'Doomed');
    await t.addMember(alice, ws.id, bob, 'admin');
    const apiToken = await t.apiToken(alice, ws.id);
    const client = await t.request('POST', '/v1/oauth_clients', { ...as(alice, ws.id), body: { name: 'ci', role: 'member' } });
    assert.equal(client.status, 201, client.text);
    const cluster = await t.request('POST', '/v1/clusters', { ...as(alice, ws.id), body: { name: 'main' } });
    assert.equal(cluster.status, 202, cluster.text);
    const clusterId = cluster.body.owner_id;
    await t.request('POST', `/v1/operations/${cluster.body.id}:wait`, as(alice, ws.id));
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: apiToken.token })).status, 200);

    // A slow running operation: the deletion cancels it and waits for it to drain.
    const slow = await t.services.db.transaction().execute((tx) =>
      t.services.operations.start(tx, {
        type: 'test.slow', workspaceId: ws.id, ownerType: 'workspace', ownerId: ws.id, clusterId: null, input: {},
        actor: { actorId: bob.id, userId: bob.id },
      }));

    const etag = (await t.request('GET', `/v1/workspaces/${ws.id}`, { token: alice.token })).body.etag;
    const del = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token, headers: { 'if-match': `"${etag}"` } });
    assert.equal(del.status, 202, del.text);
    assertOperationInvariants(del.body, { publicUrl: 'http://svc.test' });
    assert.equal(del.body.metadata.type, 'workspace.delete');
    assert.equal(del.body.owner_type, 'workspace');
    assert.equal(del.body.owner_id, ws.id);
    assert.equal(del.body.state, 'RUNNING');
    assert.equal(del.headers.location, `/v1/operations/${del.body.id}`);

    // While it runs: the workspace says deleting, a second DELETE returns the same operation
    // (even with the old etag), and new work is refused.
    const during = await t.request('GET', `/v1/workspaces/${ws.id}`, { token: alice.token });
    assert.equal(during.body.state, 'deleting');
    const second = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: bob.token, headers: { 'if-match': etag } });
    assert.equal(second.status, 202);
    assert.equal(second.body.id, del.body.id);
    const newCluster = await t.request('POST', '/v1/clusters', { ...as(alice, ws.id), body: { name: 'late' } });
    assert.equal(newCluster.status, 422);
    assert.equal(newCluster.body.error.reason, 'WORKSPACE_DELETING');
    // Credentials too: a token or client made now would outlive the revocation step.
    for (const [url, body] of [['/v1/api_tokens', { name: 'late' }], ['/v1/oauth_clients', { name: 'late' }]] as const) {
      const late = await t.request('POST', url, { ...as(alice, ws.id), body });
      assert.equal(late.status, 422, `${url}: ${late.text}`);
      assert.equal(late.body.error.reason, 'WORKSPACE_DELETING');
    }
    const cancel = await t.request('POST', `/v1/operations/${del.body.id}:cancel`, as(alice, ws.id));
    assert.equal(cancel.status, 422);
    assert.equal(cancel.body.error.reason, 'NOT_CANCELLABLE');
    slowReleased = true;

    const done = await t.request('POST', `/v1/operations/${del.body.id}:wait?timeout=20`, as(alice, ws.id));
    assert.equal(done.status, 200, done.text);
    assertOperationInvariants(done.body, { publicUrl: 'http://svc.test' });
    assert.equal(done.body.state, 'SUCCEEDED', JSON.stringify(done.body));
    assert.deepEqual(done.body.steps.map((s: any) => [s.name, s.status]), [
      ['cancel_operations', 'completed'], ['delete_installs', 'completed'], ['delete_machines', 'completed'], ['delete_clusters', 'completed'], ['revoke_credentials', 'completed'],
      ['remove_workspace', 'completed'],
    ]);
    assert.equal(done.body.last_error, null, 'the wait for the slow operation was a retry, cleared by its success');

    // The slow operation was cancelled after its running step drained; bob requested it, so he
    // can still read it (and only it).
    const slowOp = await t.request('GET', `/v1/operations/${slow.id}`, as(bob, ws.id));
    assert.equal(slowOp.status, 200);
    assert.equal(slowOp.body.state, 'CANCELLED');
    assert.deepEqual(slowOp.body.steps.map((s: any) => s.status), ['completed', 'pending']);

    assert.deepEqual(await rowsOf(ws.id), { workspaces: 0, members: 0, api_tokens: 0, oauth_clients: 0, clusters: 0 });
    const simulated = await t.services.db.selectFrom('local_clusters').select('cluster_id').where('cluster_id', '=', clusterId).execute();
    assert.deepEqual(simulated, [], 'the cluster was released through its driver');

    const dead = await t.request('GET', '/v1/api_tokens', { token: apiToken.token });
    assert.equal(dead.status, 401);
    const ws403 = await t.request('GET', `/v1/workspaces/${ws.id}`, { token: alice.token });
    assert.equal(ws403.status, 403);
    const list = await t.request('GET', '/v1/workspaces', { token: alice.token });
    assert.ok(list.body.data.every((w: any) => w.id !== ws.id));

    // The requester still reads, lists and waits for the operation; others cannot.
    const read = await t.request('GET', `/v1/operations/${del.body.id}`, as(alice, ws.id));
    assert.equal(read.status, 200);
    assert.equal(read.body.state, 'SUCCEEDED');
    const waited = await t.request('POST', `/v1/operations/${del.body.id}:wait`, as(alice, ws.id));
    assert.equal(waited.status, 200);
    const listed = await t.request('GET', '/v1/operations', as(alice, ws.id));
    assert.deepEqual(listed.body.data.map((o: any) => o.id), [del.body.id, cluster.body.id], 'only what alice requested (not bob\'s slow one)');
    const noCancel = await t.request('POST', `/v1/operations/${del.body.id}:cancel`, as(alice, ws.id));
    assert.equal(noCancel.status, 403);
    assert.equal((await t.request('GET', `/v1/operations/${del.body.id}`, as(bob, ws.id))).status, 404, 'bob sees only what he requested');
    assert.equal((await t.request('GET', `/v1/operations/${del.body.id}`, as(carol, ws.id))).status, 403, 'carol requested nothing there');
    const again = await t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token, headers: { 'if-match': '*' } });
    assert.equal(again.status, 404);
  });

  test('concurrent deletions start one operation; an idempotent retry replays it after the workspace is gone', async () => {
    const ws = await t.workspace(alice, 'Racy');
    const headers = { 'if-match': ws.etag };
    const results = await Promise.all(
      Array.from({ length: 5 }, () => t.request('DELETE', `/v1/workspaces/${ws.id}`, { token: alice.token, headers })),
    );
    const ids = new Set(results.filter((r) => r.status === 202).map((r) => r.body.id));
    assert.equal(ids.size, 1, JSON.stringify(results.map((r) => [r.status, r.body?.id ?? r.body?.error?.reason])));

    const ws2 = await t.workspace(alice, 'Keyed');
    const keyed = { token: alice.token, headers: { 'if-match': ws2.etag, 'idempotency-key': 'del-1' } };
    const first = await t.request('DELETE', `/v1/workspaces/${ws2.id}`, keyed);
    assert.equal(first.status, 202);
    await t.request('POST', `/v1/operations/${first.body.id}:wait`, as(alice, ws2.id));
    const replay = await t.request('DELETE', `/v1/workspaces/${ws2.id}`, keyed);
    assert.equal(replay.status, 202);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, first.body.id);
    assert.equal(replay.body.state, 'SUCCEEDED');
  });
});
