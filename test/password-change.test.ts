// Changing one's password (issue 34, "People"): POST /v1/me/password with the current password,
// refused and throttled like a sign-in when it is wrong, the new one checked by the one rule; then
// every other session of the account stops at once, the asking one and the workspaces' API tokens
// keep working, and the account gets a security notice. Bad input changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, withClockStill, type TestApp, type TestUser } from './harness.js';

describe('changing a password', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  const change = (token: string, body: unknown) => t.request('POST', '/v1/me/password', { token, body });
  const signIn = (u: { email: string }, password: string) => t.request('POST', '/v1/auth/sessions', { body: { email: u.email, password } });
  const me = (token: string) => t.request('GET', '/v1/me', { token });

  /** A user with two sessions of their own: `token` (this browser) and `other` (another device). */
  async function person(name: string): Promise<TestUser & { other: string }> {
    const u = await t.user(name);
    const other = await signIn(u, u.password);
    assert.equal(other.status, 201, other.text);
    return { ...u, other: other.body.token };
  }

  test('the current password is required: wrong, missing or the same as the new one is 400 and changes nothing', async () => {
    const u = await person('ada');
    const wrong = await change(u.token, { current_password: 'not it at all', new_password: 'a brand new password' });
    assert.equal(wrong.status, 400, wrong.text);
    assert.equal(wrong.body.error.reason, 'INVALID_CREDENTIALS');
    assert.deepEqual(wrong.body.error.field_violations.map((v: any) => v.field), ['body.current_password']);
    const same = await change(u.token, { current_password: u.password, new_password: u.password });
    assert.equal(same.status, 400);
    assert.equal(same.body.error.reason, 'INVALID_PASSWORD');
    assert.deepEqual(same.body.error.field_violations.map((v: any) => v.field), ['body.new_password']);
    for (const body of [{ current_password: u.password, new_password: 'short' }, { new_password: 'a brand new password' }, { current_password: u.password, new_password: 'x'.repeat(257) }, { current_password: u.password, new_password: 'a brand new password', extra: 1 }]) {
      const res = await change(u.token, body);
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    // Nothing changed: the old password signs in, both sessions work, no notice.
    assert.equal((await signIn(u, u.password)).status, 201);
    assert.equal((await me(u.other)).status, 200);
    const notes = await t.request('GET', '/v1/notifications', { token: u.token });
    assert.equal(notes.body.data.filter((n: any) => n.type === 'password_changed').length, 0);
  });

  test('changed: other sessions stop at once, this one and API tokens go on, only the new password signs in, and a notice says so', async () => {
    const u = await person('bob');
    const third = (await signIn(u, u.password)).body.token as string;
    const ws = (await t.workspace(u, 'Bob')).id;
    const token = await t.apiToken(u, ws);
    const res = await change(u.token, { current_password: u.password, new_password: 'bob has a new password' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { revoked_sessions: 2 });
    assert.equal((await me(u.token)).status, 200, 'the session that asked stays signed in');
    for (const gone of [u.other, third]) assert.equal((await me(gone)).status, 401, 'another session stopped at once');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: token.token })).status, 200, 'API tokens are the workspace\'s');
    assert.equal((await signIn(u, u.password)).status, 401);
    assert.equal((await signIn(u, 'bob has a new password')).status, 201);
    const [note] = (await t.request('GET', '/v1/notifications', { token: u.token })).body.data.filter((n: any) => n.type === 'password_changed');
    assert.ok(note, 'a password_changed notice');
    assert.deepEqual([note.severity, note.workspace_id, note.resource_type, note.resource_id, note.context.revoked_sessions], ['warning', null, 'user', u.id, '2']);
    assert.match(note.body, /2 other sessions were signed out/);
    // The password is in no answer and no notice.
    assert.ok(!JSON.stringify(note).includes('bob has a new password'));
  });

  test('a workspace API token cannot change a password (403); no credential is 401', async () => {
    const u = await person('cat');
    const ws = (await t.workspace(u, 'Cat')).id;
    const token = await t.apiToken(u, ws);
    assert.equal((await change(token.token, { current_password: u.password, new_password: 'cat has a new password' })).status, 403);
    assert.equal((await t.request('POST', '/v1/me/password', { body: { current_password: u.password, new_password: 'cat has a new password' } })).status, 401);
    assert.equal((await signIn(u, u.password)).status, 201, 'unchanged');
  });

  test('guessing the current password through a session is throttled like a sign-in: 429 with retry-after, then the right one waits too', () => withClockStill(async () => {
    const u = await person('dan');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await change(u.token, { current_password: `guess number ${i}`, new_password: 'dan has a new password' })).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429]);
    const waiting = await change(u.token, { current_password: u.password, new_password: 'dan has a new password' });
    assert.equal(waiting.status, 429);
    assert.equal(waiting.body.error.reason, 'SIGN_IN_THROTTLED');
    assert.ok(Number(waiting.headers['retry-after']) >= 1);
    assert.equal((await signIn(u, u.password)).status, 429, 'the same throttle as a sign-in from this address');
  }));
});
