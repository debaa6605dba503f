// The pure functions installs build on: validateValues (defaults, violations with field paths)
// and renderManifest (placeholders, typed substitution, errors, content hash). No database.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../src/platform/errors.js';
import { compileInputSchema, validateValues } from '../src/modules/packages/input-schema.js';
import { checkManifest } from '../src/modules/packages/package-manifest.js';
import { RenderError, renderManifest } from '../src/modules/packages/render.js';

const SCHEMA = JSON.stringify({
  type: 'object',
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 2 },
    image: { type: 'object', properties: { tag: { type: 'string', maxLength: 20, default: 'latest' } }, default: {} },
    hosts: { type: 'array', items: { type: 'string', maxLength: 50, format: 'hostname' }, maxItems: 3 },
    email: { type: 'string', format: 'email', maxLength: 100 },
  },
  required: ['email'],
  additionalProperties: false,
});

function violationsOf(fn: () => unknown): { field: string; description: string }[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'INVALID_ARGUMENT');
    assert.equal(err.options.reason, 'VALUES_INVALID');
    return err.options.fieldViolations ?? [];
  }
  assert.fail('expected VALUES_INVALID');
}

describe('validateValues', () => {
  test('applies the schema defaults, nested ones included, to a copy', () => {
    const input = { email: 'a@example.test' };
    const out = validateValues('pkv_values1', SCHEMA, input);
    assert.deepEqual(out, { email: 'a@example.test', replicas: 2, image: { tag: 'latest' } });
    assert.deepEqual(input, { email: 'a@example.test' }, 'the argument is not changed');
    const given = validateValues('pkv_values1', SCHEMA, { email: 'b@example.test', replicas: 5, image: { tag: 'v2' } });
    assert.deepEqual(given, { email: 'b@example.test', replicas: 5, image: { tag: 'v2' } });
  });

  test('names every violation by its field path', () => {
    const v = violationsOf(() => validateValues('pkv_values1', SCHEMA, { replicas: 11, image: { tag: 7 }, hosts: ['ok.example', 'not a host'], zz: 1 }));
    assert.deepEqual(v.sort((a, b) => a.field.localeCompare(b.field)), [
      { field: 'body.initial_values.email', description: 'is required' },
      { field: 'body.initial_values.hosts.1', description: 'must match format "hostname"' },
      { field: 'body.initial_values.image.tag', description: 'must be string' },
      { field: 'body.initial_values.replicas', description: 'must be <= 10' },
      { field: 'body.initial_values.zz', description: 'is not allowed by the input schema' },
    ]);
    const patch = violationsOf(() => validateValues('pkv_values1', SCHEMA, { email: 'x@example.test', replicas: 0 }, 'body.values'));
    assert.deepEqual(patch, [{ field: 'body.values.replicas', description: 'must be >= 1' }]);
  });

  test('the cache is by version id: a version id always means its own schema', () => {
    const strict = JSON.stringify({ type: 'object', properties: { a: { type: 'integer' } }, additionalProperties: false });
    assert.deepEqual(validateValues('pkv_values2', strict, { a: 1 }), { a: 1 });
    violationsOf(() => validateValues('pkv_values2', strict, { a: 'x' }));
    violationsOf(() => validateValues('pkv_values2', strict, { b: 1 }));
  });
});

describe('patterns run on RE2', () => {
  test('ordinary patterns are accepted and match as in JSON Schema; lookaround and backreferences are refused', () => {
    for (const p of ['^[a-z]+(-[a-z]+)*$', '^(foo|bar)+$', '^\\d{1,3}(\\.\\d{1,3}){3}$', '(a+)+', 'a*a*b', '^\\p{L}+$']) {
      assert.doesNotThrow(() => compileInputSchema({ type: 'object', properties: { v: { type: 'string', pattern: p } } }), p);
    }
    for (const p of ['(?=a)b', '(?<=a)b', '(?!a)b', '(x)\\1']) {
      assert.throws(() => compileInputSchema({ type: 'object', properties: { v: { type: 'string', pattern: p } } }), (err: unknown) =>
        err instanceof ApiError && err.options.reason === 'INPUT_SCHEMA_INVALID' && /RE2/.test(err.message), p);
    }
    const schema = JSON.stringify({ type: 'object', properties: { v: { type: 'string', pattern: '^[a-z]+(-[a-z0-9]+)*$' } }, patternProperties: { '^x-': { type: 'integer' } } });
    assert.deepEqual(validateValues('pkv_re2a', schema, { v: 'ab-c1', 'x-n': 1 }), { v: 'ab-c1', 'x-n': 1 });
    assert.deepEqual(violationsOf(() => validateValues('pkv_re2a', schema, { v: 'Ab' })).map((v) => v.field), ['body.initial_values.v']);
    assert.deepEqual(violationsOf(() => validateValues('pkv_re2a', schema, { 'x-n': 'no' })).map((v) => v.field), ['body.initial_values.x-n']);
  });

  test('uniqueItems compares JSON values regardless of key order', () => {
    const schema = JSON.stringify({ type: 'object', properties: { v: { type: 'array', uniqueItems: true } } });
    assert.deepEqual(validateValues('pkv_uniq', schema, { v: [[0], [1], { a: 1, b: 2 }, 'x', 1] }), { v: [[0], [1], { a: 1, b: 2 }, 'x', 1] });
    violationsOf(() => validateValues('pkv_uniq', schema, { v: [{ a: 1, b: 2 }, { b: 2, a: 1 }] }));
    violationsOf(() => validateValues('pkv_uniq', schema, { v: [1, 1.0] }));
  });

  test('more than 16 patterns in one schema are refused', () => {
    const properties = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`p${i}`, { type: 'string', pattern: '^a' }]));
    assert.throws(() => compileInputSchema({ type: 'object', properties }), /at most 16/);
  });
});

describe('renderManifest', () => {
  const manifest = JSON.stringify(checkManifest({
    routes: [{ route_key: 'web' }],
    resources: [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web-{{ values.name }}', labels: '{{ values.labels }}', annotations: { render: '{{ render.id }}' } },
        spec: {
          replicas: '{{ values.replicas }}',
          paused: '{{values.paused}}',
          template: { spec: { containers: [{ name: 'web', image: 'nginx:{{ values.image.tag }}', args: ['{{ values.args }}', 'n={{ values.replicas }}', '{{ values.missing_ok }}'] }] } },
        },
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ctx' }, data: { id: '{{ install.id }}', ns: '{{ install.namespace }}', obj: 'labels={{ values.labels }}' } },
    ],
  }));
  const values = { name: 'shop', labels: { tier: 'front' }, replicas: 3, paused: false, image: { tag: '1.25' }, args: ['-v', 1], missing_ok: null };
  const ctx = { installId: 'inst_01aaaaaaaaaaaaaaaaaaaaaaaa', renderId: 'rnd_01bbbbbbbbbbbbbbbbbbbbbbbb', namespace: 'svc-01aaaaaaaaaaaaaaaaaaaaaaaa' };

  test('substitutes placeholders: whole strings keep the JSON type, others are text', () => {
    const out = renderManifest(manifest, values, ctx);
    assert.deepEqual(out.routes, [{ route_key: 'web', protocol: 'http' }]);
    const [deploy, cm] = out.resources as any[];
    assert.equal(deploy.metadata.name, 'web-shop');
    assert.deepEqual(deploy.metadata.labels, { tier: 'front' });
    assert.equal(deploy.metadata.annotations.render, ctx.renderId);
    assert.equal(deploy.spec.replicas, 3);
    assert.equal(deploy.spec.paused, false);
    const container = deploy.spec.template.spec.containers[0];
    assert.equal(container.image, 'nginx:1.25');
    assert.deepEqual(container.args, [['-v', 1], 'n=3', null]);
    assert.deepEqual(cm.data, { id: ctx.installId, ns: ctx.namespace, obj: 'labels={"tier":"front"}' });
    assert.equal(cm.metadata.namespace, undefined, 'the driver sets the namespace, not the render');
    assert.match(out.contentHash, /^[0-9a-f]{64}$/);
  });

  test('a substituted object is a copy: changing the output does not change the values', () => {
    const out = renderManifest(manifest, values, ctx);
    (out.resources[0]!.metadata.labels as Record<string, string>).tier = 'changed';
    assert.equal(values.labels.tier, 'front');
  });

  test('the content hash ignores the render id but follows the values and the install', () => {
    const a = renderManifest(manifest, values, ctx);
    const b = renderManifest(manifest, values, { ...ctx, renderId: 'rnd_01cccccccccccccccccccccccc' });
    assert.equal(a.contentHash, b.contentHash);
    assert.notDeepEqual(a.resources, b.resources, 'the render id is substituted all the same');
    assert.notEqual(renderManifest(manifest, { ...values, replicas: 4 }, ctx).contentHash, a.contentHash);
    assert.notEqual(renderManifest(manifest, values, { ...ctx, installId: 'inst_01dddddddddddddddddddddddd' }).contentHash, a.contentHash);
    // Key order of the values does not matter.
    const reordered = Object.fromEntries(Object.entries(values).reverse());
    assert.equal(renderManifest(manifest, reordered, ctx).contentHash, a.contentHash);
  });

  test('values are never scanned again: a value holding a placeholder stays text', () => {
    const out = renderManifest(manifest, { ...values, name: '{{ install.id }}', image: { tag: '{{ render.id }}' } }, ctx);
    assert.equal(out.resources[0]!.metadata.name, 'web-{{ install.id }}');
  });

  test('an unknown path fails with RenderError naming it', () => {
    const { replicas: _omitted, ...rest } = values;
    assert.throws(() => renderManifest(manifest, rest, ctx), (err: unknown) => {
      assert.ok(err instanceof RenderError);
      assert.match(err.message, /values\.replicas/);
      assert.match(err.message, /resources\.0\.spec\.replicas/);
      return true;
    });
    assert.throws(() => renderManifest(manifest, { ...values, image: 'flat' }, ctx), RenderError);
  });

  test('a value that breaks the object (a name that is not a string) fails with RenderError', () => {
    const m = JSON.stringify(checkManifest({ routes: [], resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: '{{ values.name }}' } }] }));
    assert.equal((renderManifest(m, { name: 'ok' }, ctx).resources[0]!.metadata.name), 'ok');
    assert.throws(() => renderManifest(m, { name: 42 }, ctx), /metadata\.name/);
    assert.throws(() => renderManifest(m, { name: '' }, ctx), RenderError);
  });
});
