// platform.request validation as a function (the engine tests cover it through real runs): the
// normalized shape the bridge receives, and the edges of the path and header rules.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkPlatformRequest, isForbiddenHeader, serializePlatformResponse } from '../src/sandbox/request.js';

describe('checkPlatformRequest', () => {
  test('normalizes method, query (path and object merged, repeated keys as arrays) and header names', () => {
    const checked = checkPlatformRequest({
      method: 'patch',
      path: '/v1/installs/inst_1?view=full&tag=a',
      query: { tag: ['b', 2], flag: true, skipped: undefined },
      headers: { 'If-Match': '"4"', __proto__: 'x' },
      body: { values: { replicas: 2 } },
    });
    assert.ok(checked.ok);
    assert.deepEqual(checked.value, {
      method: 'PATCH',
      path: '/v1/installs/inst_1',
      query: { view: 'full', tag: ['a', 'b', '2'], flag: 'true' },
      headers: { 'if-match': '"4"' },
      body: { values: { replicas: 2 } },
    });
    assert.equal(Object.getPrototypeOf(checked.value.headers), Object.prototype);
  });

  test('a header named __proto__ is a plain own property, never a prototype', () => {
    const checked = checkPlatformRequest(JSON.parse('{"path":"/v1/x","headers":{"__proto__":"v"},"query":{"__proto__":"q"}}'));
    assert.ok(checked.ok);
    assert.ok(Object.hasOwn(checked.value.headers, '__proto__'));
    assert.ok(Object.hasOwn(checked.value.query, '__proto__'));
    assert.equal(Object.getPrototypeOf(checked.value.headers), Object.prototype);
  });

  test('GET is the default method; percent-encoded ordinary characters are fine', () => {
    const checked = checkPlatformRequest({ path: '/v1/packages/my%20pkg/versions' });
    assert.ok(checked.ok);
    assert.equal(checked.value.method, 'GET');
  });

  for (const [raw, message] of [
    [{ path: '/v1/x', query: { a: Array(65).fill('v') } }, /at most 64 query/],
    [{ path: `/v1/${'a'.repeat(2048)}` }, /longer than 2048/],
    [{ path: '/v1/x', headers: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-h${i}`, 'v'])) }, /at most 32 headers/],
    [{ path: '/v1/x', headers: { 'x-a': 'v'.repeat(1025) } }, /at most 1024/],
    [{ path: '/v1/x', headers: { 'x-a': 'v', 'X-A': 'w' } }, /given twice/],
    [{ path: '/v1/x', headers: { 'sec-fetch-site': 'none' } }, /may not be set/],
    [{ path: '/v1/a//b' }, /empty segment/],
    [{ path: '/v1/%00' }, /control characters/],
  ] as const) {
    test(`refuses ${JSON.stringify(raw).slice(0, 80)}`, () => {
      const checked = checkPlatformRequest(raw);
      assert.equal(checked.ok, false);
      if (!checked.ok) assert.match(checked.message, message);
    });
  }

  test('forbidden headers: credentials, the tenant selector, hop-by-hop and forwarding, any case', () => {
    for (const name of ['Authorization', 'COOKIE', 'svc-context', 'x-forwarded-proto', 'X-Real-IP', 'proxy-anything', 'upgrade', 'te']) {
      assert.equal(isForbiddenHeader(name), true, name);
    }
    for (const name of ['if-match', 'idempotency-key', 'accept', 'content-type', 'x-request-id']) assert.equal(isForbiddenHeader(name), false, name);
  });
});

describe('serializePlatformResponse', () => {
  test('keeps status, string headers (lower-cased, no set-cookie) and a JSON body', () => {
    const serialized = serializePlatformResponse({ status: 200, headers: { 'Set-Cookie': 's=1', ETag: '"1"', vary: ['a', 'b'] as never }, body: [1] });
    assert.ok(serialized.ok);
    assert.deepEqual(JSON.parse(serialized.value), { status: 200, headers: { etag: '"1"', vary: 'a, b' }, body: [1] });
  });

  test('refuses an invalid status or a body that is not JSON', () => {
    assert.equal(serializePlatformResponse({ status: 42, headers: {}, body: null }).ok, false);
    assert.equal(serializePlatformResponse({ status: 200, headers: {}, body: 1n as never }).ok, false);
  });
});
