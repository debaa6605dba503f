// Workspace members (spec endpoint 15, 2.11; API.md sections 4 and 6): add by e-mail or user id,
// duplicates, the role rules (member < admin < owner; an admin never touches an owner; a
// workspace keeps at least one owner) and removal taking effect at once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';

describe('workspace members', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  /** before the members were added, to the whole second (joined_at may be stored to the second) */
  let setUpFrom: number;

  before(async () => {
    setUpFrom = Math.floor(Date.now() / 1000) * 1000;
    t = await startTestApp();
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Members')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  const add = (by: TestUser, body: unknown): Promise<Response> =>
    t.request('POST', `/v1/workspaces/${ws}/members`, { token: by.token, body });
  const setRole = (by: TestUser, target: TestUser, role: string): Promise<Response> =>
    t.request('PATCH', `/v1/workspaces/${ws}/members/${target.id}`, { token: by.token, body: { role } });
  const remove = (by: TestUser, target: TestUser): Promise<Response> =>
    t.request('DELETE', `/v1/workspaces/${ws}/members/${target.id}`, { token: by.token });
  const roleOf = async (user: TestUser): Promise<string | undefined> => {
    const res = await t.request('GET', `/v1/workspaces/${ws}/members/${user.id}`, { token: owner.token });
    return res.status === 200 ? res.body.role : undefined;
  };

  function assertError(res: Response, status: number, code: string) {
    assert.equal(res.status, status, res.text);
    assert.equal(res.body.error.code, code);
    assert.equal(typeof res.body.error.request_id, 'string');
  }

  test('list items carry wsm_ id, usr_ user_id, role and an ISO 8601 joined_at', async () => {
    const res = await t.request('GET', `/v1/workspaces/${ws}/members`, { token: member.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 3);
    assert.equal(res.body.has_more, false);
    assert.equal(res.body.next_cursor, null);
    for (const m of res.body.data) {
      assert.match(m.id, /^wsm_[0-9a-z]{26}$/);
      assert.match(m.user_id, /^usr_[0-9a-z]{26}$/);
      assert.equal(typeof m.joined_at, 'string');
      assert.match(m.joined_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
      assert.equal(new Date(m.joined_at).toISOString(), m.joined_at);
      // Order of events: joined while the suite set up, before this read.
      assert.ok(Date.parse(m.joined_at) >= setUpFrom && Date.parse(m.joined_at) <= Date.now(), m.joined_at);
    }
    assert.deepEqual(res.body.data.map((m: { user_id: string }) => m.user_id), [member.id, admin.id, owner.id], 'newest first');
    assert.deepEqual(res.body.data.map((m: { role: string }) => m.role), ['member', 'admin', 'owner']);
  });

  test('add by e-mail (any case) and by user_id; 201 with Location; the new member has access', async () => {
    const byEmail = await t.user('byemail');
    const byId = await t.user('byid');
    const a = await add(owner, { email: byEmail.email.toUpperCase(), role: 'member' });
    assert.equal(a.status, 201, a.text);
    assert.equal(a.body.user_id, byEmail.id);
    assert.equal(a.body.role, 'member');
    assert.equal(a.headers.location, `/v1/workspaces/${ws}/members/${byEmail.id}`);
    const b = await add(admin, { user_id: byId.id, role: 'admin' });
    assert.equal(b.status, 201, b.text);
    assert.equal(b.body.user_id, byId.id);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: byEmail.token })).status, 200);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: byId.token })).body.role, 'admin');
  });

  test('duplicate is 409 ALREADY_EXISTS, by either key', async () => {
    assertError(await add(owner, { user_id: member.id, role: 'member' }), 409, 'ALREADY_EXISTS');
    assertError(await add(owner, { email: member.email, role: 'admin' }), 409, 'ALREADY_EXISTS');
    assert.equal(await roleOf(member), 'member', 'the duplicate did not change the role');
  });

  test('bad adds: neither or both of email/user_id 400; an unknown user_id 404 (an unknown e-mail is invited: invitations.test); bad role 400', async () => {
    const stranger = await t.user('stranger');
    assertError(await add(owner, { role: 'member' }), 400, 'INVALID_ARGUMENT');
    assertError(await add(owner, { email: stranger.email, user_id: stranger.id, role: 'member' }), 400, 'INVALID_ARGUMENT');
    const invited = await add(owner, { email: 'nobody@example.test', role: 'member' });
    assert.equal(invited.status, 202, invited.text);
    assert.match(invited.body.id, /^inv_/);
    assertError(await add(owner, { user_id: 'usr_01aaaaaaaaaaaaaaaaaaaaaaaa', role: 'member' }), 404, 'NOT_FOUND');
    assertError(await add(owner, { user_id: stranger.id, role: 'boss' }), 400, 'INVALID_ARGUMENT');
    assert.equal(await roleOf(stranger), undefined);
  });

  test('a member cannot add, change or remove anyone (403)', async () => {
    const x = await t.user('x');
    assertError(await add(member, { user_id: x.id, role: 'member' }), 403, 'PERMISSION_DENIED');
    assertError(await setRole(member, admin, 'member'), 403, 'PERMISSION_DENIED');
    assertError(await remove(member, admin), 403, 'PERMISSION_DENIED');
    assertError(await setRole(member, member, 'admin'), 403, 'PERMISSION_DENIED');
    assert.equal(await roleOf(member), 'member');
  });

  test('an admin cannot add, promote to, demote or remove an owner (403)', async () => {
    const y = await t.user('y');
    assertError(await add(admin, { user_id: y.id, role: 'owner' }), 403, 'PERMISSION_DENIED');
    assertError(await setRole(admin, member, 'owner'), 403, 'PERMISSION_DENIED');
    assertError(await setRole(admin, admin, 'owner'), 403, 'PERMISSION_DENIED');
    assertError(await setRole(admin, owner, 'admin'), 403, 'PERMISSION_DENIED');
    assertError(await remove(admin, owner), 403, 'PERMISSION_DENIED');
    assert.equal(await roleOf(owner), 'owner');
    assert.equal(await roleOf(y), undefined);
    // An admin may manage non-owners.
    const z = await t.user('z');
    assert.equal((await add(admin, { user_id: z.id, role: 'member' })).status, 201);
    assert.equal((await setRole(admin, z, 'admin')).status, 200);
    assert.equal((await setRole(admin, z, 'member')).status, 200);
    assert.equal((await remove(admin, z)).status, 204);
  });

  test('an admin API token is held to the same rules as an admin', async () => {
    const tok = (await t.apiToken(owner, ws, { role: 'admin' })).token;
    const res = await t.request('PATCH', `/v1/workspaces/${ws}/members/${owner.id}`, { token: tok, body: { role: 'member' } });
    assertError(res, 403, 'PERMISSION_DENIED');
    assertError(await t.request('DELETE', `/v1/workspaces/${ws}/members/${owner.id}`, { token: tok }), 403, 'PERMISSION_DENIED');
  });

  test('the last owner cannot be demoted or removed (422); with a second owner it can', async () => {
    const lastDemote = await setRole(owner, owner, 'admin');
    assertError(lastDemote, 422, 'FAILED_PRECONDITION');
    assert.equal(lastDemote.body.error.reason, 'LAST_OWNER');
    assertError(await remove(owner, owner), 422, 'FAILED_PRECONDITION');
    assert.equal(await roleOf(owner), 'owner');

    const second = await t.user('second');
    assert.equal((await add(owner, { user_id: second.id, role: 'owner' })).status, 201);
    // An owner may demote and remove another owner.
    const demoted = await setRole(second, owner, 'admin');
    assert.equal(demoted.status, 200, demoted.text);
    assert.equal(demoted.body.role, 'admin');
    assertError(await setRole(second, second, 'member'), 422, 'FAILED_PRECONDITION');
    assert.equal((await setRole(second, owner, 'owner')).status, 200);
    assert.equal((await remove(owner, second)).status, 204);
    assert.equal(await roleOf(second), undefined);
  });

  test('concurrent demotions of two owners never leave the workspace without one', async () => {
    const w = (await t.workspace(owner, 'Two owners')).id;
    const other = await t.user('other-owner');
    await t.addMember(owner, w, other, 'owner');
    const results = await Promise.all([
      t.request('PATCH', `/v1/workspaces/${w}/members/${owner.id}`, { token: other.token, body: { role: 'member' } }),
      t.request('PATCH', `/v1/workspaces/${w}/members/${other.id}`, { token: owner.token, body: { role: 'member' } }),
    ]);
    const statuses = results.map((r) => r.status).sort();
    // One demotion wins; the other either sees the last owner (422) or finds its caller demoted (403).
    assert.equal(statuses.filter((s) => s === 200).length, 1, results.map((r) => r.text).join('\n'));
    const members = await t.request('GET', `/v1/workspaces/${w}/members`, { token: owner.token });
    assert.equal(members.body.data.filter((m: { role: string }) => m.role === 'owner').length, 1);
  });

  test('a removed member loses access at once (403), also to the member list', async () => {
    const gone = await t.user('gone');
    await t.addMember(owner, ws, gone, 'admin');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/members`, { token: gone.token })).status, 200);
    const del = await remove(owner, gone);
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    for (const [method, url] of [['GET', `/v1/workspaces/${ws}`], ['GET', `/v1/workspaces/${ws}/members`], ['GET', '/v1/api_tokens']] as const) {
      const res = await t.request(method, url, { token: gone.token, headers: { 'svc-context': ws } });
      assertError(res, 403, 'PERMISSION_DENIED');
    }
    const listed = await t.request('GET', '/v1/workspaces', { token: gone.token });
    assert.ok(!listed.body.data.some((w: { id: string }) => w.id === ws));
    assertError(await remove(owner, gone), 404, 'NOT_FOUND');
  });

  test('get, patch and delete of unknown or malformed member ids are 404', async () => {
    for (const id of ['usr_01aaaaaaaaaaaaaaaaaaaaaaaa', 'wsm_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nonsense']) {
      assertError(await t.request('GET', `/v1/workspaces/${ws}/members/${id}`, { token: owner.token }), 404, 'NOT_FOUND');
      assertError(await t.request('PATCH', `/v1/workspaces/${ws}/members/${id}`, { token: owner.token, body: { role: 'member' } }), 404, 'NOT_FOUND');
      assertError(await t.request('DELETE', `/v1/workspaces/${ws}/members/${id}`, { token: owner.token }), 404, 'NOT_FOUND');
    }
  });

  test('member routes of a workspace one does not belong to are 403 whether or not it exists; a malformed id is 404', async () => {
    const outsider = await t.user('outsider');
    for (const w of [ws, 'ws_01aaaaaaaaaaaaaaaaaaaaaaaa']) {
      assertError(await t.request('GET', `/v1/workspaces/${w}/members`, { token: outsider.token }), 403, 'PERMISSION_DENIED');
      assertError(await t.request('POST', `/v1/workspaces/${w}/members`, { token: outsider.token, body: { user_id: outsider.id, role: 'owner' } }), 403, 'PERMISSION_DENIED');
    }
    for (const w of ['ws_nonsense', 'usr_01aaaaaaaaaaaaaaaaaaaaaaaa']) {
      assertError(await t.request('GET', `/v1/workspaces/${w}/members`, { token: outsider.token }), 404, 'NOT_FOUND');
    }
  });
});
