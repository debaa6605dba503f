// OAuth clients (/v1/oauth_clients): the secret shown once and stored hashed, roles, pagination,
// tenancy; and the signing key that several instances starting at once must agree on.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeProtectedHeader, type JWK } from 'jose';
import { sha256Hex } from '../src/platform/crypto.js';
import { createSystem, type System } from '../src/system.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('OAuth clients', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let wsA: string;
  let wsB: string;
  let client: { id: string; client_secret: string };

  async function createClient(body: Record<string, unknown> = { name: 'ci' }, user: TestUser = alice, ws = wsA) {
    return t.request('POST', '/v1/oauth_clients', { token: user.token, headers: { 'svc-context': ws }, body });
  }

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    carol = await t.user('carol');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    await t.addMember(alice, wsA, carol, 'member');
    client = (await createClient({ name: 'deployer' })).body;
  });
  after(() => t.close());

  test('creating a client shows the secret once; lists and gets never do; only its hash is stored', async () => {
    const res = await createClient({ name: 'reporting', role: 'admin' });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^oac_[0-9a-z]{26}$/);
    assert.match(res.body.client_secret, /^svc_cs_[0-9A-Za-z]{43}$/);
    assert.deepEqual(
      { name: res.body.name, role: res.body.role, workspace_id: res.body.workspace_id },
      { name: 'reporting', role: 'admin', workspace_id: wsA },
    );
    assert.equal(typeof res.body.created_at, 'number');
    assert.equal(res.headers.location, `/v1/oauth_clients/${res.body.id}`);
    assert.equal(res.headers['cache-control'], 'no-store');

    const list = await t.request('GET', '/v1/oauth_clients', { token: alice.token, headers: { 'svc-context': wsA } });
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((c: { id: string }) => c.id === res.body.id));
    assert.ok(!list.text.includes(res.body.client_secret) && !list.text.includes('client_secret'));
    const one = await t.request('GET', `/v1/oauth_clients/${res.body.id}`, { token: alice.token, headers: { 'svc-context': wsA } });
    assert.equal(one.status, 200);
    assert.equal(one.body.id, res.body.id);
    assert.equal(one.body.client_secret, undefined);

    const row = await t.services.db.selectFrom('oauth_clients').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
    assert.equal(row.secret_hash, sha256Hex(res.body.client_secret));
    assert.ok(!JSON.stringify(row).includes(res.body.client_secret));
  });

  test('members cannot create or delete clients; the list is paginated and scoped to the workspace', async () => {
    const denied = await createClient({ name: 'x' }, carol);
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.reason, 'ROLE_TOO_LOW');
    assert.equal((await t.request('DELETE', `/v1/oauth_clients/${client.id}`, { token: carol.token, headers: { 'svc-context': wsA } })).status, 403);
    assert.equal((await createClient({ name: 'x', role: 'owner' })).status, 400);
    assert.equal((await createClient({ name: '' })).status, 400);
    assert.equal((await createClient({ name: 'x', extra: 1 })).status, 400);

    const page1 = await t.request('GET', '/v1/oauth_clients?limit=1', { token: carol.token, headers: { 'svc-context': wsA } });
    assert.equal(page1.status, 200);
    assert.equal(page1.body.data.length, 1);
    assert.equal(page1.body.has_more, true);
    const page2 = await t.request('GET', `/v1/oauth_clients?limit=1&cursor=${page1.body.next_cursor}`, { token: carol.token, headers: { 'svc-context': wsA } });
    assert.equal(page2.status, 200);
    assert.notEqual(page2.body.data[0].id, page1.body.data[0].id);
    const fromB = await t.request('GET', `/v1/oauth_clients?cursor=${page1.body.next_cursor}`, { token: bob.token, headers: { 'svc-context': wsB } });
    assert.equal(fromB.status, 400);
    const other = await t.request('GET', `/v1/oauth_clients/${client.id}`, { token: bob.token, headers: { 'svc-context': wsB } });
    assert.equal(other.status, 404);
    assert.equal((await t.request('GET', '/v1/oauth_clients/tok_01aaaaaaaaaaaaaaaaaaaaaaaa', { token: alice.token, headers: { 'svc-context': wsA } })).status, 404);
  });
});

describe('signing keys shared by several instances', () => {
  test('instances that start at once converge on one key and accept each other\'s tokens', async () => {
    const t = await startTestApp();
    /** the other instances: their own services and app over the same database */
    const systems: System<null>[] = [];
    try {
      const owner = await t.user('owner');
      const ws = (await t.workspace(owner, 'K')).id;
      const created = await t.request('POST', '/v1/oauth_clients', { token: owner.token, headers: { 'svc-context': ws }, body: { name: 'ci' } });
      assert.equal(created.body.client_id, created.body.id, 'the created client names its client_id');
      const listed = await t.request('GET', `/v1/oauth_clients/${created.body.id}`, { token: owner.token, headers: { 'svc-context': ws } });
      assert.equal(listed.body.client_id, created.body.id);
      const grant = { grant_type: 'client_credentials', client_id: created.body.client_id, client_secret: created.body.client_secret };
      systems.push(...await Promise.all(Array.from({ length: 4 }, () => createSystem(t.config, { database: t.services, runtime: false }))));
      const instances = systems.map((s) => s.services);
      const issued = await Promise.all(instances.map((s) => s.oauth.clientCredentialsGrant(grant, {})));
      for (const s of [...instances, t.services]) {
        for (const { access_token } of issued) {
          const principal = await s.oauth.verifier.verify(access_token);
          assert.deepEqual(principal && principal.kind === 'workspace' && principal.workspaceId, ws);
        }
      }
      const keys = await t.services.db.selectFrom('signing_keys').select('id').orderBy('created_at').orderBy('id').execute();
      assert.ok(keys.length >= 1);
      const late = await createSystem(t.config, { database: t.services, runtime: false });
      systems.push(late);
      const { access_token } = await late.services.oauth.clientCredentialsGrant(grant, {});
      assert.equal(decodeProtectedHeader(access_token).kid, keys[0]!.id, 'a later instance signs with the oldest key');
      const jwks = await t.request('GET', '/.well-known/jwks.json');
      assert.deepEqual(jwks.body.keys.map((k: JWK) => k.kid).sort(), keys.map((k) => k.id).sort());
    } finally {
      for (const s of systems) await s.close();
      await t.close();
    }
  });
});
