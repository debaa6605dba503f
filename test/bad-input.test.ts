// Bad input, derived from the OpenAPI document so routes added later are covered (API.md
// sections 1-2): for every route with a JSON body, wrong types, unknown fields, oversized strings,
// malformed JSON, bodies over SVC_BODY_LIMIT and wrong content types are 400 INVALID_ARGUMENT in
// the one error shape and change nothing in the database. Also: ids with the wrong prefix are 404,
// unknown routes are 404 in the error shape, x-request-id is echoed or generated, and the
// harness's global guard fails any test file in which a request produced a 5xx.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { sampleValue, resolveSchema, type Schema } from './openapi-samples.js';

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: Schema }[];
  body: Schema | null;
  secured: boolean;
  /** the route's x-svc-auth: `machine` routes take a machine agent's credential */
  auth?: string;
}

// OAuth endpoints answer in the RFC 6749 error shape, not ours; their own tests cover them.
const SKIP = [/^\/oauth\//, /^\/device(\/|$)/, /^\/\.well-known\//];
// The payment providers' webhooks take the exact text their signature covers and parse nothing
// before it is verified: any other body is 400 WEBHOOK_SIGNATURE_INVALID and changes nothing
// (payments-local.test.ts, payments-stripe.test.ts and orders-payments.test.ts send them).
const RAW_BODY = [/^\/v1\/payment_webhooks\//];

/** The JSON type(s) a property accepts, looking through anyOf/oneOf branches. */
function typesOf(raw: Schema | undefined, doc: Schema): Set<string> {
  const schema = resolveSchema(raw, doc);
  const out = new Set<string>();
  if (!schema) return out;
  for (const k of ['anyOf', 'oneOf']) if (Array.isArray(schema[k])) for (const s of schema[k]) for (const x of typesOf(s, doc)) out.add(x);
  if (schema.type) for (const x of [schema.type].flat()) out.add(x);
  if (schema.const !== undefined) out.add(typeof schema.const);
  return out;
}

const WRONG: Record<string, unknown[]> = {
  string: [12345, true, { a: 1 }, ['x']],
  integer: ['abc', '12', 1.5, true, [1]],
  number: ['abc', '1', true],
  boolean: ['true', 1, null],
  object: ['x', 5, []],
  array: ['x', 5, {}],
};

function operationsOf(doc: Schema): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<Schema>(doc.paths)) {
    if (SKIP.some((re) => re.test(path)) || RAW_BODY.some((re) => re.test(path))) continue;
    for (const [method, op] of Object.entries<Schema>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      ops.push({
        method: method.toUpperCase(),
        path,
        parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])],
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        secured: Array.isArray(op.security) ? op.security.length > 0 : Array.isArray(doc.security) && doc.security.length > 0,
        auth: op['x-svc-auth'],
      });
    }
  }
  return ops;
}

const paramsOf = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

describe('bad input over every route of the OpenAPI document', () => {
  let t: TestApp;
  let doc: Schema;
  let ops: Operation[];
  let carol: TestUser;
  let mallory: TestUser;
  let ws: string;
  const pathValues = new Map<string, string>();
  let machineCredential = '';
  /** The credential a secured route takes: the machine's on the agent's routes, else carol's session. */
  const tokenFor = (op: Operation) => (op.auth === 'machine' ? machineCredential : carol.token);

  before(async () => {
    t = await startTestApp();
    carol = await t.user('carol');
    mallory = await t.user('mallory');
    // An instance admin: the /v1/admin routes are probed with real ids too.
    await t.services.admin.setAdmin(carol.id, true, 'operator');
    ws = (await t.workspace(carol, 'Inputs')).id;
    await t.addMember(carol, ws, mallory, 'member');
    await t.apiToken(carol, ws, { name: 'for-path-ids' });
    // A snippet with a run: the runs routes are probed with real ids.
    const snippet = await t.request('POST', '/v1/snippets', { token: carol.token, headers: { 'svc-context': ws }, body: { name: 's', code: 'return 1', display_type: 'json' } });
    await t.request('POST', `/v1/snippets/${snippet.body.id}/runs`, { token: carol.token, headers: { 'svc-context': ws }, body: {} });
    // A machine that joined a cluster: the agent's heartbeat route is probed with its credential.
    const cluster = await t.request('POST', '/v1/clusters', { token: carol.token, headers: { 'svc-context': ws }, body: { name: 'inputs' } });
    await t.request('POST', `/v1/operations/${cluster.body.id}:wait?timeout=30`, { token: carol.token, headers: { 'svc-context': ws } });
    const bootstrap = await t.request('POST', `/v1/clusters/${cluster.body.owner_id}/worker_bootstraps`, { token: carol.token, headers: { 'svc-context': ws }, body: {} });
    const facts = { hostname: 'h', os: 'linux', arch: 'x64', cpu_count: 1, memory_bytes: 1, kernel: 'k', agent_version: '0.1.0' };
    machineCredential = (await t.request('POST', '/v1/machine_joins', { body: { token: bootstrap.body.token, facts } })).body.credential;
    doc = (await t.request('GET', '/v1/openapi.json')).body;
    ops = operationsOf(doc);
  });
  after(() => t.close());

  /** A real value for path parameter `name` in carol's workspace, by listing its collection. */
  async function ownValue(collection: string, name: string): Promise<string> {
    if (collection === '/v1/workspaces') return ws;
    const key = `${collection}|${name}`;
    if (!pathValues.has(key)) {
      const res = await t.request('GET', `${collection}?limit=100`, { token: carol.token, headers: { 'svc-context': ws } });
      const items: Record<string, unknown>[] = res.status === 200 && Array.isArray(res.body?.data) ? res.body.data : [];
      const item = items.find((x) => x.user_id !== carol.id) ?? items[0];
      pathValues.set(key, item ? String(item[name] ?? item.id) : `x_01${'a'.repeat(24)}`);
    }
    return pathValues.get(key)!;
  }

  async function fill(template: string, override?: { param: string; value: string }): Promise<string> {
    let out = template;
    for (const name of paramsOf(template)) {
      const marker = `{${name}}`;
      const collection = out.slice(0, out.indexOf(`/${marker}`));
      const value = override?.param === name ? override.value : await ownValue(collection, name);
      out = out.replace(marker, encodeURIComponent(value));
    }
    return out;
  }

  function headersFor(op: Operation): Record<string, string> {
    const h: Record<string, string> = {};
    for (const p of op.parameters) {
      if (p.in !== 'header') continue;
      if (p.name === 'svc-context') h[p.name] = ws;
      else if (p.name === 'if-match') h[p.name] = '*';
      else if (p.name === 'idempotency-key') h[p.name] = randomUUID();
      else if (p.required) h[p.name] = String(sampleValue(p.schema, doc));
    }
    return h;
  }

  /**
   * The rows of every table (by id where there is one, else the count), to prove a rejected request
   * created or deleted nothing. Whole rows are not compared: sessions renew last_used_at by themselves.
   */
  async function databaseState(): Promise<string> {
    // Domain events' subscribers run after commit from the job queue: let the set-up's finish
    // first, so the snapshot holds only what requests changed.
    for (let i = 0; i < 600; i++) {
      const pending = await sql<{ n: number | string }>`select count(*) as n from jobs where event_id is not null`.execute(t.services.db);
      if (Number(pending.rows[0]!.n) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const tables = (await t.services.db.introspection.getTables()).filter((x) => !x.name.startsWith('kysely_'));
    const out: Record<string, unknown> = {};
    for (const table of tables.sort((a, b) => a.name.localeCompare(b.name))) {
      if (table.columns.some((c) => c.name === 'id')) {
        const rows = await sql<{ id: string }>`select id from ${sql.table(table.name)}`.execute(t.services.db);
        out[table.name] = rows.rows.map((r) => String(r.id)).sort();
      } else {
        const rows = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table.name)}`.execute(t.services.db);
        out[table.name] = Number(rows.rows[0]!.n);
      }
    }
    return JSON.stringify(out);
  }

  function assertInvalid(label: string, res: Response, failures: string[], reason?: string, status = 400) {
    const e = res.body?.error;
    if (res.status !== status || e?.code !== 'INVALID_ARGUMENT') {
      failures.push(`${label}: expected ${status} INVALID_ARGUMENT, got ${res.status} ${res.text.slice(0, 200)}`);
      return;
    }
    if (typeof e.message !== 'string' || !e.message) failures.push(`${label}: no message`);
    if (typeof e.request_id !== 'string' || e.request_id !== res.headers['x-request-id']) failures.push(`${label}: request_id missing or not the x-request-id`);
    if (reason && e.reason !== reason) failures.push(`${label}: reason ${e.reason}, expected ${reason}`);
  }

  const bodyOps = () => ops.filter((o) => o.body);

  test('the document has JSON-body routes to test', () => {
    const names = bodyOps().map((o) => `${o.method} ${o.path}`);
    for (const r of ['POST /v1/workspaces', 'PATCH /v1/workspaces/{id}', 'POST /v1/api_tokens', 'POST /v1/workspaces/{id}/members', 'POST /v1/auth/sessions']) {
      assert.ok(names.includes(r), `${r} in ${names.join(', ')}`);
    }
  });

  test('every string in every request body is bounded (maxLength or an enum)', () => {
    const unbounded: string[] = [];
    const walk = (raw: Schema | undefined, where: string, depth = 0) => {
      const s = resolveSchema(raw, doc);
      if (!s || depth > 8) return;
      for (const k of ['anyOf', 'oneOf', 'allOf']) if (Array.isArray(s[k])) s[k].forEach((x: Schema) => walk(x, where, depth + 1));
      if (s.type === 'string' && s.maxLength === undefined && s.enum === undefined && s.const === undefined) unbounded.push(where);
      for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) walk(v, `${where}.${k}`, depth + 1);
      if (s.items) walk(s.items, `${where}[]`, depth + 1);
    };
    for (const op of bodyOps()) walk(op.body!, `${op.method} ${op.path} body`);
    assert.deepEqual(unbounded, []);
  });

  test('wrong types, unknown fields, oversized strings and non-object bodies are 400 and change nothing', async () => {
    const failures: string[] = [];
    const state = await databaseState();
    let sent = 0;
    for (const op of bodyOps()) {
      const url = await fill(op.path);
      const schema = resolveSchema(op.body!, doc)!;
      const valid = sampleValue(schema, doc) as Record<string, unknown>;
      const send = async (label: string, body: unknown, reason?: string) => {
        sent++;
        const res = await t.request(op.method, url, { ...(op.secured ? { token: tokenFor(op) } : {}), headers: headersFor(op), payload: JSON.stringify(body) });
        assertInvalid(`${op.method} ${op.path} ${label}`, res, failures, reason);
        return res;
      };
      for (const [prop, propSchema] of Object.entries<Schema>(schema.properties ?? {})) {
        const accepted = typesOf(propSchema, doc);
        for (const type of accepted) {
          for (const wrong of WRONG[type] ?? []) {
            if (wrong === null && accepted.has('null')) continue;
            if (Array.isArray(wrong) ? accepted.has('array') : typeof wrong === 'object' && wrong !== null ? accepted.has('object') : accepted.has(typeof wrong)) continue;
            if (typeof wrong === 'number' && Number.isInteger(wrong) && accepted.has('integer')) continue;
            await send(`${prop}=${JSON.stringify(wrong)}`, { ...valid, [prop]: wrong }, 'VALIDATION_FAILED');
          }
        }
        const s = resolveSchema(propSchema, doc)!;
        if (s.type === 'string' && typeof s.maxLength === 'number') {
          const res = await send(`${prop} of ${s.maxLength + 1} characters`, { ...valid, [prop]: 'x'.repeat(s.maxLength + 1) });
          // Beyond the body limit the answer is BODY_TOO_LARGE; otherwise a field violation names the field.
          if (res.body?.error?.reason === 'VALIDATION_FAILED' && !res.body.error.field_violations?.some((v: { field: string }) => v.field === `body.${prop}`)) {
            failures.push(`${op.method} ${op.path} oversized ${prop}: no field violation for body.${prop}: ${res.text.slice(0, 200)}`);
          }
        }
      }
      const unknown = await send('unknown field', { ...valid, zz_unknown_field: 1 }, 'VALIDATION_FAILED');
      if (!unknown.body?.error?.field_violations?.some((v: { field: string }) => v.field === 'body.zz_unknown_field')) {
        failures.push(`${op.method} ${op.path} unknown field not named in field_violations: ${unknown.text.slice(0, 200)}`);
      }
      for (const body of [[], [valid], 'text', 42, true, null]) await send(`body ${JSON.stringify(body).slice(0, 20)}`, body);
    }
    assert.ok(sent >= 40, `only ${sent} bad requests sent`);
    assert.deepEqual(failures, []);
    assert.equal(await databaseState(), state, 'a rejected request changed the database');
  });

  /** Every string slot of a body schema: [path of keys, schema], through properties, items and free-form objects. */
  function stringSlots(raw: Schema | undefined, path: (string | number)[] = [], depth = 0): { path: (string | number)[]; schema: Schema }[] {
    const s = resolveSchema(raw, doc);
    if (!s || depth > 6) return [];
    const branch = (s.anyOf ?? s.oneOf)?.find((x: Schema) => resolveSchema(x, doc)?.type !== 'null');
    if (branch) return stringSlots(branch, path, depth + 1);
    if (s.type === 'string' && s.enum === undefined && s.const === undefined) return [{ path, schema: s }];
    const out: { path: (string | number)[]; schema: Schema }[] = [];
    if (s.type === 'object' || s.properties) {
      for (const [k, v] of Object.entries<Schema>(s.properties ?? {})) out.push(...stringSlots(v, [...path, k], depth + 1));
      // A free-form object (install values, manifest objects) takes any key: put the bad string under a new one.
      if (s.additionalProperties !== false && s.additionalProperties !== undefined) out.push({ path: [...path, 'zz_fuzz'], schema: { type: 'string' } });
    }
    if (s.type === 'array' && s.items) out.push(...stringSlots(s.items, [...path, 0], depth + 1));
    return out;
  }

  /** A copy of `value` with `replacement` at `path`, creating objects and arrays on the way. */
  function setAt(value: unknown, path: (string | number)[], replacement: unknown): unknown {
    if (!path.length) return replacement;
    const [head, ...rest] = path;
    if (typeof head === 'number') {
      const arr = Array.isArray(value) ? [...value] : [];
      arr[head] = setAt(arr[head], rest, replacement);
      return arr;
    }
    const obj = value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : {};
    obj[head!] = setAt(obj[head!], rest, replacement);
    return obj;
  }

  // NUL, other control characters, lone surrogates (both halves) and, per field, one character
  // over its maxLength: refused the same on both databases (PostgreSQL cannot store NUL or lone
  // surrogates; SQLite would).
  const BAD_TEXT: [string, string][] = [
    ['NUL', 'a\u0000b'], ['SOH', '\u0001'], ['ESC', 'x\u001by'], ['DEL', 'x\u007f'], ['C1', 'x\u0085'],
    ['lone high surrogate', 'x\ud800y'], ['lone low surrogate', '\udc00'], ['reversed pair', '\udc00\ud800'],
  ];

  test('fuzz: NUL, control characters, lone surrogates and overlong strings in every string field of every operation are 400 and change nothing', async () => {
    const failures: string[] = [];
    const state = await databaseState();
    let sent = 0;
    for (const op of ops) {
      const label = `${op.method} ${op.path}`;
      const base = await fill(op.path);
      const auth = op.secured ? { token: tokenFor(op) } : {};
      const valid = op.body ? sampleValue(op.body, doc) : undefined;
      const send = async (what: string, url: string, body: unknown, accept: number[]) => {
        sent++;
        const res = await t.request(op.method, url, { ...auth, headers: headersFor(op), ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });
        if (!accept.includes(res.status)) failures.push(`${label} ${what}: ${res.status} ${res.text.slice(0, 160)}`);
        else if (res.status === 400 && res.body?.error?.request_id !== res.headers['x-request-id']) failures.push(`${label} ${what}: not the error shape`);
      };
      for (const slot of op.body ? stringSlots(op.body) : []) {
        const where = `body.${slot.path.join('.')}`;
        for (const [name, text] of BAD_TEXT) await send(`${where}=${name}`, base, setAt(valid, slot.path, text), [400]);
        if (typeof slot.schema.maxLength === 'number' && slot.schema.maxLength < 100_000) {
          await send(`${where} of ${slot.schema.maxLength + 1} characters`, base, setAt(valid, slot.path, 'x'.repeat(slot.schema.maxLength + 1)), [400]);
        }
      }
      for (const p of op.parameters) {
        if (p.in === 'query') {
          // Percent-encoded control characters. (A URL cannot carry a lone surrogate: its bytes are
          // not UTF-8 and decode to U+FFFD, which is harmless text.)
          for (const encoded of ['a%00b', '%01', 'x%1By', '%7F', '%C2%85']) {
            const sep = base.includes('?') ? '&' : '?';
            await send(`query.${p.name}=${encoded}`, `${base}${sep}${p.name}=${encoded}`, valid, [400]);
          }
        }
        if (p.in === 'path') {
          // A path id with a bad character names nothing: 400 (refused text) or 404 (no such id), never more.
          for (const [name, text] of BAD_TEXT.slice(0, 5)) await send(`path.${p.name}=${name}`, await fill(op.path, { param: p.name, value: text }), valid, [400, 404]);
          await send(`path.${p.name} of 120 characters`, await fill(op.path, { param: p.name, value: `x_${'a'.repeat(118)}` }), valid, [404]);
        }
      }
      // An empty last path segment (a trailing slash) is no route.
      await send('trailing slash', `${base.split('?')[0]}/`, valid, [404]);
    }
    assert.ok(sent >= 300, `only ${sent} fuzzed requests sent`);
    assert.deepEqual(failures, []);
    assert.equal(await databaseState(), state, 'a refused request changed the database');
  });

  test('NUL in the sign-in e-mail (unauthenticated, a 500 on PostgreSQL before) is 400 INVALID_CHARACTERS', async () => {
    const res = await t.request('POST', '/v1/auth/sessions', { payload: JSON.stringify({ email: 'a\u0000@x.test', password: 'x' }) });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.reason, 'INVALID_CHARACTERS');
    assert.deepEqual(res.body.error.field_violations, [{ field: 'body.email', description: 'contains a control character or an unpaired UTF-16 surrogate' }]);
  });

  test('the OAuth and device form endpoints refuse NUL too (400, never a 500)', async () => {
    for (const [url, form] of [
      ['/oauth/token', 'grant_type=client_credentials&client_id=oac_a%00b&client_secret=x'],
      ['/oauth/device/code', 'client_id=svc-cli%00&scope=x'],
      ['/device/sign-in', 'email=a%00%40x.test&password=x&user_code=ABCD-EFGH&csrf=x'],
    ] as const) {
      const res = await t.request('POST', url, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: form });
      assert.equal(res.status, 400, `${url}: ${res.status} ${res.text.slice(0, 200)}`);
    }
  });

  test('a route without a body takes an empty body sent as application/json as no body', async () => {
    // Clients that send content-type: application/json on every request must still reach :wait,
    // :cancel and DELETE; routes that declare a body still refuse an empty one (test below).
    const token = await t.apiToken(carol, ws);
    const res = await t.request('DELETE', `/v1/api_tokens/${token.id}`, {
      token: carol.token, headers: { 'svc-context': ws, 'content-type': 'application/json' }, payload: '',
    });
    assert.equal(res.status, 204, res.text);
    const gone = await t.request('GET', '/v1/api_tokens', { token: token.token });
    assert.equal(gone.status, 401, 'the token was revoked');
  });

  test('nesting past the bound in every JSON body of every route is 400 NESTING_TOO_DEEP, never a 500, and changes nothing', async () => {
    const failures: string[] = [];
    const state = await databaseState();
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    let sent = 0;
    // Also the routes the sweeps above skip (OAuth and device endpoints): a JSON body there passes the same bound.
    const every = operationsOf(doc).concat(
      Object.entries<Schema>(doc.paths).filter(([path]) => SKIP.some((re) => re.test(path)))
        .flatMap(([path, item]) => Object.keys(item).filter((m) => ['post', 'put', 'patch'].includes(m))
          .map((m) => ({ method: m.toUpperCase(), path, parameters: [], body: null, secured: false }))),
    );
    for (const op of every) {
      if (op.method === 'GET' || op.method === 'DELETE') continue;
      const url = await fill(op.path);
      const auth = op.secured ? { token: tokenFor(op) } : {};
      const valid = op.body ? (sampleValue(op.body, doc) as Record<string, unknown>) : {};
      // At the top of the body, and inside a field (free-form values, snippet inputs, manifests: wherever it lands).
      const inner = JSON.stringify({ ...valid, zz: '__DEEP__' }).replace('"__DEEP__"', deep(5000));
      for (const [where, payload] of [['top', deep(129)], ['field', inner], ['very deep', deep(200_000)]] as const) {
        sent++;
        const res = await t.request(op.method, url, { ...auth, headers: headersFor(op), payload });
        const label = `${op.method} ${op.path} nesting at ${where}`;
        // The OAuth endpoints answer in the RFC 6749 shape: invalid_request, the bound in its description.
        if (op.path.startsWith('/oauth/')) {
          if (res.status !== 400 || res.body?.error !== 'invalid_request' || !/nests/.test(res.body?.error_description)) failures.push(`${label}: ${res.status} ${res.text.slice(0, 200)}`);
        } else assertInvalid(label, res, failures, 'NESTING_TOO_DEEP');
      }
    }
    assert.ok(sent >= 60, `only ${sent} sent`);
    assert.deepEqual(failures, []);
    assert.equal(await databaseState(), state, 'a refused request changed the database');
  });

  test('nesting up to the bound is parsed (the per-field bounds answer below it)', async () => {
    const ok = await t.request('POST', '/v1/workspaces', { token: carol.token, payload: `{"name": "N", "zz": ${'['.repeat(127)}${']'.repeat(127)}}` });
    assert.equal(ok.status, 400, ok.text);
    assert.equal(ok.body.error.reason, 'VALIDATION_FAILED', 'parsed, then refused by the schema: not NESTING_TOO_DEEP');
  });

  test('malformed JSON, bodies over SVC_BODY_LIMIT and wrong content types are refused and change nothing', async () => {
    const failures: string[] = [];
    const state = await databaseState();
    const limit = t.config.bodyLimit;
    for (const op of bodyOps()) {
      const url = await fill(op.path);
      const valid = JSON.stringify(sampleValue(op.body!, doc));
      const auth = op.secured ? { token: tokenFor(op) } : {};
      const label = `${op.method} ${op.path}`;
      for (const payload of ['{"name": ', '{', "{'a': 1}", '[1, 2', '{"a": 1}}', 'nul', '{"a": 01}', '{"__proto__": {"x": 1}}', '']) {
        assertInvalid(`${label} malformed ${JSON.stringify(payload)}`, await t.request(op.method, url, { ...auth, headers: headersFor(op), payload }), failures, 'MALFORMED_JSON');
      }
      const big = `{"name":"${'x'.repeat(limit)}"}`;
      assertInvalid(`${label} body of ${big.length} bytes`, await t.request(op.method, url, { ...auth, headers: headersFor(op), payload: big }), failures, 'BODY_TOO_LARGE', 413);
      const form = new URLSearchParams(Object.entries(JSON.parse(valid)).map(([k, v]) => [k, String(v)])).toString();
      for (const [type, payload] of [['text/plain', valid], ['application/x-www-form-urlencoded', form], ['application/xml', '<a/>'], ['multipart/form-data; boundary=x', '--x--']]) {
        const res = await t.request(op.method, url, { ...auth, headers: { ...headersFor(op), 'content-type': type! }, payload: payload! });
        assertInvalid(`${label} content-type ${type}`, res, failures, 'UNSUPPORTED_MEDIA_TYPE');
      }
      // No content-type at all.
      const bare = await t.app.inject({
        method: op.method as 'POST', url, payload: valid,
        headers: { ...headersFor(op), ...(op.secured ? { authorization: `Bearer ${tokenFor(op)}` } : {}) },
      });
      const bareRes = { status: bare.statusCode, text: bare.body, headers: bare.headers, body: JSON.parse(bare.body) } as Response;
      assertInvalid(`${label} without content-type`, bareRes, failures);
    }
    assert.deepEqual(failures, []);
    assert.equal(await databaseState(), state, 'a rejected request changed the database');
  });

  test('a JSON content-type with parameters is accepted', async () => {
    const res = await t.request('POST', '/v1/workspaces', {
      token: carol.token, headers: { 'content-type': 'application/json; charset=utf-8' }, payload: JSON.stringify({ name: 'Charset' }),
    });
    assert.equal(res.status, 201, res.text);
  });

  test('a path id with the wrong prefix is 404, the workspace of a workspace path included', async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const op of ops) {
      if (!op.secured) continue;
      for (const param of paramsOf(op.path)) {
        const collection = op.path.slice(0, op.path.indexOf(`/{${param}}`)).replace(/\{[^}]+\}/g, '');
        const isWorkspaceSlot = collection === '/v1/workspaces';
        const real = isWorkspaceSlot ? ws : await ownValue(await fill(op.path.slice(0, op.path.indexOf(`/{${param}}`))), param);
        const body = real.slice(real.indexOf('_') + 1);
        for (const wrong of [`zz_${body}`, `${real.startsWith('usr_') ? 'ws' : 'usr'}_${body}`, body, 'x']) {
          const url = await fill(op.path, { param, value: wrong });
          const res = await t.request(op.method, url, {
            token: carol.token,
            headers: { ...headersFor(op), ...(isWorkspaceSlot ? { 'svc-context': wrong } : {}) },
            ...(op.body ? { body: sampleValue(op.body, doc) } : {}),
          });
          checked++;
          if (res.status !== 404 || res.body?.error?.code !== 'NOT_FOUND') failures.push(`${op.method} ${url}: ${res.status} ${res.text.slice(0, 160)}`);
        }
      }
    }
    assert.ok(checked >= 20, `only ${checked} checked`);
    assert.deepEqual(failures, []);
  });

  test('unknown routes and methods are 404 in the error shape', async () => {
    for (const [method, url] of [
      ['GET', '/v1/does-not-exist'], ['POST', '/v1/nope'], ['GET', '/v2/workspaces'], ['PUT', '/v1/workspaces'],
      ['DELETE', '/v1/workspaces'], ['GET', `/v1/workspaces/${ws}/nope`], ['GET', '/v1'], ['POST', '/'], ['GET', '/v1/workspaces/x/y/z/w'],
    ] as const) {
      const res = await t.request(method, url, { token: carol.token });
      assert.equal(res.status, 404, `${method} ${url}: ${res.text}`);
      assert.equal(res.body.error.code, 'NOT_FOUND');
      assert.equal(res.body.error.reason, 'ROUTE_NOT_FOUND');
      assert.equal(res.body.error.request_id, res.headers['x-request-id']);
    }
  });

  test('x-request-id is echoed when valid and generated otherwise, on success and on error', async () => {
    for (const [method, url, token] of [['GET', '/v1/me', carol.token], ['GET', '/v1/nowhere', carol.token], ['GET', '/v1/me', undefined]] as const) {
      const echoed = await t.request(method, url, { ...(token ? { token } : {}), headers: { 'x-request-id': 'client-1234.abc:XYZ_9' } });
      assert.equal(echoed.headers['x-request-id'], 'client-1234.abc:XYZ_9');
      if (echoed.status >= 400) assert.equal(echoed.body.error.request_id, 'client-1234.abc:XYZ_9');
      for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', '<script>']) {
        const res = await t.request(method, url, { ...(token ? { token } : {}), headers: { 'x-request-id': bad } });
        const id = String(res.headers['x-request-id']);
        assert.notEqual(id, bad);
        assert.match(id, /^req_[0-9a-f]{16}[0-9a-z]{6,}$/);
        if (res.status >= 400) assert.equal(res.body.error.request_id, id);
      }
    }
    const a = await t.request('GET', '/v1/me', { token: carol.token });
    const b = await t.request('GET', '/v1/me', { token: carol.token });
    assert.match(String(a.headers['x-request-id']), /^req_[0-9a-f]{16}[0-9a-z]{6,}$/);
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });

  test('the harness fails a test file whose requests produced a 500, and the 500 says nothing internal', async () => {
    const other = await startTestApp();
    const user = await other.user('broken');
    // Break the database under the running app: the session lookup now fails.
    await sql`drop table sessions`.execute(other.services.db);
    const res = await other.request('GET', '/v1/me', { token: user.token });
    assert.equal(res.status, 500);
    assert.equal(res.body.error.code, 'INTERNAL');
    assert.equal(res.body.error.request_id, res.headers['x-request-id']);
    assert.doesNotMatch(res.text, /sessions|sql|select|sqlite|postgres|stack/i);
    await assert.rejects(other.close(), /server errors \(5xx\)[\s\S]*GET \/v1\/me -> 500/);
  });
});
