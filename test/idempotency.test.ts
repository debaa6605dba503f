// Idempotency keys (spec 4.1, API.md section 3): concurrent identical requests create one
// resource; replays return the first status with `idempotent-replayed: true`; another body under
// the same key is 422; keys are scoped to the caller; failures are not recorded.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

describe('idempotency-key', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;

  before(async () => {
    // More clusters, installs or workspaces per user than free allows: a roomier free, quotas still enforced.
    t = await startTestApp(roomyPlans());
    alice = await t.user('alice');
    bob = await t.user('bob');
  });
  after(() => t.close());

  const createWorkspace = (user: TestUser, key: string | undefined, body: unknown) =>
    t.request('POST', '/v1/workspaces', { token: user.token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });

  async function workspacesOf(user: TestUser): Promise<{ id: string; name: string }[]> {
    const res = await t.request('GET', '/v1/workspaces?limit=100', { token: user.token });
    assert.equal(res.status, 200);
    return res.body.data;
  }

  test('20 concurrent identical requests create exactly one workspace', async () => {
    const key = randomUUID();
    const before = (await workspacesOf(alice)).length;
    const results = await Promise.all(Array.from({ length: 20 }, () => createWorkspace(alice, key, { name: 'Concurrent' })));
    const ok = results.filter((r) => r.status === 201);
    const inFlight = results.filter((r) => r.status === 409);
    assert.equal(ok.length + inFlight.length, 20, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    assert.ok(ok.length >= 1);
    for (const r of inFlight) {
      assert.equal(r.body.error.code, 'ABORTED');
      assert.equal(r.body.error.reason, 'IDEMPOTENCY_KEY_IN_USE');
    }
    const ids = new Set(ok.map((r) => r.body.id));
    assert.equal(ids.size, 1, 'every success names the same workspace');
    // Exactly one of the successes is the original, the rest are replays.
    assert.equal(ok.filter((r) => r.headers['idempotent-replayed'] !== 'true').length, 1);

    const after = await workspacesOf(alice);
    assert.equal(after.length, before + 1);
    assert.equal(after.filter((w) => w.name === 'Concurrent').length, 1);

    // Later replays: same id, same status, flagged as replayed.
    for (let i = 0; i < 3; i++) {
      const replay = await createWorkspace(alice, key, { name: 'Concurrent' });
      assert.equal(replay.status, 201);
      assert.equal(replay.body.id, [...ids][0]);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body.name, 'Concurrent');
    }
    assert.equal((await workspacesOf(alice)).length, before + 1);
  });

  test('a replay returns the current representation of the resource', async () => {
    const key = randomUUID();
    const first = await createWorkspace(alice, key, { name: 'Will change' });
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const patched = await t.request('PATCH', `/v1/workspaces/${first.body.id}`, {
      token: alice.token, headers: { 'if-match': first.body.etag }, body: { name: 'Changed' },
    });
    assert.equal(patched.status, 200);
    const replay = await createWorkspace(alice, key, { name: 'Will change' });
    assert.equal(replay.status, 201);
    assert.equal(replay.body.id, first.body.id);
    assert.equal(replay.body.name, 'Changed');
    assert.equal(replay.body.etag, patched.body.etag);
  });

  test('same key with a different body is 422 IDEMPOTENCY_KEY_REUSED and creates nothing', async () => {
    const key = randomUUID();
    const first = await createWorkspace(alice, key, { name: 'Original' });
    assert.equal(first.status, 201);
    const count = (await workspacesOf(alice)).length;
    for (const body of [{ name: 'Different' }, { name: 'Original', slug: 'original-x' }]) {
      const res = await createWorkspace(alice, key, body);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error.code, 'FAILED_PRECONDITION');
      assert.equal(res.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(typeof res.body.error.request_id, 'string');
    }
    assert.equal((await workspacesOf(alice)).length, count);
  });

  test('the fingerprint ignores key order in the body', async () => {
    const key = randomUUID();
    const slug = `order-${randomUUID().slice(0, 8)}`;
    const a = await t.request('POST', '/v1/workspaces', {
      token: alice.token, headers: { 'idempotency-key': key }, payload: JSON.stringify({ name: 'Ordered', slug }),
    });
    assert.equal(a.status, 201);
    const b = await t.request('POST', '/v1/workspaces', {
      token: alice.token, headers: { 'idempotency-key': key }, payload: JSON.stringify({ slug, name: 'Ordered' }),
    });
    assert.equal(b.status, 201, b.text);
    assert.equal(b.body.id, a.body.id);
    assert.equal(b.headers['idempotent-replayed'], 'true');
  });

  test('keys are scoped per user: another user with the same key creates their own', async () => {
    const key = randomUUID();
    const a = await createWorkspace(alice, key, { name: 'Scoped' });
    const b = await createWorkspace(bob, key, { name: 'Scoped' });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
    assert.equal(b.headers['idempotent-replayed'], undefined);
    assert.ok((await workspacesOf(bob)).some((w) => w.id === b.body.id));
    assert.ok(!(await workspacesOf(bob)).some((w) => w.id === a.body.id));
    // And bob's replay never returns alice's workspace, even with alice's exact body and key.
    const replay = await createWorkspace(bob, key, { name: 'Scoped' });
    assert.equal(replay.body.id, b.body.id);
  });

  test('failed requests are not recorded: a retry with the same key after fixing the body works', async () => {
    const key = randomUUID();
    const count = (await workspacesOf(alice)).length;
    const invalid = await createWorkspace(alice, key, { name: '' });
    assert.equal(invalid.status, 400);
    const unknownField = await createWorkspace(alice, key, { name: 'x', colour: 'red' });
    assert.equal(unknownField.status, 400);
    const fixed = await createWorkspace(alice, key, { name: 'Fixed' });
    assert.equal(fixed.status, 201, fixed.text);
    assert.equal(fixed.headers['idempotent-replayed'], undefined);
    assert.equal((await workspacesOf(alice)).length, count + 1);
  });

  test('a failure inside the handler (slug taken, 409) is not recorded either', async () => {
    const slug = `taken-${randomUUID().slice(0, 8)}`;
    assert.equal((await createWorkspace(bob, undefined, { name: 'Holder', slug })).status, 201);
    const key = randomUUID();
    const conflict = await createWorkspace(alice, key, { name: 'Wants slug', slug });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.error.code, 'ALREADY_EXISTS');
    // The same request again is evaluated afresh (still 409), not replayed and not "in use".
    const again = await createWorkspace(alice, key, { name: 'Wants slug', slug });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'ALREADY_EXISTS');
    // With the key released, a corrected body under the same key succeeds.
    const fixed = await createWorkspace(alice, key, { name: 'Wants slug', slug: `${slug}-2` });
    assert.equal(fixed.status, 201, fixed.text);
  });

  test('key length: 64 accepted, 65 and empty are 400', async () => {
    const ok = await createWorkspace(alice, 'k'.repeat(64), { name: 'Long key' });
    assert.equal(ok.status, 201, ok.text);
    for (const key of ['k'.repeat(65), '']) {
      const res = await createWorkspace(alice, key, { name: 'Bad key' });
      assert.equal(res.status, 400, `${key.length}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      assert.ok(res.body.error.field_violations?.some((v: { field: string }) => v.field.includes('idempotency-key')), res.text);
    }
  });

  test('keys live 24 hours: after that the same key starts over', async () => {
    const key = randomUUID();
    const first = await createWorkspace(alice, key, { name: 'Day one' });
    assert.equal(first.status, 201);
    try {
      clock.offsetMs = (24 * 60 * 60 - 60) * 1000;
      const replay = await createWorkspace(alice, key, { name: 'Day one' });
      assert.equal(replay.body.id, first.body.id, 'still replayed just before 24 hours');
      clock.offsetMs = (24 * 60 * 60 + 1) * 1000;
      const fresh = await createWorkspace(alice, key, { name: 'Day one' });
      assert.equal(fresh.status, 201);
      assert.notEqual(fresh.body.id, first.body.id);
      assert.equal(fresh.headers['idempotent-replayed'], undefined);
      // Reuse with another body is allowed again, too: the old record is gone.
      clock.offsetMs = 2 * (24 * 60 * 60 + 1) * 1000;
      assert.equal((await createWorkspace(alice, key, { name: 'Day three' })).status, 201);
    } finally {
      clock.offsetMs = 0;
    }
  });

  test('without a key every request creates a new resource', async () => {
    const count = (await workspacesOf(alice)).length;
    const [a, b] = await Promise.all([createWorkspace(alice, undefined, { name: 'Twin' }), createWorkspace(alice, undefined, { name: 'Twin' })]);
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.notEqual(a.body.id, b.body.id);
    assert.equal((await workspacesOf(alice)).length, count + 2);
  });

  describe('adding members', () => {
    let ws: string;
    let carol: TestUser;
    let dave: TestUser;

    before(async () => {
      ws = (await t.workspace(alice, 'Team')).id;
      carol = await t.user('carol');
      dave = await t.user('dave');
    });

    const add = (key: string, body: unknown, user: TestUser = alice): Promise<Response> =>
      t.request('POST', `/v1/workspaces/${ws}/members`, { token: user.token, headers: { 'idempotency-key': key }, body });

    test('concurrent identical adds create one membership; replays return it', async () => {
      const key = randomUUID();
      const results = await Promise.all(Array.from({ length: 10 }, () => add(key, { user_id: carol.id, role: 'member' })));
      const ok = results.filter((r) => r.status === 201);
      assert.ok(ok.length >= 1);
      assert.ok(results.every((r) => r.status === 201 || (r.status === 409 && r.body.error.reason === 'IDEMPOTENCY_KEY_IN_USE')),
        results.map((r) => `${r.status} ${r.text}`).join('\n'));
      assert.equal(new Set(ok.map((r) => r.body.id)).size, 1);
      const replay = await add(key, { user_id: carol.id, role: 'member' });
      assert.equal(replay.status, 201);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body.id, ok[0]!.body.id);
      assert.equal(replay.body.user_id, carol.id);
      const members = await t.request('GET', `/v1/workspaces/${ws}/members`, { token: alice.token });
      assert.equal(members.body.data.filter((m: { user_id: string }) => m.user_id === carol.id).length, 1);
    });

    test('same key with another user is 422; a new key for an existing member is 409 ALREADY_EXISTS', async () => {
      const key = randomUUID();
      assert.equal((await add(key, { user_id: dave.id, role: 'member' })).status, 201);
      const reused = await add(key, { user_id: carol.id, role: 'member' });
      assert.equal(reused.status, 422);
      assert.equal(reused.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
      const dup = await add(randomUUID(), { user_id: dave.id, role: 'member' });
      assert.equal(dup.status, 409);
      assert.equal(dup.body.error.code, 'ALREADY_EXISTS');
    });

    test('a replay of an add whose member was removed since is 404', async () => {
      const key = randomUUID();
      const frank = await t.user('frank');
      assert.equal((await add(key, { user_id: frank.id, role: 'member' })).status, 201);
      assert.equal((await t.request('DELETE', `/v1/workspaces/${ws}/members/${frank.id}`, { token: alice.token })).status, 204);
      const replay = await add(key, { user_id: frank.id, role: 'member' });
      assert.equal(replay.status, 404);
      assert.equal(replay.body.error.code, 'NOT_FOUND');
    });

    test('a key used on another route does not collide', async () => {
      const key = randomUUID();
      const erin = await t.user('erin');
      assert.equal((await createWorkspace(alice, key, { name: 'Same key' })).status, 201);
      const res = await add(key, { user_id: erin.id, role: 'member' });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers['idempotent-replayed'], undefined);
    });
  });
});
