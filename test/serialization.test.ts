// The response serializer (src/platform/serialization.ts) writes what fast-json-stringify writes:
// for every JSON response schema of the OpenAPI document, a sample value with an undeclared field
// at every level serializes to the same JSON value with both, the undeclared fields dropped; values
// the native copy does not take as they are (coercions, missing required fields) go to
// fast-json-stringify and behave exactly as before.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SerializerSelector as selectSerializer } from '@fastify/fast-json-stringify-compiler';
import { nativeSerialization } from '../src/platform/serialization.js';
import { startTestApp, type TestApp } from './harness.js';

const SerializerSelector = selectSerializer as unknown as () => (external: unknown, options: unknown) => (route: { schema: unknown }) => (data: unknown) => string;
const UNDECLARED = 'undeclared_field';
type Schema = Record<string, any>;

/** The document's `#/components/schemas/X` references back to the `X#` the routes compile. */
function routeForm(schema: unknown): any {
  if (Array.isArray(schema)) return schema.map(routeForm);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === '$ref' && typeof value === 'string' ? value.replace('#/components/schemas/', '') + '#' : routeForm(value);
  }
  return out;
}

/** A value with every declared property, one undeclared field per object and two items per array. */
function sample(schema: Schema | boolean, external: Record<string, Schema>, depth = 0): unknown {
  if (typeof schema !== 'object' || depth > 12) return { any: [1, 'two', null] };
  if (schema.$ref) return sample(external[schema.$ref.slice(0, -1)]!, external, depth + 1);
  if (schema.anyOf) return sample(schema.anyOf.find((b: Schema) => b.type !== 'null') ?? schema.anyOf[0], external, depth + 1);
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      return schema.format === 'date-time' ? '2026-01-02T03:04:05.000Z' : 'a "quoted" value\n with ünïcode';
    case 'integer': return 7;
    case 'number': return 1.5;
    case 'boolean': return true;
    case 'null': return null;
    case 'array': return [sample(schema.items ?? {}, external, depth + 1), sample(schema.items ?? {}, external, depth + 1)];
    case 'object': {
      const out: Schema = { [UNDECLARED]: { secret: 'must not be written unless extra fields are allowed' } };
      for (const [name, property] of Object.entries<Schema>(schema.properties ?? {})) out[name] = sample(property, external, depth + 1);
      for (const property of Object.values<Schema>(schema.patternProperties ?? {})) out.some_key = sample(property, external, depth + 1);
      return out;
    }
    default: return { free: ['form', 1] };
  }
}

function outcome(serialize: (value: unknown) => string, value: unknown): { json?: unknown; error?: string } {
  try {
    return { json: JSON.parse(serialize(value)) };
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe('response serialization', () => {
  let t: TestApp;
  let doc: any;
  let external: Record<string, Schema>;
  before(async () => {
    t = await startTestApp();
    doc = (await t.request('GET', '/v1/openapi.json')).body;
    external = t.app.getSchemas() as Record<string, Schema>;
  });
  after(() => t.close());

  test('every JSON response schema serializes to what fast-json-stringify writes, without undeclared fields', () => {
    const native = nativeSerialization()(external, {});
    const reference = SerializerSelector()(external, {});
    let compared = 0;
    for (const [path, item] of Object.entries<Schema>(doc.paths)) {
      for (const [method, op] of Object.entries<Schema>(item)) {
        for (const [status, response] of Object.entries<Schema>(op.responses ?? {})) {
          const media = response.content?.['application/json']?.schema;
          if (!media) continue;
          const schema = routeForm(media);
          const route = { schema, method, url: path, httpStatus: status };
          const value = sample(schema, external);
          const mineFn = native(route as never) as (v: unknown) => string;
          const theirsFn = reference(route) as (v: unknown) => string;
          const mine = outcome(mineFn, value);
          const theirs = outcome(theirsFn, value);
          assert.deepEqual(mine, theirs, `${method.toUpperCase()} ${path} ${status}`);
          // Values the copy refuses go to fast-json-stringify: a missing required field fails the same way.
          if (typeof value === 'object' && value !== null && !Array.isArray(value) && schema.$ref) {
            const target = external[schema.$ref.slice(0, -1)]!;
            for (const name of target.required ?? []) {
              const { [name]: _dropped, ...partial } = value as Schema;
              assert.deepEqual(outcome(mineFn, partial), outcome(theirsFn, partial), `${path} ${status} without ${name}`);
            }
          }
          compared++;
        }
      }
    }
    assert.ok(compared > 100, `compared ${compared} response schemas`);
  });

  test('an undeclared field never reaches a response, and coerced values match fast-json-stringify', async () => {
    const native = nativeSerialization()(external, {});
    const reference = SerializerSelector()(external, {});
    const route = { schema: { $ref: 'WorkspaceMember#' }, method: 'get', url: '/x', httpStatus: '200' };
    const member = sample(external.WorkspaceMember!, external) as Schema;
    const written = (native(route as never) as (v: unknown) => string)(member);
    assert.ok(!written.includes(UNDECLARED));
    // a number where a string is declared: fast-json-stringify writes it as a string; so does this serializer
    const coerced = { ...member, user_id: 42 };
    assert.equal((native(route as never) as (v: unknown) => string)(coerced), reference(route)(coerced));
  });
});
