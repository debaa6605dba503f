// Packages and their immutable versions through HTTP: create (roles, names), list and get with
// cursors, publish versions (semver rules, input schema and manifest checks, duplicates,
// idempotent replays), latest_version by semver precedence, immutability and workspace isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { resolveVersion } from '../src/modules/packages/packages.repo.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';

const SCHEMA = {
  type: 'object',
  properties: {
    replicas: { type: 'integer', minimum: 1, maximum: 10, default: 1 },
    greeting: { type: 'string', maxLength: 100, default: 'hello' },
  },
  additionalProperties: false,
};

const MANIFEST = {
  routes: [{ route_key: 'web' }, { route_key: 'api', protocol: 'grpc', service: { name: 'api', port: 9000 } }],
  resources: [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', labels: { app: 'web' } },
      spec: { replicas: '{{ values.replicas }}', template: { metadata: { annotations: { render: '{{ render.id }}' } } } },
    },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'greeting' }, data: { text: '{{ values.greeting }}, {{ install.id }}' } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'api' }, spec: { selector: { app: 'api' }, ports: [{ port: 9000 }] } },
  ],
};

describe('packages', () => {
  let t: TestApp;
  let alice: TestUser; // owner of A
  let mallory: TestUser; // member of A
  let adam: TestUser; // admin of A
  let bob: TestUser; // owner of B
  let wsA: string;
  let wsB: string;

  const as = (user: TestUser, ws: string) => ({ token: user.token, headers: { 'svc-context': ws } });
  const post = (user: TestUser, ws: string, url: string, body: unknown, headers: Record<string, string> = {}) =>
    t.request('POST', url, { token: user.token, headers: { 'svc-context': ws, ...headers }, body });
  const get = (user: TestUser, ws: string, url: string) => t.request('GET', url, as(user, ws));

  async function newPackage(name: string, user = alice, ws = wsA): Promise<Record<string, any>> {
    const res = await post(user, ws, '/v1/packages', { name });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  const publish = (pkg: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    post(alice, wsA, `/v1/packages/${pkg}/versions`, { semver: '1.0.0', input_schema: SCHEMA, manifest: MANIFEST, ...body }, headers);

  function assertViolation(res: Response, reason: string, field: string | RegExp) {
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    assert.equal(res.body.error.reason, reason, res.text);
    const fields: string[] = (res.body.error.field_violations ?? []).map((v: { field: string }) => v.field);
    assert.ok(fields.some((f) => (typeof field === 'string' ? f === field : field.test(f))), `${field} in ${fields.join(', ')}`);
  }

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    mallory = await t.user('mallory');
    adam = await t.user('adam');
    bob = await t.user('bob');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    await t.addMember(alice, wsA, mallory, 'member');
    await t.addMember(alice, wsA, adam, 'admin');
  });
  after(() => t.close());

  test('create a package: 201 with Location and ETag, every field; members may not, admins and admin tokens may', async () => {
    const res = await post(alice, wsA, '/v1/packages', { name: 'Hello app', description: 'says hello' });
    assert.equal(res.status, 201, res.text);
    const pkg = res.body;
    assert.deepEqual(Object.keys(pkg).sort(), ['created_at', 'description', 'etag', 'id', 'latest_version', 'name', 'updated_at', 'workspace_id']);
    assert.match(pkg.id, /^pkg_[0-9a-z]{26}$/);
    assert.equal(res.headers.location, `/v1/packages/${pkg.id}`);
    assert.equal(res.headers.etag, `"${pkg.etag}"`);
    assert.equal(pkg.workspace_id, wsA);
    assert.equal(pkg.name, 'Hello app');
    assert.equal(pkg.description, 'says hello');
    assert.equal(pkg.latest_version, null);
    assert.ok(Number.isInteger(pkg.created_at) && pkg.updated_at === pkg.created_at);

    const got = await get(mallory, wsA, `/v1/packages/${pkg.id}`);
    assert.equal(got.status, 200, 'members read packages');
    assert.deepEqual(got.body, pkg);
    assert.equal(got.headers.etag, `"${pkg.etag}"`);

    const denied = await post(mallory, wsA, '/v1/packages', { name: 'by a member' });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.reason, 'ROLE_TOO_LOW');
    assert.equal((await post(adam, wsA, '/v1/packages', { name: 'by an admin' })).status, 201);
    const token = await t.apiToken(alice, wsA, { name: 'publisher', role: 'admin' });
    const byToken = await t.request('POST', '/v1/packages', { token: token.token, body: { name: 'by a token' } });
    assert.equal(byToken.status, 201, byToken.text);
    assert.equal(byToken.body.description, '', 'description defaults to empty');
    const memberToken = await t.apiToken(alice, wsA, { name: 'reader', role: 'member' });
    assert.equal((await t.request('POST', '/v1/packages', { token: memberToken.token, body: { name: 'nope' } })).status, 403);
  });

  test('a taken name is 409 ALREADY_EXISTS in the workspace, free in another; nothing is created', async () => {
    await newPackage('dup');
    const again = await post(alice, wsA, '/v1/packages', { name: 'dup' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'ALREADY_EXISTS');
    assert.equal(again.body.error.reason, 'PACKAGE_NAME_TAKEN');
    assert.equal((await post(bob, wsB, '/v1/packages', { name: 'dup' })).status, 201);
    const list = await get(alice, wsA, '/v1/packages?limit=100');
    assert.equal(list.body.data.filter((p: { name: string }) => p.name === 'dup').length, 1);
  });

  test('bad bodies are 400 with field violations', async () => {
    assertViolation(await post(alice, wsA, '/v1/packages', { name: '' }), 'VALIDATION_FAILED', 'body.name');
    assertViolation(await post(alice, wsA, '/v1/packages', { name: 'x'.repeat(101) }), 'VALIDATION_FAILED', 'body.name');
    assertViolation(await post(alice, wsA, '/v1/packages', { name: 'ok', description: 'x'.repeat(501) }), 'VALIDATION_FAILED', 'body.description');
    assertViolation(await post(alice, wsA, '/v1/packages', { name: 'ok', extra: 1 }), 'VALIDATION_FAILED', 'body.extra');
  });

  test('list newest first with cursors bound to the workspace; get of unknown or malformed ids is 404', async () => {
    const made = [await newPackage('page-1'), await newPackage('page-2'), await newPackage('page-3')];
    const first = await get(alice, wsA, '/v1/packages?limit=2');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.data.map((p: { id: string }) => p.id), [made[2]!.id, made[1]!.id]);
    assert.equal(first.body.has_more, true);
    const second = await get(alice, wsA, `/v1/packages?limit=2&cursor=${first.body.next_cursor}`);
    assert.equal(second.body.data[0].id, made[0]!.id);
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Response = await get(alice, wsA, `/v1/packages?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      all.push(...page.body.data.map((p: { id: string }) => p.id));
      cursor = page.body.next_cursor;
      assert.equal(page.body.has_more, cursor !== null);
    } while (cursor);
    assert.equal(new Set(all).size, all.length);
    assert.deepEqual(all, [...all].sort().reverse());

    const foreign = await get(bob, wsB, `/v1/packages?cursor=${first.body.next_cursor}`);
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error.reason, 'INVALID_CURSOR');
    for (const id of ['pkg_01aaaaaaaaaaaaaaaaaaaaaaaa', 'nonsense', made[0]!.id.replace('pkg_', 'clu_')]) {
      const res = await get(alice, wsA, `/v1/packages/${id}`);
      assert.equal(res.status, 404, id);
      assert.equal(res.body.error.code, 'NOT_FOUND');
    }
  });

  test('publish a version: 201 with Location and every field; the package etag moves', async () => {
    const pkg = await newPackage('versioned');
    const res = await publish(pkg.id, {});
    assert.equal(res.status, 201, res.text);
    const v = res.body;
    assert.deepEqual(Object.keys(v).sort(), ['created_at', 'id', 'input_schema', 'manifest', 'package_id', 'prerelease', 'semver', 'workspace_id']);
    assert.match(v.id, /^pkv_[0-9a-z]{26}$/);
    assert.equal(res.headers.location, `/v1/packages/${pkg.id}/versions/${v.id}`);
    assert.equal(res.headers.etag, undefined, 'versions are immutable: no etag');
    assert.equal(v.package_id, pkg.id);
    assert.equal(v.workspace_id, wsA);
    assert.equal(v.semver, '1.0.0');
    assert.equal(v.prerelease, false);
    assert.deepEqual(v.input_schema, SCHEMA);
    assert.deepEqual(v.manifest.routes, [
      { route_key: 'web', protocol: 'http' },
      { route_key: 'api', protocol: 'grpc', service: { name: 'api', port: 9000 } },
    ]);
    assert.deepEqual(v.manifest.resources, MANIFEST.resources, 'resources are stored as published, placeholders and all');

    const got = await get(mallory, wsA, `/v1/packages/${pkg.id}/versions/${v.id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body, v);
    const after = await get(alice, wsA, `/v1/packages/${pkg.id}`);
    assert.equal(after.body.latest_version, '1.0.0');
    assert.notEqual(after.body.etag, pkg.etag);
    assert.ok(after.body.updated_at >= pkg.updated_at);

    const denied = await post(mallory, wsA, `/v1/packages/${pkg.id}/versions`, { semver: '1.0.1', input_schema: SCHEMA, manifest: MANIFEST });
    assert.equal(denied.status, 403);
    const list = await get(mallory, wsA, `/v1/packages/${pkg.id}/versions`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((x: { id: string }) => x.id), [v.id]);
  });

  test('semver: duplicates 409; invalid, v-prefixed, build metadata and oversized numbers 400', async () => {
    const pkg = await newPackage('semver-rules');
    assert.equal((await publish(pkg.id, { semver: '1.0.0' })).status, 201);
    const dup = await publish(pkg.id, { semver: '1.0.0' });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.error.code, 'ALREADY_EXISTS');
    assert.equal(dup.body.error.reason, 'VERSION_EXISTS');
    for (const bad of ['1.0', '1.0.0.0', 'latest', '01.0.0', '1.0.0-', '1.0.0-01', ' 1.0.0', '1.2.3+build.5', '12345678901.0.0']) {
      assertViolation(await publish(pkg.id, { semver: bad }), bad === '1.0' ? 'VALIDATION_FAILED' : 'SEMVER_INVALID', 'body.semver');
    }
    const v = await publish(pkg.id, { semver: 'v1.0.1' });
    assertViolation(v, 'SEMVER_INVALID', 'body.semver');
    assert.match(v.body.error.message, /no "v" prefix: write "1\.0\.1"/);
    assert.equal((await publish(pkg.id, { semver: '1.0.1-rc.1' })).status, 201);
    const list = await get(alice, wsA, `/v1/packages/${pkg.id}/versions`);
    assert.deepEqual(list.body.data.map((x: { semver: string }) => x.semver), ['1.0.1-rc.1', '1.0.0']);
  });

  test('input schemas: invalid, non-object root, oversized, too deep, remote $ref and ReDoS patterns are 400; nothing is created', async () => {
    const pkg = await newPackage('schema-rules');
    const cases: [unknown, RegExp][] = [
      [{ type: 'object', properties: { a: { type: 'strin' } } }, /input_schema/],
      [{ type: 'object', propertiez: {} }, /unknown keyword/],
      [{ type: 'object', properties: { a: { minimum: 1 } } }, /missing type/],
      [{ type: 'object', properties: { a: { type: 'string', format: 'shoe-size' } } }, /unknown format/],
      [{ type: 'string' }, /root must have/],
      [{ properties: {} }, /root must have/],
      [{ type: 'object', properties: { a: { $ref: 'https://example.test/schema.json' } } }, /reference/],
      [{ type: 'object', properties: { a: { type: 'string', pattern: '^(?=a)b' } } }, /linear-time \(RE2\)/],
      [{ type: 'object', properties: { a: { type: 'string', pattern: '(x)\\1' } } }, /linear-time \(RE2\)/],
      [{ type: 'object', patternProperties: { '^(?<!a)b$': { type: 'string' } } }, /linear-time \(RE2\)/],
      [{ type: 'object', properties: { a: { type: 'string', pattern: '([' } } }, /input_schema/],
      [{ type: 'object', description: 'x'.repeat(70 * 1024) }, /bytes/],
      [{ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' }, /2020-12/],
      [{ $async: true, type: 'object' }, /\$async/],
    ];
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { n: deep } };
    cases.push([deep, /deeper/]);
    for (const [schema, message] of cases) {
      const res = await publish(pkg.id, { input_schema: schema });
      assertViolation(res, 'INPUT_SCHEMA_INVALID', /^body\.input_schema/);
      assert.match(res.body.error.message, message, JSON.stringify(schema).slice(0, 100));
    }
    // Accepted: a slug pattern whose repeated group starts with a guard character, union types, formats, $defs refs.
    const ok = await publish(pkg.id, {
      input_schema: {
        type: 'object',
        $defs: { slug: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' } },
        properties: { name: { $ref: '#/$defs/slug' }, email: { type: ['string', 'null'], format: 'email', maxLength: 254 } },
      },
    });
    assert.equal(ok.status, 201, ok.text);
    const list = await get(alice, wsA, `/v1/packages/${pkg.id}/versions`);
    assert.equal(list.body.data.length, 1);
  });

  test('manifests: route keys, duplicates, cluster-scoped kinds, namespaces and unknown placeholders are 400 with field violations', async () => {
    const pkg = await newPackage('manifest-rules');
    const deployment = MANIFEST.resources[0]!;
    assertViolation(await publish(pkg.id, { manifest: { routes: [{ route_key: 'Web_1' }] } }), 'VALIDATION_FAILED', 'body.manifest.routes.0.route_key');
    assertViolation(await publish(pkg.id, { manifest: { routes: [{ route_key: '-web' }] } }), 'VALIDATION_FAILED', 'body.manifest.routes.0.route_key');
    assertViolation(await publish(pkg.id, { manifest: { routes: [{ route_key: 'a'.repeat(33) }] } }), 'VALIDATION_FAILED', 'body.manifest.routes.0.route_key');
    assertViolation(await publish(pkg.id, { manifest: { routes: [{ route_key: 'web', protocol: 'ftp' }] } }), 'VALIDATION_FAILED', 'body.manifest.routes.0.protocol');
    assertViolation(
      await publish(pkg.id, { manifest: { routes: Array.from({ length: 21 }, (_, i) => ({ route_key: `r${i}` })) } }),
      'VALIDATION_FAILED', 'body.manifest.routes',
    );
    assertViolation(
      await publish(pkg.id, { manifest: { routes: [{ route_key: 'web' }, { route_key: 'api' }, { route_key: 'web' }] } }),
      'MANIFEST_INVALID', 'body.manifest.routes.2.route_key',
    );
    for (const kind of ['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'StorageClass']) {
      const res = await publish(pkg.id, { manifest: { routes: [], resources: [deployment, { apiVersion: 'v1', kind, metadata: { name: 'x' } }] } });
      assertViolation(res, 'MANIFEST_INVALID', 'body.manifest.resources.1.kind');
      assert.match(res.body.error.message, /cluster-scoped/);
    }
    assertViolation(
      await publish(pkg.id, { manifest: { routes: [], resources: [{ ...deployment, metadata: { name: 'web', namespace: 'kube-system' } }] } }),
      'MANIFEST_INVALID', 'body.manifest.resources.0.metadata.namespace',
    );
    assertViolation(
      await publish(pkg.id, { manifest: { routes: [], resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: { a: '{{ secrets.x }}' } }] } }),
      'MANIFEST_INVALID', 'body.manifest.resources.0.data.a',
    );
    assertViolation(
      await publish(pkg.id, { manifest: { routes: [], resources: [{ apiVersion: 'v1', kind: '{{ values.kind }}', metadata: { name: 'c' } }] } }),
      'MANIFEST_INVALID', 'body.manifest.resources.0.kind',
    );
    assertViolation(
      await publish(pkg.id, { manifest: { routes: [], resources: [deployment, deployment] } }),
      'MANIFEST_INVALID', 'body.manifest.resources.1.metadata.name',
    );
    assertViolation(await publish(pkg.id, { manifest: { routes: [], resources: [{ apiVersion: 'v1', kind: 'ConfigMap' }] } }), 'VALIDATION_FAILED', 'body.manifest.resources.0.metadata');
    // A route's service names a Service of the manifest: not a Deployment of that name, not a Service that is not there.
    const noService = await publish(pkg.id, {
      manifest: { routes: [{ route_key: 'web', service: { name: 'api', port: 9000 } }, { route_key: 'www', service: { name: 'web', port: 80 } }], resources: MANIFEST.resources },
    });
    assertViolation(noService, 'MANIFEST_INVALID', 'body.manifest.routes.1.service.name');
    assert.deepEqual(noService.body.error.field_violations.map((v: { field: string }) => v.field), ['body.manifest.routes.1.service.name']);
    assert.match(noService.body.error.message, /names no Service of the manifest: add a Service \(apiVersion v1\) named "web"/);
    // Every problem is listed, not only the first.
    const many = await publish(pkg.id, {
      manifest: {
        routes: [{ route_key: 'a' }, { route_key: 'a' }],
        resources: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n', namespace: 'x' } }],
      },
    });
    assert.deepEqual(many.body.error.field_violations.map((v: { field: string }) => v.field).sort(), [
      'body.manifest.resources.0.kind', 'body.manifest.resources.0.metadata.namespace', 'body.manifest.routes.1.route_key',
    ]);
    assert.equal((await get(alice, wsA, `/v1/packages/${pkg.id}/versions`)).body.data.length, 0, 'nothing was created');
    assert.equal((await publish(pkg.id, { manifest: { routes: [] } })).status, 201, 'an empty manifest is fine');
  });

  test('hostile nesting in the open parts of the body is 400, never a 500, with or without idempotency-key', async () => {
    const pkg = await newPackage('deep');
    for (const n of [100, 50_000]) {
      const deep = `${'['.repeat(n)}${']'.repeat(n)}`;
      const bodies: [string, string][] = [
        [`{"semver":"1.0.0","input_schema":{"type":"object"},"manifest":{"routes":[],"resources":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":${deep}}]}}`, 'MANIFEST_INVALID'],
        [`{"semver":"1.0.0","input_schema":{"type":"object","default":${deep}},"manifest":{"routes":[]}}`, 'INPUT_SCHEMA_INVALID'],
      ];
      for (const [payload, reason] of bodies) {
        for (const headers of [{}, { 'idempotency-key': `deep-${n}-${reason}` }] as Record<string, string>[]) {
          const res = await t.request('POST', `/v1/packages/${pkg.id}/versions`, { token: alice.token, headers: { 'svc-context': wsA, ...headers }, payload });
          assert.equal(res.status, 400, `${n} ${reason}: ${res.text.slice(0, 200)}`);
          // Past the bound of every JSON body (platform/validation.ts), the nesting is refused before the body is parsed.
          assert.ok([reason, 'NESTING_TOO_DEEP'].includes(res.body.error.reason), res.text.slice(0, 200));
        }
      }
    }
    assert.equal((await get(alice, wsA, `/v1/packages/${pkg.id}/versions`)).body.data.length, 0);
  });

  test('latest_version: highest release by precedence, 1.10.0 above 1.9.0, prereleases ignored; resolveVersion agrees', async () => {
    const pkg = await newPackage('precedence');
    const ids: Record<string, string> = {};
    for (const semver of ['1.9.0', '1.10.0', '1.2.0', '2.0.0-rc.1', '1.10.0-beta.2']) {
      const res = await publish(pkg.id, { semver });
      assert.equal(res.status, 201, res.text);
      ids[semver] = res.body.id;
    }
    const read = await get(alice, wsA, `/v1/packages/${pkg.id}`);
    assert.equal(read.body.latest_version, '1.10.0');
    const listed = (await get(alice, wsA, '/v1/packages?limit=100')).body.data.find((p: { id: string }) => p.id === pkg.id);
    assert.equal(listed.latest_version, '1.10.0');
    const prereleaseOnly = await newPackage('only-prereleases');
    assert.equal((await publish(prereleaseOnly.id, { semver: '0.1.0-alpha' })).status, 201);
    assert.equal((await get(alice, wsA, `/v1/packages/${prereleaseOnly.id}`)).body.latest_version, null);

    const db = t.services.db;
    assert.equal((await resolveVersion(db, wsA, pkg.id, { kind: 'latest' }))?.id, ids['1.10.0']);
    assert.equal((await resolveVersion(db, wsA, pkg.id, { kind: 'pinned', version: '2.0.0-rc.1' }))?.id, ids['2.0.0-rc.1']);
    assert.equal(await resolveVersion(db, wsA, pkg.id, { kind: 'pinned', version: '3.0.0' }), undefined);
    assert.equal(await resolveVersion(db, wsB, pkg.id, { kind: 'latest' }), undefined, 'another workspace resolves nothing');
    assert.equal(await resolveVersion(db, wsA, prereleaseOnly.id, { kind: 'latest' }), undefined);

    const page1 = await get(alice, wsA, `/v1/packages/${pkg.id}/versions?limit=3`);
    assert.deepEqual(page1.body.data.map((v: { semver: string }) => v.semver), ['1.10.0-beta.2', '2.0.0-rc.1', '1.2.0']);
    const page2 = await get(alice, wsA, `/v1/packages/${pkg.id}/versions?limit=3&cursor=${page1.body.next_cursor}`);
    assert.deepEqual(page2.body.data.map((v: { semver: string }) => v.semver), ['1.10.0', '1.9.0']);
    assert.equal(page2.body.next_cursor, null);
    const otherPackage = await get(alice, wsA, `/v1/packages/${prereleaseOnly.id}/versions?cursor=${page1.body.next_cursor}`);
    assert.equal(otherPackage.status, 400, 'a cursor is bound to its package');
  });

  test('versions are immutable: no PATCH, PUT or DELETE route (404 in the error shape)', async () => {
    const pkg = await newPackage('immutable');
    const v = (await publish(pkg.id, {})).body;
    for (const method of ['PATCH', 'PUT', 'DELETE']) {
      const res = await t.request(method, `/v1/packages/${pkg.id}/versions/${v.id}`, { ...as(alice, wsA), body: { semver: '9.9.9' } });
      assert.equal(res.status, 404, `${method}: ${res.text}`);
      assert.equal(res.body.error.code, 'NOT_FOUND');
      assert.equal(res.body.error.reason, 'ROUTE_NOT_FOUND');
      assert.equal(res.body.error.request_id, res.headers['x-request-id']);
    }
    const again = await get(alice, wsA, `/v1/packages/${pkg.id}/versions/${v.id}`);
    assert.deepEqual(again.body, v);
  });

  test('idempotent publish: the same key replays the same version; another body under it is 422', async () => {
    const pkg = await newPackage('idempotent');
    const key = { 'idempotency-key': 'publish-1.0.0' };
    const first = await publish(pkg.id, {}, key);
    assert.equal(first.status, 201, first.text);
    const replay = await publish(pkg.id, {}, key);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.headers.location, first.headers.location);
    assert.deepEqual(replay.body, first.body);
    const reused = await publish(pkg.id, { semver: '1.0.1' }, key);
    assert.equal(reused.status, 422);
    assert.equal(reused.body.error.reason, 'IDEMPOTENCY_KEY_REUSED');
    assert.equal((await get(alice, wsA, `/v1/packages/${pkg.id}/versions`)).body.data.length, 1);

    const created = await post(alice, wsA, '/v1/packages', { name: 'idem-pkg' }, { 'idempotency-key': 'pkg-1' });
    const replayed = await post(alice, wsA, '/v1/packages', { name: 'idem-pkg' }, { 'idempotency-key': 'pkg-1' });
    assert.equal(replayed.status, 201);
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    assert.equal(replayed.headers.location, created.headers.location);
    assert.equal(replayed.body.id, created.body.id);
  });

  test('another workspace sees none of it: 404 on every read and write, and B cannot publish into A', async () => {
    const pkg = await newPackage('private');
    const v = (await publish(pkg.id, {})).body;
    for (const url of [`/v1/packages/${pkg.id}`, `/v1/packages/${pkg.id}/versions`, `/v1/packages/${pkg.id}/versions/${v.id}`]) {
      const res = await get(bob, wsB, url);
      assert.equal(res.status, 404, url);
      assert.doesNotMatch(res.text, new RegExp(pkg.id));
    }
    const write = await post(bob, wsB, `/v1/packages/${pkg.id}/versions`, { semver: '2.0.0', input_schema: SCHEMA, manifest: MANIFEST });
    assert.equal(write.status, 404);
    assert.equal((await get(bob, wsB, '/v1/packages')).body.data.some((p: { id: string }) => p.id === pkg.id), false);
    // svc-context naming A with B's credential: 403.
    assert.equal((await get(bob, wsA, `/v1/packages/${pkg.id}`)).status, 403);
    // A version read through another package's path is 404.
    const other = await newPackage('other');
    assert.equal((await get(alice, wsA, `/v1/packages/${other.id}/versions/${v.id}`)).status, 404);
    assert.equal((await get(alice, wsA, `/v1/packages/${pkg.id}/versions/pkv_01aaaaaaaaaaaaaaaaaaaaaaaa`)).status, 404);
    assert.equal((await get(alice, wsA, `/v1/packages/${pkg.id}/versions/${pkg.id}`)).status, 404);
  });
});
