// Oversized form bodies on the OAuth endpoints (issue 33 section 5): 413 in the endpoints' own error
// shape (OAuth's `{error, error_description}`), read by the client, on a connection that stays
// open, as JSON bodies get everywhere; never a reset.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './harness.js';

/** One POST over a fresh connection: the status, headers and body the client read, or the socket error it saw instead. */
function send(port: number, path: string, headers: Record<string, string | number>, chunks: Buffer[]): Promise<{ status: number; headers: Record<string, unknown>; body: any } | { error: string }> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    (async () => {
      for (const chunk of chunks) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      }
      req.end();
    })().catch(() => undefined);
  });
}

describe('oversized form bodies on the OAuth endpoints', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as { port: number }).port;
  });
  after(() => t.close());

  const chunk = Buffer.alloc(64 * 1024, 'a');
  // 2 MB: over the forms' own limit (16 KiB) and over the app's JSON limit.
  const chunks = [Buffer.from('grant_type=client_credentials&client_id='), ...Array.from({ length: 32 }, () => chunk)];
  const total = chunks.reduce((n, c) => n + c.length, 0);

  for (const path of ['/oauth/token', '/oauth/device/code']) {
    test(`${path}: a form body over the limit is 413 invalid_request the client reads, with Content-Length and chunked`, async () => {
      const outcomes: string[] = [];
      for (let i = 0; i < 3; i++) {
        for (const framing of [{ 'content-length': total }, { 'transfer-encoding': 'chunked' }] as Record<string, string | number>[]) {
          const res = await send(port, path, { 'content-type': 'application/x-www-form-urlencoded', ...framing }, chunks);
          if ('error' in res) outcomes.push(`${Object.keys(framing)[0]}: ${res.error}`);
          else {
            assert.equal(res.status, 413, JSON.stringify(res.body));
            assert.equal(res.body.error, 'invalid_request');
            assert.match(res.body.error_description, /larger than the 16384 bytes/);
            assert.equal(res.headers['cache-control'], 'no-store');
            assert.notEqual(res.headers.connection, 'close', 'the connection stays open while the rest of the body is read');
            outcomes.push('413');
          }
        }
      }
      assert.deepEqual(outcomes.filter((o) => o !== '413'), [], 'every client read its 413');
    });

    test(`${path}: after a 413 the same connection serves the next request (no close, no reset)`, async () => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => { text += d; });
      socket.on('error', () => undefined);
      await new Promise((r) => socket.once('connect', r));
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${total}\r\n\r\n`);
      for (const c of chunks) if (!socket.write(c)) await new Promise((r) => socket.once('drain', r));
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await new Promise((r) => socket.once('close', r));
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
      assert.deepEqual(statuses, ['413', '200'], text.slice(0, 500));
    });
  }
});
