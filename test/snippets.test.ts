// Snippets (issue 13, spec endpoint 14, API.md 8.3): create with every limit of spec section 8,
// get, list with filters, PATCH with if-match, archive and undelete; archived snippets cannot run.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { availableParallelism } from 'node:os';
import { ConfigError, loadConfig } from '../src/config.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

describe('sandbox settings', () => {
  const base = { SVC_SECRET_KEY: 'a'.repeat(64), SVC_DATA_DIR: '/nonexistent-unused' };
  test('defaults: a worker per CPU, a workspace runs half of them, 16 wait per workspace, 128 in all, 10 s, started at the first run', () => {
    const { sandbox } = loadConfig(base);
    const workers = availableParallelism();
    assert.deepEqual(sandbox, { workers, perWorkspaceConcurrency: Math.ceil(workers / 2), perWorkspaceQueue: 16, maxQueue: 128, queueTimeoutMs: 10_000, prewarm: false });
    assert.equal(loadConfig({ ...base, SVC_SANDBOX_WORKERS: '7' }).sandbox.perWorkspaceConcurrency, 4);
    assert.equal(loadConfig({ ...base, SVC_SANDBOX_PREWARM: 'true' }).sandbox.prewarm, true);
  });
  test('a bad value stops the process with a message naming the variable', () => {
    const bad: [string, string][] = [
      ['SVC_SANDBOX_WORKERS', '0'], ['SVC_SANDBOX_WORKERS', 'many'], ['SVC_SNIPPET_CONCURRENCY', '0'], ['SVC_SNIPPET_QUEUE', '-1'], ['SVC_SANDBOX_PREWARM', 'maybe'],
      ['SVC_SANDBOX_QUEUE', '1.5'], ['SVC_SANDBOX_QUEUE_TIMEOUT_MS', '5'],
    ];
    for (const [name, value] of bad) {
      assert.throws(() => loadConfig({ ...base, [name]: value }), (err: unknown) => err instanceof ConfigError && err.message.startsWith(name), `${name}=${value}`);
    }
  });
});

describe('snippets', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });
  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    t.request('POST', '/v1/snippets', { ...as(headers), body: { name: 'n', code: 'return 1', display_type: 'json', ...body } });
  const count = async (query = 'archived=true') => (await t.request('GET', `/v1/snippets?limit=100&${query}`, as())).body.data.length as number;

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: '1' });
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Snippets')).id;
  });
  after(() => t.close());

  test('create: 201 with snippet_id, the whole snippet, its etag and Location; defaults applied', async () => {
    const res = await create({ name: 'Installs', description: 'all of them', inputs: [{ key: 'days', label: 'Days', kind: 'number', default: 7 }] });
    assert.equal(res.status, 201, res.text);
    const s = res.body;
    assert.match(s.snippet_id, /^snp_[0-9a-z]{26}$/);
    assert.equal(s.id, s.snippet_id);
    assert.equal(res.headers.location, `/v1/snippets/${s.id}`);
    assert.equal(res.headers.etag, `"${s.etag}"`);
    assert.deepEqual(
      { ws: s.workspace_id, name: s.name, description: s.description, code: s.code, display_type: s.display_type, visibility: s.visibility, origin: s.origin, purpose: s.purpose, archived_at: s.archived_at, by: s.created_by, session: s.agent_session_id, turn: s.agent_turn_id },
      { ws, name: 'Installs', description: 'all of them', code: 'return 1', display_type: 'json', visibility: 'workspace', origin: 'user', purpose: 'general', archived_at: null, by: owner.id, session: null, turn: null },
    );
    assert.deepEqual(s.inputs, [{ key: 'days', label: 'Days', kind: 'number', default: 7 }]);
    assert.equal(s.html_url, `http://svc.test/snippets/${s.id}`);
    const got = await t.request('GET', `/v1/snippets/${s.id}`, as());
    assert.equal(got.status, 200);
    const { snippet_id: _omit, ...rest } = s;
    assert.deepEqual(got.body, rest);
  });

  test('every limit of spec section 8 and every enum: 400 with a field violation, nothing stored', async () => {
    const before_ = await count();
    const cases: [Record<string, unknown>, string][] = [
      [{ code: '' }, 'body.code'],
      [{ code: 'x'.repeat(50_001) }, 'body.code'],
      [{ name: '' }, 'body.name'],
      [{ name: 'n'.repeat(101) }, 'body.name'],
      [{ description: 'd'.repeat(501) }, 'body.description'],
      [{ display_type: 'chart' }, 'body.display_type'],
      [{ visibility: 'public' }, 'body.visibility'],
      [{ origin: 'robot' }, 'body.origin'],
      [{ purpose: 'fun' }, 'body.purpose'],
      [{ agent_session_id: 'a'.repeat(55) }, 'body.agent_session_id'],
      [{ agent_turn_id: '' }, 'body.agent_turn_id'],
      [{ unknown_field: 1 }, 'body'],
      [{ inputs: [{ key: 'Bad', label: 'x', kind: 'text' }] }, 'body.inputs'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'color' }] }, 'body.inputs'],
      [{ inputs: Array.from({ length: 17 }, (_, i) => ({ key: `k${i}`, label: 'x', kind: 'text' })) }, 'body.inputs'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'text' }, { key: 'a', label: 'y', kind: 'number' }] }, 'body.inputs[1].key'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'enum' }] }, 'body.inputs[0].options'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'text', options: ['a'] }] }, 'body.inputs[0].options'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'resource' }] }, 'body.inputs[0].resource_type'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'number', default: 'seven' }] }, 'body.inputs[0].default'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'number', min: 5, max: 1 }] }, 'body.inputs[0].min'],
      [{ inputs: [{ key: 'a', label: 'x', kind: 'enum', options: ['x', 'y'], default: 'z' }] }, 'body.inputs[0].default'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.text.slice(0, 200)}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      const fields: string[] = (res.body.error.field_violations ?? []).map((v: { field: string }) => v.field);
      assert.ok(fields.some((f) => f.startsWith(field)), `${field} not in ${fields.join(', ')}`);
    }
    const missing = await t.request('POST', '/v1/snippets', { ...as(), body: { name: 'n', code: 'return 1' } });
    assert.equal(missing.status, 400);
    assert.equal(await count(), before_);
    // The largest allowed code and name are accepted.
    assert.equal((await create({ code: `return 1;${' '.repeat(50_000 - 9)}`, name: 'n'.repeat(100), description: 'd'.repeat(500) })).status, 201);
  });

  test('list: newest first, filters by purpose and visibility, cursors bound to the filters', async () => {
    const a = (await create({ name: 'w1', purpose: 'widget' })).body;
    const b = (await create({ name: 'w2', purpose: 'widget', visibility: 'session', origin: 'agent', agent_session_id: 'ags_x', agent_turn_id: 'agtt_y' })).body;
    assert.equal(b.origin, 'agent');
    assert.equal(b.agent_session_id, 'ags_x');
    const widgets = await t.request('GET', '/v1/snippets?purpose=widget&limit=1', as());
    assert.equal(widgets.status, 200);
    assert.deepEqual(widgets.body.data.map((s: { id: string }) => s.id), [b.id]);
    assert.equal(widgets.body.has_more, true);
    const next = await t.request('GET', `/v1/snippets?purpose=widget&limit=1&cursor=${widgets.body.next_cursor}`, as());
    assert.deepEqual(next.body.data.map((s: { id: string }) => s.id), [a.id]);
    assert.equal(next.body.has_more, false);
    const otherFilter = await t.request('GET', `/v1/snippets?purpose=general&limit=1&cursor=${widgets.body.next_cursor}`, as());
    assert.equal(otherFilter.status, 400);
    const sessions = await t.request('GET', '/v1/snippets?visibility=session', as());
    assert.deepEqual(sessions.body.data.map((s: { id: string }) => s.id), [b.id]);
    assert.equal((await t.request('GET', '/v1/snippets?purpose=nope', as())).status, 400);
  });

  test('PATCH needs if-match; a stale one is 409 with the current etag; each change makes a new etag', async () => {
    const s = (await create({ name: 'edit me' })).body;
    const url = `/v1/snippets/${s.id}`;
    assert.equal((await t.request('PATCH', url, { ...as(), body: { name: 'x' } })).status, 400);
    const ok = await t.request('PATCH', url, { ...as({ 'if-match': `"${s.etag}"` }), body: { name: 'edited', code: 'return 2', description: null } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.name, 'edited');
    assert.equal(ok.body.code, 'return 2');
    assert.equal(ok.body.description, null);
    assert.notEqual(ok.body.etag, s.etag);
    const stale = await t.request('PATCH', url, { ...as({ 'if-match': s.etag }), body: { name: 'lost' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'ABORTED');
    assert.equal(stale.body.error.metadata.etag, ok.body.etag);
    assert.equal((await t.request('GET', url, as())).body.name, 'edited');
    const bad = await t.request('PATCH', url, { ...as({ 'if-match': '*' }), body: { name: 'n'.repeat(101) } });
    assert.equal(bad.status, 400);
    assert.equal((await t.request('PATCH', url, { ...as({ 'if-match': '*' }), body: {} })).status, 400);
    assert.equal((await t.request('PATCH', url, { ...as({ 'if-match': '*' }), body: { origin: 'agent' } })).status, 400);
    assert.equal((await t.request('PATCH', `/v1/snippets/snp_${'0'.repeat(26)}`, { ...as({ 'if-match': '*' }), body: { name: 'x' } })).status, 404);
    assert.equal((await t.request('GET', '/v1/snippets/clu_01jf8x3q6m2c4y7n0k5t9r1b3d', as())).status, 404);
  });

  test('concurrent PATCHes with the same etag: exactly one wins', async () => {
    const s = (await create({ name: 'race' })).body;
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((name) =>
      t.request('PATCH', `/v1/snippets/${s.id}`, { ...as({ 'if-match': s.etag }), body: { name } })));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409, 409]);
  });

  test('archive (DELETE) and undelete: if-match, listed only with archived=true, archived cannot run or change', async () => {
    const s = (await create({ name: 'old' })).body;
    const url = `/v1/snippets/${s.id}`;
    assert.equal((await t.request('DELETE', url, as())).status, 400);
    assert.equal((await t.request('DELETE', url, as({ 'if-match': '999' }))).status, 409);
    const archived = await t.request('DELETE', url, as({ 'if-match': s.etag }));
    assert.equal(archived.status, 200, archived.text);
    assert.equal(typeof archived.body.archived_at, 'number');
    assert.notEqual(archived.body.etag, s.etag);
    const again = await t.request('DELETE', url, as({ 'if-match': '*' }));
    assert.deepEqual(again.body, archived.body);
    const listed = (await t.request('GET', '/v1/snippets?limit=100', as())).body.data.map((x: { id: string }) => x.id);
    assert.ok(!listed.includes(s.id));
    const all = (await t.request('GET', '/v1/snippets?limit=100&archived=true', as())).body.data.map((x: { id: string }) => x.id);
    assert.ok(all.includes(s.id));
    const run = await t.request('POST', `${url}/runs`, { ...as(), body: {} });
    assert.equal(run.status, 422);
    assert.equal(run.body.error.reason, 'SNIPPET_ARCHIVED');
    const patch = await t.request('PATCH', url, { ...as({ 'if-match': '*' }), body: { name: 'x' } });
    assert.equal(patch.status, 422);
    assert.equal(patch.body.error.reason, 'SNIPPET_ARCHIVED');
    assert.equal((await t.request('POST', `${url}:undelete`, as())).status, 400);
    assert.equal((await t.request('POST', `${url}:undelete`, as({ 'if-match': s.etag }))).status, 409);
    const restored = await t.request('POST', `${url}%3Aundelete`, as({ 'if-match': archived.body.etag }));
    assert.equal(restored.status, 200, restored.text);
    assert.equal(restored.body.archived_at, null);
    const ran = await t.request('POST', `${url}/runs`, { ...as(), body: {} });
    assert.equal(ran.status, 201, ran.text);
    assert.equal(ran.body.output, 1);
  });

  test('deleting the workspace removes its snippets and their runs', async () => {
    const doomed = await t.workspace(owner, 'Doomed');
    const scoped = { token: owner.token, headers: { 'svc-context': doomed.id } };
    const s = await t.request('POST', '/v1/snippets', { ...scoped, body: { name: 'gone', code: 'return 1', display_type: 'stat' } });
    assert.equal((await t.request('POST', `/v1/snippets/${s.body.id}/runs`, { ...scoped, body: {} })).status, 201);
    const op = await t.request('DELETE', `/v1/workspaces/${doomed.id}`, { token: owner.token, headers: { 'if-match': doomed.etag } });
    assert.equal(op.status, 202, op.text);
    const done = await t.request('POST', `/v1/operations/${op.body.id}:wait?timeout=30`, { token: owner.token, headers: { 'svc-context': doomed.id } });
    assert.equal(done.body.state, 'SUCCEEDED', done.text);
    const db = t.services.db;
    assert.equal((await db.selectFrom('snippets').select('id').where('workspace_id', '=', doomed.id).execute()).length, 0);
    assert.equal((await db.selectFrom('snippet_runs').select('id').where('workspace_id', '=', doomed.id).execute()).length, 0);
    // The other workspace's snippets are untouched.
    assert.ok((await count()) > 0);
  });

  test('create with idempotency-key: one snippet, the replay answers the same', async () => {
    const before_ = await count();
    const first = await create({ name: 'once' }, { 'idempotency-key': 'create-once' });
    const second = await create({ name: 'once' }, { 'idempotency-key': 'create-once' });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.body.snippet_id, first.body.snippet_id);
    assert.equal(await count(), before_ + 1);
    assert.equal((await create({ name: 'other' }, { 'idempotency-key': 'create-once' })).status, 422);
  });
});
