// Sign-up (API.md 6, "when the operator allows sign-up"): POST /v1/users when SVC_SIGNUP is open
// (the default), refused when closed; bad bodies change nothing; a taken e-mail is 409.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './harness.js';

describe('sign-up', () => {
  let open: TestApp;
  let closed: TestApp;
  before(async () => {
    open = await startTestApp({ SVC_ROLE: 'api' });
    closed = await startTestApp({ SVC_ROLE: 'api', SVC_SIGNUP: 'closed' });
  });
  after(async () => {
    await open.close();
    await closed.close();
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
    for (const body of [{ email: 'x@y.z', password: 'short' }, { email: 'not-an-email', password: 'long enough' }, { email: 'a@b.c', password: 'long enough', role: 'owner' }]) {
      const res = await open.request('POST', '/v1/users', { body });
      assert.equal(res.status, 400, JSON.stringify(body));
    }
    assert.equal((await open.request('POST', '/v1/auth/sessions', { body: { email: 'x@y.z', password: 'short' } })).status, 401);
  });

  test('a closed service refuses sign-ups with 403 SIGNUP_CLOSED', async () => {
    const res = await closed.request('POST', '/v1/users', { body: { email: 'bob@example.com', password: 'correct horse' } });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.reason, 'SIGNUP_CLOSED');
  });
});
