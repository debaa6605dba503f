// Single sign-on (issue 34) against a real OpenID provider running in the test (oidc-provider,
// test/oidc-standin.ts): a browser starts at /v1/auth/oidc/start, signs in at the provider, and
// comes back to /v1/auth/oidc/callback. Users are matched by verified e-mail, lowercased, then by
// the provider's subject once linked; unknown e-mails get an account only with
// SVC_OIDC_CREATE_USERS=true. Tampered state, nonce, replayed codes, expired and foreign sign-ins,
// open redirects and an unreachable provider are refused, each signing nobody in.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
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
  async get(url: string): Promise<Answer> {
    const headers: Record<string, string> = this.html ? { accept: 'text/html,application/xhtml+xml' } : {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.t.app.inject({ method: 'GET', url, headers });
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
