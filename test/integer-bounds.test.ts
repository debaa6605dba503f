// Every integer a request carries has a bound the database can store (issue 33 section 5): an
// out-of-range value is 400 with a field violation on both databases, never a 500 (PostgreSQL
// refused `expires_at` past 64 bits), and nothing is written. The document walk makes the rule
// systematic: a new route whose integer input has no bound fails here.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_EXACT_INTEGER, MAX_INT32, MAX_UNIX_SECONDS } from '../src/platform/integer-bounds.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { makeOffer, makeSeller, type Seller } from './commerce-fixtures.js';

const HUGE = ['18446744073709551616', '1e300', '-18446744073709551616', String(MAX_EXACT_INTEGER + 1)];

/** Every numeric node of the request side of the document: `METHOD path where` -> schema. */
function numericInputs(doc: any): Array<{ where: string; schema: any }> {
  const resolve = (n: any): any => (n?.$ref ? resolve(n.$ref.split('/').slice(1).reduce((o: any, k: string) => o?.[k], doc)) : n);
  const out: Array<{ where: string; schema: any }> = [];
  const walk = (node: any, where: string, seen: Set<any>) => {
    node = resolve(node);
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (types.includes('integer') || types.includes('number')) out.push({ where, schema: node });
    for (const [k, v] of Object.entries(node.properties ?? {})) walk(v, `${where}.${k}`, seen);
    for (const v of Object.values(node.patternProperties ?? {})) walk(v, `${where}.*`, seen);
    for (const k of ['items', 'additionalProperties']) if (typeof node[k] === 'object') walk(node[k], `${where}[]`, seen);
    for (const k of ['anyOf', 'oneOf', 'allOf']) for (const v of node[k] ?? []) walk(v, where, seen);
  };
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      for (const p of op.parameters ?? []) walk(p.schema, `${method.toUpperCase()} ${path} ${p.in}.${p.name}`, new Set());
      for (const c of Object.values<any>(op.requestBody?.content ?? {})) walk(c.schema, `${method.toUpperCase()} ${path} body`, new Set());
    }
  }
  return out;
}

describe('integer inputs are bounded to what the database stores', () => {
  let t: TestApp;
  let seller: Seller;
  let owner: TestUser;
  let ws: string;
  let doc: any;
  const as = (user: TestUser, workspace: string) => ({ token: user.token, headers: { 'svc-context': workspace } });

  before(async () => {
    t = await startTestApp({ SVC_ROLE: 'api' });
    seller = await makeSeller(t);
    owner = seller.user;
    ws = seller.ws;
    doc = (await t.request('GET', '/v1/openapi.json')).body;
  });
  after(() => t.close());

  test('the document: every integer and number a request carries has a minimum and a maximum a column can hold', () => {
    const inputs = numericInputs(doc);
    assert.ok(inputs.length >= 20, `only ${inputs.length} numeric inputs found`);
    const unbounded = inputs.filter(({ schema }) => {
      const max = schema.maximum ?? schema.exclusiveMaximum;
      const min = schema.minimum ?? schema.exclusiveMinimum;
      return typeof max !== 'number' || typeof min !== 'number' || max > MAX_EXACT_INTEGER || min < -MAX_EXACT_INTEGER;
    });
    assert.deepEqual(unbounded.map((u) => u.where), []);
    // Unix times end with year 9999 (formatting a later one as a date fails); other integers fit a 32-bit column unless they say why not.
    const wide = inputs.filter(({ where, schema }) => schema.type === 'integer' && schema.maximum > MAX_INT32 && !/expires_at$|query\.since$|memory_bytes$/.test(where));
    assert.deepEqual(wide.map((w) => `${w.where} <= ${w.schema.maximum}`), []);
    for (const { where, schema } of inputs.filter((i) => /expires_at$|query\.since$/.test(i.where))) assert.equal(schema.maximum, MAX_UNIX_SECONDS, where);
  });

  test('expires_at past what a column holds is 400 naming the field on create and update of an offer, and nothing changes', async () => {
    const offer = await makeOffer(t, seller);
    for (const huge of HUGE) {
      const body = `{"package_id":"${seller.pkgId}","title":"x","pricing":{"currency":"eur","unit_amount":100,"interval":"one_time"},"expires_at":${huge}}`;
      const created = await t.request('POST', '/v1/offers', { ...as(owner, ws), payload: body });
      assert.equal(created.status, 400, `${huge}: ${created.text}`);
      assert.equal(created.body.error.code, 'INVALID_ARGUMENT');
      assert.ok(created.body.error.field_violations.some((v: { field: string }) => v.field === 'body.expires_at'), created.text);
      const updated = await t.request('PATCH', `/v1/offers/${offer.id}`, { ...as(owner, ws), headers: { ...as(owner, ws).headers, 'if-match': offer.etag }, payload: `{"expires_at":${huge}}` });
      assert.equal(updated.status, 400, `${huge}: ${updated.text}`);
      assert.ok(updated.body.error.field_violations.some((v: { field: string }) => v.field === 'body.expires_at'), updated.text);
    }
    const list = await t.request('GET', '/v1/offers', as(owner, ws));
    assert.equal(list.body.data.length, 1, 'no offer was created');
    assert.equal((await t.request('GET', `/v1/offers/${offer.id}`, as(owner, ws))).body.etag, offer.etag, 'the offer did not change');
  });

  test('expires_at of API tokens and machines, and version aliases of secrets, out of range: 400 naming the field', async () => {
    const secret = await t.request('POST', '/v1/secrets', { ...as(owner, ws), body: { name: 'db', value: 'v' } });
    assert.equal(secret.status, 201, secret.text);
    for (const huge of HUGE) {
      const cases: Array<[string, string, string, Record<string, string>, string]> = [
        ['POST', '/v1/api_tokens', `{"name":"ci","expires_at":${huge}}`, {}, 'body.expires_at'],
        ['POST', '/v1/machines', `{"name":"m","expires_at":${huge}}`, {}, 'body.expires_at'],
        ['PATCH', `/v1/secrets/${secret.body.id}`, `{"version_aliases":{"current":${huge}}}`, { 'if-match': secret.body.etag }, 'body.version_aliases.current'],
      ];
      for (const [method, url, payload, headers, field] of cases) {
        const res = await t.request(method, url, { token: owner.token, headers: { 'svc-context': ws, ...headers }, payload });
        assert.equal(res.status, 400, `${method} ${url} ${huge}: ${res.text}`);
        assert.ok(res.body.error.field_violations?.some((v: { field: string }) => v.field.startsWith(field)), `${method} ${url}: ${res.text}`);
      }
    }
    assert.equal((await t.request('GET', '/v1/api_tokens', as(owner, ws))).body.data.length, 0, 'no token was created');
  });

  test('the latest Unix time still accepted is stored and read back (9999-12-31), on both databases', async () => {
    const offer = await makeOffer(t, seller, { expires_at: MAX_UNIX_SECONDS });
    const read = await t.request('GET', `/v1/offers/${offer.id}`, as(owner, ws));
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.expires_at, MAX_UNIX_SECONDS);
  });
});
