// The web app's credential (API.md 8.8): the session cookie set by POST /v1/auth/browser_session
// is accepted by the JSON API, and every call with it but GET and HEAD must carry x-svc-csrf, so a
// cross-site form or fetch can change nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('the web app session cookie on the JSON API', () => {
  let t: TestApp;
  let alice: TestUser;
  let cookie: string;

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
  });
  after(() => t.close());

  test('signing a browser in needs the CSRF header, and puts the token only in an HttpOnly cookie', async () => {
    const body = { email: alice.email, password: alice.password };
    const bare = await t.request('POST', '/v1/auth/browser_session', { body });
    assert.equal(bare.status, 403);
    assert.equal(bare.body.error.reason, 'CSRF_HEADER_REQUIRED');
    assert.equal(bare.headers['set-cookie'], undefined);

    const res = await t.request('POST', '/v1/auth/browser_session', { body, headers: { 'x-svc-csrf': '1' } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ['expires_at', 'user_id']);
    const setCookie = String(res.headers['set-cookie']);
    assert.match(setCookie, /^svc_session=[A-Za-z0-9]{32}; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax$/);
    cookie = setCookie.split(';')[0]!;
  });

  test('GET with the cookie alone works; the caller is the user, via the cookie', async () => {
    const me = await t.request('GET', '/v1/me', { headers: { cookie: `other=1; ${cookie}` } });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, alice.id);
    assert.equal(me.body.credential, 'cookie');
  });

  test('a write with the cookie and without the header changes nothing: JSON, a form post, any method', async () => {
    const before = (await t.request('GET', '/v1/workspaces', { token: alice.token })).body.data.length;
    const json = await t.request('POST', '/v1/workspaces', { headers: { cookie }, body: { name: 'Forged' } });
    assert.equal(json.status, 403);
    assert.equal(json.body.error.reason, 'CSRF_HEADER_REQUIRED');
    const form = await t.request('POST', '/v1/workspaces', { headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=Forged' });
    assert.equal(form.status, 403);
    const del = await t.request('DELETE', '/v1/auth/sessions/current', { headers: { cookie } });
    assert.equal(del.status, 403);
    assert.equal((await t.request('GET', '/v1/workspaces', { token: alice.token })).body.data.length, before);
  });

  test('with the header a write goes through as the user; a bearer token wins over the cookie', async () => {
    const ws = await t.request('POST', '/v1/workspaces', { headers: { cookie, 'x-svc-csrf': '1' }, body: { name: 'From the app' } });
    assert.equal(ws.status, 201, JSON.stringify(ws.body));
    const bob = await t.user('bob');
    const me = await t.request('GET', '/v1/me', { token: bob.token, headers: { cookie } });
    assert.equal(me.body.id, bob.id);
    assert.equal(me.body.credential, 'session');
  });

  test('a cookie that is no session is 401; signing out revokes the session and clears the cookie', async () => {
    const forged = await t.request('GET', '/v1/me', { headers: { cookie: 'svc_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } });
    assert.equal(forged.status, 401);
    const out = await t.request('DELETE', '/v1/auth/sessions/current', { headers: { cookie, 'x-svc-csrf': '1' } });
    assert.equal(out.status, 204);
    assert.match(String(out.headers['set-cookie']), /^svc_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Lax$/);
    assert.equal((await t.request('GET', '/v1/me', { headers: { cookie } })).status, 401);
  });
});
