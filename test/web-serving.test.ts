// The web app's serving (src/web/app.plugin.ts) over a small build in a temp SVC_WEB_DIR: index.html
// for every app path (each html_url), hashed assets immutable, the API's paths untouched, nothing
// outside the directory reachable, the security headers, and the 503 page when nothing is built.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { APP_CSP } from '../src/web/app.plugin.js';
import { freePort, startTestApp, type TestApp } from './harness.js';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-Ab12Cd34.js"></script></head><body><div id="app"></div></body></html>\n';
const SCRIPT = 'console.log("the app");\n';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function assertAppHeaders(headers: Record<string, unknown>, what: string) {
  assert.equal(headers['content-security-policy'], CSP, what);
  assert.equal(headers['x-content-type-options'], 'nosniff', what);
  assert.equal(headers['referrer-policy'], 'same-origin', what);
  assert.equal(headers['x-frame-options'], 'DENY', what);
  assert.match(String(headers['content-type']), /^text\/html; charset=utf-8/, what);
}

/** A GET of exactly this path (node:http sends it as written). */
function rawGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('web app serving', () => {
  let t: TestApp;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-web-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), INDEX);
    writeFileSync(join(dir, 'assets', 'index-Ab12Cd34.js'), SCRIPT);
    writeFileSync(join(dir, 'assets', '.hidden'), 'not served');
    writeFileSync(join(dir, 'secret.txt'), 'outside assets/');
    t = await startTestApp({ SVC_WEB_DIR: dir, SVC_PREVIEW_PORT: String(await freePort()) });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the CSP the plugin sends is the one this test expects', () => {
    assert.equal(APP_CSP, CSP);
  });

  test('/ and every html_url path answer index.html, revalidated on each load', async () => {
    for (const url of ['/', '/operations/op_01kaxq3m7y0c9v8t6r5p4n3m2k', '/clusters/clu_01kaxq3m7y0c9v8t6r5p4n3m2k', '/installs/x',
      '/secrets/sec_1', '/snippets/snp_1', '/machines/mch_1', '/settings/tokens', '/operations?state=RUNNING&cursor=abc',
      '/clusters/clu_1?tab=installs#x', `/installs/inst_${'a'.repeat(150)}`, '/devices', '/v1x', '/assetsy']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`);
      assert.equal(res.body, INDEX, url);
      assert.equal(res.headers['cache-control'], 'no-cache', url);
      assertAppHeaders(res.headers, url);
    }
  });

  test('HEAD answers the headers of GET without a body; a matching if-none-match is 304', async () => {
    const head = await t.app.inject({ method: 'HEAD', url: '/operations/op_1' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.body, '');
    assertAppHeaders(head.headers, 'HEAD');
    const first = await t.app.inject({ method: 'GET', url: '/' });
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
    const again = await t.app.inject({ method: 'GET', url: '/clusters/clu_1', headers: { 'if-none-match': etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, '');
  });

  test('an asset: its content type, immutable for a year, nosniff; HEAD too', async () => {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await t.app.inject({ method, url: '/assets/index-Ab12Cd34.js?v=1' });
      assert.equal(res.statusCode, 200, method);
      assert.equal(res.body, method === 'GET' ? SCRIPT : '');
      assert.match(String(res.headers['content-type']), /^(text|application)\/javascript; charset=utf-8$/);
      assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable');
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
    }
  });

  test('an unknown asset is the JSON 404 of any unknown path, never index.html', async () => {
    for (const url of ['/assets/index-Zz99.js', '/assets/', '/assets', '/assets/.hidden', '/assets/sub/x.css']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, `${url}: ${res.body.slice(0, 200)}`);
      assert.equal(res.json().error.code, 'NOT_FOUND', url);
      assert.doesNotMatch(res.body, /id="app"/, url);
    }
  });

  test('nothing outside the build directory is reachable, plainly or encoded (raw paths over a socket)', async () => {
    // Over a socket, not app.inject, whose URL parsing would resolve the dot segments first.
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    for (const path of ['/assets/../package.json', '/assets/../index.html', '/assets/..%2fsecret.txt', '/assets/%2e%2e/secret.txt',
      '/assets/%2e%2e%2fsecret.txt', '/assets/%252e%252e/secret.txt', '/assets/..%5csecret.txt', '/assets/..\\secret.txt',
      '/assets/%2e%2e/%2e%2e/package.json', '/assets/.hidden', '/assets/%2ehidden', '/assets//etc/passwd', '/assets/%2fetc%2fpasswd']) {
      const res = await rawGet(port, path);
      assert.equal(res.status, 404, `${path}: ${res.status} ${res.body.slice(0, 200)}`);
      assert.equal(JSON.parse(res.body).error.code, 'NOT_FOUND', path);
    }
    // Outside /assets, dot segments name an app path like any other: index.html, never a file.
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/secret.txt', '/index.html/../secret.txt']) {
      const res = await rawGet(port, path);
      assert.ok(res.status === 200 || res.status === 404, `${path}: ${res.status}`);
      assert.ok(res.status === 404 || res.body === INDEX, `${path}: ${res.body.slice(0, 200)}`);
    }
  });

  test('the API\'s paths keep their JSON answers; other methods on app paths are the JSON 404', async () => {
    for (const [method, url] of [['GET', '/v1/unknown'], ['GET', '/v1'], ['GET', '/v2/workspaces'], ['HEAD', '/v1/nope'],
      ['GET', '/oauth/nope'], ['GET', '/oauth/token'], ['GET', '/.well-known/nope'], ['GET', '/device/nope'],
      ['POST', '/clusters/clu_1'], ['DELETE', '/'], ['PUT', '/operations/op_1'], ['POST', '/assets/index-Ab12Cd34.js']] as const) {
      const res = await t.app.inject({ method, url });
      assert.equal(res.statusCode, 404, `${method} ${url}: ${res.body.slice(0, 200)}`);
      if (method !== 'HEAD') assert.equal(res.json().error.reason, 'ROUTE_NOT_FOUND', `${method} ${url}`);
    }
    assert.equal((await t.app.inject({ method: 'GET', url: '/healthz' })).json().status, 'ok');
    // the API's answer (off the public port without SVC_METRICS_TOKEN), not the web app's page
    assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).json().error.code, 'NOT_FOUND');
    assert.equal((await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).statusCode, 200);
    assert.equal((await t.request('GET', '/v1/me')).status, 401);
  });

  test('/device is still the server-rendered page with its own CSP', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/device' });
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /Sign in to connect a device/);
    assert.doesNotMatch(res.body, /id="app"/);
    assert.match(String(res.headers['content-security-policy']), /^default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/);
    assert.equal(res.headers['x-frame-options'], 'DENY');
  });

  test('the preview router answers its own hosts on its own port, never the app', async () => {
    const base = await t.startPreviewRouter();
    const res = await fetch(`${base}/`, { headers: { host: `nothing--${'0'.repeat(26)}.preview.localhost` } });
    assert.equal(res.status, 404);
    const body = await res.json() as { error: { code: string } };
    assert.equal(body.error.code, 'NOT_FOUND');
  });
});

describe('web app not built', () => {
  let t: TestApp;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-web-empty-'));
    t = await startTestApp({ SVC_WEB_DIR: join(dir, 'missing') });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('/ and app paths answer a 503 page saying to run npm run build, with the app\'s CSP', async () => {
    for (const url of ['/', '/operations/op_1', '/clusters/clu_1?x=1']) {
      const res = await t.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 503, url);
      assert.match(res.body, /web app is not built/, url);
      assert.match(res.body, /npm run build/, url);
      assert.doesNotMatch(res.body, /<script|<style|style=/, url);
      assert.equal(res.headers['cache-control'], 'no-store', url);
      assertAppHeaders(res.headers, url);
    }
  });

  test('the API works as always; an asset is the JSON 404', async () => {
    const user = await t.user();
    assert.equal((await t.request('GET', '/v1/me', { token: user.token })).status, 200);
    const asset = await t.app.inject({ method: 'GET', url: '/assets/index-Ab12Cd34.js' });
    assert.equal(asset.statusCode, 404);
    assert.equal(asset.json().error.code, 'NOT_FOUND');
    assert.equal((await t.app.inject({ method: 'GET', url: '/device' })).statusCode, 200);
  });
});
