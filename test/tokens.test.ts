// Credentials (spec section 5, API.md section 4): workspace API tokens (create, form, list,
// expiry, revocation, last_used_at), session tokens (sign-in, throttling, logout, sliding expiry)
// and that no token or password value ever reaches the logs.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, afterEach, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSystem } from '../src/system.js';
import { clock } from '../src/platform/clock.js';
import { sha256Hex } from '../src/platform/crypto.js';
import { SESSION_TTL_SECONDS } from '../src/modules/sessions/sessions.service.js';
import { hasValidChecksum } from '../src/modules/tokens/tokens.service.js';
import { createLogger } from '../src/platform/logging.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());
afterEach(() => {
  clock.offsetMs = 0;
});

const asWs = (user: TestUser, ws: string) => ({ token: user.token, headers: { 'svc-context': ws } });

describe('workspace API tokens', () => {
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  let other: TestUser;
  let otherWs: string;

  before(async () => {
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    other = await t.user('other');
    ws = (await t.workspace(owner, 'Tokens')).id;
    otherWs = (await t.workspace(other, 'Elsewhere')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });

  const create = (user: TestUser | string, body: Record<string, unknown>, context: string | null = ws): Promise<Response> =>
    t.request('POST', '/v1/api_tokens', {
      token: typeof user === 'string' ? user : user.token,
      headers: context ? { 'svc-context': context } : {},
      body,
    });

  test('owner and admin may create; a member is 403; the response shows the token once', async () => {
    for (const user of [owner, admin]) {
      const res = await create(user, { name: `by-${user.email}` });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.headers['cache-control'], 'no-store');
      assert.equal(res.headers.location, `/v1/api_tokens/${res.body.id}`);
      assert.match(res.body.id, /^tok_[0-9a-z]{26}$/);
      assert.equal(res.body.workspace_id, ws);
      assert.equal(res.body.role, 'member', 'default role');
    }
    const denied = await create(member, { name: 'nope' });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'PERMISSION_DENIED');
  });

  test('form: sk_svc_ prefix, valid checksum, prefix = first 12 characters; a flipped character fails the checksum', async () => {
    const res = await create(owner, { name: 'form' });
    const token: string = res.body.token;
    assert.ok(token.startsWith('sk_svc_'));
    assert.equal(token.length, 'sk_svc_'.length + 40 + 6);
    assert.match(token, /^sk_svc_[0-9A-Za-z]{46}$/);
    assert.ok(hasValidChecksum(token));
    assert.equal(res.body.prefix, token.slice(0, 12));
    const listed = await t.request('GET', '/v1/api_tokens?limit=100', asWs(owner, ws));
    const item = listed.body.data.find((x: { id: string }) => x.id === res.body.id);
    assert.equal(item.prefix, token.slice(0, 12));
    // A checksum-failing variant is rejected offline (401) without a lookup.
    const i = 20;
    const flipped = token.slice(0, i) + (token[i] === 'a' ? 'b' : 'a') + token.slice(i + 1);
    assert.equal(hasValidChecksum(flipped), false);
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: flipped })).status, 401);
    // Only the hash is stored.
    const row = await t.services.db.selectFrom('api_tokens').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
    assert.equal(row.token_hash, sha256Hex(token));
    assert.ok(!JSON.stringify(row).includes(token.slice(12)));
  });

  test('a token\'s role is never above its creator\'s', async () => {
    const adminToken = await create(admin, { name: 'admin-made', role: 'admin' });
    assert.equal(adminToken.status, 201);
    assert.equal(adminToken.body.role, 'admin');
    // The owner role cannot be given to a token at all.
    const ownerRole = await create(owner, { name: 'x', role: 'owner' });
    assert.equal(ownerRole.status, 400);
    // A member-role token cannot create tokens; an admin-role token may, up to admin.
    const memberTok = (await create(owner, { name: 'member-tok', role: 'member' })).body.token;
    assert.equal((await create(memberTok, { name: 'y' }, null)).status, 403);
    const byAdminTok = await create(adminToken.body.token, { name: 'z', role: 'admin' }, null);
    assert.equal(byAdminTok.status, 201, byAdminTok.text);
    assert.equal(byAdminTok.body.role, 'admin');
    // A member-role token acts as a member: no token or member management.
    assert.equal((await t.request('POST', `/v1/workspaces/${ws}/members`, { token: memberTok, body: { user_id: other.id, role: 'member' } })).status, 403);
  });

  test('a created token without expiry says expires_at: null (spec endpoint 12 lists the field)', async () => {
    const res = await create(owner, { name: 'forever' });
    assert.equal(res.status, 201, res.text);
    assert.ok(Object.hasOwn(res.body, 'expires_at'));
    assert.equal(res.body.expires_at, null);
  });

  test('the list never contains a token value', async () => {
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await create(owner, { name: `secret-${i}` })).body.token as string);
    const res = await t.request('GET', '/v1/api_tokens?limit=100', asWs(owner, ws));
    assert.equal(res.status, 200);
    for (const token of made) {
      assert.ok(!res.text.includes(token), 'full token in list');
      assert.ok(!res.text.includes(token.slice(12)), 'secret part of token in list');
    }
    for (const item of res.body.data) {
      assert.deepEqual(Object.keys(item).filter((k) => !['id', 'workspace_id', 'name', 'prefix', 'role', 'created_at', 'last_used_at', 'expires_at'].includes(k)), []);
    }
  });

  test('expiry: a token expiring in a few seconds works, then is 401 once real time passed expires_at', async () => {
    const expiresAt = clock.now() + 5;
    const res = await create(owner, { name: 'short', expires_at: expiresAt });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.expires_at, expiresAt);
    const early = await t.request('GET', '/v1/api_tokens', { token: res.body.token });
    // Only a machine that took 5 s for two requests sees it expired already: then there is nothing to compare.
    if (clock.now() < expiresAt) assert.equal(early.status, 200);
    while (clock.nowMs() <= expiresAt * 1000 + 100) await sleep(100);
    const late = await t.request('GET', '/v1/api_tokens', { token: res.body.token });
    assert.equal(late.status, 401);
    assert.equal(late.body.error.code, 'UNAUTHENTICATED');
    assert.match(String(late.headers['www-authenticate']), /invalid_token/);
  });

  test('expiry by the clock: valid until expires_at, rejected from then on', async () => {
    const res = await create(owner, { name: 'hour', expires_at: clock.now() + 3600 });
    clock.offsetMs = 3590 * 1000;
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: res.body.token })).status, 200);
    clock.offsetMs = 3601 * 1000;
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: res.body.token })).status, 401);
  });

  test('expires_at now, in the past or not an integer is 400', async () => {
    for (const expires_at of [clock.now(), clock.now() - 10, 0, 'soon', 1.5]) {
      const res = await create(owner, { name: 'bad', expires_at });
      assert.equal(res.status, 400, `${expires_at}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
  });

  test('revocation: 204, takes effect at once, the id is then 404, and it is deleted', async () => {
    const made = await create(owner, { name: 'doomed' });
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: made.body.token })).status, 200);
    const del = await t.request('DELETE', `/v1/api_tokens/${made.body.id}`, asWs(admin, ws));
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    const next = await t.request('GET', '/v1/api_tokens', { token: made.body.token });
    assert.equal(next.status, 401);
    const again = await t.request('DELETE', `/v1/api_tokens/${made.body.id}`, asWs(admin, ws));
    assert.equal(again.status, 404);
    assert.equal(again.body.error.code, 'NOT_FOUND');
    const row = await t.services.db.selectFrom('api_tokens').select('id').where('id', '=', made.body.id).executeTakeFirst();
    assert.equal(row, undefined);
  });

  test('a token can revoke itself (admin role), and then it is 401', async () => {
    const made = await create(owner, { name: 'self', role: 'admin' });
    const del = await t.request('DELETE', `/v1/api_tokens/${made.body.id}`, { token: made.body.token });
    assert.equal(del.status, 204);
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: made.body.token })).status, 401);
  });

  test('a member cannot revoke; another workspace\'s token is 404 and keeps working; a malformed id is 404', async () => {
    const made = await create(owner, { name: 'keep' });
    assert.equal((await t.request('DELETE', `/v1/api_tokens/${made.body.id}`, asWs(member, ws))).status, 403);
    const foreign = await create(other, { name: 'foreign' }, otherWs);
    assert.equal(foreign.status, 201);
    const cross = await t.request('DELETE', `/v1/api_tokens/${foreign.body.id}`, asWs(owner, ws));
    assert.equal(cross.status, 404);
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: foreign.body.token })).status, 200);
    for (const id of ['ws_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nonsense', 'tok_01aaaaaaaaaaaaaaaaaaaaaaaa']) {
      assert.equal((await t.request('DELETE', `/v1/api_tokens/${id}`, asWs(owner, ws))).status, 404, id);
    }
  });

  test('last_used_at: absent before use, set on use, written at most once a minute', async () => {
    const made = await create(owner, { name: 'used' });
    const item = async () =>
      (await t.request('GET', '/v1/api_tokens?limit=100', asWs(owner, ws))).body.data.find((x: { id: string }) => x.id === made.body.id);
    assert.equal((await item()).last_used_at, undefined);
    const usedAt = clock.now();
    assert.equal((await t.request('GET', `/v1/workspaces/${ws}`, { token: made.body.token })).status, 200);
    const first = (await item()).last_used_at;
    assert.ok(first >= usedAt && first <= clock.now(), String(first));
    clock.offsetMs = 30_000;
    await t.request('GET', `/v1/workspaces/${ws}`, { token: made.body.token });
    assert.equal((await item()).last_used_at, first, 'not rewritten within a minute');
    clock.offsetMs = 61_000;
    await t.request('GET', `/v1/workspaces/${ws}`, { token: made.body.token });
    assert.ok((await item()).last_used_at >= first + 61);
  });
});

describe('session tokens', () => {
  let user: TestUser;

  before(async () => {
    user = await t.user('sess');
  });

  const signIn = (email: string, password: string) => t.request('POST', '/v1/auth/sessions', { body: { email, password } });
  const me = (token: string) => t.request('GET', '/v1/me', { token });
  const sessionRow = (token: string) =>
    t.services.db.selectFrom('sessions').selectAll().where('token_hash', '=', sha256Hex(token)).executeTakeFirstOrThrow();

  test('sign-in returns a 32-character token that works; e-mail is case-insensitive', async () => {
    const askedAt = clock.now();
    const res = await signIn(user.email.toUpperCase(), user.password);
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.token, /^[A-Za-z0-9]{32}$/);
    assert.equal(res.body.user_id, user.id);
    // A TTL from the moment of sign-in: between the request and its answer, however long it took.
    assert.ok(res.body.expires_at >= askedAt + SESSION_TTL_SECONDS && res.body.expires_at <= clock.now() + SESSION_TTL_SECONDS, String(res.body.expires_at));
    assert.equal(res.headers['cache-control'], 'no-store');
    const who = await me(res.body.token);
    assert.equal(who.status, 200);
    assert.equal(who.body.id, user.id);
    assert.equal(who.body.credential, 'session');
  });

  test('wrong password and unknown e-mail are both 401 with the same message', async () => {
    const wrong = await signIn(user.email, 'not the password');
    const unknown = await signIn('nobody-here@example.test', 'whatever');
    for (const res of [wrong, unknown]) {
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'UNAUTHENTICATED');
    }
    assert.equal(wrong.body.error.message, unknown.body.error.message);
  });

  test('logout revokes the session at once; other sessions keep working', async () => {
    const a = (await signIn(user.email, user.password)).body.token;
    const b = (await signIn(user.email, user.password)).body.token;
    const out = await t.request('DELETE', '/v1/auth/sessions/current', { token: a });
    assert.equal(out.status, 204);
    const after = await me(a);
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'UNAUTHENTICATED');
    assert.equal((await t.request('DELETE', '/v1/auth/sessions/current', { token: a })).status, 401);
    assert.equal((await me(b)).status, 200);
  });

  test('sliding expiry: a use after 2 minutes moves expires_at to a year from then; within a minute nothing is written', async () => {
    const token = (await signIn(user.email, user.password)).body.token;
    const before = await sessionRow(token);
    clock.offsetMs = 120_000;
    const usedAt = clock.now();
    assert.equal((await me(token)).status, 200);
    const moved = await sessionRow(token);
    assert.ok(moved.expires_at >= before.expires_at + 120, `${moved.expires_at} vs ${before.expires_at}`);
    assert.ok(moved.expires_at >= usedAt + SESSION_TTL_SECONDS && moved.expires_at <= clock.now() + SESSION_TTL_SECONDS, String(moved.expires_at));
    assert.ok(moved.last_used_at >= before.last_used_at + 120);
    clock.offsetMs = 150_000;
    assert.equal((await me(token)).status, 200);
    assert.equal((await sessionRow(token)).expires_at, moved.expires_at, 'renewal written at most once a minute');
  });

  test('a session unused for more than a year is 401; one used within the year lives on', async () => {
    const idle = (await signIn(user.email, user.password)).body.token;
    const active = (await signIn(user.email, user.password)).body.token;
    const halfYear = (SESSION_TTL_SECONDS / 2) * 1000;
    clock.offsetMs = halfYear;
    assert.equal((await me(active)).status, 200);
    clock.offsetMs = (SESSION_TTL_SECONDS + 60) * 1000;
    assert.equal((await me(idle)).status, 401);
    assert.equal((await me(active)).status, 200, 'renewed half a year in, so still alive');
    // That use renewed it again; a year and a minute after it, it is gone.
    clock.offsetMs = 2 * (SESSION_TTL_SECONDS + 60) * 1000;
    assert.equal((await me(active)).status, 401);
  });

  /** Sign-in from a given client address (app.inject's remoteAddress). */
  const signInFrom = async (address: string, email: string, password: string) => {
    const res = await t.app.inject({
      method: 'POST', url: '/v1/auth/sessions', remoteAddress: address,
      headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ email, password }),
    });
    return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), text: res.body };
  };
  /** Runs `fn` with time standing still (whole-second timestamps would otherwise end a 1 s delay at any moment). */
  const frozen = async (fn: () => Promise<void>) => {
    const realNowMs = clock.nowMs;
    const at = clock.nowMs();
    const realOffset = clock.offsetMs;
    clock.nowMs = () => at + clock.offsetMs - realOffset;
    try {
      await fn();
    } finally {
      clock.nowMs = realNowMs;
    }
  };
  const retryAfter = (res: { headers: Record<string, unknown> }) => Number(res.headers['retry-after']);

  test('throttling: growing delays per address and account, never a lock; the right password from a fresh address works', async () => {
    const victim = await t.user('throttled');
    const attacker = '203.0.113.7';
    await frozen(async () => {
      for (let i = 0; i < 5; i++) assert.equal((await signInFrom(attacker, victim.email, `wrong-${i}`)).status, 401, `attempt ${i}`);
      // The sixth attempt from the same address must wait, and each further failure doubles the wait.
      const waits: number[] = [];
      for (let i = 0; i < 6; i++) {
        const early = await signInFrom(attacker, victim.email, victim.password);
        assert.equal(early.status, 429, early.text);
        assert.equal(early.body.error.code, 'RESOURCE_EXHAUSTED');
        assert.equal(early.body.error.reason, 'SIGN_IN_THROTTLED');
        waits.push(retryAfter(early));
        clock.offsetMs += retryAfter(early) * 1000;
        assert.equal((await signInFrom(attacker, victim.email, `late-${i}`)).status, 401, 'allowed again after the delay');
      }
      assert.deepEqual(waits, [1, 2, 4, 8, 16, 32]);
      // The owner, from an address that never failed, signs in at once, with the account under attack.
      assert.equal((await signInFrom('198.51.100.20', victim.email, victim.password)).status, 201);
      // The delay is capped: 30 more failures (waiting each out) never ask for more than 15 minutes.
      for (let i = 0; i < 30; i++) {
        const res = await signInFrom(attacker, victim.email, `capped-${i}`);
        if (res.status === 429) {
          assert.ok(retryAfter(res) <= 15 * 60, String(retryAfter(res)));
          clock.offsetMs += retryAfter(res) * 1000;
        }
      }
      // Other accounts are unaffected from other addresses; an hour after the last failure the counts restart.
      assert.equal((await signInFrom('198.51.100.21', user.email, user.password)).status, 201);
      clock.offsetMs += 3601 * 1000;
      assert.equal((await signInFrom(attacker, victim.email, victim.password)).status, 201);
    });
  });

  test('throttling per address: spraying many accounts from one address is delayed, other addresses are not', async () => {
    const sprayer = '203.0.113.99';
    const victims = await Promise.all(Array.from({ length: 21 }, (_, i) => t.user(`spray${i}`)));
    await frozen(async () => {
      for (let i = 0; i < 20; i++) assert.equal((await signInFrom(sprayer, victims[i]!.email, 'guess')).status, 401, `account ${i}`);
      const refused = await signInFrom(sprayer, victims[20]!.email, victims[20]!.password);
      assert.equal(refused.status, 429, refused.text);
      assert.ok(retryAfter(refused) >= 1);
      assert.equal((await signInFrom('198.51.100.30', victims[20]!.email, victims[20]!.password)).status, 201);
    });
  });

  test('throttling holds under concurrency: a burst of guesses from one address gets at most 5 password checks', async () => {
    const victim = await t.user('burst');
    // Time stands still during the burst: a second passing would (rightly) end the first delay.
    await frozen(async () => {
      const results = await Promise.all(Array.from({ length: 25 }, (_, i) => signInFrom('203.0.113.50', victim.email, `burst-${i}`)));
      const statuses = results.map((r) => r.status);
      assert.ok(statuses.every((s) => s === 401 || s === 429), statuses.join(','));
      assert.ok(statuses.filter((s) => s === 401).length <= 5, `password checked ${statuses.filter((s) => s === 401).length} times: ${statuses.join(',')}`);
      assert.equal((await signInFrom('203.0.113.50', victim.email, victim.password)).status, 429);
      assert.equal((await signInFrom('198.51.100.50', victim.email, victim.password)).status, 201);
    });
  });

  test('malformed sign-in bodies are 400', async () => {
    for (const body of [{}, { email: user.email }, { email: user.email, password: user.password, extra: 1 }, { email: 'x'.repeat(300), password: 'p' }]) {
      const res = await t.request('POST', '/v1/auth/sessions', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
  });
});

describe('token and password values never reach the logs', () => {
  test('a trace-level pino logger with the server\'s redaction sees no secret', async () => {
    const chunks: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        chunks.push(String(chunk));
        done();
      },
    });
    const logger = createLogger('trace', sink);
    // A second instance over the same database, logging to the sink.
    const { app } = await createSystem(t.config, { database: t.services, logger, runtime: false });
    const secrets: string[] = [];
    const call = async (method: string, url: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
      const res = await app.inject({
        method: method as 'GET',
        url,
        headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}), ...opts.headers },
        ...(opts.body ? { payload: JSON.stringify(opts.body) } : {}),
      });
      assert.ok(res.statusCode < 500, `${method} ${url}: ${res.statusCode}`);
      return { status: res.statusCode, body: res.body.length ? JSON.parse(res.body) : undefined };
    };
    try {
      const password = 'log-canary-password-7Q2';
      const email = `logs-${Date.now()}@example.test`;
      await t.services.users.createUser({ email, password });
      secrets.push(password);
      // Sign-in: the password travels in the body and the session token in the response.
      const wrong = await call('POST', '/v1/auth/sessions', { body: { email, password: 'log-canary-wrong-9Z' } });
      assert.equal(wrong.status, 401);
      secrets.push('log-canary-wrong-9Z');
      const session = await call('POST', '/v1/auth/sessions', { body: { email, password } });
      assert.equal(session.status, 201);
      secrets.push(session.body.token);
      const ws = await call('POST', '/v1/workspaces', { token: session.body.token, body: { name: 'Logs' }, headers: { 'idempotency-key': 'log-canary-key-5X' } });
      assert.equal(ws.status, 201);
      // API token: created (value in the response), used, revoked, used again (401).
      const made = await call('POST', '/v1/api_tokens', { token: session.body.token, headers: { 'svc-context': ws.body.id }, body: { name: 'logged?' } });
      assert.equal(made.status, 201);
      secrets.push(made.body.token, made.body.token.slice(12));
      assert.equal((await call('GET', '/v1/api_tokens', { token: made.body.token })).status, 200);
      assert.equal((await call('DELETE', `/v1/api_tokens/${made.body.id}`, { token: session.body.token, headers: { 'svc-context': ws.body.id } })).status, 204);
      assert.equal((await call('GET', '/v1/api_tokens', { token: made.body.token })).status, 401);
      // Failures that log: a bad body, a malformed header, an unknown route, all carrying the session token.
      await call('POST', '/v1/api_tokens', { token: session.body.token, headers: { 'svc-context': ws.body.id }, body: { name: 5, bogus: true } });
      await call('GET', '/v1/nowhere', { token: session.body.token });
      await call('DELETE', '/v1/auth/sessions/current', { token: session.body.token });
      assert.equal((await call('GET', '/v1/me', { token: session.body.token })).status, 401);
    } finally {
      await app.close();
    }
    const text = chunks.join('');
    assert.ok(text.length > 0 && text.includes('request completed'), 'the logger captured request logs');
    for (const secret of secrets) assert.ok(!text.includes(secret), `secret leaked into logs: ${secret.slice(0, 6)}...`);
    assert.ok(!text.includes('log-canary-key-5X'), 'idempotency key is redacted');
  });
});
