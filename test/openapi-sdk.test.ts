// What client generators need from the OpenAPI document, asserted over the whole document so new
// routes are held to it: named schemas for every resource (no inline copies), the response headers
// the server sends, examples, discriminated Operation unions and the token endpoint's Basic auth;
// and the wire agrees (Location on every 202, ETag where declared, examples that validate).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const SCHEMAS = '#/components/schemas/';

interface Op { method: string; path: string; op: Record<string, any> }

function operationsOf(doc: any): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] });
  }
  return out;
}
const label = (o: Op, status?: string) => `${o.method.toUpperCase()} ${o.path}${status ? ` ${status}` : ''}`;
const named = (doc: any, schema: any) => typeof schema?.$ref === 'string' && schema.$ref.startsWith(SCHEMAS) && doc.components.schemas[schema.$ref.slice(SCHEMAS.length)];
const componentOf = (doc: any, schema: any) => doc.components.schemas[schema.$ref.slice(SCHEMAS.length)];

describe('OpenAPI document for SDK generators', () => {
  let t: TestApp;
  let doc: any;
  let ops: Op[];
  let alice: TestUser;
  let ws: string;

  before(async () => {
    t = await startTestApp();
    doc = (await t.request('GET', '/v1/openapi.json')).body;
    ops = operationsOf(doc);
    alice = await t.user('alice');
    ws = (await t.workspace(alice, 'Acme')).id;
  });
  after(() => t.close());

  test('every 2xx JSON body is a named schema, or a list envelope of one', () => {
    let checked = 0;
    for (const o of ops) {
      for (const [status, r] of Object.entries<any>(o.op.responses)) {
        if (!status.startsWith('2')) continue;
        const schema = r.content?.['application/json']?.schema;
        if (!schema) continue;
        checked++;
        if (named(doc, schema)) continue;
        // A list envelope: data (items named), has_more, next_cursor.
        assert.deepEqual(Object.keys(schema.properties ?? {}).sort(), ['data', 'has_more', 'next_cursor'], `${label(o, status)} is an inline schema`);
        assert.ok(named(doc, schema.properties.data.items), `${label(o, status)} list items are not a named schema`);
      }
    }
    assert.ok(checked >= 50, `only ${checked} JSON success bodies`);
  });

  test('no named schema is copied inline: an object with the same properties appears only as a $ref', () => {
    const signatures = new Map<string, string>();
    for (const [name, s] of Object.entries<any>(doc.components.schemas)) {
      if (s.properties && Object.keys(s.properties).length > 2) signatures.set(Object.keys(s.properties).sort().join(','), name);
    }
    const visit = (node: any, where: string, root: boolean): void => {
      if (!node || typeof node !== 'object') return;
      if (!root && node.properties) {
        const copy = signatures.get(Object.keys(node.properties).sort().join(','));
        assert.equal(copy, undefined, `${where} is an inline copy of ${copy}`);
      }
      for (const [k, v] of Object.entries(node)) visit(v, `${where}/${k}`, false);
    };
    visit(doc.paths, '#/paths', true);
  });

  test('every resource schema and every request body has an example, and the examples validate', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ ...doc, $id: 'doc' });
    for (const [name, s] of Object.entries<any>(doc.components.schemas)) {
      if (s.oneOf) continue; // the unions: each variant has its own example
      assert.ok(Array.isArray(s.examples) && s.examples.length > 0, `components.schemas.${name} has no examples`);
      const check = ajv.getSchema(`doc#/components/schemas/${name}`)!;
      for (const example of s.examples) assert.ok(check(example), `${name} example: ${JSON.stringify(check.errors)}`);
    }
    for (const o of ops) {
      for (const [type, media] of Object.entries<any>(o.op.requestBody?.content ?? {})) {
        // One example is rendered as `example`, several as `examples: {name: {value}}`.
        const examples = media.example !== undefined ? [media.example] : Object.values<any>(media.examples ?? {}).map((x) => x.value);
        assert.ok(examples.length > 0, `${label(o)} request body (${type}) has no example`);
        const check = ajv.compile(JSON.parse(JSON.stringify(media.schema).replaceAll('"#/components/', '"doc#/components/')));
        for (const example of examples) assert.ok(check(example), `${label(o)} request example: ${JSON.stringify(check.errors)}`);
      }
    }
  });

  test('response headers: x-request-id everywhere, Location on every 202 and 201, ETag on versioned resources, replay and retry headers', () => {
    for (const o of ops) {
      const takesKey = (o.op.parameters ?? []).some((p: any) => p.in === 'header' && p.name === 'idempotency-key');
      for (const [status, r] of Object.entries<any>(o.op.responses)) {
        const headers = r.headers ?? {};
        assert.ok(headers['x-request-id'], `${label(o, status)} does not declare x-request-id`);
        const schema = r.content?.['application/json']?.schema;
        const resource = schema && named(doc, schema) ? componentOf(doc, schema) : undefined;
        if (status === '202') assert.ok(headers.Location, `${label(o, status)} does not declare Location`);
        if (status === '201' && resource?.properties?.id) assert.ok(headers.Location, `${label(o, status)} does not declare Location`);
        if (status.startsWith('2')) {
          assert.equal(Boolean(headers.ETag), Boolean(resource?.properties?.etag), `${label(o, status)}: ETag declared iff the body is a versioned resource`);
          assert.equal(Boolean(headers['idempotent-replayed']), takesKey, `${label(o, status)}: idempotent-replayed iff idempotency-key is accepted`);
        }
        if (status === '401') assert.ok(headers['WWW-Authenticate'], `${label(o, status)} does not declare WWW-Authenticate`);
        if (status === '429' || status === '503') assert.ok(headers['retry-after'], `${label(o, status)} does not declare retry-after`);
      }
    }
  });

  test('Operation metadata and response are discriminated by type, one named variant per registered workflow', () => {
    const op = doc.components.schemas.Operation;
    assert.equal(op.properties.metadata.$ref, `${SCHEMAS}OperationMetadata`);
    assert.deepEqual(op.properties.response.anyOf.map((x: any) => x.$ref ?? x.type), [`${SCHEMAS}OperationResult`, 'null']);
    const workflows = t.services.workflows.types().sort();
    assert.ok(workflows.length >= 10);
    for (const union of ['OperationMetadata', 'OperationResult']) {
      const s = doc.components.schemas[union];
      assert.equal(s.discriminator.propertyName, 'type', union);
      assert.deepEqual(Object.keys(s.discriminator.mapping).sort(), workflows, `${union}: one variant per workflow`);
      assert.equal(s.oneOf.length, workflows.length);
      for (const [type, ref] of Object.entries<string>(s.discriminator.mapping)) {
        const variant = doc.components.schemas[ref.slice(SCHEMAS.length)];
        assert.ok(s.oneOf.some((x: any) => x.$ref === ref), `${union} oneOf lacks ${ref}`);
        assert.equal(variant.properties.type.const, type, ref);
        assert.ok(variant.required.includes('type') && variant.required.includes('cluster_id'), ref);
      }
    }
  });

  test('POST /oauth/token documents HTTP Basic client authentication; both OAuth endpoints take forms and JSON', () => {
    const basic = doc.components.securitySchemes.clientBasic;
    assert.deepEqual({ type: basic.type, scheme: basic.scheme }, { type: 'http', scheme: 'basic' });
    const token = doc.paths['/oauth/token'].post;
    assert.deepEqual(token.security, [{}, { clientBasic: [] }]);
    for (const path of ['/oauth/token', '/oauth/device/code']) {
      assert.deepEqual(Object.keys(doc.paths[path].post.requestBody.content).sort(), ['application/json', 'application/x-www-form-urlencoded'], path);
    }
  });

  test('on the wire: every 202 carries Location (also on an idempotent replay), a versioned resource its ETag', async () => {
    const headers = { 'svc-context': ws, 'idempotency-key': 'create-dev' };
    const created = await t.request('POST', '/v1/clusters', { token: alice.token, headers, body: { name: 'dev' } });
    assert.equal(created.status, 202, created.text);
    assert.equal(created.headers.location, `/v1/operations/${created.body.id}`);
    const replay = await t.request('POST', '/v1/clusters', { token: alice.token, headers, body: { name: 'dev' } });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.headers.location, `/v1/operations/${created.body.id}`);
    const done = await t.request('POST', `/v1/operations/${created.body.id}:wait?timeout=20`, { token: alice.token, headers: { 'svc-context': ws } });
    assert.equal(done.body.state, 'SUCCEEDED', done.text);

    const cluster = await t.request('GET', `/v1/clusters/${done.body.owner_id}`, { token: alice.token, headers: { 'svc-context': ws } });
    assert.equal(cluster.headers.etag, `"${cluster.body.etag}"`);
    const refresh = await t.request('POST', `/v1/clusters/${cluster.body.id}/capabilities:refresh`, { token: alice.token, headers: { 'svc-context': ws } });
    assert.equal(refresh.status, 202, refresh.text);
    assert.equal(refresh.headers.location, `/v1/operations/${refresh.body.id}`);
    const cancel = await t.request('POST', `/v1/operations/${refresh.body.id}:cancel`, { token: alice.token, headers: { 'svc-context': ws } });
    if (cancel.status === 202) assert.equal(cancel.headers.location, `/v1/operations/${refresh.body.id}`);
    await t.request('POST', `/v1/operations/${refresh.body.id}:wait?timeout=20`, { token: alice.token, headers: { 'svc-context': ws } });
    const deleted = await t.request('DELETE', `/v1/clusters/${cluster.body.id}`, { token: alice.token, headers: { 'svc-context': ws, 'if-match': '*' } });
    assert.equal(deleted.status, 202, deleted.text);
    assert.equal(deleted.headers.location, `/v1/operations/${deleted.body.id}`);
  });

  test('on the wire: a served Operation validates against the document, metadata and response by their variants', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, discriminator: true });
    addFormats.default(ajv);
    // Ajv's discriminator takes no mapping (it reads each variant's `type` const instead).
    const copy = JSON.parse(JSON.stringify(doc));
    for (const union of ['OperationMetadata', 'OperationResult']) delete copy.components.schemas[union].discriminator.mapping;
    ajv.addSchema({ ...copy, $id: 'doc' });
    const check = ajv.getSchema('doc#/components/schemas/Operation')!;
    const list = await t.request('GET', '/v1/operations?limit=100', { token: alice.token, headers: { 'svc-context': ws } });
    assert.ok(list.body.data.length >= 3);
    for (const item of list.body.data) {
      const op = (await t.request('GET', `/v1/operations/${item.id}`, { token: alice.token, headers: { 'svc-context': ws } })).body;
      assert.ok(check(op), `${op.metadata.type}: ${JSON.stringify(check.errors)}`);
    }
  });
});
