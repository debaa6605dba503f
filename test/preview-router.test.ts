// The preview router over a real listening socket: every install URL and active preview hostname
// answers by Host header (case-insensitive, port ignored), naming the install and render it
// serves; unknown hosts, evicted and released hostnames and deleted installs are 404 in the one
// error shape. Also `svc serve` starting it on SVC_PREVIEW_PORT and logging where.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { createTestDatabase, freePort, startTestApp, type TestApp, type TestUser } from './harness.js';
import { dbEnv, startSvc } from './processes.js';

interface HostResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
}

/** A request to the router with a Host header (fetch does not let one set Host). */
function hostRequest(base: string, host: string, opts: { method?: string; path?: string; headers?: Record<string, string> } = {}): Promise<HostResponse> {
  const url = new URL(opts.path ?? '/', base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { hostname: url.hostname, port: url.port, path: url.pathname + url.search, method: opts.method ?? 'GET', headers: { host, ...opts.headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let body: unknown = undefined;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('the preview router', () => {
  let t: TestApp;
  let router: string;
  let owner: TestUser;
  let ws: string;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });
  const wait = async (id: string) => {
    const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=30`, as());
    assert.equal(res.body.state, 'SUCCEEDED', res.text);
    return res.body;
  };
  let installId: string;
  let r1: string;

  before(async () => {
    const port = await freePort();
    // Zero retention: a pinned hostname is evicted by the deploy that replaces its render.
    t = await startTestApp({ SVC_PREVIEW_PORT: String(port), SVC_PREVIEW_PINNED_RETENTION: '0' });
    router = await t.startPreviewRouter();
    assert.equal(router, `http://127.0.0.1:${port}`);
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Router')).id;
    const cluster = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'local' } });
    await wait(cluster.body.id);
    const pkg = await t.request('POST', '/v1/packages', { ...as(), body: { name: 'shop' } });
    const version = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, {
      ...as(),
      body: {
        semver: '2.1.0',
        input_schema: { type: 'object', properties: { tag: { type: 'string', default: 'a', maxLength: 10 } } },
        manifest: { routes: [{ route_key: 'web' }, { route_key: 'api', protocol: 'grpc' }] },
      },
    });
    assert.equal(version.status, 201, version.text);
    const created = await t.request('POST', '/v1/installs', {
      ...as(), body: { package_id: pkg.body.id, package_version_pin: { kind: 'latest' }, cluster_id: cluster.body.metadata.cluster_id },
    });
    assert.equal(created.status, 202, created.text);
    const op = await wait(created.body.id);
    installId = op.response.install_id;
    r1 = op.response.render_id;
  });
  after(() => t.close());

  test('every URL of the install answers, naming the install and its current render', async () => {
    const got = (await t.request('GET', `/v1/installs/${installId}`, as())).body;
    assert.equal(got.urls.length, 2);
    for (const entry of got.urls) {
      const url = new URL(entry.url);
      assert.equal(url.port, router.split(':').pop(), 'URLs carry the router port');
      assert.equal(url.hostname, entry.hostname);
      const res = await hostRequest(router, url.host);
      assert.equal(res.status, 200, res.text);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.equal(res.headers['x-svc-install-id'], installId);
      assert.equal(res.headers['x-svc-render-id'], r1);
      assert.equal(res.body.kind, 'install_url');
      assert.equal(res.body.hostname, entry.hostname);
      assert.equal(res.body.install_id, installId);
      assert.equal(res.body.render_id, r1);
      assert.equal(res.body.route_key, entry.route_key);
      assert.equal(res.body.semver, '2.1.0');
      assert.equal(res.body.protocol, entry.route_key === 'api' ? 'grpc' : 'http');
    }
    // The Host header is case-insensitive; its port and any path do not matter.
    const web = got.urls.find((u: { route_key: string }) => u.route_key === 'web');
    for (const host of [web.hostname.toUpperCase(), `${web.hostname}:80`, `${web.hostname}.`]) {
      const res = await hostRequest(router, host, { path: '/some/page?q=1' });
      assert.equal(res.status, 200, `${host}: ${res.text}`);
      assert.equal(res.body.install_id, installId);
    }
    const head = await hostRequest(router, web.hostname, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['x-svc-install-id'], installId);
    const post = await hostRequest(router, web.hostname, { method: 'POST' });
    assert.equal(post.status, 200);
  });

  test('unknown hosts are 404 in the one error shape', async () => {
    const domain = t.config.preview.domain;
    for (const host of [
      `nope-01jf8x3q6m2c4y7n0k5t9r1b3d.${domain}`, `main--01jf8x3q6m2c4y7n0k5t9r1b3d.${domain}`, domain, 'example.com', '127.0.0.1', 'bad host!',
    ]) {
      const res = await hostRequest(router, host, { headers: { 'x-request-id': 'probe-1' } });
      assert.equal(res.status, 404, `${host}: ${res.text}`);
      assert.equal(res.body.error.code, 'NOT_FOUND');
      assert.equal(res.body.error.reason, 'HOST_NOT_FOUND');
      assert.equal(res.body.error.request_id, 'probe-1');
      assert.equal(res.headers['x-request-id'], 'probe-1');
    }
    const generated = await hostRequest(router, 'example.com');
    assert.equal(generated.body.error.request_id, generated.headers['x-request-id']);
    const head = await hostRequest(router, 'example.com', { method: 'HEAD' });
    assert.equal(head.status, 404);
    assert.equal(head.text, '');
  });

  test('preview hostnames: floating follows its track, pinned keeps its render, evicted and released are 404', async () => {
    const bind = async (verb: string, body: unknown) => {
      const res = await t.request('POST', `/v1/installs/${installId}/preview_hostnames:${verb}`, { ...as({ 'idempotency-key': randomUUID() }), body });
      assert.equal(res.status, 202, res.text);
      return (await wait(res.body.id)).response as { preview_hostname_id: string; hostname: string };
    };
    const floating = await bind('bindFloating', { track: 'main', render_id: r1 });
    const pinned = await bind('bindPinned', { render_id: r1 });
    for (const [h, kind, track] of [[floating, 'floating', 'main'], [pinned, 'pinned', 'pinned']] as const) {
      const res = await hostRequest(router, h.hostname);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        { ...res.body, package_version_id: undefined },
        {
          hostname: h.hostname, kind: 'preview_hostname', install_id: installId, render_id: r1, semver: '2.1.0', package_version_id: undefined,
          preview_hostname_id: h.preview_hostname_id, binding_kind: kind, track,
        },
      );
      assert.match(res.body.package_version_id, /^pkv_/);
      assert.equal(res.headers['x-svc-render-id'], r1);
    }

    // A new render: the install URL and (once rebound) the floating hostname move; the pinned one is evicted.
    const patch = await t.request('PATCH', `/v1/installs/${installId}`, { ...as({ 'if-match': '*' }), body: { values: { tag: 'b' } } });
    assert.equal(patch.status, 202, patch.text);
    const r2 = (await wait(patch.body.id)).response.render_id as string;
    const web = (await t.request('GET', `/v1/installs/${installId}`, as())).body.urls.find((u: { route_key: string }) => u.route_key === 'web');
    assert.equal((await hostRequest(router, web.hostname)).body.render_id, r2);
    assert.equal((await hostRequest(router, floating.hostname)).body.render_id, r1, 'a floating hostname serves its render until rebound');
    const evicted = await hostRequest(router, pinned.hostname);
    assert.equal(evicted.status, 404, evicted.text);
    const rebound = await bind('bindFloating', { track: 'main', render_id: r2 });
    assert.equal(rebound.hostname, floating.hostname);
    const moved = await hostRequest(router, floating.hostname);
    assert.equal(moved.body.render_id, r2);
    assert.equal(moved.headers['x-svc-render-id'], r2);

    // last_seen_at: written when the router serves the hostname, at most once a minute.
    const url = `/v1/installs/${installId}/preview_hostnames/${floating.preview_hostname_id}`;
    const before_ = (await t.request('GET', url, as())).body;
    clock.offsetMs = 120_000;
    try {
      assert.equal((await hostRequest(router, floating.hostname)).status, 200);
      const seen = (await t.request('GET', url, as())).body;
      assert.ok(seen.last_seen_at >= before_.last_seen_at + 120, `${seen.last_seen_at} vs ${before_.last_seen_at}`);
      assert.equal(seen.etag, before_.etag, 'being served does not change the etag');
      assert.equal((await hostRequest(router, floating.hostname)).status, 200);
      assert.equal((await t.request('GET', url, as())).body.last_seen_at, seen.last_seen_at);
    } finally {
      clock.offsetMs = 0;
    }

    // Released: 404 at once (releasing is not served), and after the operation.
    const current = (await t.request('GET', url, as())).body;
    const del = await t.request('DELETE', url, as({ 'if-match': current.etag }));
    assert.equal(del.status, 202, del.text);
    assert.equal((await hostRequest(router, floating.hostname)).status, 404);
    await wait(del.body.id);
    assert.equal((await hostRequest(router, floating.hostname)).status, 404);
  });

  test('a deleted install answers nowhere', async () => {
    const h = await t.request('POST', `/v1/installs/${installId}/preview_hostnames:bindFloating`, {
      ...as({ 'idempotency-key': randomUUID() }), body: { track: 'last', render_id: (await t.request('GET', `/v1/installs/${installId}`, as())).body.current_render_id },
    });
    const hostname = (await wait(h.body.id)).response.hostname;
    const urls = (await t.request('GET', `/v1/installs/${installId}`, as())).body.urls.map((u: { hostname: string }) => u.hostname);
    assert.equal((await hostRequest(router, hostname)).status, 200);
    const del = await t.request('DELETE', `/v1/installs/${installId}`, as({ 'if-match': '*' }));
    assert.equal(del.status, 202, del.text);
    await wait(del.body.id);
    for (const host of [hostname, ...urls]) assert.equal((await hostRequest(router, host)).status, 404, host);
  });
});

describe('svc serve starts the preview router', () => {
  test('on SVC_PREVIEW_PORT, logs its URL, answers 404 for unknown hosts and stops with the server', { timeout: 240_000 }, async () => {
    const db = await createTestDatabase();
    const port = await freePort();
    const svc = await startSvc(dbEnv(db, { SVC_PREVIEW_PORT: String(port) }));
    try {
      const line = await svc.waitForLog((l) => l.msg === 'preview router listening');
      assert.equal(line.url, `http://127.0.0.1:${port}`);
      assert.equal(line.domain, 'preview.localhost');
      const res = await hostRequest(String(line.url), 'web-01jf8x3q6m2c4y7n0k5t9r1b3d.preview.localhost');
      assert.equal(res.status, 404);
      assert.equal(res.body.error.reason, 'HOST_NOT_FOUND');
    } finally {
      assert.deepEqual(await svc.stop(), { code: 0, signal: null });
      await db.drop();
    }
    await assert.rejects(hostRequest(`http://127.0.0.1:${port}`, 'x.preview.localhost'), /ECONNREFUSED/);
  });
});
