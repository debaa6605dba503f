// Idempotency keys are scoped to the principal (API.md section 3): the user (whichever session),
// the API token, the OAuth client; not the workspace. A replay is authorized like a first
// request: a caller who may not make the request never receives another caller's stored answer,
// and a caller whose role was lowered since the first request no longer receives its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

describe('idempotency keys belong to the principal', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp(roomyPlans());
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Keys')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  const post = (token: string, path: string, key: string, body: unknown, workspace = ws): Promise<Response> =>
    t.request('POST', path, { token, headers: { 'svc-context': workspace, 'idempotency-key': key }, body });
  const setRole = async (user: TestUser, role: string) => {
    const res = await t.request('PATCH', `/v1/workspaces/${ws}/members/${user.id}`, { token: owner.token, body: { role } });
    assert.equal(res.status, 200, res.text);
  };
  const count = async (path: string) => (await t.request('GET', `${path}?limit=100`, { token: owner.token, headers: { 'svc-context': ws } })).body.data.length;

  test('a member sending an admin\'s key and body on an admin-only create gets 403, not the admin\'s 201', async () => {
    const key = randomUUID();
    const body = { name: `pkg-${key.slice(0, 8)}` };
    const created = await post(admin.token, '/v1/packages', key, body);
    assert.equal(created.status, 201, created.text);
    const stolen = await post(member.token, '/v1/packages', key, body);
    assert.equal(stolen.status, 403, stolen.text);
    assert.equal(stolen.body.error.reason, 'ROLE_TOO_LOW');
    assert.equal(stolen.headers['idempotent-replayed'], undefined);
    assert.ok(!stolen.text.includes(created.body.id), 'the admin\'s package id is not revealed');
  });

  test('on a route members may call, the admin\'s key gives the member a fresh resource of their own', async () => {
    const key = randomUUID();
    const body = { name: 'mine', code: 'return 1', display_type: 'json' };
    const before_ = await count('/v1/snippets');
    const admins = await post(admin.token, '/v1/snippets', key, body);
    assert.equal(admins.status, 201, admins.text);
    const members = await post(member.token, '/v1/snippets', key, body);
    assert.equal(members.status, 201, members.text);
    assert.equal(members.headers['idempotent-replayed'], undefined);
    assert.notEqual(members.body.id, admins.body.id);
    assert.equal(await count('/v1/snippets'), before_ + 2);
    // Each principal's own replay returns its own snippet.
    assert.equal((await post(member.token, '/v1/snippets', key, body)).body.id, members.body.id);
    assert.equal((await post(admin.token, '/v1/snippets', key, body)).body.id, admins.body.id);
  });

  test('two API tokens of one workspace using the same key are independent', async () => {
    const [a, b] = [await t.apiToken(owner, ws, { name: 'ci-a' }), await t.apiToken(owner, ws, { name: 'ci-b' })];
    const key = randomUUID();
    const body = { name: 'from a token', code: 'return 2', display_type: 'json' };
    const first = await post(a.token, '/v1/snippets', key, body);
    const second = await post(b.token, '/v1/snippets', key, body);
    assert.equal(first.status, 201, first.text);
    assert.equal(second.status, 201, second.text);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.notEqual(second.body.id, first.body.id);
    const again = await post(a.token, '/v1/snippets', key, body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body.id, first.body.id);
  });

  test('the same user through two sessions shares the scope: the second session gets the replay', async () => {
    const other = await t.services.sessions.createSession(admin.id);
    const key = randomUUID();
    const body = { name: `pkg-${key.slice(0, 8)}` };
    const first = await post(admin.token, '/v1/packages', key, body);
    assert.equal(first.status, 201, first.text);
    const replay = await post(other.token, '/v1/packages', key, body);
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, first.body.id);
  });

  test('the same user and key in another workspace is another request: 422, not a replay or a second resource', async () => {
    const other = (await t.workspace(admin, 'Elsewhere')).id;
    const key = randomUUID();
    const body = { name: 'twice', code: 'return 3', display_type: 'json' };
    assert.equal((await post(admin.token, '/v1/snippets', key, body)).status, 201);
    const elsewhere = await post(admin.token, '/v1/snippets', key, body, other);
    assert.equal(elsewhere.status, 422, elsewhere.text);
    assert.equal(elsewhere.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
  });

  test('an admin demoted since the first request gets 403 on replay of an admin-only create; restored, the replay returns', async () => {
    const demoted = await t.user('demoted');
    await t.addMember(owner, ws, demoted, 'admin');
    const routes: [string, (k: string) => unknown][] = [
      ['/v1/packages', (k) => ({ name: `pkg-${k.slice(0, 8)}` })],
      ['/v1/secrets', (k) => ({ name: `sec-${k.slice(0, 8)}`, value: 'v' })],
      ['/v1/clusters', (k) => ({ name: `cl-${k.slice(0, 8)}` })],
    ];
    const firsts: [string, string, unknown, Response][] = [];
    for (const [path, body] of routes) {
      const key = randomUUID();
      const res = await post(demoted.token, path, key, body(key));
      assert.ok(res.status === 201 || res.status === 202, `${path}: ${res.text}`);
      firsts.push([path, key, body(key), res]);
    }
    await setRole(demoted, 'member');
    for (const [path, key, body] of firsts) {
      const replay = await post(demoted.token, path, key, body);
      assert.equal(replay.status, 403, `${path}: ${replay.text}`);
      assert.equal(replay.body.error.reason, 'ROLE_TOO_LOW');
    }
    await setRole(demoted, 'admin');
    for (const [path, key, body, first] of firsts) {
      const replay = await post(demoted.token, path, key, body);
      assert.equal(replay.status, first.status, `${path}: ${replay.text}`);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.body.id, first.body.id);
    }
  });

  test('a member removed from the workspace gets 403 on replay, before any stored answer', async () => {
    const leaver = await t.user('leaver');
    await t.addMember(owner, ws, leaver, 'member');
    const key = randomUUID();
    const body = { name: 'left behind', code: 'return 4', display_type: 'json' };
    assert.equal((await post(leaver.token, '/v1/snippets', key, body)).status, 201);
    assert.equal((await t.request('DELETE', `/v1/workspaces/${ws}/members/${leaver.id}`, { token: owner.token })).status, 204);
    const replay = await post(leaver.token, '/v1/snippets', key, body);
    assert.equal(replay.status, 403, replay.text);
    assert.equal(replay.body.error.reason, 'NOT_A_MEMBER');
  });
});
