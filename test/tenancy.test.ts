// Spec section 5 rules 7-8 and API.md section 4: every svc-context rule, for every token kind
// the kernel issues (session token = broad, API token = workspace).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('svc-context and workspace selection', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wsA: string;
  let wsB: string;
  let tokenA: string;

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    tokenA = (await t.apiToken(alice, wsA)).token;
  });
  after(() => t.close());

  test('broad credential on a workspace-scoped route without svc-context is 403', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: alice.token });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'PERMISSION_DENIED');
    assert.equal(res.body.error.reason, 'SVC_CONTEXT_REQUIRED');
  });

  test('broad credential with its own workspace in svc-context is accepted', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: alice.token, headers: { 'svc-context': wsA } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
  });

  test('broad credential naming a workspace it is not a member of is 403, existing or not', async () => {
    for (const ws of [wsB, 'ws_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nonsense']) {
      const res = await t.request('GET', '/v1/api_tokens', { token: alice.token, headers: { 'svc-context': ws } });
      assert.equal(res.status, 403, ws);
    }
  });

  test('API token acts on its own workspace without svc-context', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: tokenA });
    assert.equal(res.status, 200);
    assert.ok(res.body.data.every((x: { workspace_id: string }) => x.workspace_id === wsA));
  });

  test('API token with a matching svc-context is accepted (redundant)', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: tokenA, headers: { 'svc-context': wsA } });
    assert.equal(res.status, 200);
  });

  test('API token with another workspace in svc-context is 403', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: tokenA, headers: { 'svc-context': wsB } });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.reason, 'SVC_CONTEXT_MISMATCH');
  });

  test('path-scoped routes: svc-context differing from the path is 403', async () => {
    const res = await t.request('GET', `/v1/workspaces/${wsA}/members`, { token: alice.token, headers: { 'svc-context': wsB } });
    assert.equal(res.status, 403);
    const ok = await t.request('GET', `/v1/workspaces/${wsA}/members`, { token: alice.token, headers: { 'svc-context': wsA } });
    assert.equal(ok.status, 200);
  });

  test('API token reads its own workspace by path and not another', async () => {
    assert.equal((await t.request('GET', `/v1/workspaces/${wsA}/members`, { token: tokenA })).status, 200);
    assert.equal((await t.request('GET', `/v1/workspaces/${wsB}/members`, { token: tokenA })).status, 403);
  });

  test('an svc-context header outside 1-53 characters is 400', async () => {
    const res = await t.request('GET', '/v1/api_tokens', { token: alice.token, headers: { 'svc-context': 'ws_' + 'x'.repeat(60) } });
    assert.equal(res.status, 400);
  });

  test('user routes refuse a workspace API token', async () => {
    assert.equal((await t.request('GET', '/v1/me', { token: tokenA })).status, 403);
    assert.equal((await t.request('GET', '/v1/workspaces', { token: tokenA })).status, 403);
    const me = await t.request('GET', '/v1/me', { token: alice.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, alice.id);
  });

  test('no, unknown and malformed credentials are 401 with WWW-Authenticate; an error code only when a token was sent (RFC 6750 3.1)', async () => {
    for (const token of ['A'.repeat(32), 'sk_svc_' + 'a'.repeat(46), 'x.y.z', 'short']) {
      const res = await t.request('GET', '/v1/api_tokens', { token, headers: { 'svc-context': wsA } });
      assert.equal(res.status, 401, String(token));
      assert.equal(res.body.error.code, 'UNAUTHENTICATED');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="svc", error="invalid_token"');
    }
    for (const authorization of [undefined, 'Basic dXNlcjpwYXNz', 'Token abc']) {
      const res = await t.request('GET', '/v1/api_tokens', { headers: { 'svc-context': wsA, ...(authorization ? { authorization } : {}) } });
      assert.equal(res.status, 401, String(authorization));
      assert.equal(res.body.error.code, 'UNAUTHENTICATED');
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="svc"', String(authorization));
    }
  });
});
