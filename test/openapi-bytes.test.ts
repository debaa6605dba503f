// GET /v1/openapi.json (issue 33 section 5): about a megabyte that anyone may ask for, so it is
// served from bytes made once (its JSON, and each compressed form on its first request), with a
// strong ETag (If-None-Match -> 304) and gzip or br per Accept-Encoding.
import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './harness.js';

describe('the OpenAPI document is served from bytes made once', () => {
  let t: TestApp;
  const get = (headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url: '/v1/openapi.json', headers });

  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test('the body is the document as before: the JSON of app.swagger(), as application/json', async () => {
    const res = await get();
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.body, JSON.stringify(t.app.swagger()));
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body));
  });

  test('a strong ETag, the same on every request; If-None-Match with it is 304 without a body', async () => {
    const first = await get();
    const etag = String(first.headers.etag);
    assert.match(etag, /^"[A-Za-z0-9_-]{16,}"$/, 'a strong etag');
    assert.equal((await get()).headers.etag, etag);
    for (const inm of [etag, `"nope", ${etag}`, `W/${etag}`, '*']) {
      const res = await get({ 'if-none-match': inm });
      assert.equal(res.statusCode, 304, inm);
      assert.equal(res.body, '', inm);
      assert.equal(res.headers.etag, etag, inm);
    }
    const other = await get({ 'if-none-match': '"something-else"' });
    assert.equal(other.statusCode, 200);
    assert.equal(other.body, first.body);
  });

  test('compressed when asked: gzip and br per Accept-Encoding, with Vary, each decoding to the same bytes', async () => {
    const plain = (await get()).body;
    assert.match(String((await get()).headers.vary), /accept-encoding/i);
    const gz = await get({ 'accept-encoding': 'gzip' });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.match(String(gz.headers.vary), /accept-encoding/i);
    assert.ok(gz.rawPayload.length < plain.length / 4, `gzip is ${gz.rawPayload.length} bytes`);
    assert.equal(gunzipSync(gz.rawPayload).toString('utf8'), plain);
    const br = await get({ 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.equal(brotliDecompressSync(br.rawPayload).toString('utf8'), plain);
    // q=0 refuses a coding; identity when nothing offered is acceptable.
    assert.equal((await get({ 'accept-encoding': 'br;q=0, gzip' })).headers['content-encoding'], 'gzip');
    assert.equal((await get({ 'accept-encoding': 'identity' })).headers['content-encoding'], undefined);
    assert.equal((await get({ 'accept-encoding': 'br;q=0, gzip;q=0' })).body, plain);
    // Each coding has an etag of its own (a strong etag names one sequence of bytes), and each revalidates.
    const etags = new Set([(await get()).headers.etag, gz.headers.etag, br.headers.etag]);
    assert.equal(etags.size, 3);
    const revalidated = await get({ 'accept-encoding': 'gzip', 'if-none-match': String(gz.headers.etag) });
    assert.equal(revalidated.statusCode, 304);
    assert.equal(revalidated.headers.etag, gz.headers.etag);
  });

  test('HEAD answers the headers of the document without it', async () => {
    const res = await t.app.inject({ method: 'HEAD', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, '');
    assert.ok(res.headers.etag);
  });
});
