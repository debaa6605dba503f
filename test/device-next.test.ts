// The /device sign-in's `next`: after signing in, the browser goes to the web app path it names
// (a record page opened while signed out); any other value is ignored, so the sign-in is never an
// open redirect nor a way into the API's or the assets' paths.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const GOOD = ['/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k', '/operations/op_01kaxq3m7y0c9v8t6r5p4n3m2k?tab=steps&x=%20y',
  '/', '/settings/tokens', '/machines/mch_1', `/installs/${'a'.repeat(501)}`];
const REFUSED = ['//evil.example/x', '/\\evil.example', '/\\/evil.example', 'https://evil.example/', 'javascript:alert(1)',
  'evil.example', '', '/a//b', '/clusters/x#frag', '/clusters/"><script>', '/clusters/a b', '/é', `/${'a'.repeat(512)}`,
  '/v1/me', '/v1', '/oauth/token', '/.well-known/jwks.json', '/device', '/device/sign-out', '/healthz', '/metrics', '/assets/index.js'];

describe('device sign-in: next', () => {
  let t: TestApp;
  let alice: TestUser;
  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
  });
  after(() => t.close());

  test('a web app path survives the sign-in and is where the browser goes', async () => {
    for (const next of GOOD) {
      const browser = new Browser(t);
      const signIn = await browser.get(`/device?next=${encodeURIComponent(next)}`);
      assert.equal(signIn.status, 200, next);
      assert.match(signIn.html, /Sign in to see this page/, next);
      assert.ok(signIn.html.includes(`name="next" value="${next.replace(/&/g, '&amp;')}"`), next);
      const posted = await browser.post('/device/sign-in', { email: alice.email, password: alice.password, csrf: csrfOf(signIn.html), next });
      assert.equal(posted.status, 303, `${next}: ${posted.html}`);
      assert.equal(posted.headers.location, next);
      // Signed in already: /device?next= goes straight there.
      const again = await browser.get(`/device?next=${encodeURIComponent(next)}`);
      assert.equal(again.status, 303, next);
      assert.equal(again.headers.location, next);
    }
  });

  test('anything else is ignored: the plain sign-in, then the device page', async () => {
    for (const next of REFUSED) {
      const browser = new Browser(t);
      const signIn = await browser.get(`/device?next=${encodeURIComponent(next)}&user_code=BCDF-GHJK`);
      assert.equal(signIn.status, 200, next);
      assert.doesNotMatch(signIn.html, /name="next"/, next);
      assert.match(signIn.html, /name="user_code" value="BCDF-GHJK"/, `${next}: the rest of the form still counts`);
      const posted = await browser.post('/device/sign-in', { email: alice.email, password: alice.password, csrf: csrfOf(signIn.html), next });
      assert.equal(posted.status, 303, `${next}: ${posted.html}`);
      assert.equal(posted.headers.location, '/device', next);
      const signedIn = await browser.get(`/device?next=${encodeURIComponent(next)}`);
      assert.equal(signedIn.status, 200, next);
      assert.match(signedIn.html, /Connect a device/, next);
    }
  });
});

describe('device sign-in: next under a path prefix', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ SVC_PUBLIC_URL: 'https://svc.example.test/base' });
  });
  after(() => t.close());

  test('the redirect carries the prefix of the public URL', async () => {
    const user = await t.user();
    const browser = new Browser(t);
    const page = await browser.get('/device?next=%2Fclusters%2Fclu_1');
    const res = await browser.post('/device/sign-in', { email: user.email, password: user.password, csrf: csrfOf(page.html), next: '/clusters/clu_1' });
    assert.equal(res.status, 303);
    assert.equal(res.headers.location, '/base/clusters/clu_1');
  });
});
