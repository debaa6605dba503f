// The preview router as a reverse proxy (issue 36), over real sockets: an install on a kubernetes
// cluster (the stand-in API server) answers at its install URL and at a preview hostname with the
// workload's own answer, through the API server's service proxy (the stand-in forwards to a real
// HTTP server started here as the workload) or, once the cluster has a gateway_url, straight to
// that address with the original Host. Bodies stream both ways, WebSockets echo, X-Forwarded-*
// reach the workload and hop-by-hop headers do not; a workload that is down is a 502 (a page for
// browsers, the error shape for API clients), one that never answers a 504, a body over the limit
// a 413. An install on the local cluster answers a browser with a page of what would run.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { installNamespace } from '../src/drivers/cluster/driver.js';
import { freePort, startTestApp, type TestApp, type TestUser } from './harness.js';
import { readyStatus, STANDIN_SERVER_CERT, STANDIN_TOKEN, TEST_CLIENT_KEY, standinKubeconfig, startK8sStandin, type K8sStandin } from './k8s-standin.js';
import { wsConnect, wsEcho } from './k8s-standin-proxy.js';

interface HostResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
}

/** A request to the router with a Host header; `body` chunks are written one by one (chunked unless content-length is given). */
function hostRequest(base: string, host: string, opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string[] } = {}): Promise<HostResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { hostname: url.hostname, port: url.port, path: opts.path ?? '/', method: opts.method ?? 'GET', headers: { host, ...opts.headers } },
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
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    for (const chunk of opts.body ?? []) req.write(chunk);
    req.end();
  });
}

/** The test's workload: a few paths, and the last request it saw. */
function startWorkload(): Promise<{ url: string; server: Server; seen: IncomingMessage[]; close(): Promise<void> }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(req);
    if (req.url === '/never') return; // never answers
    if (req.url?.startsWith('/echo')) {
      res.writeHead(201, { 'content-type': String(req.headers['content-type'] ?? 'application/octet-stream'), 'x-echo': 'yes' });
      req.pipe(res);
      return;
    }
    if (req.url === '/headers') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.headers));
      return;
    }
    req.resume();
    // Headers the router must not pass back: the hop-by-hop ones, and one the Connection header names.
    res.writeHead(200, {
      'content-type': 'text/plain; charset=utf-8', 'x-workload': 'hello', 'set-cookie': ['a=1', 'b=2'],
      connection: 'x-resp-hop', 'x-resp-hop': 'secret-hop', 'keep-alive': 'timeout=77',
    });
    res.write('hello from ');
    setTimeout(() => res.end(`the workload at ${req.url}`), 20);
  });
  server.on('upgrade', wsEcho);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    resolve({
      url: `http://127.0.0.1:${port}`, server, seen,
      close: () => new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
    });
  }));
}

const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('the preview router proxies to the workload', () => {
  let t: TestApp;
  let router: string;
  let owner: TestUser;
  let ws: string;
  let k8s: K8sStandin;
  let workload: Awaited<ReturnType<typeof startWorkload>>;
  let clusterId: string;
  let installId: string;
  let hostname: string;
  let previewHost: string;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });
  const wait = async (id: string) => {
    const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=30`, as());
    assert.equal(res.body.state, 'SUCCEEDED', res.text);
    return res.body;
  };
  const logLines: string[] = [];
  const backendKey = () => `${installNamespace(installId)}/hello:8080`;

  async function install(cluster: string, pkgName: string): Promise<{ installId: string; renderId: string; hostname: string }> {
    const pkg = await t.request('POST', '/v1/packages', { ...as(), body: { name: pkgName } });
    assert.equal(pkg.status, 201, pkg.text);
    const version = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, {
      ...as(),
      body: {
        semver: '1.0.0', input_schema: { type: 'object' },
        manifest: {
          routes: [{ route_key: 'web', protocol: 'http', service: { name: 'hello', port: 8080 } }],
          resources: [
            {
              apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'hello' },
              spec: {
                replicas: 2, selector: { matchLabels: { app: 'hello' } },
                template: { metadata: { labels: { app: 'hello' } }, spec: { containers: [{ name: 'hello', image: 'ghcr.io/example/hello:1.0<b>' }] } },
              },
            },
            { apiVersion: 'v1', kind: 'Service', metadata: { name: 'hello' }, spec: { selector: { app: 'hello' }, ports: [{ port: 8080 }] } },
          ],
        },
      },
    });
    assert.equal(version.status, 201, version.text);
    const created = await t.request('POST', '/v1/installs', { ...as(), body: { package_id: pkg.body.id, package_version_pin: { kind: 'latest' }, cluster_id: cluster } });
    assert.equal(created.status, 202, created.text);
    const op = await wait(created.body.id);
    const got = (await t.request('GET', `/v1/installs/${op.response.install_id}`, as())).body;
    return { installId: op.response.install_id, renderId: op.response.render_id, hostname: got.urls[0].hostname };
  }

  before(async () => {
    const port = await freePort();
    t = await startTestApp({
      SVC_PREVIEW_PORT: String(port), SVC_PREVIEW_PROXY_TIMEOUT_S: '0.5', SVC_PREVIEW_PROXY_BODY_LIMIT_BYTES: '1024', SVC_PREVIEW_PROXY_STREAMS_PER_INSTALL: '3',
    });
    const sink = new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    router = await t.startPreviewRouter(pino({ level: 'trace' }, sink));
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Proxy')).id;
    k8s = await startK8sStandin();
    k8s.objects.statusFor = readyStatus;
    workload = await startWorkload();
    const cluster = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'prod', provider: 'kubernetes', kubeconfig: standinKubeconfig(k8s.url) } });
    assert.equal(cluster.status, 202, cluster.text);
    clusterId = (await wait(cluster.body.id)).owner_id;
    ({ installId, hostname } = await install(clusterId, 'hello'));
    k8s.serviceBackends.set(backendKey(), workload.url);
    const bound = await t.request('POST', `/v1/installs/${installId}/preview_hostnames:bindFloating`, {
      ...as({ 'idempotency-key': randomUUID() }),
      body: { track: 'main', render_id: (await t.request('GET', `/v1/installs/${installId}`, as())).body.current_render_id },
    });
    assert.equal(bound.status, 202, bound.text);
    previewHost = (await wait(bound.body.id)).response.hostname;
  });
  after(async () => {
    // The router logged its upstream failures, and no credential of a kubeconfig with them.
    assert.ok(logLines.some((l) => l.includes('preview router: upstream failed')), 'failures are logged');
    const key = TEST_CLIENT_KEY.split('\n')[1]!;
    for (const line of logLines) {
      assert.ok(!line.includes(STANDIN_TOKEN) && !line.includes(key) && !line.includes(Buffer.from(TEST_CLIENT_KEY).toString('base64').slice(0, 40)), line);
    }
    await t.close();
    await workload.close();
    await k8s.close();
  });

  test('the install URL and a preview hostname answer with the workload\'s own answer, through the service proxy', async () => {
    for (const host of [hostname, previewHost]) {
      const res = await hostRequest(router, host, { path: '/page?q=1' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.text, 'hello from the workload at /page?q=1');
      assert.equal(res.headers['x-workload'], 'hello');
      assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
      assert.match(String(res.headers['x-request-id']), /^prv_/);
    }
    // A POST body streams up and back (chunked, in pieces).
    const body = ['first piece,', 'second piece,', 'x'.repeat(600)];
    const echoed = await hostRequest(router, hostname, { method: 'POST', path: '/echo', headers: { 'content-type': 'text/x-test' }, body });
    assert.equal(echoed.status, 201, echoed.text);
    assert.equal(echoed.headers['content-type'], 'text/x-test');
    assert.equal(echoed.headers['x-echo'], 'yes');
    assert.equal(echoed.text, body.join(''));
  });

  test('a path that could climb out of the service proxy\'s prefix is 400, and nothing reaches the cluster', async () => {
    const before = { api: k8s.requests.length, workload: workload.seen.length };
    for (const path of ['/../../../../secrets', '/a/%2e%2e/%2E%2E/x', '/a/..%2f..%2fsecrets', '/a\\..\\b', '/%zz', '/./x']) {
      const res = await hostRequest(router, hostname, { path });
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.error.reason, 'BAD_URL', path);
    }
    assert.deepEqual({ api: k8s.requests.length, workload: workload.seen.length }, before, 'nothing went to the API server or through it');
    // Dots inside a segment are a name like any other.
    const dotted = await hostRequest(router, hostname, { path: '/files/a..b/.well-known/x' });
    assert.equal(dotted.status, 200, dotted.text);
    assert.equal(dotted.text, 'hello from the workload at /files/a..b/.well-known/x');
  });

  test('the stand-in\'s service proxy takes {name}, {name}:{port} and http:{name}:{port}, with the API server\'s credentials', async () => {
    const ns = installNamespace(installId);
    for (const service of ['hello', 'hello:8080', 'http:hello:8080']) {
      const res = await fetch(`${k8s.url}/api/v1/namespaces/${ns}/services/${service}/proxy/direct?x=1`, { headers: { authorization: `Bearer ${STANDIN_TOKEN}` } });
      assert.equal(res.status, 200, service);
      assert.equal(await res.text(), 'hello from the workload at /direct?x=1');
    }
    const anonymous = await fetch(`${k8s.url}/api/v1/namespaces/${ns}/services/hello:8080/proxy/`);
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { kind: string }).kind, 'Status');
  });

  test('X-Forwarded-* are set (overwriting the client\'s) and hop-by-hop headers are dropped', async () => {
    const res = await hostRequest(router, hostname, {
      path: '/headers',
      headers: {
        'x-forwarded-for': '203.0.113.66', 'x-forwarded-host': 'evil.example', connection: 'keep-alive, x-hop', 'x-hop': 'dropped',
        'keep-alive': 'timeout=5', te: 'trailers', 'proxy-authorization': 'Basic c2VjcmV0', 'x-kept': 'kept', authorization: 'Bearer client-token',
      },
    });
    assert.equal(res.status, 200, res.text);
    const seen = res.body as Record<string, string>;
    // The stand-in API server appends its caller (the router) as a real one does: the client comes first.
    assert.equal(seen['x-forwarded-for']!.split(',')[0], '127.0.0.1');
    assert.ok(!seen['x-forwarded-for']!.includes('203.0.113.66'), seen['x-forwarded-for']);
    assert.equal(seen['x-forwarded-host'], hostname);
    assert.equal(seen['x-forwarded-proto'], 'http');
    assert.equal(seen['x-kept'], 'kept');
    for (const name of ['x-hop', 'keep-alive', 'te', 'proxy-authorization', 'authorization']) assert.equal(seen[name], undefined, name);
  });

  test('a WebSocket echoes through the install URL', async () => {
    const socket = await wsConnect(router, hostname, '/ws');
    try {
      assert.match(socket.head, /^HTTP\/1\.1 101/);
      assert.match(socket.head, /x-seen-forwarded-for: 127\.0\.0\.1/i);
      socket.send('ping');
      assert.equal(await socket.next(), 'echo: ping');
      socket.send('pong');
      assert.equal(await socket.next(), 'echo: pong');
    } finally {
      socket.close();
    }
  });

  test('a workload that is down is a 502, without ready pods a 503: a page for browsers, the error shape for API clients', async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    k8s.serviceBackends.set(backendKey(), down);
    try {
      const api = await hostRequest(router, hostname);
      assert.equal(api.status, 502, api.text);
      assert.match(String(api.headers['content-type']), /^application\/json/);
      assert.equal(api.body.error.reason, 'UPSTREAM_UNREACHABLE');
      assert.equal(api.body.error.code, 'UNAVAILABLE');
      assert.match(api.body.error.message, /connection refused/);
      assert.equal(api.body.error.request_id, api.headers['x-request-id']);
      const page = await hostRequest(router, hostname, { headers: BROWSER });
      assert.equal(page.status, 502);
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(page.text, /502 Bad Gateway/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
      assert.doesNotMatch(page.text, /<script/i);
      for (const r of [api, page]) assert.ok(!r.text.includes(STANDIN_TOKEN), 'no credential in an answer');

      k8s.serviceBackends.delete(backendKey());
      const none = await hostRequest(router, hostname);
      assert.equal(none.status, 503, none.text);
      assert.equal(none.body.error.reason, 'UPSTREAM_UNREACHABLE');
      assert.match(none.body.error.message, /Service hello:8080 has no ready pods yet/);
      const ws = await wsConnect(router, hostname).then(() => 'upgraded', (err: Error) => err.message);
      assert.match(ws, /HTTP\/1\.1 503 Service Unavailable/);
      assert.match(ws, /no ready pods yet/);
    } finally {
      k8s.serviceBackends.set(backendKey(), workload.url);
    }
  });

  test('a workload that never answers is a 504 after the configured timeout', async () => {
    const api = await hostRequest(router, hostname, { path: '/never' });
    assert.equal(api.status, 504, api.text);
    assert.equal(api.body.error.reason, 'UPSTREAM_TIMEOUT');
    assert.match(api.body.error.message, /SVC_PREVIEW_PROXY_TIMEOUT_S/);
    const page = await hostRequest(router, previewHost, { path: '/never', headers: BROWSER });
    assert.equal(page.status, 504);
    assert.match(page.text, /504 Gateway Timeout/);
  });

  test('one install has at most SVC_PREVIEW_PROXY_STREAMS_PER_INSTALL requests open at once; more are 503', async () => {
    const before = workload.seen.length;
    const hanging = [0, 1, 2].map(() => hostRequest(router, hostname, { path: '/never' }));
    while (workload.seen.length < before + 3) await new Promise((r) => setTimeout(r, 5));
    const over = await hostRequest(router, previewHost, { path: '/page' });
    assert.equal(over.status, 503, over.text);
    assert.equal(over.body.error.reason, 'TOO_MANY_STREAMS');
    assert.deepEqual((await Promise.all(hanging)).map((r) => r.status), [504, 504, 504]);
    // Released when they end.
    assert.equal((await hostRequest(router, previewHost, { path: '/page' })).status, 200);
  });

  test('a request body over the limit is 413, declared or streamed', async () => {
    const declared = await hostRequest(router, hostname, { method: 'POST', path: '/echo', headers: { 'content-length': '2000' }, body: ['y'.repeat(2000)] });
    assert.equal(declared.status, 413, declared.text);
    assert.equal(declared.body.error.reason, 'BODY_TOO_LARGE');
    const before = workload.seen.length;
    const streamed = await hostRequest(router, hostname, { method: 'POST', path: '/echo', body: ['z'.repeat(600), 'z'.repeat(600)] });
    assert.equal(streamed.status, 413, streamed.text);
    assert.equal(streamed.body.error.reason, 'BODY_TOO_LARGE');
    assert.ok(workload.seen.length <= before + 1, 'nothing after the refusal');
  });

  test('a cluster with gateway_url: the router connects there and sends the original Host', async () => {
    // gateway_url is for kubernetes clusters only, and must be an origin.
    const local = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'sim', gateway_url: 'http://127.0.0.1:1' } });
    assert.equal(local.status, 400, local.text);
    const badUrl = await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: 'http://127.0.0.1:1/path' } });
    assert.equal(badUrl.status, 400, badUrl.text);

    const patched = await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: `${workload.url}/` } });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.gateway_url, workload.url);
    assert.equal((await t.request('GET', `/v1/clusters/${clusterId}`, as())).body.gateway_url, workload.url);
    try {
      // The service proxy has no backend now: only the gateway can answer.
      k8s.serviceBackends.delete(backendKey());
      // By default the router connects to public addresses only: the workload is on loopback,
      // however gateway_url writes it (a name resolving there, IPv4-mapped IPv6, a decimal IPv4).
      const port = new URL(workload.url).port;
      const seenBefore = workload.seen.length;
      for (const gateway of [workload.url, `http://localhost:${port}`, `http://[::ffff:127.0.0.1]:${port}`, `http://2130706433:${port}`, 'http://169.254.169.254']) {
        const set = await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: gateway } });
        assert.equal(set.status, 200, set.text);
        const refused = await hostRequest(router, hostname, { path: '/headers' });
        assert.equal(refused.status, 502, `${gateway}: ${refused.text}`);
        assert.match(refused.body.error.message, /gateway_url leads to a (loopback|link-local) address.*SVC_PREVIEW_PROXY_ALLOW_PRIVATE=true/, gateway);
      }
      assert.equal(workload.seen.length, seenBefore, 'nothing reached the loopback workload');
      assert.equal((await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: workload.url } })).status, 200);
      // The operator allows private gateways (SVC_PREVIEW_PROXY_ALLOW_PRIVATE=true); read on every request.
      t.config.preview.proxy.allowPrivateGateways = true;
      const res = await hostRequest(router, `${hostname}:8081`, { path: '/headers', headers: { 'x-forwarded-for': '203.0.113.66', connection: 'x-hop', 'x-hop': '1' } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.host, `${hostname}:8081`, 'the original Host');
      assert.equal(res.body['x-forwarded-for'], '127.0.0.1');
      assert.equal(res.body['x-hop'], undefined);
      // The workload's hop-by-hop response headers stop at the router.
      const page = await hostRequest(router, previewHost, { path: '/page' });
      assert.equal(page.text, 'hello from the workload at /page');
      assert.equal(page.headers['x-resp-hop'], undefined);
      assert.doesNotMatch(String(page.headers['keep-alive']), /77/, 'the router\'s own keep-alive, not the workload\'s');
      const socket = await wsConnect(router, previewHost);
      socket.send('via gateway');
      assert.equal(await socket.next(), 'echo: via gateway');
      socket.close();

      // A gateway that refuses: 502 naming it.
      const down = `http://127.0.0.1:${await freePort()}`;
      assert.equal((await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: down } })).status, 200);
      const refused = await hostRequest(router, hostname);
      assert.equal(refused.status, 502, refused.text);
      assert.match(refused.body.error.message, /gateway refused the connection/);
    } finally {
      t.config.preview.proxy.allowPrivateGateways = false;
      const cleared = await t.request('PATCH', `/v1/clusters/${clusterId}`, { ...as({ 'if-match': '*' }), body: { gateway_url: null } });
      assert.equal(cleared.status, 200, cleared.text);
      assert.equal(cleared.body.gateway_url, null);
      k8s.serviceBackends.set(backendKey(), workload.url);
    }
    assert.equal((await hostRequest(router, hostname, { path: '/x' })).text, 'hello from the workload at /x', 'back through the service proxy');
  });

  test('an API server over TLS with a client certificate: the service proxy trusts its CA and presents the certificate', async () => {
    const tls = await startK8sStandin({ https: true });
    try {
      tls.objects.statusFor = readyStatus;
      const kubeconfig = standinKubeconfig(tls.url, { caData: Buffer.from(STANDIN_SERVER_CERT).toString('base64'), token: null, clientCertificate: true });
      const cluster = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'tls', provider: 'kubernetes', kubeconfig } });
      assert.equal(cluster.status, 202, cluster.text);
      const other = await install((await wait(cluster.body.id)).owner_id, 'hello-tls');
      tls.serviceBackends.set(`${installNamespace(other.installId)}/hello:8080`, workload.url);
      const res = await hostRequest(router, other.hostname, { path: '/over-tls' });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.text, 'hello from the workload at /over-tls');
      const socket = await wsConnect(router, other.hostname);
      socket.send('tls');
      assert.equal(await socket.next(), 'echo: tls');
      socket.close();
    } finally {
      await tls.close();
    }
  });

  test('an install on the local cluster: a page of what would run for a browser, today\'s JSON for others', async () => {
    const cluster = await t.request('POST', '/v1/clusters', { ...as(), body: { name: 'local' } });
    const local = await install((await wait(cluster.body.id)).owner_id, 'sim-app');
    const json = await hostRequest(router, local.hostname);
    assert.equal(json.status, 200, json.text);
    assert.match(String(json.headers['content-type']), /^application\/json/);
    assert.equal(json.body.install_id, local.installId);
    assert.equal(json.body.render_id, local.renderId);
    const page = await hostRequest(router, local.hostname, { headers: BROWSER });
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.match(String(page.headers['content-security-policy']), /style-src 'sha256-/);
    assert.doesNotMatch(page.text, /<script/i);
    assert.match(page.text, /sim-app 1\.0\.0/);
    assert.match(page.text, /runs no workload/);
    assert.match(page.text, new RegExp(local.renderId));
    assert.match(page.text, /<td>Deployment<\/td><td><code>hello<\/code><\/td><td><code>ghcr\.io\/example\/hello:1\.0&#60;b&#62;<\/code><\/td><td>2<\/td>/);
    assert.match(page.text, /<td>Service<\/td>/);
    assert.match(page.text, /deploying-to-a-kubernetes-cluster/);
  });
});
