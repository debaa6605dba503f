// The html_url links of operations, clusters, installs, secrets and snippets answer a page for a signed-in browser
// (the /device sign-in cookie), redirect a signed-out one to the sign-in and back, escape what
// they show, and keep tenancy: another workspace's resource is the same 404 as an unknown id.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Browser, csrfOf } from './browser.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';

describe('resource pages (html_url)', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let alice: TestUser;
  let bob: TestUser;
  let a: Caller;
  let clusterId: string;
  let installOp: any;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    alice = await t.user('alice');
    bob = await t.user('bob');
    a = { user: alice, ws: (await t.workspace(alice, 'A')).id };
    await t.workspace(bob, 'B');
    clusterId = await f.cluster(a);
    const { pkgId } = await f.packageWithVersion(a);
    installOp = await f.healthyInstall(a, pkgId, clusterId, { greeting: '<script>alert("x")</script>' });
  });
  after(() => t.close());

  const path = (url: string) => new URL(url).pathname;

  test('the html_url of each resource is a path served here (never a dead link)', async () => {
    const cluster = await t.request('GET', `/v1/clusters/${clusterId}`, f.opts(a));
    const install = await t.request('GET', `/v1/installs/${installOp.owner_id}`, f.opts(a));
    assert.equal(path(installOp.html_url), `/operations/${installOp.id}`);
    assert.equal(path(cluster.body.html_url), `/clusters/${clusterId}`);
    assert.equal(path(install.body.html_url), `/installs/${installOp.owner_id}`);
    const browser = new Browser(t);
    await browser.signIn(alice);
    for (const url of [installOp.html_url, cluster.body.html_url, install.body.html_url]) {
      const page = await browser.get(path(url));
      assert.equal(page.status, 200, `${url}: ${page.html}`);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
      assert.equal(page.headers['cache-control'], 'no-store');
    }
  });

  test('secrets and snippets have pages too; the page of a secret never shows a value', async () => {
    const secret = await t.request('POST', '/v1/secrets', f.opts(a, { body: { name: 'db password', value: 'hunter2-do-not-show' } }));
    assert.equal(secret.status, 201, secret.text);
    const snippet = await t.request('POST', '/v1/snippets', f.opts(a, { body: { name: 'answer', code: 'return 42', display_type: 'stat' } }));
    assert.equal(snippet.status, 201, snippet.text);
    assert.equal(path(secret.body.html_url), `/secrets/${secret.body.id}`);
    assert.equal(path(snippet.body.html_url), `/snippets/${snippet.body.id}`);
    const browser = new Browser(t);
    await browser.signIn(alice);
    const secretPage = await browser.get(path(secret.body.html_url));
    assert.equal(secretPage.status, 200, secretPage.html);
    assert.match(secretPage.html, /db password/);
    assert.doesNotMatch(secretPage.html, /hunter2/);
    const snippetPage = await browser.get(path(snippet.body.html_url));
    assert.equal(snippetPage.status, 200, snippetPage.html);
    assert.match(snippetPage.html, /return 42/);
    const outsider = new Browser(t);
    await outsider.signIn(bob);
    assert.equal((await outsider.get(path(secret.body.html_url))).status, 404);
  });

  test('signed out: redirected to the sign-in, which comes back to the page', async () => {
    const browser = new Browser(t);
    const first = await browser.get(`/clusters/${clusterId}`);
    assert.equal(first.status, 303);
    assert.equal(first.headers.location, `/device?next=${encodeURIComponent(`/clusters/${clusterId}`)}`);
    const signIn = await browser.get(String(first.headers.location));
    assert.equal(signIn.status, 200);
    assert.match(signIn.html, new RegExp(`name="next" value="/clusters/${clusterId}"`));
    const posted = await browser.post('/device/sign-in', { email: alice.email, password: alice.password, csrf: csrfOf(signIn.html), next: `/clusters/${clusterId}` });
    assert.equal(posted.status, 303, posted.html);
    assert.equal(posted.headers.location, `/clusters/${clusterId}`);
    const page = await browser.get(`/clusters/${clusterId}`);
    assert.equal(page.status, 200);
    assert.match(page.html, /<h1>Cluster c\d+: active<\/h1>/);
    assert.match(page.html, new RegExp(`<a href="/operations/op_|${a.ws}`));
  });

  test('a bearer token is not a browser sign-in: no page without the cookie', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/clusters/${clusterId}`, headers: { authorization: `Bearer ${alice.token}` } });
    assert.equal(res.statusCode, 303);
    assert.doesNotMatch(res.body, /clu_/);
  });

  test('what the page shows is escaped: install values with markup appear as text', async () => {
    const browser = new Browser(t);
    await browser.signIn(alice);
    const page = await browser.get(`/installs/${installOp.owner_id}`);
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.html, /<script>/);
    assert.match(page.html, /&lt;script&gt;alert\(\\&quot;x\\&quot;\)&lt;\/script&gt;/);
    const op = await browser.get(`/operations/${installOp.id}`);
    assert.match(op.html, /<h1>Operation install\.create: SUCCEEDED<\/h1>/);
    assert.match(op.html, /<h2>Steps<\/h2>/);
    assert.match(op.html, new RegExp(`<a href="/installs/${installOp.owner_id}">`));
    assert.match(page.html, new RegExp(`<a href="/clusters/${clusterId}">`));
  });

  test('tenancy: another workspace\'s resource is the same 404 as an unknown or malformed id', async () => {
    const browser = new Browser(t);
    await browser.signIn(bob);
    for (const url of [`/clusters/${clusterId}`, `/installs/${installOp.owner_id}`, `/operations/${installOp.id}`,
      '/clusters/clu_00000000000000000000000000', '/operations/op_"><b>x', `/installs/${'x'.repeat(100)}`]) {
      const page = await browser.get(url);
      assert.equal(page.status, 404, url);
      assert.match(page.html, /<h1>Not found<\/h1>/, url);
      assert.doesNotMatch(page.html, /<b>x/, url);
      assert.doesNotMatch(page.html, /c\d+<\/td>|greeting/, `${url} leaks the resource`);
    }
  });

  test('sign-in only follows `next` to a resource page: no open redirect', async () => {
    for (const next of ['https://evil.example/', '//evil.example/clusters/x', '/v1/clusters', `/clusters/${clusterId}/../../x`]) {
      const browser = new Browser(t);
      const signIn = await browser.get(`/device?next=${encodeURIComponent(next)}`);
      assert.doesNotMatch(signIn.html, /name="next"/, next);
      const posted = await browser.post('/device/sign-in', { email: alice.email, password: alice.password, csrf: csrfOf(signIn.html), next });
      assert.equal(posted.status, 303, next);
      assert.equal(posted.headers.location, '/device', next);
    }
  });
});
