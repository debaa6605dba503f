// Invitations (issue 34, people): adding a member by an e-mail without an account makes an
// invitation (202) whose link is shown once; the link's token makes the account and joins the
// workspace with the role, also with sign-up closed (the default here), or takes the password of
// an account made meanwhile; used, revoked, replaced and expired links all answer 404 alike; roles,
// bounds, idempotent replays and the audit log.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('invitations', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  before(async () => {
    t = await startTestApp();
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Acme')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  const invite = (email: string, role = 'member', by: TestUser = owner, headers: Record<string, string> = {}) =>
    t.request('POST', `/v1/workspaces/${ws}/members`, { token: by.token, headers, body: { email, role } });
  const tokenOf = (url: string) => new URL(url).hash.slice(1);
  const resolve = (token: string) => t.request('POST', '/v1/invitations:resolve', { body: { token } });
  const accept = (token: string, password: string, name?: string) => t.request('POST', '/v1/invitations:accept', { body: { token, password, ...(name ? { name } : {}) } });
  const list = async () => (await t.request('GET', `/v1/workspaces/${ws}/invitations`, { token: owner.token })).body.data;
  const signIn = (email: string, password: string) => t.request('POST', '/v1/auth/sessions', { body: { email, password } });

  test('an e-mail without an account is invited: 202, the link once; it makes the account (sign-up closed) and joins with the role', async () => {
    const res = await invite('Grace@Example.com', 'admin');
    assert.equal(res.status, 202, res.text);
    const inv = res.body;
    assert.match(inv.id, /^inv_/);
    assert.deepEqual([inv.workspace_id, inv.email, inv.role, inv.state, inv.invited_by], [ws, 'grace@example.com', 'admin', 'pending', owner.id]);
    assert.equal(inv.expires_at - inv.created_at, 7 * 24 * 3600);
    assert.match(inv.accept_url, /^http:\/\/svc\.test\/invite#[A-Za-z0-9]{32}$/);
    assert.equal(res.headers.location, `/v1/workspaces/${ws}/invitations/${inv.id}`);
    // Listed, without its link.
    const listed = (await list()).find((i: any) => i.id === inv.id);
    assert.equal(listed.state, 'pending');
    assert.equal(listed.accept_url, undefined);
    assert.ok(!JSON.stringify(await list()).includes(tokenOf(inv.accept_url)));

    const token = tokenOf(inv.accept_url);
    const seen = await resolve(token);
    assert.equal(seen.status, 200, seen.text);
    assert.deepEqual(seen.body, { workspace_name: 'Acme', email: 'grace@example.com', role: 'admin', expires_at: inv.expires_at, account_exists: false });
    // A bad password makes nothing and leaves the link working.
    const short = await accept(token, 'short');
    assert.equal(short.status, 400);
    assert.equal(short.body.error.reason, 'INVALID_PASSWORD');
    assert.equal((await signIn('grace@example.com', 'short')).status, 401);
    assert.equal((await resolve(token)).status, 200);

    const joined = await accept(token, 'grace has a long password', 'Grace');
    assert.equal(joined.status, 201, joined.text);
    assert.deepEqual([joined.body.workspace_id, joined.body.role, joined.body.account_created], [ws, 'admin', true]);
    const session = await signIn('grace@example.com', 'grace has a long password');
    assert.equal(session.status, 201);
    const mine = await t.request('GET', '/v1/workspaces', { token: session.body.token });
    assert.deepEqual(mine.body.data.map((w: any) => [w.id, w.role]), [[ws, 'admin']]);
    // Used: the link is gone, exactly as an unknown one.
    for (const gone of [token, 'A'.repeat(32)]) {
      const again = await resolve(gone);
      assert.equal(again.status, 404);
      assert.match(again.body.error.message, /does not work/);
      assert.equal((await accept(gone, 'grace has a long password')).status, 404);
    }
    assert.equal((await list()).find((i: any) => i.id === inv.id).state, 'accepted');
    const audit = await t.request('GET', '/v1/audit_events?resource_id=' + inv.id, { token: owner.token, headers: { 'svc-context': ws } });
    assert.deepEqual(audit.body.data.map((e: any) => [e.action, e.actor.type]).sort(), [['workspace.invitation.accept', 'user'], ['workspace.invitation.create', 'user']]);
    assert.equal(audit.body.data.find((e: any) => e.action === 'workspace.invitation.accept').actor.id, joined.body.user_id);
  });

  test('who may invite: owners and admins; only an owner invites an owner; a malformed token or e-mail is 400', async () => {
    assert.equal((await invite('nobody1@example.com', 'member', member)).status, 403);
    assert.equal((await invite('nobody2@example.com', 'owner', admin)).status, 403);
    assert.equal((await invite('nobody3@example.com', 'member', admin)).status, 202);
    assert.equal((await invite('not an email')).status, 400);
    assert.equal((await resolve('short')).status, 400);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}/invitations`, { token: member.token })).status, 403);
  });

  test('inviting again replaces the link; a revoked one stops at once; an expired one reads expired and works no more', async () => {
    const first = (await invite('hal@example.com')).body;
    const second = (await invite('hal@example.com', 'admin')).body;
    assert.equal((await resolve(tokenOf(first.accept_url))).status, 404, 'the older link was revoked');
    assert.equal((await resolve(tokenOf(second.accept_url))).body.role, 'admin');
    assert.equal((await list()).find((i: any) => i.id === first.id).state, 'revoked');

    const revoke = (id: string, by: TestUser = owner) => t.request('DELETE', `/v1/workspaces/${ws}/invitations/${id}`, { token: by.token });
    assert.equal((await revoke(second.id, member)).status, 403);
    assert.equal((await revoke(second.id)).status, 204);
    assert.equal((await resolve(tokenOf(second.accept_url))).status, 404);
    const twice = await revoke(second.id);
    assert.equal(twice.status, 422);
    assert.equal(twice.body.error.reason, 'INVITATION_NOT_PENDING');
    assert.equal((await revoke('inv_01aaaaaaaaaaaaaaaaaaaaaaaa')).status, 404);

    const late = (await invite('ivy@example.com')).body;
    clock.offsetMs = 7 * 24 * 3600 * 1000 + 1000;
    assert.equal((await resolve(tokenOf(late.accept_url))).status, 404);
    assert.equal((await accept(tokenOf(late.accept_url), 'ivy has a long password')).status, 404);
    assert.equal((await list()).find((i: any) => i.id === late.id).state, 'expired');
    assert.equal((await signIn('ivy@example.com', 'ivy has a long password')).status, 401, 'no account was made');
  });

  test('an account made meanwhile joins with its own password (a wrong one is 401); a replayed invite answers without the link', async () => {
    const key = randomUUID();
    const made = await invite('jo@example.com', 'member', owner, { 'idempotency-key': key });
    assert.equal(made.status, 202);
    const replay = await invite('jo@example.com', 'member', owner, { 'idempotency-key': key });
    assert.equal(replay.status, 202);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.body.id, made.body.id);
    assert.equal(replay.body.accept_url, undefined);

    await t.services.users.createUser({ email: 'jo@example.com', password: 'jo has her own password' });
    const token = tokenOf(made.body.accept_url);
    assert.equal((await resolve(token)).body.account_exists, true);
    const wrong = await accept(token, 'not her password');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.reason, 'INVALID_CREDENTIALS');
    const joined = await accept(token, 'jo has her own password');
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.body.account_created, false);
    const members = await t.request('GET', `/v1/workspaces/${ws}/members`, { token: owner.token });
    assert.ok(members.body.data.some((m: any) => m.email === 'jo@example.com' && m.role === 'member'));
  });

  test('at most 100 pending invitations per workspace: the next is 422 TOO_MANY_INVITATIONS and makes nothing', async () => {
    const other = (await t.workspace(owner, 'Crowded')).id;
    const inviteTo = (email: string) => t.request('POST', `/v1/workspaces/${other}/members`, { token: owner.token, body: { email, role: 'member' } });
    for (let i = 0; i < 100; i++) assert.equal((await inviteTo(`crowd${i}@example.com`)).status, 202);
    const full = await inviteTo('one-more@example.com');
    assert.equal(full.status, 422, full.text);
    assert.equal(full.body.error.reason, 'TOO_MANY_INVITATIONS');
    const page = await t.request('GET', `/v1/workspaces/${other}/invitations?limit=100`, { token: owner.token });
    assert.ok(!page.body.data.some((i: any) => i.email === 'one-more@example.com'));
  });

  test('rights are decided when the link is used: once its inviter is no longer an owner or admin, the link stops working', async () => {
    const temp = await t.user('temp-admin');
    await t.addMember(owner, ws, temp, 'admin');
    const inv = (await invite('kim@example.com', 'member', temp)).body;
    const token = tokenOf(inv.accept_url);
    assert.equal((await resolve(token)).status, 200);
    const demoted = await t.request('PATCH', `/v1/workspaces/${ws}/members/${temp.id}`, { token: owner.token, body: { role: 'member' } });
    assert.equal(demoted.status, 200, demoted.text);
    assert.equal((await resolve(token)).status, 404);
    assert.equal((await accept(token, 'kim has a long password')).status, 404);
    assert.equal((await signIn('kim@example.com', 'kim has a long password')).status, 401, 'no account was made');
  });
});
