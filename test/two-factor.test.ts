// Two-factor sign-in (issue 34, "Two factors"), through HTTP: setting up a TOTP factor (RFC 6238)
// from the account, the code asked at every password sign-in (the API, the web app's browser
// session, the /device page), recovery codes, removing it, and a workspace that requires it of its
// members. Codes are computed here with otpauth from the secret the enrolment shows; the clock is
// moved with clock.offsetMs to reach the next 30-second step. Security cases: other users, API
// tokens, replayed codes, throttling, and wrong codes or proofs that change nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as OTPAuth from 'otpauth';
import { clock } from '../src/platform/clock.js';
import { startTestApp, withClockStill, type TestApp, type TestUser } from './harness.js';

/** The code of `secret` at the service's clock, `steps` 30-second steps from now. */
function codeOf(secret: string, steps = 0): string {
  return new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: clock.nowMs() + steps * 30_000 });
}

/** The clock on to the start of the next step, so the next code is a new one (a code signs in once). */
function nextStep(): void {
  clock.offsetMs += 30_000 - (clock.nowMs() % 30_000) + 1_000;
}

describe('two-factor sign-in', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
  });

  const signIn = (u: { email: string }, password: string, code?: string) =>
    t.request('POST', '/v1/auth/sessions', { body: { email: u.email, password, ...(code !== undefined ? { code } : {}) } });
  const status = (token: string) => t.request('GET', '/v1/me/two_factor', { token });
  const enroll = (token: string) => t.request('POST', '/v1/me/two_factor:enroll', { token });
  const confirm = (token: string, code: string) => t.request('POST', '/v1/me/two_factor:confirm', { token, body: { code } });
  const disable = (token: string, body: unknown) => t.request('POST', '/v1/me/two_factor:disable', { token, body });
  const regenerate = (token: string, body: unknown) => t.request('POST', '/v1/me/two_factor/recovery_codes:regenerate', { token, body });
  const notices = async (token: string, type: string) =>
    (await t.request('GET', '/v1/notifications', { token })).body.data.filter((n: any) => n.type === type);

  /** A user with two factors on: the secret and the recovery codes; the clock is on the next step. */
  async function withTwoFactors(name: string): Promise<TestUser & { secret: string; recovery: string[] }> {
    const u = await t.user(name);
    const e = await enroll(u.token);
    assert.equal(e.status, 200, e.text);
    const c = await confirm(u.token, codeOf(e.body.secret));
    assert.equal(c.status, 200, c.text);
    nextStep();
    return { ...u, secret: e.body.secret, recovery: c.body.recovery_codes };
  }

  test('set up: the secret is shown once and stored sealed; a wrong code confirms nothing; a current one turns it on with 10 recovery codes', async () => {
    const u = await t.user('ada');
    assert.deepEqual((await status(u.token)).body, { enabled: false, pending: false, enabled_at: null, recovery_codes_remaining: 0 });

    const first = await enroll(u.token);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers['cache-control'], 'no-store');
    assert.match(first.body.secret, /^[A-Z2-7]{32}$/, '160 bits of base32');
    const parsed = OTPAuth.URI.parse(first.body.otpauth_uri) as OTPAuth.TOTP;
    assert.ok(parsed instanceof OTPAuth.TOTP);
    assert.deepEqual([parsed.secret.base32, parsed.label, parsed.issuer, parsed.digits, parsed.period, parsed.algorithm], [first.body.secret, u.email, first.body.issuer, 6, 30, 'SHA1']);
    assert.deepEqual((await status(u.token)).body, { enabled: false, pending: true, enabled_at: null, recovery_codes_remaining: 0 });
    const row = await t.services.db.selectFrom('user_totp').selectAll().where('user_id', '=', u.id).executeTakeFirstOrThrow();
    assert.ok(row.secret_sealed.startsWith('k1.') && !row.secret_sealed.includes(first.body.secret), 'sealed by the keyring, never in clear');

    // Pending asks nothing at sign-in.
    assert.equal((await signIn(u, u.password)).status, 201);

    // Enrolling again makes another secret: the first one's codes confirm nothing any more.
    const second = await enroll(u.token);
    assert.notEqual(second.body.secret, first.body.secret);
    const stale = await confirm(u.token, codeOf(first.body.secret));
    assert.equal(stale.status, 400, stale.text);
    assert.equal(stale.body.error.reason, 'TWO_FACTOR_CODE_INVALID');
    assert.deepEqual(stale.body.error.field_violations.map((v: any) => v.field), ['body.code']);
    // (Each wrong code counts toward the account's throttle: 5 are free.)
    for (const bad of ['abcdef', codeOf(second.body.secret, 3)]) assert.equal((await confirm(u.token, bad)).status, 400, bad);
    assert.equal((await status(u.token)).body.pending, true, 'wrong codes changed nothing');
    assert.equal((await t.request('POST', '/v1/me/two_factor:confirm', { token: u.token, body: { code: '123456', extra: 1 } })).status, 400);
    assert.equal((await t.request('POST', '/v1/me/two_factor:confirm', { token: u.token, body: {} })).status, 400);

    const on = await confirm(u.token, ` ${codeOf(second.body.secret).replace(/(\d{3})/, '$1 ')}`);
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.recovery_codes.length, 10);
    assert.equal(new Set(on.body.recovery_codes).size, 10);
    for (const c of on.body.recovery_codes) assert.match(c, /^[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}$/);
    const now = await status(u.token);
    assert.deepEqual([now.body.enabled, now.body.pending, now.body.recovery_codes_remaining], [true, false, 10]);
    assert.equal(typeof now.body.enabled_at, 'number');
    const hashes = await t.services.db.selectFrom('user_recovery_codes').select('code_hash').where('user_id', '=', u.id).execute();
    assert.equal(hashes.length, 10);
    for (const c of on.body.recovery_codes) assert.ok(!hashes.some((h) => h.code_hash.includes(c.replace(/-/g, ''))), 'stored hashed');

    assert.equal((await enroll(u.token)).body.error.reason, 'TWO_FACTOR_ALREADY_ENABLED');
    assert.equal((await confirm(u.token, codeOf(second.body.secret))).status, 409);
    assert.equal((await t.request('GET', '/v1/me', { token: u.token })).body.two_factor, true);
    const [note] = await notices(u.token, 'two_factor_enabled');
    assert.ok(note, 'a two_factor_enabled notice');
    assert.ok(!JSON.stringify(note).includes(second.body.secret));
  });

  test('sign-in asks for the code only once the password is right; a code signs in once; the window is one step either side', async () => {
    const u = await withTwoFactors('bob');
    const wrongPassword = await signIn(u, 'not the password');
    assert.equal(wrongPassword.status, 401);
    assert.equal(wrongPassword.body.error.reason, 'INVALID_CREDENTIALS', 'no hint that the account has two factors');
    const wrongPasswordRightCode = await signIn(u, 'not the password', codeOf(u.secret));
    assert.equal(wrongPasswordRightCode.body.error.reason, 'INVALID_CREDENTIALS');

    const noCode = await signIn(u, u.password);
    assert.equal(noCode.status, 401, noCode.text);
    assert.equal(noCode.body.error.reason, 'TWO_FACTOR_CODE_REQUIRED');
    assert.equal(noCode.body.token, undefined);
    const wrong = await signIn(u, u.password, codeOf(u.secret, 5));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.reason, 'TWO_FACTOR_CODE_INVALID');

    const code = codeOf(u.secret);
    const ok = await signIn(u, u.password, code);
    assert.equal(ok.status, 201, ok.text);
    assert.equal((await t.request('GET', '/v1/me', { token: ok.body.token })).status, 200);
    const replay = await signIn(u, u.password, code);
    assert.equal(replay.status, 401, 'the same code again is refused');
    assert.equal(replay.body.error.reason, 'TWO_FACTOR_CODE_INVALID');

    // The next step's code is accepted early (the phone's clock runs ahead); after it, an older one is not.
    const ahead = await signIn(u, u.password, codeOf(u.secret, 1));
    assert.equal(ahead.status, 201, ahead.text);
    nextStep();
    assert.equal((await signIn(u, u.password, codeOf(u.secret, -1))).status, 401, 'a step already passed is not taken again');
    nextStep();
    nextStep();
    assert.equal((await signIn(u, u.password, codeOf(u.secret, -2))).status, 401, 'two steps late is outside the window');
    assert.equal((await signIn(u, u.password, codeOf(u.secret, -1))).status, 201, 'one step late is inside it');

    // The web app's sign-in asks the same.
    nextStep();
    const browser = (code?: string) => t.request('POST', '/v1/auth/browser_session', { headers: { 'x-svc-csrf': '1' }, body: { email: u.email, password: u.password, ...(code ? { code } : {}) } });
    const asked = await browser();
    assert.equal(asked.status, 401);
    assert.equal(asked.body.error.reason, 'TWO_FACTOR_CODE_REQUIRED');
    assert.equal(asked.headers['set-cookie'], undefined);
    const cookie = await browser(codeOf(u.secret));
    assert.equal(cookie.status, 201, cookie.text);
    assert.match(String(cookie.headers['set-cookie']), /svc_session=/);
  });

  test('recovery codes sign in once each, in any case and with or without dashes; new ones void the old', async () => {
    const u = await withTwoFactors('cat');
    const [first, second, third] = u.recovery as [string, string, string];
    assert.equal((await signIn(u, u.password, first)).status, 201);
    const again = await signIn(u, u.password, first);
    assert.equal(again.status, 401);
    assert.equal(again.body.error.reason, 'TWO_FACTOR_CODE_INVALID');
    assert.equal((await signIn(u, u.password, second.toUpperCase().replace(/-/g, ''))).status, 201);
    assert.equal((await status(u.token)).body.recovery_codes_remaining, 8);

    // New codes take the password or a code; a wrong one changes nothing.
    const refused = await regenerate(u.token, { password: 'not the password' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.reason, 'INVALID_CREDENTIALS');
    assert.equal((await regenerate(u.token, {})).body.error.reason, 'ONE_OF_PASSWORD_CODE');
    assert.equal((await status(u.token)).body.recovery_codes_remaining, 8);
    const fresh = await regenerate(u.token, { password: u.password });
    assert.equal(fresh.status, 200, fresh.text);
    assert.equal(fresh.body.recovery_codes.length, 10);
    assert.equal((await status(u.token)).body.recovery_codes_remaining, 10);
    assert.equal((await signIn(u, u.password, third)).status, 401, 'an old code stopped working');
    assert.equal((await signIn(u, u.password, fresh.body.recovery_codes[0])).status, 201);
  });

  test('turning it off takes the password or a code; wrong proofs change nothing; then sign-in asks for the password only', async () => {
    const u = await withTwoFactors('dan');
    assert.equal((await disable(u.token, { password: u.password, code: codeOf(u.secret) })).body.error.reason, 'ONE_OF_PASSWORD_CODE');
    const wrongPassword = await disable(u.token, { password: 'not the password' });
    assert.equal(wrongPassword.status, 400);
    assert.deepEqual([wrongPassword.body.error.reason, wrongPassword.body.error.field_violations[0].field], ['INVALID_CREDENTIALS', 'body.password']);
    const wrongCode = await disable(u.token, { code: '000000' === codeOf(u.secret) ? '111111' : '000000' });
    assert.equal(wrongCode.body.error.reason, 'TWO_FACTOR_CODE_INVALID');
    assert.equal((await status(u.token)).body.enabled, true, 'still on');
    assert.equal((await signIn(u, u.password)).body.error.reason, 'TWO_FACTOR_CODE_REQUIRED');

    const off = await disable(u.token, { code: codeOf(u.secret) });
    assert.equal(off.status, 200, off.text);
    assert.deepEqual(off.body, { enabled: false, pending: false, enabled_at: null, recovery_codes_remaining: 0 });
    assert.equal((await t.services.db.selectFrom('user_recovery_codes').select('id').where('user_id', '=', u.id).execute()).length, 0);
    assert.equal((await signIn(u, u.password)).status, 201);
    assert.equal((await signIn(u, u.password, u.recovery[0])).status, 201, 'a code sent to an account without two factors is ignored');
    assert.equal((await disable(u.token, { password: u.password })).body.error.reason, 'TWO_FACTOR_NOT_ENABLED');
    assert.equal((await regenerate(u.token, { password: u.password })).body.error.reason, 'TWO_FACTOR_NOT_ENABLED');
    assert.equal((await notices(u.token, 'two_factor_disabled')).length, 1);
  });

  test('only the account itself, with a session, manages its factor: API tokens, no credential and other users cannot', async () => {
    const u = await withTwoFactors('eve');
    const other = await t.user('mallory');
    const ws = (await t.workspace(u, 'Eve')).id;
    const token = (await t.apiToken(u, ws)).token;
    for (const [method, path, body] of [
      ['GET', '/v1/me/two_factor', undefined], ['POST', '/v1/me/two_factor:enroll', undefined], ['POST', '/v1/me/two_factor:confirm', { code: '123456' }],
      ['POST', '/v1/me/two_factor:disable', { password: u.password }], ['POST', '/v1/me/two_factor/recovery_codes:regenerate', { password: u.password }],
    ] as const) {
      const res = await t.request(method, path, { token, ...(body ? { body } : {}) });
      assert.equal(res.status, 403, `${path} with an API token`);
      assert.equal(res.body.error.reason, 'USER_CREDENTIAL_REQUIRED');
      assert.equal((await t.request(method, path, body ? { body } : {})).status, 401, `${path} without a credential`);
    }
    // Another user's session acts on its own account only: Eve's password is no proof for it.
    assert.equal((await disable(other.token, { password: u.password })).body.error.reason, 'TWO_FACTOR_NOT_ENABLED');
    assert.equal((await status(other.token)).body.enabled, false);
    assert.equal((await status(u.token)).body.enabled, true, 'Eve\'s factor untouched');
    assert.equal((await signIn(u, u.password)).body.error.reason, 'TWO_FACTOR_CODE_REQUIRED');
  });

  test('wrong codes are throttled per account: after 5, even the right code waits; another account is not delayed', () => withClockStill(async () => {
    const u = await withTwoFactors('fay');
    const bystander = await withTwoFactors('gus');
    const right = codeOf(u.secret);
    const wrongCode = right === '000000' ? '111111' : '000000';
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await signIn(u, u.password, wrongCode)).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
    const waiting = await signIn(u, u.password, right);
    assert.equal(waiting.status, 429);
    assert.equal(waiting.body.error.reason, 'SIGN_IN_THROTTLED');
    assert.ok(Number(waiting.headers['retry-after']) >= 1);
    assert.equal((await disable(u.token, { code: right })).status, 429, 'the same throttle guards the account page');
    assert.equal((await status(u.token)).body.enabled, true);
    assert.equal((await signIn(bystander, bystander.password, codeOf(bystander.secret))).status, 201, 'another account signs in');
    // An hour later the count starts again, and the right code signs in.
    clock.offsetMs += 61 * 60_000;
    assert.equal((await signIn(u, u.password, codeOf(u.secret))).status, 201);
  }));

  test('a workspace that requires two factors: only an owner with a factor turns it on; members without one are refused at each request', async () => {
    const owner = await t.user('olga');
    const admin = await t.user('abe');
    const member = await t.user('mia');
    const ws = await t.workspace(owner, 'Strict');
    await t.addMember(owner, ws.id, admin, 'admin');
    await t.addMember(owner, ws.id, member, 'member');
    const token = (await t.apiToken(owner, ws.id)).token;
    const patch = async (u: TestUser, body: unknown) => {
      const etag = (await t.request('GET', `/v1/workspaces/${ws.id}`, { token: u.token })).body.etag;
      return t.request('PATCH', `/v1/workspaces/${ws.id}`, { token: u.token, headers: { 'if-match': etag }, body });
    };
    const read = (u: { token: string }) => t.request('GET', `/v1/workspaces/${ws.id}`, { token: u.token });

    assert.equal((await read(owner)).body.require_two_factor, false);
    const noFactor = await patch(owner, { require_two_factor: true });
    assert.equal(noFactor.status, 422, noFactor.text);
    assert.equal(noFactor.body.error.reason, 'OWN_TWO_FACTOR_REQUIRED');
    const byAdmin = await patch(admin, { require_two_factor: false });
    assert.equal(byAdmin.status, 403);
    assert.equal(byAdmin.body.error.reason, 'ROLE_TOO_LOW');

    const e = await enroll(owner.token);
    assert.equal((await confirm(owner.token, codeOf(e.body.secret))).status, 200);
    const on = await patch(owner, { require_two_factor: true });
    assert.equal(on.status, 200, on.text);
    assert.equal(on.body.require_two_factor, true);

    // The member without a factor is refused on every route of the workspace, with a reason saying what to do.
    for (const res of [await read(member), await t.request('GET', '/v1/api_tokens', { token: member.token, headers: { 'svc-context': ws.id } }), await t.request('GET', `/v1/workspaces/${ws.id}/members`, { token: member.token })]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.reason, 'TWO_FACTOR_REQUIRED');
      assert.match(res.body.error.message, /account page/);
    }
    assert.equal((await t.request('GET', '/v1/workspaces', { token: member.token })).status, 200, 'the list still shows it');
    assert.equal((await t.request('GET', `/v1/workspaces/${ws.id}`, { token })).status, 200, 'the workspace\'s API token is not a person');
    assert.equal((await read(owner)).status, 200);

    // Owners and admins see who has a factor; members do not.
    const members = (await t.request('GET', `/v1/workspaces/${ws.id}/members`, { token: owner.token })).body.data;
    assert.deepEqual(Object.fromEntries(members.map((m: any) => [m.user_id, m.two_factor])), { [owner.id]: true, [admin.id]: false, [member.id]: false });

    // Setting one up lets the member in at once; removing it shuts them out again.
    const me = await enroll(member.token);
    assert.equal((await confirm(member.token, codeOf(me.body.secret))).status, 200);
    assert.equal((await read(member)).status, 200);
    const seen = (await t.request('GET', `/v1/workspaces/${ws.id}/members`, { token: member.token })).body.data;
    assert.ok(seen.every((m: any) => m.two_factor === undefined), 'members do not see others\' factors');
    assert.equal((await disable(member.token, { password: member.password })).status, 200);
    assert.equal((await read(member)).body.error.reason, 'TWO_FACTOR_REQUIRED');

    // Turned off: everyone is back.
    assert.equal((await patch(owner, { require_two_factor: false })).body.require_two_factor, false);
    assert.equal((await read(member)).status, 200);
    assert.equal((await read(admin)).status, 200);

    const events = (await t.request('GET', '/v1/audit_events', { token: owner.token, headers: { 'svc-context': ws.id } })).body.data;
    const actions = events.map((ev: any) => `${ev.action} ${ev.actor.id}`);
    for (const want of [
      `workspace.two_factor_requirement.enable ${owner.id}`, `workspace.two_factor_requirement.disable ${owner.id}`,
      `user.two_factor.enable ${member.id}`, `user.two_factor.disable ${member.id}`,
    ]) assert.ok(actions.includes(want), `${want} in ${actions.join(', ')}`);
    assert.equal(actions.filter((a: string) => a.startsWith('workspace.two_factor_requirement.')).length, 2, 'a refused change is not audited');
    const disabled = events.find((ev: any) => ev.action === 'user.two_factor.disable');
    assert.deepEqual([disabled.resource_type, disabled.resource_id, disabled.metadata], ['user', member.id, { method: 'totp' }]);
  });

  test('the /device page asks for the code in a second step that carries no password', async () => {
    const u = await withTwoFactors('hal');
    const jar = new Map<string, string>();
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const keep = (res: { headers: Record<string, unknown> }) => {
      const set = res.headers['set-cookie'];
      for (const line of (Array.isArray(set) ? set : set ? [String(set)] : [])) {
        const [pair] = line.split(';');
        const i = pair!.indexOf('=');
        jar.set(pair!.slice(0, i), pair!.slice(i + 1));
      }
    };
    const get = async (url: string) => {
      const res = await t.app.inject({ method: 'GET', url, headers: { cookie: cookie() } });
      keep(res);
      return res;
    };
    const post = async (url: string, form: Record<string, string>) => {
      const res = await t.app.inject({ method: 'POST', url, headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams(form).toString() });
      keep(res);
      return res;
    };
    const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)?.[1] ?? '';

    const page = await get('/device');
    const first = await post('/device/sign-in', { email: u.email, password: u.password, csrf: field(page.body, 'csrf') });
    assert.equal(first.statusCode, 200, first.body);
    assert.match(first.body, /Two-factor sign-in/);
    assert.ok(!first.body.includes(u.password), 'the password is not carried into the second form');
    assert.equal(jar.get('svc_session'), undefined, 'not signed in yet');
    const ticket = field(first.body, 'ticket');
    assert.ok(ticket);

    const wrong = await post('/device/sign-in', { ticket, code: codeOf(u.secret, 5), csrf: field(first.body, 'csrf') });
    assert.equal(wrong.statusCode, 422);
    assert.match(wrong.body, /not right/);
    assert.equal(jar.get('svc_session'), undefined);
    const forged = await post('/device/sign-in', { ticket: ticket.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')), code: codeOf(u.secret), csrf: field(wrong.body, 'csrf') });
    assert.equal(forged.statusCode, 422);
    assert.match(forged.body, /Sign in again/);

    const ok = await post('/device/sign-in', { ticket, code: codeOf(u.secret), csrf: field(forged.body, 'csrf') });
    assert.equal(ok.statusCode, 303, ok.body);
    assert.ok(jar.get('svc_session'), 'signed in');
    assert.match((await get('/device')).body, /Connect a device/);

    // The ticket lasts 5 minutes.
    jar.delete('svc_session');
    const again = await get('/device');
    const step = await post('/device/sign-in', { email: u.email, password: u.password, csrf: field(again.body, 'csrf') });
    clock.offsetMs += 6 * 60_000;
    const late = await post('/device/sign-in', { ticket: field(step.body, 'ticket'), code: codeOf(u.secret), csrf: field(step.body, 'csrf') });
    assert.equal(late.statusCode, 422);
    assert.equal(jar.get('svc_session'), undefined);
  });
});
