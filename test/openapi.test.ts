// The OpenAPI document (GET /v1/openapi.json): it lints clean with @redocly/cli, and structurally
// every operation is named, described, secured like the auth hook enforces, documents its errors in
// the one Error schema and the common headers it accepts; custom `:verb` paths route and render.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import Fastify from 'fastify';
import fastifySwagger from '@fastify/swagger';
import { decodeVerbColon } from '../src/app.js';
import { displayRoute, verbPath } from '../src/platform/http.js';
import { ROOT } from './paths.js';
import { startTestApp, type TestApp } from './harness.js';

const run = promisify(execFile);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const ERROR_REF = '#/components/schemas/Error';

interface Operation {
  method: string;
  path: string;
  op: Record<string, any>;
}

function operationsOf(doc: any): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] });
  }
  return out;
}

function resolvePointer(doc: any, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `non-local $ref ${ref}`);
  let node = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    node = node?.[key];
  }
  return node;
}

/** Follows one level of `$ref` to a schema object. */
function deref(doc: any, schema: any): any {
  return schema?.$ref ? resolvePointer(doc, schema.$ref) : schema;
}

function* walk(node: unknown, path: string): Generator<[string, Record<string, any>]> {
  if (Array.isArray(node)) {
    for (const [i, x] of node.entries()) yield* walk(x, `${path}/${i}`);
  } else if (node && typeof node === 'object') {
    yield [path, node as Record<string, any>];
    for (const [k, v] of Object.entries(node)) yield* walk(v, `${path}/${k}`);
  }
}

// A citation of a document a reader of the API reference does not have: the interface spec (by
// number, "spec 2.2", "spec endpoint 7", or as "the spec"), our design notes (API.md, ARCHITECTURE.md),
// an issue, a bare "section 8.1". Standards readers can look up stay allowed: "RFC 6749 section 5.2",
// "the OpenAPI specification", "the JSON Schema spec"; so do words that merely contain "spec"
// ("type-specific") and Kubernetes field paths ("spec.replicas").
const CITATION = new RegExp([
  String.raw`(?<!\b(?:OpenAPI|JSON Schema|OAuth(?: 2\.0)?|RFC \d+|SemVer(?: 2\.0)?|Kubernetes|Gateway API)\s+)\bspec(?:ification)?\b(?!\.[a-z])`,
  String.raw`\b(?:API|ARCHITECTURE)\.md\b`,
  String.raw`\bissue #?\d+`,
  String.raw`(?<!\bRFC \d+,?\s+)\bsection \d`,
  '§',
  String.raw`\bour (?:decisions?|additions?)\b`,
].join('|'), 'i');

/** Every string value in the document that matches CITATION, as `json/pointer: text`. */
function citationsIn(node: unknown, path: string): string[] {
  if (typeof node === 'string') return CITATION.test(node) ? [`${path || '/'}: ${node}`] : [];
  if (!node || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) => citationsIn(v, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
}

const label = (o: Operation) => `${o.method.toUpperCase()} ${o.path}`;
const param = (o: Operation, where: string, name: string) =>
  (o.op.parameters ?? []).find((p: any) => p.in === where && p.name === name);

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: any;
  let ops: Operation[];

  before(async () => {
    t = await startTestApp();
    const res = await t.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
    ops = operationsOf(doc);
  });
  after(() => t.close());

  test('is served without credentials as OpenAPI 3.1 with info, license, servers and the bearer scheme', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.info.title && doc.info.version && doc.info.description);
    assert.equal(doc.info.license.identifier, 'Apache-2.0');
    assert.deepEqual(doc.servers.map((s: { url: string }) => s.url), ['http://svc.test']);
    assert.deepEqual(
      { type: doc.components.securitySchemes.bearerAuth.type, scheme: doc.components.securitySchemes.bearerAuth.scheme },
      { type: 'http', scheme: 'bearer' },
    );
    assert.ok(ops.length >= 15, `only ${ops.length} operations`);
  });

  test('lints clean with @redocly/cli (zero errors, zero warnings)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc, null, 2));
      const cli = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
      // lint exits non-zero when it finds errors; the JSON report is on stdout either way.
      const result = await run(process.execPath, [cli, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format=json', file], {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        maxBuffer: 32 * 1024 * 1024,
      }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
      let report: { totals: { errors: number; warnings: number }; problems: { severity: string; ruleId: string; message: string; location?: { pointer?: string }[] }[] };
      try {
        report = JSON.parse(result.stdout);
      } catch {
        assert.fail(`redocly printed no JSON report:\n${result.stdout}\n${result.stderr}`);
      }
      const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.pointer ?? ''}: ${p.message}`);
      assert.deepEqual(problems, []);
      assert.equal(report.totals.errors, 0);
      assert.equal(report.totals.warnings, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('every $ref resolves', () => {
    const refs = [...walk(doc, '#')].filter(([, n]) => typeof n.$ref === 'string');
    assert.ok(refs.length > 0);
    for (const [where, node] of refs) assert.ok(resolvePointer(doc, node.$ref) !== undefined, `${where}: ${node.$ref} does not resolve`);
    assert.ok(doc.components.schemas.Error, 'the Error schema is a component');
  });

  test('every operation has a unique operationId, a summary, a description and declared tags', () => {
    const declared = new Map<string, string>(doc.tags.map((x: { name: string; description: string }) => [x.name, x.description]));
    const ids = new Set<string>();
    for (const o of ops) {
      assert.match(o.op.operationId ?? '', /^[A-Za-z][A-Za-z0-9]*$/, `${label(o)} operationId`);
      assert.ok(!ids.has(o.op.operationId), `${label(o)} duplicate operationId ${o.op.operationId}`);
      ids.add(o.op.operationId);
      assert.ok(o.op.summary?.trim(), `${label(o)} summary`);
      assert.ok(o.op.description?.trim(), `${label(o)} description`);
      assert.ok(o.op.tags?.length, `${label(o)} tags`);
      for (const tag of o.op.tags) assert.ok(declared.get(tag), `${label(o)} tag "${tag}" is not declared with a description`);
      for (const [status, r] of Object.entries<any>(o.op.responses)) {
        assert.ok(r.description && r.description !== 'Default Response', `${label(o)} ${status} has no description of its own`);
      }
    }
  });

  test('security matches the route: public routes say security: [], the others the bearer scheme and 401', () => {
    for (const o of ops) {
      assert.ok(Array.isArray(o.op.security), `${label(o)} declares no security`);
      const auth = o.op['x-svc-auth'];
      assert.ok(['none', 'user', 'any', 'workspace', 'workspace-path', 'workspace-or-user', 'machine'].includes(auth), `${label(o)} x-svc-auth ${auth}`);
      if (auth === 'none') {
        // Public: no requirement, or (POST /oauth/token) an optional one, `{}` first, for its HTTP Basic client authentication;
        // /metrics takes the operator's own token (SVC_METRICS_TOKEN), never a user's or a workspace's credential.
        if (o.path === '/metrics') assert.deepEqual(o.op.security, [{ metricsToken: [] }], label(o));
        else if (o.op.security.length) assert.deepEqual(o.op.security[0], {}, label(o));
        else assert.deepEqual(o.op.security, [], label(o));
      } else {
        assert.deepEqual(o.op.security, [{ bearerAuth: [] }], label(o));
        assert.ok(o.op.responses['401'], `${label(o)} secured but documents no 401`);
      }
    }
  });

  test('the auth hook agrees with the document: secured operations answer 401 without a token, public ones do not', async () => {
    for (const o of ops) {
      const url = o.path.replace(/\{[^}]+\}/g, 'x');
      const res = await t.request(o.method.toUpperCase(), url);
      if (o.op['x-svc-auth'] !== 'none') {
        assert.equal(res.status, 401, `${label(o)} without a token`);
        assert.equal(res.body.error.code, 'UNAUTHENTICATED', label(o));
      } else {
        assert.notEqual(res.status, 401, `${label(o)} is documented public but wants credentials`);
      }
      assert.ok(res.status < 500, `${label(o)} answered ${res.status}`);
    }
  });

  test('every error response uses the one Error schema (OAuth endpoints: the RFC 6749 shape for 400/401/413)', () => {
    for (const o of ops) {
      for (const [status, r] of Object.entries<any>(o.op.responses)) {
        if (Number(status) < 400) continue;
        const schema = r.content?.['application/json']?.schema;
        assert.ok(schema, `${label(o)} ${status} has no application/json body`);
        if (o.path.startsWith('/oauth/') && (status === '400' || status === '401' || status === '413')) {
          assert.equal(deref(doc, schema).properties?.error?.type, 'string', `${label(o)} ${status} is not an OAuth error`);
          continue;
        }
        assert.equal(schema.$ref, ERROR_REF, `${label(o)} ${status}`);
      }
      assert.ok(o.op.responses['503'], `${label(o)} does not document 503 (draining)`);
    }
  });

  test('every operation documents a 2xx, or a 303 redirect with its location (the browser routes of single sign-on)', () => {
    for (const o of ops) {
      const statuses = Object.keys(o.op.responses);
      if (statuses.some((s) => s.startsWith('2'))) continue;
      const redirect = o.op.responses['303'];
      assert.ok(redirect, `${label(o)} documents neither a 2xx nor a 303`);
      assert.ok(redirect.headers?.location?.description, `${label(o)} 303 does not document its location header`);
    }
  });

  test('every operation that takes input or credentials documents a 4xx response', () => {
    for (const o of ops) {
      const takesInput = (o.op.parameters?.length ?? 0) > 0 || o.op.requestBody || o.op.security.length > 0;
      if (!takesInput) continue;
      assert.ok(Object.keys(o.op.responses).some((s) => s.startsWith('4')), `${label(o)} documents no 4xx`);
    }
  });

  test('svc-context is documented exactly on workspace-scoped operations', () => {
    for (const o of ops) {
      const scoped = ['workspace', 'workspace-path', 'workspace-or-user'].includes(o.op['x-svc-auth']);
      const header = param(o, 'header', 'svc-context');
      if (!scoped) {
        assert.equal(header, undefined, `${label(o)} is not workspace-scoped but documents svc-context`);
        continue;
      }
      assert.ok(header, `${label(o)} accepts svc-context but does not document it`);
      assert.equal(header.required, false, label(o));
      assert.equal(header.schema.maxLength, 53, label(o));
      assert.ok(header.description, label(o));
    }
  });

  test('creating POSTs document idempotency-key (1-64); writes to versioned resources require if-match (1-256)', () => {
    // Shown-once secrets cannot be replayed (API.md section 3); sign-in and OAuth endpoints create no resource;
    // cancelling an operation starts nothing new, and repeating it is harmless.
    // A machine join and an invitation's accept spend a one-time token: a retry with the same token is refused, never replayed.
    // Sign-up and a draft begun signed out have no principal to scope a key to (a repeated sign-up is 409 EMAIL_TAKEN;
    // :begin shows its claim token once). A draft's checkout session is reused for its revision, so repeating the call answers
    // the same session (the interface takes if-match only there).
    const noIdempotency = new Set([
      'createApiToken', 'createOAuthClient', 'createSession', 'createBrowserSession', 'cancelOperation', 'joinMachine', 'acceptInvitation', 'createUser', 'beginOrderDraft',
      'createOrderDraftCheckoutSession',
    ]);
    for (const o of ops) {
      const key = param(o, 'header', 'idempotency-key');
      if (key) assert.equal(key.schema.maxLength, 64, label(o));
      const creates = o.method === 'post' && o.path.startsWith('/v1/') && (o.op.responses['201'] || o.op.responses['202']);
      if (creates && !noIdempotency.has(o.op.operationId)) assert.ok(key, `${label(o)} creates but does not accept idempotency-key`);

      const ifMatch = param(o, 'header', 'if-match');
      if (ifMatch) assert.equal(ifMatch.schema.maxLength, 256, label(o));
      const success = o.op.responses['200']?.content?.['application/json']?.schema;
      const versioned = deref(doc, success)?.properties?.etag !== undefined;
      if ((o.method === 'patch' || o.method === 'put') && versioned) {
        assert.ok(ifMatch?.required, `${label(o)} writes a versioned resource without a required if-match`);
        assert.ok(o.op.responses['409'], `${label(o)} documents no 409 ABORTED`);
      }
    }
  });

  test('every request string is bounded (maxLength, enum or const)', () => {
    for (const o of ops) {
      const inputs: [string, unknown][] = (o.op.parameters ?? []).map((p: any) => [`${p.in}.${p.name}`, p.schema]);
      for (const [type, media] of Object.entries<any>(o.op.requestBody?.content ?? {})) inputs.push([`body(${type})`, media.schema]);
      for (const [where, schema] of inputs) {
        for (const [path, node] of walk(deref(doc, schema), where)) {
          const isString = node.type === 'string' || (Array.isArray(node.type) && node.type.includes('string'));
          if (isString) assert.ok(node.maxLength !== undefined || node.enum || node.const !== undefined, `${label(o)} ${path} is an unbounded string`);
        }
      }
    }
  });

  test('paths are rendered as clients see them: {param} and :verb, no router syntax', () => {
    for (const path of Object.keys(doc.paths)) {
      assert.doesNotMatch(path, /\(|\)|::|:\{|\/:/, path);
      const verb = /:([^/{}]+)$/.exec(path);
      if (verb) assert.match(verb[1]!, /^[A-Za-z][A-Za-z0-9]*$/, `${path} custom method name`);
    }
  });

  test('no text cites a document readers of the reference do not have (the interface spec, API.md, an issue)', () => {
    const cited = citationsIn(doc, '');
    assert.deepEqual(cited, [], `texts citing a document readers do not have:\n${cited.join('\n')}`);
  });
});

describe('custom methods (AIP-136): POST /v1/things/{id}:verb', () => {
  let app: ReturnType<typeof Fastify>;

  before(async () => {
    // A bare instance with the app's own rewriteUrl and swagger, so the routing itself is under test.
    app = Fastify({ rewriteUrl: (req) => decodeVerbColon(req.url ?? '/') });
    await app.register(fastifySwagger, { openapi: { openapi: '3.1.0', info: { title: 't', version: '1' } } });
    const echo = (name: string) => async (request: { params: unknown }) => ({ route: name, params: request.params });
    app.get('/v1/things/:id', echo('get'));
    app.post(verbPath('/v1/things/:id', 'wait'), echo('wait'));
    app.post(verbPath('/v1/things/:id', 'cancel'), echo('cancel'));
    app.post(verbPath('/v1/secrets/:id/versions/:vid', 'destroy'), echo('destroy'));
    app.post(verbPath('/v1/installs/:id/preview_hostnames', 'bindFloating'), echo('bind'));
    await app.ready();
  });
  after(() => app.close());

  test('the colon, %3A and %3a all reach the verb route with the id alone as the parameter', async () => {
    for (const url of ['/v1/things/op_1:wait', '/v1/things/op_1%3Await', '/v1/things/op_1%3await?timeout=5']) {
      const res = await app.inject({ method: 'POST', url });
      assert.equal(res.statusCode, 200, url);
      assert.deepEqual(res.json(), { route: 'wait', params: { id: 'op_1' } }, url);
    }
    assert.deepEqual((await app.inject({ method: 'POST', url: '/v1/things/op_1:cancel' })).json(), { route: 'cancel', params: { id: 'op_1' } });
    assert.deepEqual((await app.inject({ method: 'POST', url: '/v1/secrets/sec_1/versions/secv_2%3Adestroy' })).json(), {
      route: 'destroy',
      params: { id: 'sec_1', vid: 'secv_2' },
    });
    assert.deepEqual((await app.inject({ method: 'POST', url: '/v1/installs/inst_1/preview_hostnames:bindFloating' })).json(), {
      route: 'bind',
      params: { id: 'inst_1' },
    });
  });

  test('an unknown verb and the plain resource path do not reach a verb route', async () => {
    assert.equal((await app.inject({ method: 'POST', url: '/v1/things/op_1:nope' })).statusCode, 404);
    assert.equal((await app.inject({ method: 'POST', url: '/v1/things/op_1' })).statusCode, 404);
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v1/things/op_1' })).json(), { route: 'get', params: { id: 'op_1' } });
  });

  test('the document shows /v1/things/{id}:wait, and metrics label the route /v1/things/:id:wait', () => {
    const paths = Object.keys((app.swagger() as { paths: Record<string, unknown> }).paths);
    for (const p of ['/v1/things/{id}:wait', '/v1/things/{id}:cancel', '/v1/secrets/{id}/versions/{vid}:destroy', '/v1/installs/{id}/preview_hostnames:bindFloating']) {
      assert.ok(paths.includes(p), `${p} not in ${paths.join(', ')}`);
    }
    assert.equal(displayRoute(verbPath('/v1/things/:id', 'wait')), '/v1/things/:id:wait');
    assert.equal(displayRoute('/v1/workspaces/:id/members'), '/v1/workspaces/:id/members');
  });

  test('decodeVerbColon only touches the path', () => {
    assert.equal(decodeVerbColon('/v1/x/a%3Ab?q=%3A'), '/v1/x/a:b?q=%3A');
    assert.equal(decodeVerbColon('/v1/x/a?q=%3A'), '/v1/x/a?q=%3A');
  });
});
