// Cross-tenant isolation, derived from the OpenAPI document so that routes added later are covered
// without editing this file: for every path and method, workspace A's credentials (an owner's and
// a member's session, an admin API token) aimed at workspace B (B's ids in the path, svc-context:
// B, or B's resource ids inside A's own scope) must get 401/403/404, never a 2xx or a 5xx, no
// response may contain any of B's data, and B's state must be unchanged afterwards.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { sampleValue, type Schema } from './openapi-samples.js';
import { InstallFixtures } from './installs-fixtures.js';

// Routes that are public or legitimately about the caller, not about a workspace. Keep it short:
// every route not listed here is attacked.
const SKIP: { method?: string; path: RegExp; why: string }[] = [
  { path: /^\/(healthz|readyz|metrics)$/, why: 'public probes' },
  { path: /^\/v1\/openapi\.json$/, why: 'public document' },
  { path: /^\/oauth\//, why: 'OAuth endpoints authenticate with their own grants' },
  { path: /^\/\.well-known\//, why: 'public keys' },
  { path: /^\/device(\/|$)/, why: 'browser page with its own cookie session' },
  { path: /^\/v1\/auth\//, why: 'sign-in and logout of the caller' },
  { path: /^\/v1\/me$/, why: 'the caller' },
  { method: 'GET', path: /^\/v1\/workspaces$/, why: "the caller's workspaces" },
  { method: 'POST', path: /^\/v1\/workspaces$/, why: 'creates a workspace of the caller' },
];

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: Schema }[];
  body: Schema | null;
}

function operationsOf(doc: Schema): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<Schema>(doc.paths)) {
    for (const [method, op] of Object.entries<Schema>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const json = op.requestBody?.content?.['application/json']?.schema ?? null;
      ops.push({ method: method.toUpperCase(), path, parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])], body: json });
    }
  }
  return ops;
}

const isSkipped = (op: Operation) => SKIP.some((s) => (!s.method || s.method === op.method) && s.path.test(op.path));
const paramsOf = (path: string) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
const WIRE_ID = /\b[a-z]{1,5}_[0-9a-hjkmnp-tv-z]{26}\b/g;

describe('cross-tenant isolation over every route of the OpenAPI document', () => {
  let t: TestApp;
  let doc: Schema;
  let ops: Operation[];
  // Workspace A and its callers.
  let carol: TestUser;
  let mallory: TestUser;
  let wsA: string;
  let tokenA: string;
  // Workspace B, its owner and a member.
  let bob: TestUser;
  let dave: TestUser;
  let wsB: string;
  let tokenB: string;
  /** strings that identify B's data: ids, e-mails, names, the token */
  const bSecrets = new Set<string>();
  const unresolved = new Set<string>();
  const pathValues = new Map<string, string>();

  const asBob = (headers: Record<string, string> = {}) => ({ token: bob.token, headers: { 'svc-context': wsB, ...headers } });

  function collectB(value: unknown): void {
    const text = JSON.stringify(value ?? null);
    for (const m of text.matchAll(WIRE_ID)) bSecrets.add(m[0]);
  }

  /** The value of path parameter `name` in B, found by listing the collection the parameter indexes. */
  async function bValue(collection: string, name: string): Promise<string> {
    if (collection === '/v1/workspaces') return wsB;
    const cacheKey = `${collection}|${name}`;
    const cached = pathValues.get(cacheKey);
    if (cached) return cached;
    const res = await t.request('GET', `${collection}?limit=100`, asBob());
    const items: Record<string, unknown>[] = res.status === 200 && Array.isArray(res.body?.data) ? res.body.data : [];
    // Prefer the newest item that is not bob himself (so role checks do not hide anything).
    const item = items.find((x) => x[name] !== bob.id && x.user_id !== bob.id) ?? items[0];
    const value = item ? String(item[name] ?? item.id) : `x_01${'a'.repeat(24)}`;
    if (!item) unresolved.add(`${collection} {${name}}`);
    pathValues.set(cacheKey, value);
    return value;
  }

  /** The template with every parameter filled with B's values; `keepWorkspace` puts A's id in a /v1/workspaces/{id} slot. */
  async function fill(template: string, workspaceSlot: string | null): Promise<string> {
    // Values are always looked up in B's collections; only the output may carry A's workspace.
    let inB = template;
    let out = template;
    for (const name of paramsOf(template)) {
      const marker = `{${name}}`;
      const collection = inB.slice(0, inB.indexOf(`/${marker}`));
      const value = await bValue(collection, name);
      inB = inB.replace(marker, encodeURIComponent(value));
      out = out.replace(marker, encodeURIComponent(collection === '/v1/workspaces' && workspaceSlot ? workspaceSlot : value));
    }
    return out;
  }

  function requestParts(op: Operation, headers: Record<string, string>) {
    const h: Record<string, string> = { ...headers };
    const query = new URLSearchParams();
    for (const p of op.parameters) {
      if (p.in === 'header' && p.name === 'if-match') h['if-match'] = '*';
      else if (p.in === 'header' && p.name === 'idempotency-key') h['idempotency-key'] = randomUUID();
      else if (p.in === 'header' && p.required && p.name !== 'svc-context') h[p.name] = String(sampleValue(p.schema, doc));
      else if (p.in === 'query' && p.required) query.set(p.name, String(sampleValue(p.schema, doc)));
    }
    const body = op.body ? sampleValue(op.body, doc) : undefined;
    return { headers: h, query: query.size ? `?${query}` : '', body };
  }

  /** Every GET that bob can make about B, as a map url -> body, to prove nothing of B changed. */
  async function snapshotB(): Promise<Record<string, unknown>> {
    const snap: Record<string, unknown> = {};
    for (const op of ops.filter((o) => o.method === 'GET' && !isSkipped(o))) {
      const url = await fill(op.path, null);
      const res = await t.request('GET', `${url}${url.includes('?') ? '&' : '?'}${op.parameters.some((p) => p.name === 'limit') ? 'limit=100' : ''}`, asBob());
      snap[url] = { status: res.status, body: res.body };
    }
    return snap;
  }

  let before_: Record<string, unknown>;

  /**
   * What must not change in B: which resources exist and their etag, role, name and user. Volatile
   * fields (timestamps, states moved by workers) are left out so routes added later stay stable.
   */
  function identities(snap: Record<string, unknown>): string[] {
    const out = new Set<string>();
    const walk = (v: unknown) => {
      if (Array.isArray(v)) return v.forEach(walk);
      if (!v || typeof v !== 'object') return;
      const o = v as Record<string, unknown>;
      if (typeof o.id === 'string') out.add([o.id, o.etag, o.role, o.name, o.user_id].map((x) => String(x ?? '')).join('|'));
      Object.values(o).forEach(walk);
    };
    for (const [url, entry] of Object.entries(snap)) {
      out.add(`${url} -> ${(entry as { status: number }).status}`);
      walk(entry);
    }
    return [...out].sort();
  }

  before(async () => {
    t = await startTestApp();
    carol = await t.user('carol');
    mallory = await t.user('mallory');
    bob = await t.user('bob');
    dave = await t.user('dave');
    wsA = (await t.workspace(carol, 'Tenant A')).id;
    wsB = (await t.workspace(bob, 'Tenant B zq9x')).id;
    await t.addMember(carol, wsA, mallory, 'member');
    await t.addMember(bob, wsB, dave, 'member');
    tokenA = (await t.apiToken(carol, wsA, { role: 'admin' })).token;
    const madeB = await t.apiToken(bob, wsB, { name: 'b-token' });
    tokenB = madeB.token;

    doc = (await t.request('GET', '/v1/openapi.json')).body;
    ops = operationsOf(doc);
    assert.ok(ops.length >= 10, 'the OpenAPI document lists the routes');

    // Give B one of everything a plain POST can create (routes added later included), so the
    // attacks below hit real resources of B, not only absent ids.
    for (const op of ops.filter((o) => o.method === 'POST' && !isSkipped(o) && !o.path.includes(':'))) {
      const params = paramsOf(op.path);
      if (params.length > 1 || (params.length === 1 && !op.path.startsWith('/v1/workspaces/{id}'))) continue;
      const { headers, body, query } = requestParts(op, { 'svc-context': wsB });
      await t.request('POST', `${op.path.replace('{id}', wsB)}${query}`, { token: bob.token, headers, ...(body !== undefined ? { body } : {}) });
    }

    // Resources whose creation needs other resources' ids (a sample body cannot name them): a
    // package version, an install on a cluster, and a preview hostname, so the nested routes
    // (/v1/packages/{id}/versions/{version_id}, /v1/installs/{id}/renders/..., preview hostnames)
    // are attacked with B's real ids.
    const fx = new InstallFixtures(t);
    const bCaller = { user: bob, ws: wsB };
    const { pkgId } = await fx.packageWithVersion(bCaller);
    const install = await fx.healthyInstall(bCaller, pkgId, await fx.cluster(bCaller));
    const bound = await t.request('POST', `/v1/installs/${install.owner_id}/preview_hostnames:bindFloating`, {
      ...asBob({ 'idempotency-key': randomUUID() }),
      body: { track: 'main', render_id: install.response.render_id },
    });
    assert.equal(bound.status, 202, bound.text);
    // A snippet of B with a run, so /v1/snippets/{id}/runs/{run_id} is attacked with B's ids.
    const snippetB = await t.request('POST', '/v1/snippets', { ...asBob(), body: { name: 'b snippet', code: 'return 1', display_type: 'stat' } });
    assert.equal(snippetB.status, 201, snippetB.text);
    const runB = await t.request('POST', `/v1/snippets/${snippetB.body.id}/runs`, { ...asBob(), body: {} });
    assert.equal(runB.status, 201, runB.text);

    // Operations started above (the 202s) run to their end first, so the snapshot is of a settled B.
    const started = await t.request('GET', '/v1/operations?limit=100', asBob());
    for (const op of started.body?.data ?? []) await t.request('POST', `/v1/operations/${op.id}:wait?timeout=30`, asBob());

    before_ = await snapshotB();
    collectB(before_);
    for (const s of [wsB, bob.id, dave.id, bob.email, dave.email, 'Tenant B zq9x', 'tenant-b-zq9x', tokenB, tokenB.slice(12), madeB.id]) bSecrets.add(s);
    // A's own ids are no secret to A (and B's listings never contain them, but be exact).
    for (const own of [wsA, carol.id, mallory.id]) bSecrets.delete(own);
  });
  after(() => t.close());

  interface Caller {
    name: string;
    token: () => string;
    /** svc-context values to try on routes that accept the header (null = header omitted) */
    contexts: (string | null)[];
  }
  const callers: Caller[] = [
    { name: 'A owner session', token: () => carol.token, contexts: [null, 'B', 'A'] },
    { name: 'A member session', token: () => mallory.token, contexts: [null, 'B', 'A'] },
    { name: 'A admin API token', token: () => tokenA, contexts: [null, 'B', 'A'] },
  ];

  const failures: string[] = [];
  /** requests whose sample body failed validation, so the handler was not reached */
  const inconclusive: string[] = [];
  let attacked = 0;

  function check(label: string, res: Response, referencesB: boolean) {
    attacked++;
    if (res.status >= 500) failures.push(`${label}: ${res.status} ${res.text.slice(0, 200)}`);
    if (referencesB) {
      const invalidBody = res.status === 400 && res.body?.error?.reason === 'VALIDATION_FAILED';
      if (invalidBody) inconclusive.push(label);
      const ok = [401, 403, 404].includes(res.status) || invalidBody;
      if (!ok) failures.push(`${label}: expected 401/403/404, got ${res.status} ${res.text.slice(0, 200)}`);
    }
    if (res.status >= 400 && res.status !== 404 && !res.body?.error?.code) failures.push(`${label}: error not in the error shape: ${res.text.slice(0, 200)}`);
    for (const secret of bSecrets) {
      if (res.text.includes(secret)) failures.push(`${label}: response contains B's data "${secret}" (${res.status})`);
    }
  }

  test('B has real resources to attack', () => {
    assert.ok(bSecrets.size >= 8, [...bSecrets].join(', '));
    assert.ok(before_[`/v1/workspaces/${wsB}/members`], 'B members snapshot');
  });

  test('every route refuses A\'s credentials aimed at B and never shows B\'s data', async (tc) => {
    for (const op of ops) {
      if (isSkipped(op)) continue;
      const params = paramsOf(op.path);
      const acceptsContext = op.parameters.some((p) => p.in === 'header' && p.name === 'svc-context');
      // Paths to try: B's ids everywhere; and A's workspace with B's other ids in it.
      const urls: { url: string; referencesB: boolean }[] = [];
      if (params.length) urls.push({ url: await fill(op.path, null), referencesB: true });
      if (op.path.startsWith('/v1/workspaces/{id}') && params.length > 1) urls.push({ url: await fill(op.path, wsA), referencesB: true });
      if (!params.length) urls.push({ url: op.path, referencesB: false });

      for (const caller of callers) {
        for (const { url, referencesB } of urls) {
          const contexts = acceptsContext ? caller.contexts : [null];
          for (const ctx of contexts) {
            const headers: Record<string, string> = {};
            if (ctx === 'B') headers['svc-context'] = wsB;
            if (ctx === 'A') headers['svc-context'] = wsA;
            // A path naming A's workspace must agree with svc-context, else the 403 hides the rest.
            if (ctx === 'A' && url.includes(`/v1/workspaces/${wsB}`)) continue;
            const parts = requestParts(op, headers);
            const res = await t.request(op.method, `${url}${parts.query}`, {
              token: caller.token(),
              headers: parts.headers,
              ...(parts.body !== undefined ? { body: parts.body } : {}),
            });
            check(`${caller.name} ${op.method} ${url} svc-context=${ctx ?? '-'}`, res, referencesB || ctx === 'B');
          }
        }
      }
    }
    if (inconclusive.length) tc.diagnostic(`sample body rejected by validation (handler not reached): ${inconclusive.join('; ')}`);
    if (unresolved.size) tc.diagnostic(`no B resource found for: ${[...unresolved].join('; ')} (absent ids used)`);
    assert.ok(attacked > 50, `only ${attacked} requests made`);
    assert.deepEqual(failures, []);
  });

  test("B's state is unchanged and B's credentials still work", async () => {
    const now = await snapshotB();
    assert.deepEqual(identities(now), identities(before_));
    assert.equal((await t.request('GET', '/v1/api_tokens', { token: tokenB })).status, 200);
    assert.equal((await t.request('GET', `/v1/workspaces/${wsB}`, { token: dave.token })).status, 200);
  });

  test('the walk covered the workspace routes of the kernel', () => {
    const covered = ops.filter((o) => !isSkipped(o)).map((o) => `${o.method} ${o.path}`);
    for (const route of [
      'GET /v1/workspaces/{id}', 'PATCH /v1/workspaces/{id}', 'GET /v1/workspaces/{id}/members', 'POST /v1/workspaces/{id}/members',
      'GET /v1/workspaces/{id}/members/{user_id}', 'PATCH /v1/workspaces/{id}/members/{user_id}', 'DELETE /v1/workspaces/{id}/members/{user_id}',
      'GET /v1/api_tokens', 'POST /v1/api_tokens', 'DELETE /v1/api_tokens/{id}',
    ]) {
      assert.ok(covered.includes(route), `${route} is attacked`);
    }
  });
});
