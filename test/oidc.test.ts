// Single sign-on (issue 34) against a real OpenID provider running in the test (oidc-provider,
// test/oidc-standin.ts): a browser starts at /v1/auth/oidc/start, signs in at the provider, and
// comes back to /v1/auth/oidc/callback. Users are matched by verified e-mail, lowercased, then by
// the provider's subject once linked; unknown e-mails get an account only with
// SVC_OIDC_CREATE_USERS=true. Tampered state, nonce, replayed codes, expired and foreign sign-ins,
// open redirects and an unreachable provider are refused, each signing nobody in. An account with
// two-factor sign-in on is signed in only once its code is entered on the second-factor page.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { ConfigError, loadConfig } from '../src/config.js';
import { clock } from '../src/platform/clock.js';
import { decrypt, deriveKey, encrypt } from '../src/platform/crypto.js';
import { findUserByEmail } from '../src/modules/users/users.service.js';
import { freePort, startTestApp, type TestApp } from './harness.js';
import { startOidcStandin, type OidcStandin } from './oidc-standin.js';

const CALLBACK = 'http://svc.test/v1/auth/oidc/callback';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
  text: string;
}

/** A browser over app.inject: a cookie jar, and whether it asks for HTML as a navigating browser does. */
class Jar {
  readonly cookies = new Map<string, string>();
  constructor(private readonly t: TestApp, private readonly html = false) {}
  get(url: string): Promise<Answer> {
    return this.send('GET', url);
  }
  /** A form posted as a browser posts one (application/x-www-form-urlencoded). */
  post(url: string, form: Record<string, string>): Promise<Answer> {
    return this.send('POST', url, new URLSearchParams(form).toString());
  }
  private async send(method: 'GET' | 'POST', url: string, form?: string): Promise<Answer> {
    const headers: Record<string, string> = this.html ? { accept: 'text/html,application/xhtml+xml' } : {};
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.t.app.inject({ method, url, headers, ...(form !== undefined ? { payload: form } : {}) });
    for (const line of ([] as string[]).concat((res.headers['set-cookie'] as string | string[] | undefined) ?? [])) {
      const [pair] = line.split(';');
      const i = pair!.indexOf('=');
      const value = pair!.slice(i + 1);
      if (value === '' || /Max-Age=0|expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(pair!.slice(0, i));
      else this.cookies.set(pair!.slice(0, i), value);
    }
    let body: any;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body, text: res.body };
  }
}

/** Starts a sign-in in `jar`; returns the provider's authorization URL. */
async function start(jar: Jar, next?: string): Promise<string> {
  const res = await jar.get(`/v1/auth/oidc/start${next === undefined ? '' : `?next=${encodeURIComponent(next)}`}`);
  assert.equal(res.status, 303, res.text);
  const location = String(res.headers.location);
  assert.ok(jar.cookies.has('svc_oidc_login'), 'the pending sign-in is kept in its cookie');
  return location;
}

const pathOf = (url: URL) => url.pathname + url.search;

describe('single sign-on with an OpenID provider', () => {
  let op: OidcStandin;
  let t: TestApp;
  before(async () => {
    op = await startOidcStandin({ redirectUri: CALLBACK });
    t = await startTestApp(op.env({ SVC_OIDC_NAME: 'Acme SSO' }));
  });
  after(async () => {
    await t.close();
    await op.close();
  });
  afterEach(() => { clock.offsetMs = 0; });

  /** The whole round trip in a new browser: start, the provider's sign-in as `sub`, the callback. */
  async function signInAs(sub: string, next?: string, jar = new Jar(t)) {
    const callback = await op.signIn(await start(jar, next), sub);
    const res = await jar.get(pathOf(callback));
    return { res, jar };
  }
  const me = async (jar: Jar) => (await jar.get('/v1/me')).body;

  test('GET /v1/auth/settings offers the provider by its name; the device sign-in links to it', async () => {
    const res = await t.request('GET', '/v1/auth/settings');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.oidc, { name: 'Acme SSO', start_path: '/v1/auth/oidc/start' });
    const page = await new Jar(t, true).get('/device?user_code=BCDF-GHJK');
    assert.equal(page.status, 200);
    assert.match(page.text, /Sign in with Acme SSO/);
    assert.ok(page.text.includes(`href="/v1/auth/oidc/start?next=${encodeURIComponent('/device?user_code=BCDF-GHJK')}"`), page.text);
  });

  test('an existing user signs in by verified e-mail (any case), lands on next, and is linked by subject', async () => {
    const user = await t.user('ada');
    op.accounts.set('ada-1', { sub: 'ada-1', email: user.email.toUpperCase(), email_verified: true, name: 'Ada' });
    const { res, jar } = await signInAs('ada-1', '/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k?tab=events');
    assert.equal(res.status, 303, res.text);
    assert.equal(res.headers.location, '/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k?tab=events');
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.ok(jar.cookies.has('svc_session'), 'the browser holds a session');
    assert.ok(!jar.cookies.has('svc_oidc_login'), 'the pending sign-in is used up');
    const who = await me(jar);
    assert.equal(who.id, user.id);
    assert.equal(who.credential, 'cookie');

    // The provider changes the account's e-mail: its subject still finds the same user.
    op.accounts.set('ada-1', { sub: 'ada-1', email: 'ada.lovelace@elsewhere.test', email_verified: true });
    const again = await signInAs('ada-1');
    assert.equal(again.res.status, 303, again.res.text);
    assert.equal(again.res.headers.location, '/');
    assert.equal((await me(again.jar)).id, user.id);
  });

  test('an account the operator disabled is refused, whatever the provider says, and signs in again once enabled', async () => {
    const user = await t.user('dora');
    op.accounts.set('dora-1', { sub: 'dora-1', email: user.email, email_verified: true });
    await t.services.admin.disable(user.id, 'operator');
    const refused = await signInAs('dora-1');
    assert.equal(refused.res.status, 401, refused.res.text);
    assert.equal(refused.res.body.error.reason, 'ACCOUNT_DISABLED');
    assert.ok(!refused.jar.cookies.has('svc_session'));
    await t.services.admin.enable(user.id, 'operator');
    const back = await signInAs('dora-1');
    assert.equal(back.res.status, 303, back.res.text);
    assert.equal((await me(back.jar)).id, user.id);
  });

  test('an e-mail the provider has not verified, or no e-mail at all, signs nobody in', async () => {
    const user = await t.user('unverified');
    op.accounts.set('unv-1', { sub: 'unv-1', email: user.email, email_verified: false });
    op.accounts.set('noemail-1', { sub: 'noemail-1' });
    for (const sub of ['unv-1', 'noemail-1']) {
      const { res, jar } = await signInAs(sub);
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.reason, 'OIDC_EMAIL_NOT_VERIFIED');
      assert.ok(!jar.cookies.has('svc_session'));
      assert.equal((await jar.get('/v1/me')).status, 401);
    }
    // Nothing was linked: verified later, the same account signs in as the user.
    op.accounts.set('unv-1', { sub: 'unv-1', email: user.email, email_verified: true });
    const { res, jar } = await signInAs('unv-1');
    assert.equal(res.status, 303, res.text);
    assert.equal((await me(jar)).id, user.id);
  });

  test('an unknown e-mail is refused (accounts are not made at sign-in by default); a browser gets a page saying whom to ask', async () => {
    op.accounts.set('stranger-1', { sub: 'stranger-1', email: 'Stranger@Example.test', email_verified: true });
    const { res } = await signInAs('stranger-1');
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.reason, 'OIDC_NO_ACCOUNT');
    assert.equal(await findUserByEmail(t.services.db, 'stranger@example.test'), undefined);

    const browser = new Jar(t, true);
    const page = (await signInAs('stranger-1', '/settings/tokens', browser)).res;
    assert.equal(page.status, 403);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.text, /Could not sign you in/);
    assert.match(page.text, /There is no account for stranger@example\.test on this service: ask someone on your team to invite you/);
    assert.ok(page.text.includes(`href="/v1/auth/oidc/start?next=${encodeURIComponent('/settings/tokens')}"`), 'try again returns to where it started');
    assert.ok(!browser.cookies.has('svc_session'));
  });

  test('the subject decides once linked; an account already linked to another subject of the provider is refused', async () => {
    const bea = await t.user('bea');
    const cid = await t.user('cid');
    op.accounts.set('bea-1', { sub: 'bea-1', email: bea.email, email_verified: true });
    assert.equal((await signInAs('bea-1')).res.status, 303);
    // Another account of the provider claims Bea's e-mail: not linked beside the first.
    op.accounts.set('bea-2', { sub: 'bea-2', email: bea.email, email_verified: true });
    const { res, jar } = await signInAs('bea-2');
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.reason, 'OIDC_IDENTITY_CONFLICT');
    assert.equal((await jar.get('/v1/me')).status, 401);
    // Bea's account at the provider now says Cid's e-mail: it still signs in as Bea, never as Cid.
    op.accounts.set('bea-1', { sub: 'bea-1', email: cid.email, email_verified: true });
    const again = await signInAs('bea-1');
    assert.equal(again.res.status, 303, again.res.text);
    assert.equal((await me(again.jar)).id, bea.id);
  });

  test('next is a local path of the web app or the device page; anything else ends at /', async () => {
    const user = await t.user('nexter');
    op.accounts.set('next-1', { sub: 'next-1', email: user.email, email_verified: true });
    const cases: Array<[string, string]> = [
      ['/device?user_code=BCDF-GHJK', '/device?user_code=BCDF-GHJK'],
      ['/operations/op_1', '/operations/op_1'],
      ['//evil.example/x', '/'], ['https://evil.example/', '/'], ['/\\evil.example', '/'], ['javascript:alert(1)', '/'],
      ['/v1/me', '/'], ['/oauth/token', '/'], ['/a//b', '/'], ['evil.example', '/'],
    ];
    for (const [next, expected] of cases) {
      const { res } = await signInAs('next-1', next);
      assert.equal(res.status, 303, `${next}: ${res.text}`);
      assert.equal(res.headers.location, expected, next);
    }
  });

  test('a callback with another state, without this browser\'s pending sign-in, or after 10 minutes signs nobody in', async () => {
    const user = await t.user('state');
    op.accounts.set('state-1', { sub: 'state-1', email: user.email, email_verified: true });

    // The state changed on the way back.
    const jar = new Jar(t);
    const callback = await op.signIn(await start(jar), 'state-1');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', 'x' + tampered.searchParams.get('state'));
    const res = await jar.get(pathOf(tampered));
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    assert.ok(!jar.cookies.has('svc_session'));

    // A callback URL opened in another browser (login CSRF: an attacker's sign-in handed to a victim).
    const attacker = new Jar(t);
    const handed = await op.signIn(await start(attacker), 'state-1');
    const victim = new Jar(t);
    const stolen = await victim.get(pathOf(handed));
    assert.equal(stolen.status, 400);
    assert.equal(stolen.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    assert.ok(!victim.cookies.has('svc_session'));

    // Two sign-ins in one browser: the later one's cookie is the one that counts.
    const twice = new Jar(t);
    const first = await start(twice);
    await start(twice);
    const firstBack = await twice.get(pathOf(await op.signIn(first, 'state-1')));
    assert.equal(firstBack.status, 400);
    assert.equal(firstBack.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');

    // Too late: the pending sign-in lasts 10 minutes.
    const slow = new Jar(t);
    const late = await op.signIn(await start(slow), 'state-1');
    clock.offsetMs = 601_000;
    const expired = await slow.get(pathOf(late));
    assert.equal(expired.status, 400);
    assert.equal(expired.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    assert.ok(!slow.cookies.has('svc_session'));
  });

  test('an ID token with another nonce, or a code used twice, signs nobody in', async () => {
    const user = await t.user('nonce');
    op.accounts.set('nonce-1', { sub: 'nonce-1', email: user.email, email_verified: true });
    const key = deriveKey(t.config.secretKey, 'oidc-login');

    // The pending sign-in's nonce is not the one the provider put in the ID token.
    const jar = new Jar(t);
    const callback = await op.signIn(await start(jar), 'nonce-1');
    const pending = JSON.parse(decrypt(key, jar.cookies.get('svc_oidc_login')!));
    jar.cookies.set('svc_oidc_login', encrypt(key, JSON.stringify({ ...pending, n: `${pending.n}x` })));
    const res = await jar.get(pathOf(callback));
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.reason, 'OIDC_RESPONSE_REJECTED');
    assert.ok(!jar.cookies.has('svc_session'));

    // A code used once already (its pending sign-in copied back): the provider refuses the second exchange.
    const once = new Jar(t);
    const back = await op.signIn(await start(once), 'nonce-1');
    const saved = once.cookies.get('svc_oidc_login')!;
    assert.equal((await once.get(pathOf(back))).status, 303);
    const replay = new Jar(t);
    replay.cookies.set('svc_oidc_login', saved);
    const replayed = await replay.get(pathOf(back));
    assert.equal(replayed.status, 403, replayed.text);
    assert.equal(replayed.body.error.reason, 'OIDC_RESPONSE_REJECTED');
    assert.ok(!replay.cookies.has('svc_session'));
  });

  test('the provider sending the browser back with an error signs nobody in and says so', async () => {
    const jar = new Jar(t);
    const authorize = new URL(await start(jar));
    const back = new URL(CALLBACK);
    back.searchParams.set('error', 'access_denied');
    back.searchParams.set('error_description', 'End-User aborted interaction');
    back.searchParams.set('state', authorize.searchParams.get('state')!);
    back.searchParams.set('iss', op.issuer);
    const res = await jar.get(pathOf(back));
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.reason, 'OIDC_RESPONSE_REJECTED');
    assert.match(res.body.error.message, /access_denied: End-User aborted interaction/);
  });
});

/** The TOTP code of `secret` at the service's clock, `steps` 30-second steps from now (as test/two-factor.test.ts). */
function codeOf(secret: string, steps = 0): string {
  return new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: clock.nowMs() + steps * 30_000 });
}

/** The clock on to the start of the next step, so the next code is a new one (a code signs in once). */
function nextStep(): void {
  clock.offsetMs += 30_000 - (clock.nowMs() % 30_000) + 1_000;
}

const SECOND_FACTOR = '/v1/auth/oidc/second_factor';

function csrfOf(page: Answer): string {
  const m = /name="csrf" value="([^"]+)"/.exec(page.text);
  assert.ok(m, `the page has a csrf field: ${page.text}`);
  return m[1]!;
}

describe('single sign-on of an account with two factors', () => {
  let op: OidcStandin;
  let t: TestApp;
  before(async () => {
    op = await startOidcStandin({ redirectUri: CALLBACK });
    t = await startTestApp(op.env({ SVC_OIDC_NAME: 'Acme SSO' }));
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
    await op.close();
  });

  /** A user with TOTP on (through the API, as a person does it from the account page), known to the provider as `sub`. */
  async function withTwoFactors(name: string) {
    const u = await t.user(name);
    const enrolled = await t.request('POST', '/v1/me/two_factor:enroll', { token: u.token });
    assert.equal(enrolled.status, 200, enrolled.text);
    const confirmed = await t.request('POST', '/v1/me/two_factor:confirm', { token: u.token, body: { code: codeOf(enrolled.body.secret) } });
    assert.equal(confirmed.status, 200, confirmed.text);
    nextStep();
    const sub = `${name}-sub`;
    op.accounts.set(sub, { sub, email: u.email, email_verified: true });
    return { ...u, sub, secret: enrolled.body.secret as string, recovery: confirmed.body.recovery_codes as string[] };
  }

  /** Through the provider into `jar` as `sub`: the callback's answer, which sends the browser to the code page. */
  async function toCodePage(jar: Jar, sub: string, next?: string): Promise<Answer> {
    const res = await jar.get(pathOf(await op.signIn(await start(jar, next), sub)));
    assert.equal(res.status, 303, res.text);
    assert.equal(res.headers.location, SECOND_FACTOR);
    return res;
  }

  test('the callback signs nobody in yet; the code page asks for the code; a wrong code asks again; the right one signs in and lands on next', async () => {
    const u = await withTwoFactors('tfa');
    const browser = new Jar(t, true);
    const back = await toCodePage(browser, u.sub, '/clusters?tab=all');
    assert.ok(!browser.cookies.has('svc_session'), 'not signed in at the callback');
    assert.equal((await browser.get('/v1/me')).status, 401);
    const held = ([] as string[]).concat(back.headers['set-cookie'] as string[]).find((c) => c.startsWith('svc_oidc_second_factor='));
    assert.ok(held, 'the waiting sign-in is kept in its cookie');
    assert.match(held, /Path=\/v1\/auth\/oidc\/second_factor(;|$)/);
    assert.match(held, /HttpOnly/);
    assert.match(held, /Max-Age=300/);
    assert.doesNotMatch(held, new RegExp(u.id), 'sealed: the user id is not readable');

    const page = await browser.get(SECOND_FACTOR);
    assert.equal(page.status, 200, page.text);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.doesNotMatch(page.text, /<script/);
    assert.ok(page.text.includes(u.email), 'the page says which account');
    assert.match(page.text, /<form method="post" action="\/v1\/auth\/oidc\/second_factor">/);
    assert.match(page.text, /name="code"/);

    const wrong = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret, 5), csrf: csrfOf(page) });
    assert.equal(wrong.status, 401, wrong.text);
    assert.match(wrong.text, /That code is not right, or was used already/);
    assert.ok(!browser.cookies.has('svc_session'));
    const empty = await browser.post(SECOND_FACTOR, { code: '', csrf: csrfOf(page) });
    assert.equal(empty.status, 401);
    assert.match(empty.text, /Enter the code from your authenticator app/);

    const right = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: csrfOf(wrong) });
    assert.equal(right.status, 303, right.text);
    assert.equal(right.headers.location, '/clusters?tab=all');
    assert.ok(browser.cookies.has('svc_session'));
    assert.ok(!browser.cookies.has('svc_oidc_second_factor'), 'the waiting sign-in is used up');
    const who = (await browser.get('/v1/me')).body;
    assert.equal(who.id, u.id);
    assert.equal(who.credential, 'cookie');
    // Used up: the page now says to sign in again.
    const after = await browser.get(SECOND_FACTOR);
    assert.equal(after.status, 400);
    assert.match(after.text, /sign in again/i);
  });

  test('a code signs in once: the same code in another sign-in is refused; a recovery code works once; JSON clients get the reasons', async () => {
    const u = await withTwoFactors('replay');
    const code = codeOf(u.secret);
    const first = new Jar(t, true);
    await toCodePage(first, u.sub);
    assert.equal((await first.post(SECOND_FACTOR, { code, csrf: csrfOf(await first.get(SECOND_FACTOR)) })).status, 303);

    const api = new Jar(t);
    await toCodePage(api, u.sub);
    const csrf = csrfOf(await api.get(SECOND_FACTOR));
    const replayed = await api.post(SECOND_FACTOR, { code, csrf });
    assert.equal(replayed.status, 401, replayed.text);
    assert.equal(replayed.body.error.reason, 'TWO_FACTOR_CODE_INVALID');
    assert.ok(!api.cookies.has('svc_session'));
    const none = await api.post(SECOND_FACTOR, { csrf });
    assert.equal(none.status, 401);
    assert.equal(none.body.error.reason, 'TWO_FACTOR_CODE_REQUIRED');

    // A recovery code, typed in capitals without dashes: signs in, once.
    const recovery = await api.post(SECOND_FACTOR, { code: u.recovery[0]!.replaceAll('-', '').toUpperCase(), csrf });
    assert.equal(recovery.status, 303, recovery.text);
    assert.equal(recovery.headers.location, '/');
    assert.equal((await api.get('/v1/me')).body.id, u.id);
    const status = await t.request('GET', '/v1/me/two_factor', { token: u.token });
    assert.equal(status.body.recovery_codes_remaining, 9);

    const again = new Jar(t);
    await toCodePage(again, u.sub);
    const spent = await again.post(SECOND_FACTOR, { code: u.recovery[0]!, csrf: csrfOf(await again.get(SECOND_FACTOR)) });
    assert.equal(spent.status, 401);
    assert.equal(spent.body.error.reason, 'TWO_FACTOR_CODE_INVALID');
    assert.ok(!again.cookies.has('svc_session'));
  });

  test('the device page\'s link: the code step, then back to the device page with its user code', async () => {
    const u = await withTwoFactors('device');
    const browser = new Jar(t, true);
    await toCodePage(browser, u.sub, '/device?user_code=BCDF-GHJK');
    const done = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: csrfOf(await browser.get(SECOND_FACTOR)) });
    assert.equal(done.status, 303, done.text);
    assert.equal(done.headers.location, '/device?user_code=BCDF-GHJK');
    const device = await browser.get('/device?user_code=BCDF-GHJK');
    assert.ok(device.text.includes(u.email), 'signed in on the device page');
  });

  test('after 5 minutes the waiting sign-in is gone: even the right code signs nobody in, and the page says to sign in again', async () => {
    const u = await withTwoFactors('slow');
    const browser = new Jar(t, true);
    await toCodePage(browser, u.sub, '/workspaces');
    const csrf = csrfOf(await browser.get(SECOND_FACTOR));
    clock.offsetMs += 301_000;
    const page = await browser.get(SECOND_FACTOR);
    assert.equal(page.status, 400, page.text);
    assert.match(page.text, /waited more than 5 minutes for its code, or was started in another browser: sign in again/);
    assert.ok(page.text.includes(`href="/v1/auth/oidc/start?next=${encodeURIComponent('/workspaces')}"`), 'signing in again returns to where it started');
    const form = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf });
    assert.equal(form.status, 400, form.text);
    assert.match(form.text, /sign in again/);

    const api = new Jar(t);
    await toCodePage(api, u.sub);
    const apiCsrf = csrfOf(await api.get(SECOND_FACTOR));
    clock.offsetMs += 301_000;
    const late = await api.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: apiCsrf });
    assert.equal(late.status, 400, late.text);
    assert.equal(late.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    assert.ok(!api.cookies.has('svc_session'));
    assert.ok(!browser.cookies.has('svc_session'));
  });

  test('another browser\'s waiting sign-in, a forged form, or none at all signs nobody in', async () => {
    const u = await withTwoFactors('other');
    const victim = new Jar(t);
    await toCodePage(victim, u.sub);
    const victimCsrf = csrfOf(await victim.get(SECOND_FACTOR));

    // Nothing waiting in this browser.
    const empty = new Jar(t);
    const none = await empty.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: victimCsrf });
    assert.equal(none.status, 400, none.text);
    assert.equal(none.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');

    // The waiting sign-in's cookie copied into another browser, which has its own nonce and form: it is bound to the first browser.
    const thief = new Jar(t);
    await thief.get('/device');
    assert.ok(thief.cookies.has('svc_signin_nonce'));
    thief.cookies.set('svc_oidc_second_factor', victim.cookies.get('svc_oidc_second_factor')!);
    const stolenPage = await thief.get(SECOND_FACTOR);
    assert.equal(stolenPage.status, 400);
    assert.equal(stolenPage.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    const stolen = await thief.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: victimCsrf });
    assert.equal(stolen.status, 400, stolen.text);
    assert.equal(stolen.body.error.reason, 'OIDC_SIGN_IN_EXPIRED');
    assert.ok(!thief.cookies.has('svc_session'));

    // A sealed cookie of the other kind (the pending login) is no waiting sign-in.
    const confused = new Jar(t);
    await start(confused);
    confused.cookies.set('svc_oidc_second_factor', confused.cookies.get('svc_oidc_login')!);
    assert.equal((await confused.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: victimCsrf })).status, 400);

    // The victim's own form without its CSRF token, or with another browser's: refused before the code is looked at.
    for (const csrf of [undefined, csrfOf(await new Jar(t).get('/device'))]) {
      const forged = await victim.post(SECOND_FACTOR, { code: codeOf(u.secret), ...(csrf ? { csrf } : {}) });
      assert.equal(forged.status, 403, forged.text);
      assert.equal(forged.body.error.reason, 'CSRF_TOKEN_INVALID');
    }
    assert.ok(!victim.cookies.has('svc_session'));
    // The victim can still finish, with the code those forged forms carried (they checked nothing).
    const finished = await victim.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: victimCsrf });
    assert.equal(finished.status, 303, finished.text);
    assert.equal((await victim.get('/v1/me')).body.id, u.id);
  });

  test('wrong codes are throttled as at the other sign-ins: a 429 page, and even the right code waits', async () => {
    const u = await withTwoFactors('guesser');
    const browser = new Jar(t, true);
    await toCodePage(browser, u.sub);
    let page = await browser.get(SECOND_FACTOR);
    let answer: Answer | undefined;
    for (let i = 0; i < 8; i++) {
      answer = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret, 10 + i), csrf: csrfOf(page) });
      if (answer.status === 429) break;
      assert.equal(answer.status, 401, answer.text);
      page = answer;
    }
    assert.equal(answer!.status, 429, 'throttled after the free wrong codes');
    assert.ok(Number(answer!.headers['retry-after']) >= 1);
    assert.match(answer!.text, /Too many wrong codes for this account or from this network\. Wait/);
    const right = await browser.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf: csrfOf(answer!) });
    assert.equal(right.status, 429, 'the right code waits too');
    assert.ok(!browser.cookies.has('svc_session'));
  });

  test('the operator disabling the account while the code is asked: refused', async () => {
    const u = await withTwoFactors('held');
    const api = new Jar(t);
    await toCodePage(api, u.sub);
    const csrf = csrfOf(await api.get(SECOND_FACTOR));
    await t.services.admin.disable(u.id, 'operator');
    const res = await api.post(SECOND_FACTOR, { code: codeOf(u.secret), csrf });
    assert.equal(res.status, 401, res.text);
    assert.equal(res.body.error.reason, 'ACCOUNT_DISABLED');
    assert.ok(!api.cookies.has('svc_session'));
  });
});

describe('single sign-on: accounts made at first sign-in (SVC_OIDC_CREATE_USERS=true)', () => {
  let op: OidcStandin;
  let t: TestApp;
  before(async () => {
    op = await startOidcStandin({ redirectUri: CALLBACK });
    t = await startTestApp(op.env({ SVC_OIDC_CREATE_USERS: 'true' }));
  });
  after(async () => {
    await t.close();
    await op.close();
  });

  test('an unknown verified e-mail gets an account, signed in, with the name the provider gives; its password is nobody\'s', async () => {
    op.accounts.set('new-1', { sub: 'new-1', email: 'Newcomer@Example.TEST', email_verified: true, name: 'New Comer' });
    const jar = new Jar(t);
    const back = await op.signIn(await start(jar, '/workspaces'), 'new-1');
    const res = await jar.get(pathOf(back));
    assert.equal(res.status, 303, res.text);
    assert.equal(res.headers.location, '/workspaces');
    const who = (await jar.get('/v1/me')).body;
    assert.equal(who.email, 'newcomer@example.test');
    assert.equal(who.name, 'New Comer');
    const row = await findUserByEmail(t.services.db, 'newcomer@example.test');
    assert.equal(row?.id, who.id);
    assert.ok(row!.password_hash.startsWith('scrypt$'), 'a real hash of a password nobody was given');
    // The same account again: the same user, not a second one.
    const again = new Jar(t);
    assert.equal((await again.get(pathOf(await op.signIn(await start(again), 'new-1')))).status, 303);
    assert.equal((await again.get('/v1/me')).body.id, who.id);
  });

  test('an unverified e-mail still makes nothing', async () => {
    op.accounts.set('new-2', { sub: 'new-2', email: 'unverified-new@example.test', email_verified: false });
    const jar = new Jar(t);
    const res = await jar.get(pathOf(await op.signIn(await start(jar), 'new-2')));
    assert.equal(res.status, 403);
    assert.equal(res.body.error.reason, 'OIDC_EMAIL_NOT_VERIFIED');
    assert.equal(await findUserByEmail(t.services.db, 'unverified-new@example.test'), undefined);
  });
});

describe('single sign-on: the provider cannot be reached', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    port = await freePort();
    // Nothing listens there: the service starts all the same (the provider is read at the first sign-in).
    t = await startTestApp({ SVC_OIDC_ISSUER: `http://127.0.0.1:${port}`, SVC_OIDC_CLIENT_ID: 'svc', SVC_OIDC_CLIENT_SECRET: 'not-a-real-secret' });
  });
  after(() => t.close());

  test('start answers 503 with a readable page, and works once the provider is back (a failure is not kept)', async () => {
    const api = await new Jar(t).get('/v1/auth/oidc/start');
    assert.equal(api.status, 503, api.text);
    assert.equal(api.body.error.reason, 'OIDC_PROVIDER_UNAVAILABLE');
    assert.equal(api.headers['retry-after'], '30');
    const browser = new Jar(t, true);
    const page = await browser.get('/v1/auth/oidc/start?next=%2Fdevice');
    assert.equal(page.status, 503);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.text, /The sign-in provider cannot be reached right now\. Try again in a minute/);
    assert.ok(!browser.cookies.has('svc_oidc_login'));

    const op = await startOidcStandin({ redirectUri: CALLBACK, port });
    try {
      const jar = new Jar(t);
      const location = await start(jar);
      assert.ok(location.startsWith(`${op.issuer}/`), location);
      const authorize = new URL(location);
      assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
      assert.ok(authorize.searchParams.get('nonce'));
      assert.ok(authorize.searchParams.get('state'));
      assert.equal(authorize.searchParams.get('redirect_uri'), CALLBACK);
    } finally {
      await op.close();
    }
  });
});

describe('single sign-on: not set up', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('settings say null, the routes 404 OIDC_NOT_CONFIGURED, the device sign-in shows no link', async () => {
    assert.equal((await t.request('GET', '/v1/auth/settings')).body.oidc, null);
    for (const path of ['/v1/auth/oidc/start', '/v1/auth/oidc/callback?code=x&state=y']) {
      const res = await t.request('GET', path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.reason, 'OIDC_NOT_CONFIGURED', path);
    }
    const page = await new Jar(t, true).get('/device');
    assert.doesNotMatch(page.text, /Sign in with/);
  });
});

describe('single sign-on: configuration', () => {
  const base = { SVC_SECRET_KEY: '0'.repeat(64), SVC_DATA_DIR: '/tmp/svc-oidc-config-test' };
  const refused = (env: NodeJS.ProcessEnv, message: RegExp) =>
    assert.throws(() => loadConfig({ ...base, ...env }), (err: unknown) => err instanceof ConfigError && message.test(err.message));

  test('issuer, client id and secret go together; the issuer is https (http only on loopback); the secret is never shown', () => {
    refused({ SVC_OIDC_CLIENT_ID: 'x' }, /SVC_OIDC_CLIENT_ID is set but SVC_OIDC_ISSUER is not/);
    refused({ SVC_OIDC_ISSUER: 'https://id.example.com' }, /needs SVC_OIDC_CLIENT_ID and SVC_OIDC_CLIENT_SECRET.*http:\/\/127\.0\.0\.1:8080\/v1\/auth\/oidc\/callback/);
    refused({ SVC_OIDC_ISSUER: 'http://id.example.com', SVC_OIDC_CLIENT_ID: 'a', SVC_OIDC_CLIENT_SECRET: 'b' }, /https \(http only on 127\.0\.0\.1 or localhost\)/);
    refused({ SVC_OIDC_ISSUER: 'https://id.example.com?x=1', SVC_OIDC_CLIENT_ID: 'a', SVC_OIDC_CLIENT_SECRET: 'b' }, /without credentials, query or fragment/);
    refused({ SVC_OIDC_ISSUER: 'https://id.example.com', SVC_OIDC_CLIENT_ID: 'a', SVC_OIDC_CLIENT_SECRET: 'b', SVC_OIDC_CREATE_USERS: 'yes' }, /SVC_OIDC_CREATE_USERS must be true or false/);
    refused({ SVC_OIDC_ISSUER: 'https://id.example.com', SVC_OIDC_CLIENT_ID: 'a', SVC_OIDC_CLIENT_SECRET: 'b', SVC_OIDC_NAME: 'x'.repeat(41) }, /SVC_OIDC_NAME must be at most 40/);
    const config = loadConfig({ ...base, SVC_PUBLIC_URL: 'https://svc.example.com/', SVC_OIDC_ISSUER: 'https://id.example.com/realms/acme', SVC_OIDC_CLIENT_ID: 'svc', SVC_OIDC_CLIENT_SECRET: 's3cr3t-value-xyz' });
    assert.equal(config.oidc?.redirectUri, 'https://svc.example.com/v1/auth/oidc/callback');
    assert.equal(config.oidc?.name, 'single sign-on');
    assert.equal(config.oidc?.createUsers, false);
    assert.equal(config.oidc?.clientSecret, 's3cr3t-value-xyz');
    assert.doesNotMatch(JSON.stringify(config), /s3cr3t-value-xyz/);
  });
});
