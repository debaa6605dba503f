// Issue 34, people: password reset by an e-mailed link through the local mail outbox (the same
// answer for every address, throttled, one-time, 30 minutes, superseded, every session signed out),
// the instance's admins (SVC_ADMIN_EMAILS and the granted role, decided at use), disabled accounts
// whose sessions, sign-ins and API tokens stop at once and work again when enabled, deleting an
// account (refused while it owns a workspace; its tokens go with it), and notifications e-mailed by
// the user's choice.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const ADMIN_EMAIL = 'root@example.test';

describe('people: reset links, instance admins, disabled accounts', () => {
  let t: TestApp;
  let root: TestUser;
  before(async () => {
    t = await startTestApp({ SVC_ADMIN_EMAILS: ` ${ADMIN_EMAIL.toUpperCase()} ` });
    const user = await t.services.users.createUser({ email: ADMIN_EMAIL, password: 'root has a long password' });
    root = { id: user.id, email: ADMIN_EMAIL, password: 'root has a long password', token: (await t.services.sessions.createSession(user.id)).token };
  });
  after(() => t.close());
  afterEach(() => { clock.offsetMs = 0; });

  const signIn = (email: string, password: string) => t.request('POST', '/v1/auth/sessions', { body: { email, password } });
  const askReset = (email: string, ip = '10.0.0.1') => t.request('POST', '/v1/password_resets', { body: { email }, remoteAddress: ip });
  /** The newest message of the outbox to `email`, once the workers delivered it. */
  async function mailTo(email: string, after?: string): Promise<any> {
    for (let i = 0; i < 400; i++) {
      const res = await t.request('GET', `/v1/admin/mail_messages?limit=1&to=${encodeURIComponent(email)}`, { token: root.token });
      assert.equal(res.status, 200, res.text);
      const m = res.body.data[0];
      if (m && m.id !== after && m.state !== 'queued') return m;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no mail to ${email}`);
  }
  const mailCount = async (email: string) => (await t.request('GET', `/v1/admin/mail_messages?to=${encodeURIComponent(email)}`, { token: root.token })).body.data.length;
  const tokenIn = (body: string) => /\/reset-password#([A-Za-z0-9]{32})/.exec(body)![1]!;

  test('a reset link by mail: the same answer for everyone, one use, every session signed out, the notice', async () => {
    const ada = await t.user('ada');
    const other = await t.services.sessions.createSession(ada.id);
    const asked = await askReset(ada.email.toUpperCase());
    assert.equal(asked.status, 200, asked.text);
    const unknown = await askReset('nobody-here@example.test');
    assert.deepEqual([unknown.status, unknown.body], [asked.status, asked.body]);
    assert.equal(asked.headers['cache-control'], 'no-store');

    const mail = await mailTo(ada.email);
    assert.deepEqual([mail.kind, mail.state, mail.driver, mail.user_id, mail.subject], ['password_reset', 'sent', 'local', ada.id, 'Reset your svc password']);
    assert.match(mail.body, /http:\/\/svc\.test\/reset-password#[A-Za-z0-9]{32}/);
    assert.equal(await mailCount('nobody-here@example.test'), 0);
    const token = tokenIn(mail.body);

    const seen = await t.request('POST', '/v1/password_resets:resolve', { body: { token } });
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.body.email, ada.email);
    assert.equal(seen.body.expires_at - mail.created_at, 1800);

    // A bad password changes nothing and leaves the link working.
    const short = await t.request('POST', '/v1/password_resets:complete', { body: { token, new_password: 'short' } });
    assert.equal(short.status, 400);
    assert.equal((await signIn(ada.email, ada.password)).status, 201);

    const done = await t.request('POST', '/v1/password_resets:complete', { body: { token, new_password: 'ada chose a new password' } });
    assert.equal(done.status, 200, done.text);
    assert.ok(done.body.revoked_sessions >= 3, 'every session, including those made by the sign-ins above');
    for (const session of [ada.token, other.token]) assert.equal((await t.request('GET', '/v1/me', { token: session })).status, 401);
    assert.equal((await signIn(ada.email, ada.password)).status, 401);
    const fresh = await signIn(ada.email, 'ada chose a new password');
    assert.equal(fresh.status, 201);
    const notes = await t.request('GET', '/v1/notifications', { token: fresh.body.token });
    assert.ok(notes.body.data.some((n: any) => n.type === 'password_changed'), JSON.stringify(notes.body));
    // Used: gone, like an unknown token.
    for (const gone of [token, 'B'.repeat(32), 'not a token']) {
      const again = await t.request('POST', '/v1/password_resets:complete', { body: { token: gone, new_password: 'yet another password' } });
      assert.equal(again.status, 404, again.text);
      assert.match(again.body.error.message, /does not work/);
    }
    assert.equal((await signIn(ada.email, 'yet another password')).status, 401);
  });

  test('a link works 30 minutes, and a newer one replaces it', async () => {
    const bob = await t.user('bob');
    await askReset(bob.email, '10.0.0.2');
    const first = await mailTo(bob.email);
    await askReset(bob.email, '10.0.0.2');
    const second = await mailTo(bob.email, first.id);
    const resolve = (body: string) => t.request('POST', '/v1/password_resets:resolve', { body: { token: tokenIn(body) } });
    assert.equal((await resolve(first.body)).status, 404, 'replaced');
    assert.equal((await resolve(second.body)).status, 200);
    clock.offsetMs = 1801_000;
    assert.equal((await resolve(second.body)).status, 404, 'expired');
    const late = await t.request('POST', '/v1/password_resets:complete', { body: { token: tokenIn(second.body), new_password: 'too late for this one' } });
    assert.equal(late.status, 404);
  });

  test('asking is throttled per e-mail, whether an account has it or not, and per client address', async () => {
    for (const email of ['carol-none@example.test', (await t.user('carol')).email]) {
      for (let i = 0; i < 3; i++) assert.equal((await askReset(email, `10.1.0.${i}`)).status, 200);
      const fourth = await askReset(email, '10.1.0.9');
      assert.equal(fourth.status, 429, fourth.text);
      assert.equal(fourth.body.error.reason, 'PASSWORD_RESET_THROTTLED');
      assert.ok(Number(fourth.headers['retry-after']) > 0);
    }
    for (let i = 0; i < 10; i++) assert.equal((await askReset(`spray${i}@example.test`, '10.2.0.1')).status, 200);
    assert.equal((await askReset('spray-last@example.test', '10.2.0.1')).status, 429);
  });

  test('instance admin: decided at every request; others are refused', async () => {
    const dan = await t.user('dan');
    for (const [method, url] of [['GET', '/v1/admin/users'], ['GET', '/v1/admin/mail_messages'], ['POST', `/v1/admin/users/${root.id}:disable`], ['DELETE', `/v1/admin/users/${root.id}`]] as const) {
      const res = await t.request(method, url, { token: dan.token });
      assert.equal(res.status, 403, `${method} ${url}: ${res.text}`);
      assert.equal(res.body.error.reason, 'INSTANCE_ADMIN_REQUIRED');
    }
    assert.equal((await t.request('GET', '/v1/me', { token: dan.token })).body.instance_admin, false);
    const me = await t.request('GET', '/v1/me', { token: root.token });
    assert.equal(me.body.instance_admin, true);

    const granted = await t.request('POST', `/v1/admin/users/${dan.id}:grantAdmin`, { token: root.token });
    assert.equal(granted.status, 200, granted.text);
    assert.equal(granted.body.admin_source, 'granted');
    assert.equal((await t.request('GET', '/v1/admin/users', { token: dan.token })).status, 200);
    // The config's admin cannot lose the role through the API, nor anyone their own.
    const fromConfig = await t.request('POST', `/v1/admin/users/${root.id}:revokeAdmin`, { token: dan.token });
    assert.equal(fromConfig.body.error.reason, 'ADMIN_FROM_CONFIG');
    const self = await t.request('POST', `/v1/admin/users/${dan.id}:revokeAdmin`, { token: dan.token });
    assert.equal(self.body.error.reason, 'NOT_YOURSELF');
    assert.equal((await t.request('POST', `/v1/admin/users/${dan.id}:revokeAdmin`, { token: root.token })).body.admin_source, null);
    // Revoked: refused on the next request, with the same session.
    assert.equal((await t.request('GET', '/v1/admin/users', { token: dan.token })).status, 403);
  });

  test('a disabled account: its sessions, its sign-in and the API tokens it created stop at once, and work again when enabled', async () => {
    const eve = await t.user('eve');
    const ws = (await t.workspace(eve, 'Eve Co')).id;
    const tokenRes = await t.request('POST', '/v1/api_tokens', { token: eve.token, headers: { 'svc-context': ws }, body: { name: 'ci' } });
    assert.equal(tokenRes.status, 201, tokenRes.text);
    const apiToken = tokenRes.body.token;
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: apiToken })).status, 200);

    const self = await t.request('POST', `/v1/admin/users/${root.id}:disable`, { token: root.token });
    assert.equal(self.body.error.reason, 'NOT_YOURSELF');
    const disabled = await t.request('POST', `/v1/admin/users/${eve.id}:disable`, { token: root.token });
    assert.equal(disabled.status, 200, disabled.text);
    assert.ok(disabled.body.disabled_at > 0);
    // Its sessions are signed out; the tokens it created say why they stop.
    assert.equal((await t.request('GET', '/v1/me', { token: eve.token })).status, 401);
    const byToken = await t.request('GET', `/v1/workspaces/${ws}`, { token: apiToken });
    assert.equal(byToken.status, 401, byToken.text);
    assert.equal(byToken.body.error.reason, 'ACCOUNT_DISABLED');
    assert.equal((await signIn(eve.email, 'wrong password')).body.error.reason, 'INVALID_CREDENTIALS', 'no word on the state to whoever lacks the password');
    assert.equal((await signIn(eve.email, eve.password)).body.error.reason, 'ACCOUNT_DISABLED');
    // No reset mail for a disabled account (the answer is the same).
    const before = await mailCount(eve.email);
    assert.equal((await askReset(eve.email, '10.3.0.1')).status, 200);
    assert.equal(await mailCount(eve.email), before);

    assert.equal((await t.request('POST', `/v1/admin/users/${eve.id}:enable`, { token: root.token })).body.disabled_at, null);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: apiToken })).status, 200);
    assert.equal((await t.request('GET', '/v1/me', { token: eve.token })).status, 401, 'its sessions were signed out when disabled');
    assert.equal((await signIn(eve.email, eve.password)).status, 201);
  });

  test('deleting an account: refused while it owns a workspace; then gone with its tokens and memberships', async () => {
    const fay = await t.user('fay');
    const gus = await t.user('gus');
    const ws = (await t.workspace(fay, 'Fay Co')).id;
    await t.addMember(fay, ws, gus, 'admin');
    const listed = (await t.request('GET', '/v1/admin/users?limit=100', { token: root.token })).body.data.find((u: any) => u.id === fay.id);
    assert.deepEqual(listed.owned_workspaces.map((w: any) => w.id), [ws]);
    const refused = await t.request('DELETE', `/v1/admin/users/${fay.id}`, { token: root.token });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.reason, 'OWNS_WORKSPACES');
    assert.match(refused.body.error.message, /fay-co/);
    assert.equal((await t.request('GET', '/v1/me', { token: fay.token })).status, 200, 'nothing changed');

    const gusToken = (await t.request('POST', '/v1/api_tokens', { token: gus.token, headers: { 'svc-context': ws }, body: { name: 'gus ci' } })).body.token;
    const gone = await t.request('DELETE', `/v1/admin/users/${gus.id}`, { token: root.token });
    assert.equal(gone.status, 200, gone.text);
    assert.equal(gone.body.deleted_api_tokens, 1);
    assert.equal((await t.request('GET', '/v1/me', { token: gus.token })).status, 401);
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: gusToken })).status, 401);
    const members = await t.request('GET', `/v1/workspaces/${ws}/members`, { token: fay.token });
    assert.deepEqual(members.body.data.map((m: any) => m.user_id), [fay.id]);
    assert.equal((await t.request('GET', `/v1/admin/users/${gus.id}`, { token: root.token })).status, 404);
    assert.equal((await t.request('DELETE', `/v1/admin/users/${root.id}`, { token: root.token })).body.error.reason, 'NOT_YOURSELF');
  });

  test('an admin makes a reset link without mail; the current password works until it is used', async () => {
    const hal = await t.user('hal');
    const before = await mailCount(hal.email);
    const link = await t.request('POST', `/v1/admin/users/${hal.id}:resetPassword`, { token: root.token });
    assert.equal(link.status, 200, link.text);
    assert.equal(link.headers['cache-control'], 'no-store');
    assert.match(link.body.url, /^http:\/\/svc\.test\/reset-password#[A-Za-z0-9]{32}$/);
    assert.equal(await mailCount(hal.email), before);
    assert.equal((await signIn(hal.email, hal.password)).status, 201);
    const token = new URL(link.body.url).hash.slice(1);
    assert.equal((await t.request('POST', '/v1/password_resets:complete', { body: { token, new_password: 'hal has a new one now' } })).status, 200);
    assert.equal((await signIn(hal.email, hal.password)).status, 401);
  });

  test('an invitation is e-mailed with its link, once (an idempotent replay sends nothing more)', async () => {
    const kim = await t.user('kim');
    const ws = (await t.workspace(kim, 'Kim Co')).id;
    const invite = () => t.request('POST', `/v1/workspaces/${ws}/members`, { token: kim.token, headers: { 'idempotency-key': 'invite-lee' }, body: { email: 'Lee@Example.test', role: 'admin' } });
    const res = await invite();
    assert.equal(res.status, 202, res.text);
    const mail = await mailTo('lee@example.test');
    assert.deepEqual([mail.kind, mail.user_id, mail.subject], ['invitation', null, 'Join Kim Co on svc']);
    assert.ok(mail.body.includes(res.body.accept_url), mail.body);
    assert.ok(mail.body.includes(`${kim.email} invites you to join the workspace Kim Co on svc as an admin.`), mail.body);
    assert.equal((await invite()).status, 202);
    assert.equal(await mailCount('lee@example.test'), 1);
  });

  test('notifications are e-mailed by the user\'s choice', async () => {
    const ivy = await t.user('ivy');
    const patched = await t.request('PATCH', '/v1/me', { token: ivy.token, body: { notification_email: 'important', name: 'Ivy' } });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual([patched.body.notification_email, patched.body.name], ['important', 'Ivy']);
    assert.equal((await t.request('PATCH', '/v1/me', { token: ivy.token, body: { notification_email: 'sometimes' } })).status, 400);
    assert.equal((await t.request('PATCH', '/v1/me', { token: ivy.token, body: {} })).status, 400);
    const changed = await t.request('POST', '/v1/me/password', { token: ivy.token, body: { current_password: ivy.password, new_password: 'ivy has another password' } });
    assert.equal(changed.status, 200, changed.text);
    const mail = await mailTo(ivy.email);
    assert.equal(mail.kind, 'notification');
    assert.match(mail.body, /account page/);
    // `none` (the default) mails nothing.
    const jay = await t.user('jay');
    await t.request('POST', '/v1/me/password', { token: jay.token, body: { current_password: jay.password, new_password: 'jay has another password' } });
    assert.equal((await t.request('GET', '/v1/notifications', { token: jay.token })).body.data.length, 1);
    assert.equal(await mailCount(jay.email), 0);
  });
});
