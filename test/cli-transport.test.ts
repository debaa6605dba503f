// The CLI's transport (src/cli/transport.ts): fetch semantics over node:http and node:https, against
// real local servers: method, headers and body sent as given; status, repeated headers and body
// received; bodiless statuses; failures shaped as fetch's (TypeError with the socket error as cause,
// AbortError on abort); and HTTPS verified against a CA the process trusts (a certificate made here
// by openssl, trusted through NODE_EXTRA_CA_CERTS in a child process).
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { nodeFetch } from '../src/cli/transport.js';
import { freePort } from './harness.js';

async function handler(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (req.url === '/empty') { res.writeHead(204, { 'x-kind': 'empty' }).end(); return; }
  if (req.url === '/slow') { setTimeout(() => res.end('late'), 5_000).unref(); return; }
  res.setHeader('set-cookie', ['a=1', 'b=2']);
  res.writeHead(201, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ method: req.method, url: req.url, auth: req.headers.authorization ?? null, type: req.headers['content-type'] ?? null, length: req.headers['content-length'] ?? null, body: Buffer.concat(chunks).toString('utf8') }));
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

describe('the CLI transport over node:http', () => {
  let server: Server;
  let base: string;
  before(async () => {
    server = createServer((req, res) => { void handler(req, res); });
    base = `http://${await listen(server)}`;
  });
  after(() => { server.closeAllConnections(); server.close(); });

  test('sends method, headers and body; receives status, repeated headers and body', async () => {
    const body = JSON.stringify({ name: 'é ✓' });
    const res = await nodeFetch(new Request(`${base}/v1/things?limit=2`, { method: 'POST', headers: { authorization: 'Bearer t', 'content-type': 'application/json' }, body }));
    assert.equal(res.status, 201);
    assert.equal(res.ok, true);
    assert.deepEqual(res.headers.getSetCookie(), ['a=1', 'b=2']);
    const echoed = await res.json() as Record<string, unknown>;
    assert.deepEqual(echoed, { method: 'POST', url: '/v1/things?limit=2', auth: 'Bearer t', type: 'application/json', length: String(Buffer.byteLength(body)), body });
  });

  test('a GET has no body and a 204 has a null body', async () => {
    const got = await nodeFetch(new Request(`${base}/x`));
    assert.equal((await got.json() as { length: unknown }).length, null);
    const empty = await nodeFetch(new Request(`${base}/empty`, { method: 'DELETE' }));
    assert.equal(empty.status, 204);
    assert.equal(empty.body, null);
    assert.equal(empty.headers.get('x-kind'), 'empty');
  });

  test('a refused connection is a TypeError with the socket error as its cause, as fetch gives', async () => {
    const port = await freePort();
    await assert.rejects(nodeFetch(new Request(`http://127.0.0.1:${port}/`)), (err: unknown) => {
      assert.ok(err instanceof TypeError);
      assert.equal((err.cause as NodeJS.ErrnoException).code, 'ECONNREFUSED');
      return true;
    });
  });

  test('aborting the request signal rejects with an AbortError', async () => {
    const abort = new AbortController();
    const pending = nodeFetch(new Request(`${base}/slow`, { signal: abort.signal }));
    setTimeout(() => abort.abort(), 50);
    await assert.rejects(pending, (err: unknown) => (err as Error).name === 'AbortError');
  });
});

describe('the CLI transport over node:https', () => {
  let dir: string;
  let server: Server;
  let base: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    server = createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (req, res) => { void handler(req, res); }) as unknown as Server;
    base = `https://${await listen(server)}`;
  });
  after(() => { server.closeAllConnections(); server.close(); rmSync(dir, { recursive: true, force: true }); });

  test('a certificate the process does not trust is refused, with the TLS error as cause', async () => {
    await assert.rejects(nodeFetch(new Request(`${base}/x`)), (err: unknown) => {
      assert.ok(err instanceof TypeError);
      assert.match(String((err.cause as NodeJS.ErrnoException).code), /SELF_SIGNED|UNABLE_TO_VERIFY/);
      return true;
    });
  });

  test('a certificate trusted through NODE_EXTRA_CA_CERTS is accepted', async () => {
    const script = `import { nodeFetch } from ${JSON.stringify(new URL('../src/cli/transport.js', import.meta.url).href)};
const res = await nodeFetch(new Request(${JSON.stringify(`${base}/tls`)}, { method: 'PUT', body: 'over tls' }));
process.stdout.write(JSON.stringify({ status: res.status, body: await res.json() }));`;
    // asynchronously: the server answering it runs in this process
    const child = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') } });
    const out = JSON.parse(child.stdout) as { status: number; body: { method: string; body: string } };
    assert.equal(out.status, 201);
    assert.equal(out.body.method, 'PUT');
    assert.equal(out.body.body, 'over tls');
  });
});
