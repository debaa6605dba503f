// The device authorization grant (RFC 8628) end to end over HTTP: POST /oauth/device/code, the
// /device pages (sign-in, approve, deny, CSRF), and polling POST /oauth/token.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { createLogger } from '../src/platform/logging.js';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, TestApp, type TestUser } from './harness.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const logLines: string[] = [];

/** The app with a trace-level logger whose output the last test searches for secrets. */
async function startLoggedApp(): Promise<TestApp> {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('trace', sink);
  return startTestApp({}, { logger });
}

describe('device authorization grant (RFC 8628)', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;

  async function deviceCode(body: Record<string, string> = {}) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/device/code',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(body).toString(),
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { device_code: string; user_code: string; verification_uri: string; verification_uri_complete: string; expires_in: number; interval: number };
  }

  async function poll(deviceCodeValue: string, extra: Record<string, string> = {}) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: GRANT, device_code: deviceCodeValue, ...extra }).toString(),
    });
    return { status: res.statusCode, body: res.json() as Record<string, string | number>, headers: res.headers };
  }

  async function rowOf(userCode: string) {
    return t.services.db.selectFrom('device_codes').selectAll().where('user_code', '=', userCode.replace('-', '')).executeTakeFirstOrThrow();
  }

  before(async () => {
    t = await startLoggedApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
  });
  afterEach(() => {
    clock.offsetMs = 0;
  });
  after(() => t.close());

  test('POST /oauth/device/code issues a code; only its hash is stored', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/oauth/device/code', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'client_id=svc-cli' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete']);
    assert.match(body.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.ok(body.device_code.length >= 40);
    assert.equal(body.verification_uri, 'http://svc.test/device');
    assert.equal(body.verification_uri_complete, `http://svc.test/device?user_code=${body.user_code}`);
    assert.equal(body.expires_in, 600);
    assert.equal(body.interval, 5);
    const row = await rowOf(body.user_code);
    assert.equal(row.device_code_hash, createHash('sha256').update(body.device_code).digest('hex'));
    assert.ok(!Object.values(row).includes(body.device_code));
    assert.equal(row.client_id, 'svc-cli');
    assert.equal(row.status, 'pending');
  });

  test('device code: JSON and empty bodies work; bad input is an OAuth invalid_request', async () => {
    const json = await t.request('POST', '/oauth/device/code', { body: { client_id: 'my-tool' } });
    assert.equal(json.status, 200);
    assert.equal((await rowOf(json.body.user_code)).client_id, 'my-tool');
    const empty = await t.app.inject({ method: 'POST', url: '/oauth/device/code' });
    assert.equal(empty.statusCode, 200, empty.body);
    assert.equal((await rowOf(empty.json().user_code)).client_id, 'svc-cli');
    for (const body of [{ client_id: 'has spaces <b>' }, { client_id: 'x'.repeat(65) }, { nope: '1' }, { client_id: '' }]) {
      const res = await t.request('POST', '/oauth/device/code', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'invalid_request');
    }
  });

  test('pending, then slow_down when polling faster than the interval; the interval grows and is kept', async () => {
    const code = await deviceCode();
    const first = await poll(code.device_code);
    assert.equal(first.status, 400);
    assert.equal(first.body.error, 'authorization_pending');
    assert.equal(first.headers['cache-control'], 'no-store');

    const fast = await poll(code.device_code);
    assert.equal(fast.body.error, 'slow_down');
    assert.equal((await rowOf(code.user_code)).interval_s, 10);

    // 5 s later was enough before, but the interval is now 10 s: still too fast.
    clock.offsetMs += 5_000;
    assert.equal((await poll(code.device_code)).body.error, 'slow_down');
    assert.equal((await rowOf(code.user_code)).interval_s, 15);

    clock.offsetMs += 15_000;
    assert.equal((await poll(code.device_code)).body.error, 'authorization_pending');
    assert.equal((await rowOf(code.user_code)).interval_s, 15);
  });

  test('denied by the user: access_denied, and the code cannot be approved afterwards', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    await browser.signIn(alice, code.user_code);
    const denied = await browser.decide(code.user_code, 'deny');
    assert.equal(denied.status, 200);
    assert.match(denied.html, /Request denied/);
    const res = await poll(code.device_code);
    assert.equal(res.body.error, 'access_denied');
    const again = await browser.get(`/device?user_code=${code.user_code}`);
    assert.equal(again.status, 409);
    assert.match(again.html, /already been used/);
    assert.doesNotMatch(again.html, /Approve<\/button>/);
  });

  test('expired: expired_token after expires_in; the page says so and refuses approval', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    await browser.signIn(alice);
    const page = await browser.get(`/device?user_code=${code.user_code}`);
    assert.equal(page.status, 200);
    clock.offsetMs += 601_000;
    assert.equal((await poll(code.device_code)).body.error, 'expired_token');
    const late = await browser.post('/device/approve', { user_code: code.user_code, csrf: csrfOf(page.html) });
    assert.equal(late.status, 410);
    assert.match(late.html, /expired/);
    const shown = await browser.get(`/device?user_code=${code.user_code}`);
    assert.equal(shown.status, 410);
    assert.equal((await rowOf(code.user_code)).status, 'pending');
  });

  test('approved: exchanged once for a working session token, then invalid_grant', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    await browser.signIn(alice, code.user_code);
    // Lower case without the dash is what people type; it is the same code.
    const approved = await browser.decide(code.user_code.toLowerCase().replace('-', ''), 'approve');
    assert.equal(approved.status, 200, approved.html);
    assert.match(approved.html, /Device approved/);

    const askedAt = clock.now();
    const res = await poll(code.device_code, { client_id: 'svc-cli' });
    const answeredAt = clock.now();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.match(String(res.body.access_token), /^[A-Za-z0-9]{32}$/);
    assert.equal(res.body.token_type, 'Bearer');
    // A year from the moment the token was issued, between the request and its answer.
    const expiresIn = Number(res.body.expires_in);
    assert.ok(expiresIn <= 365 * 24 * 3600 && expiresIn >= 365 * 24 * 3600 - (answeredAt - askedAt) - 1, String(expiresIn));
    const me = await t.request('GET', '/v1/me', { token: String(res.body.access_token) });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, alice.id);
    assert.equal(me.body.credential, 'session');

    const second = await poll(code.device_code);
    assert.equal(second.status, 400);
    assert.equal(second.body.error, 'invalid_grant');
  });

  test('the whole grant in JSON bodies, as a CLI sends them: code, pending, approval, token; bad JSON is an OAuth error', async () => {
    const issued = await t.request('POST', '/oauth/device/code', { body: { client_id: 'svc-cli' } });
    assert.equal(issued.status, 200, issued.text);
    const pollJson = (body: Record<string, unknown>) => t.request('POST', '/oauth/token', { body });
    const pending = await pollJson({ grant_type: GRANT, device_code: issued.body.device_code, client_id: 'svc-cli' });
    assert.equal(pending.status, 400);
    assert.equal(pending.body.error, 'authorization_pending');

    const browser = new Browser(t);
    await browser.signIn(bob, issued.body.user_code);
    assert.equal((await browser.decide(issued.body.user_code, 'approve')).status, 200);
    clock.offsetMs += 5_000;
    const token = await pollJson({ grant_type: GRANT, device_code: issued.body.device_code, client_id: 'svc-cli' });
    assert.equal(token.status, 200, token.text);
    assert.equal(token.headers['cache-control'], 'no-store');
    assert.equal((await t.request('GET', '/v1/me', { token: token.body.access_token })).body.id, bob.id);

    for (const body of [{}, { grant_type: 5 }, { grant_type: GRANT, device_code: issued.body.device_code, extra: 1 }]) {
      const res = await pollJson(body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error, 'invalid_request', JSON.stringify(body));
      assert.equal(typeof res.body.error_description, 'string');
    }
    for (const url of ['/oauth/token', '/oauth/device/code']) {
      const malformed = await t.request('POST', url, { payload: '{"grant_type":' });
      assert.equal(malformed.status, 400, url);
      assert.equal(malformed.body.error, 'invalid_request', `${url}: malformed JSON answers in the OAuth shape`);
    }
    assert.equal((await pollJson({ grant_type: 'password' })).body.error, 'unsupported_grant_type');
  });

  test('two concurrent polls of an approved code: exactly one token', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    await browser.signIn(bob, code.user_code);
    assert.equal((await browser.decide(code.user_code, 'approve')).status, 200);
    const results = await Promise.all(Array.from({ length: 20 }, () => poll(code.device_code)));
    assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body)));
    assert.ok(results.filter((r) => r.status !== 200).every((r) => r.body.error === 'invalid_grant'));
  });

  test('unknown code, another client\'s code, missing code and unsupported grant types', async () => {
    const unknown = await poll('d'.repeat(43));
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error, 'invalid_grant');
    const code = await deviceCode({ client_id: 'tool-a' });
    assert.equal((await poll(code.device_code, { client_id: 'tool-b' })).body.error, 'invalid_grant');
    const missing = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=${encodeURIComponent(GRANT)}` });
    assert.equal(missing.json().error, 'invalid_request');
    for (const grant of ['password', 'authorization_code', 'urn:ietf:params:oauth:grant-type:device_codeX']) {
      const res = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `grant_type=${encodeURIComponent(grant)}&device_code=x` });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error, 'unsupported_grant_type');
    }
  });

  test('CSRF: approve, deny and sign-out without the session\'s token are refused and change nothing', async () => {
    const code = await deviceCode();
    const mallory = new Browser(t);
    await mallory.signIn(bob);
    const malloryCsrf = csrfOf((await mallory.get('/device')).html);
    const victim = new Browser(t);
    await victim.signIn(alice);
    for (const csrf of [undefined, '', 'x'.repeat(43), malloryCsrf]) {
      for (const action of ['approve', 'deny']) {
        const res = await victim.post(`/device/${action}`, { user_code: code.user_code, ...(csrf !== undefined ? { csrf } : {}) });
        assert.equal(res.status, 403, `${action} ${csrf}`);
        assert.match(res.html, /did not come from this site/);
      }
    }
    const out = await victim.post('/device/sign-out', { csrf: malloryCsrf });
    assert.equal(out.status, 403);
    assert.equal((await rowOf(code.user_code)).status, 'pending');
    assert.equal((await victim.get('/device')).status, 200);
    assert.match((await victim.get('/device')).html, /Signed in as/);
  });

  test('CSRF: sign-in needs the token bound to this browser\'s nonce cookie', async () => {
    const attacker = new Browser(t);
    const attackerPage = await attacker.get('/device');
    const attackerCsrf = csrfOf(attackerPage.html);
    // A victim browser that never loaded the form (or has another nonce) cannot be signed in by a cross-site post.
    const victim = new Browser(t);
    let res = await victim.post('/device/sign-in', { email: bob.email, password: bob.password, csrf: attackerCsrf });
    assert.equal(res.status, 403);
    await victim.get('/device');
    res = await victim.post('/device/sign-in', { email: bob.email, password: bob.password, csrf: attackerCsrf });
    assert.equal(res.status, 403);
    assert.ok(!victim.cookies.has('svc_session'));
    assert.match((await victim.get('/device')).html, /Sign in to connect a device/);
  });

  test('sign-in: wrong password message, then a cookie with the right attributes', async () => {
    const browser = new Browser(t);
    const page = await browser.get('/device?user_code=BCDF-GHJK');
    assert.equal(page.status, 200);
    assert.match(page.html, /<label for="email">/);
    assert.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
    const wrong = await browser.post('/device/sign-in', { email: alice.email, password: 'not the password', csrf: csrfOf(page.html), user_code: 'BCDF-GHJK' });
    assert.equal(wrong.status, 422);
    assert.match(wrong.html, /Wrong email or password/);
    assert.match(wrong.html, /role="alert"/);
    assert.ok(!browser.cookies.has('svc_session'));

    const ok = await browser.post('/device/sign-in', { email: alice.email.toUpperCase(), password: alice.password, csrf: csrfOf(wrong.html), user_code: 'BCDF-GHJK' });
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.location, '/device?user_code=BCDF-GHJK');
    const cookie = ([] as string[]).concat(ok.headers['set-cookie'] as string[]).find((c) => c.startsWith('svc_session='))!;
    assert.match(cookie, /^svc_session=[A-Za-z0-9]{32};/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
    // The whole service: the same cookie signs the web app in to the API.
    assert.match(cookie, /Path=\/;/);
    assert.doesNotMatch(cookie, /Secure/);
    const unknown = await browser.get('/device?user_code=BCDF-GHJK');
    assert.equal(unknown.status, 404);
    assert.match(unknown.html, /not valid/);
  });

  test('the cookie signs the web app in to the JSON API, which reads with it but changes nothing without x-svc-csrf', async () => {
    const browser = new Browser(t);
    await browser.signIn(alice);
    const cookie = `svc_session=${browser.cookies.get('svc_session')}`;
    for (const url of ['/v1/me', '/v1/workspaces']) {
      const res = await t.request('GET', url, { headers: { cookie } });
      assert.equal(res.status, 200, url);
    }
    const write = await t.request('POST', '/v1/workspaces', { headers: { cookie }, body: { name: 'Forged' } });
    assert.equal(write.status, 403);
    assert.equal(write.body.error.reason, 'CSRF_HEADER_REQUIRED');
  });

  test('sign-out revokes the browser session', async () => {
    const browser = new Browser(t);
    await browser.signIn(alice);
    const token = browser.cookies.get('svc_session')!;
    const page = await browser.get('/device');
    const res = await browser.post('/device/sign-out', { csrf: csrfOf(page.html) });
    assert.equal(res.status, 303);
    assert.ok(!browser.cookies.has('svc_session'));
    assert.equal((await t.request('GET', '/v1/me', { token })).status, 401);
    browser.cookies.set('svc_session', token);
    assert.match((await browser.get('/device')).html, /Sign in to connect a device/);
  });

  test('approving while signed out shows the sign-in form and changes nothing', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    const res = await browser.post('/device/approve', { user_code: code.user_code, csrf: 'x' });
    assert.equal(res.status, 403);
    assert.match(res.html, /You are signed out/);
    assert.equal((await rowOf(code.user_code)).status, 'pending');
  });

  test('everything rendered is escaped', async () => {
    const browser = new Browser(t);
    await browser.signIn(alice);
    const evil = '"><script>alert(1)</script>';
    const page = await browser.get(`/device?user_code=${encodeURIComponent(evil)}`);
    assert.equal(page.status, 404);
    assert.doesNotMatch(page.html, /<script>/);
    assert.match(page.html, /&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    const signIn = await new Browser(t).get(`/device?user_code=${encodeURIComponent(evil)}`);
    assert.doesNotMatch(signIn.html, /<script>/);
  });

  test('OpenAPI documents /oauth/device/code and hides the pages', async () => {
    const res = await t.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    const op = res.body.paths['/oauth/device/code']?.post;
    assert.ok(op, 'documented');
    assert.equal(op.operationId, 'oauthDeviceAuthorization');
    assert.ok(op.requestBody.content['application/x-www-form-urlencoded']);
    assert.ok(op.responses['200'] && op.responses['400']);
    for (const path of Object.keys(res.body.paths)) assert.ok(!path.startsWith('/device'), path);
  });

  test('no session token, device code, password or cookie appears in the logs', async () => {
    const code = await deviceCode();
    const browser = new Browser(t);
    await browser.signIn(alice, code.user_code);
    await browser.decide(code.user_code, 'approve');
    const res = await poll(code.device_code);
    const token = String(res.body.access_token);
    assert.match(token, /^[A-Za-z0-9]{32}$/);
    await t.request('GET', '/v1/me', { token });
    const logs = logLines.join('');
    assert.ok(logs.includes('"msg":"request completed"'), 'the logger captured requests');
    for (const secret of [token, code.device_code, alice.password, browser.cookies.get('svc_session')!]) {
      assert.ok(!logs.includes(secret), 'a secret leaked into the logs');
    }
  });
});

describe('device pages behind https', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ SVC_PUBLIC_URL: 'https://svc.example.test/base' });
  });
  after(() => t.close());

  test('cookies are Secure and paths follow the public URL', async () => {
    const user = await t.user();
    const code = (await t.request('POST', '/oauth/device/code', { body: {} })).body;
    assert.match(code.verification_uri_complete, /^https:\/\/svc\.example\.test\/base\/device\?user_code=/);
    const browser = new Browser(t);
    const page = await browser.get('/device');
    assert.match(page.html, /action="\/base\/device\/sign-in"/);
    const res = await browser.post('/device/sign-in', { email: user.email, password: user.password, csrf: csrfOf(page.html) });
    assert.equal(res.status, 303);
    assert.equal(res.headers.location, '/base/device');
    const cookie = ([] as string[]).concat(res.headers['set-cookie'] as string[]).find((c) => c.startsWith('svc_session='))!;
    assert.match(cookie, /; Secure/);
    assert.match(cookie, /Path=\/base\/;/);
  });
});
