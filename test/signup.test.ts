// Sign-up (issue 34, "closed by default"): POST /v1/users takes anyone only with SVC_SIGNUP=open;
// closed (the default) and invite take a customer through an offer's link they were given, nobody
// else; refusals write nothing; bad bodies change nothing; a taken e-mail is 409.
// GET /v1/auth/settings tells the sign-in page which of these holds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { makeOffer, makeSeller } from './commerce-fixtures.js';
import { startTestApp, type TestApp } from './harness.js';

/** The e-mail cannot sign in: no account was made for it. */
async function noAccount(t: TestApp, email: string, password: string) {
  const res = await t.request('POST', '/v1/auth/sessions', { body: { email, password } });
  assert.equal(res.status, 401, `${email} should have no account: ${res.text}`);
}

describe('sign-up', () => {
  let open: TestApp;
  let closed: TestApp;
  let invite: TestApp;
  before(async () => {
    open = await startTestApp({ SVC_ROLE: 'api', SVC_SIGNUP: 'open' });
    closed = await startTestApp({ SVC_ROLE: 'api' }); // the default
    invite = await startTestApp({ SVC_ROLE: 'api', SVC_SIGNUP: 'invite' });
  });
  after(async () => {
    await open.close();
    await closed.close();
    await invite.close();
  });

  test('an open service takes a new account, which then signs in; the e-mail is kept lowercased and cannot be taken twice', async () => {
    const res = await open.request('POST', '/v1/users', { body: { email: 'Ada@Example.com', password: 'correct horse', name: 'Ada' } });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.id, /^usr_/);
    assert.equal(res.body.email, 'ada@example.com');
    assert.equal(res.body.password, undefined);
    const signIn = await open.request('POST', '/v1/auth/sessions', { body: { email: 'ada@example.com', password: 'correct horse' } });
    assert.equal(signIn.status, 201);
    assert.equal(signIn.body.user_id, res.body.id);
    const again = await open.request('POST', '/v1/users', { body: { email: 'ada@example.com', password: 'another one' } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.reason, 'EMAIL_TAKEN');
  });

  test('bad bodies are 400 and create nothing', async () => {
    const bodies = [
      { email: 'x@y.z', password: 'short' },
      { email: 'not-an-email', password: 'long enough' },
      { email: 'a@b.c', password: 'long enough', role: 'owner' },
      { email: 'a@b.c', password: 'long enough', offer: 'has spaces' },
      { email: 'a@b.c', password: 'long enough', offer: 'x'.repeat(65) },
    ];
    for (const body of bodies) {
      const res = await open.request('POST', '/v1/users', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    await noAccount(open, 'x@y.z', 'short');
    await noAccount(open, 'a@b.c', 'long enough');
  });

  test('closed (the default) and invite refuse a sign-up without an offer: 403 SIGNUP_CLOSED, nothing written', async () => {
    for (const t of [closed, invite]) {
      const res = await t.request('POST', '/v1/users', { body: { email: 'bob@example.com', password: 'correct horse' } });
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.reason, 'SIGNUP_CLOSED');
      assert.match(res.body.error.message, /invitation.*operator/);
      await noAccount(t, 'bob@example.com', 'correct horse');
    }
  });

  test('with sign-up closed, a customer signs up through an offer they were given, and only through one that can be ordered by them', async () => {
    const seller = await makeSeller(closed);
    const offer = await makeOffer(closed, seller);
    const signUp = (email: string, offerHash: string) => closed.request('POST', '/v1/users', { body: { email, password: 'customer password', offer: offerHash } });

    const res = await signUp('Carol@Example.com', offer.short_hash);
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.email, 'carol@example.com');
    assert.equal((await closed.request('POST', '/v1/auth/sessions', { body: { email: 'carol@example.com', password: 'customer password' } })).status, 201);

    // An unknown hash, an archived offer, and an offer for other e-mails take no sign-up.
    const unknown = await signUp('dan@example.com', 'nosuchhash');
    assert.equal(unknown.status, 403);
    assert.equal(unknown.body.error.reason, 'SIGNUP_CLOSED');
    await noAccount(closed, 'dan@example.com', 'customer password');

    const restricted = await makeOffer(closed, seller, { allowed_emails: ['erin@example.com'] });
    const other = await signUp('frank@example.com', restricted.short_hash);
    assert.equal(other.status, 403, other.text);
    await noAccount(closed, 'frank@example.com', 'customer password');
    assert.equal((await signUp('ERIN@example.com', restricted.short_hash)).status, 201);

    const gone = await makeOffer(closed, seller);
    const archive = await closed.request('DELETE', `/v1/offers/${gone.id}`, {
      token: seller.user.token, headers: { 'svc-context': seller.ws, 'if-match': gone.etag },
    });
    assert.equal(archive.status, 200, archive.text);
    const late = await signUp('gus@example.com', gone.short_hash);
    assert.equal(late.status, 403, late.text);
    await noAccount(closed, 'gus@example.com', 'customer password');
  });

  test('GET /v1/auth/settings says, without a credential, how accounts are given', async () => {
    for (const [t, signup] of [[open, 'open'], [closed, 'closed'], [invite, 'invite']] as const) {
      const res = await t.request('GET', '/v1/auth/settings');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { signup, billing: 'operator', oidc: null });
    }
  });

  test('an unknown SVC_SIGNUP stops the start with the values it takes', () => {
    const base = { SVC_DATA_DIR: join(tmpdir(), 'svc-signup-config'), SVC_SECRET_KEY: randomBytes(32).toString('hex') };
    assert.throws(() => loadConfig({ ...base, SVC_SIGNUP: 'maybe' }), (err: Error) => err instanceof ConfigError && /SVC_SIGNUP must be one of closed, invite, open, got "maybe"/.test(err.message));
  });
});
