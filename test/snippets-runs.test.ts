// Snippet runs through the HTTP surface (issue 13): outcomes and limits, each leaving the host
// healthy and the worker pool at full size; platform.request as the caller and only in the
// caller's workspace; typed inputs; the runs list (spec endpoint 8) and idempotent replays.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

const WORKERS = 2;

describe('snippet runs', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let otherWs: string;
  const as = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });

  async function snippet(code: string, extra: Record<string, unknown> = {}): Promise<string> {
    const res = await t.request('POST', '/v1/snippets', { ...as(), body: { name: 'test', code, display_type: 'json', ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }
  const run = (id: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    t.request('POST', `/v1/snippets/${id}/runs`, { ...as(headers), body });
  async function runCode(code: string, body: Record<string, unknown> = {}) {
    const res = await run(await snippet(code), body);
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: String(WORKERS), SVC_SNIPPET_CONCURRENCY: String(WORKERS) });
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Runs')).id;
    otherWs = (await t.workspace(owner, 'Other')).id;
  });
  after(() => t.close());

  // Whatever a run did, the API answers and the pool is back at full size with no run's credential alive.
  afterEach(async () => {
    assert.equal((await t.request('GET', '/healthz')).status, 200);
    const stats = t.services.snippetRunner.stats();
    if (stats) {
      assert.equal(stats.workers, WORKERS, JSON.stringify(stats));
      assert.equal(stats.busy, 0, JSON.stringify(stats));
    }
    assert.equal(t.services.runCredentials.liveCount(), 0);
  });

  test('success: 201 with the finished run, output, logs, stats and the etag of the code that ran', async () => {
    const id = await snippet("console.log('hello', { a: 1 }); console.warn('careful'); return { sum: inputs.a + inputs.b }", {
      inputs: [{ key: 'a', label: 'A', kind: 'number' }, { key: 'b', label: 'B', kind: 'number', default: 10 }],
    });
    const res = await run(id, { inputs: { a: 5 } });
    assert.equal(res.status, 201, res.text);
    const r = res.body;
    assert.match(r.id, /^snpr_/);
    assert.equal(res.headers.location, `/v1/snippets/${id}/runs/${r.id}`);
    assert.equal(r.state, 'succeeded');
    assert.deepEqual(r.output, { sum: 15 });
    assert.equal(r.error, null);
    assert.deepEqual(r.logs.map((l: { level: string; message: string }) => [l.level, l.message]), [['log', 'hello {"a":1}'], ['warn', 'careful']]);
    assert.deepEqual(r.inputs, { a: 5, b: 10 });
    assert.deepEqual(r.overrides, {});
    assert.equal(r.snippet_etag, '1');
    assert.equal(r.run_by, owner.id);
    assert.equal(r.source, 'manual');
    assert.equal(r.workspace_id, ws);
    assert.equal(r.duration_ms, r.stats.wall_time_ms);
    assert.ok(r.stats.heap_used_bytes > 0);
    const got = await t.request('GET', `/v1/snippets/${id}/runs/${r.id}`, as());
    assert.deepEqual(got.body, r);
    // A new version of the code: its runs carry the new etag.
    const patched = await t.request('PATCH', `/v1/snippets/${id}`, { ...as({ 'if-match': '1' }), body: { code: 'return 2' } });
    assert.equal((await run(id)).body.snippet_etag, patched.body.etag);
  });

  test('a thrown error: failed, SNIPPET_THREW with the message and the stack in details', async () => {
    const r = await runCode("function inner() { throw new TypeError('bad thing'); }\ninner();");
    assert.equal(r.state, 'failed');
    assert.equal(r.output, null);
    assert.equal(r.error.code, 'SNIPPET_THREW');
    assert.match(r.error.message, /bad thing/);
    assert.equal(r.error.details.name, 'TypeError');
    assert.match(r.error.details.stack, /inner/);
  });

  test('an infinite loop: timed_out with TIMEOUT, at the timeout the run asked for', async () => {
    const r = await runCode('while (true) {}', { overrides: { timeout_ms: 300 } });
    assert.equal(r.state, 'timed_out');
    assert.equal(r.error.code, 'TIMEOUT');
    assert.deepEqual(r.overrides, { timeout_ms: 300 });
    const tooLong = await run(await snippet('return 1'), { overrides: { timeout_ms: 60_001 } });
    assert.equal(tooLong.status, 400);
  });

  test('a memory bomb, deep recursion and a huge output fail with their codes', async () => {
    const bomb = await runCode("const a = []; while (true) a.push('x'.repeat(1 << 20) + a.length);");
    assert.equal(bomb.state, 'failed');
    assert.equal(bomb.error.code, 'MEMORY_LIMIT');
    const deep = await runCode('function f(n) { return f(n + 1) + 1; } return f(0);');
    assert.equal(deep.state, 'failed');
    assert.equal(deep.error.code, 'SNIPPET_THREW');
    assert.match(deep.error.message, /stack/i);
    const huge = await runCode("return 'x'.repeat(2 * 1024 * 1024);");
    assert.equal(huge.state, 'failed');
    assert.equal(huge.error.code, 'OUTPUT_TOO_LARGE');
    const notJson = await runCode('return { f() {} , n: 1n };');
    assert.equal(notJson.error.code, 'INVALID_OUTPUT');
  });

  test('51 platform.request calls: REQUEST_LIMIT after the 50th is served', async () => {
    const r = await runCode("for (let i = 0; i < 51; i++) await platform.request({ path: '/v1/snippets', query: { limit: 1 } }); return 'done';");
    assert.equal(r.state, 'failed');
    assert.equal(r.error.code, 'REQUEST_LIMIT');
    assert.equal(r.stats.request_count, 50);
  });

  test('platform.request acts as the caller in the caller\'s workspace: lists, creates (created_by is the caller)', async () => {
    const r = await runCode(`
      const made = await platform.request({ method: 'POST', path: '/v1/snippets', body: { name: 'made by a snippet', code: 'return 0', display_type: 'stat' } });
      const list = await platform.request({ path: '/v1/snippets?limit=100' });
      const me = await platform.request({ path: '/v1/snippets/' + made.body.id });
      return { status: made.status, etag: made.headers.etag, by: me.body.created_by, ws: me.body.workspace_id, names: list.body.data.map((s) => s.name) };`);
    assert.equal(r.state, 'succeeded', JSON.stringify(r.error));
    assert.equal(r.output.status, 201);
    assert.equal(r.output.etag, '"1"');
    assert.equal(r.output.by, owner.id);
    assert.equal(r.output.ws, ws);
    assert.ok(r.output.names.includes('made by a snippet'));
    assert.equal(r.stats.request_count, 3);
  });

  test('no way out of the workspace: another workspace, absolute URLs, other paths, credentials or svc-context headers', async () => {
    const r = await runCode(`
      const out = {};
      const attempt = async (name, req) => {
        try { const res = await platform.request(req); out[name] = res.status; } catch (e) { out[name] = 'refused: ' + e.message; }
      };
      await attempt('otherMembers', { path: '/v1/workspaces/${otherWs}/members' });
      await attempt('otherContext', { path: '/v1/snippets', headers: { 'svc-context': '${otherWs}' } });
      await attempt('authorization', { path: '/v1/snippets', headers: { authorization: 'Bearer ${owner.token}' } });
      await attempt('Cookie', { path: '/v1/snippets', headers: { Cookie: 'svc_session=x' } });
      await attempt('forwarded', { path: '/v1/snippets', headers: { 'x-forwarded-for': '10.0.0.1' } });
      await attempt('absolute', { path: 'http://169.254.169.254/latest/meta-data' });
      await attempt('hostRelative', { path: '//evil.example/v1/snippets' });
      await attempt('outsideV1', { path: '/metrics' });
      await attempt('dotdot', { path: '/v1/../metrics' });
      await attempt('myWorkspaces', { path: '/v1/workspaces' });
      await attempt('me', { path: '/v1/me' });
      return out;`);
    assert.equal(r.state, 'succeeded', JSON.stringify(r.error));
    const o = r.output;
    assert.equal(o.otherMembers, 403);
    for (const k of ['otherContext', 'authorization', 'Cookie', 'forwarded', 'absolute', 'hostRelative', 'outsideV1', 'dotdot']) {
      assert.match(String(o[k]), /^refused: platform\.request/, `${k}: ${o[k]}`);
    }
    // User routes are not the workspace's: the run's credential is the workspace's alone.
    assert.equal(o.myWorkspaces, 403);
    assert.equal(o.me, 403);
  });

  test('a snippet cannot start runs (a run waiting on runs could hold every worker)', async () => {
    const inner = await snippet('return 1');
    const r = await runCode(`
      const a = await platform.request({ method: 'POST', path: '/v1/snippets/${inner}/runs', body: {} });
      const b = await platform.request({ method: 'POST', path: '/v1/snippets:execute', body: { code: 'return 1' } });
      return [a.status, a.body.error.reason, b.status];`);
    assert.deepEqual(r.output, [403, 'NESTED_SNIPPET_RUN', 403]);
  });

  test('typed inputs are checked on every run: 400 with field violations, nothing recorded', async () => {
    const id = await snippet('return inputs', {
      inputs: [
        { key: 'q', label: 'Query', kind: 'text', required: true },
        { key: 'n', label: 'N', kind: 'number', min: 1, max: 10 },
        { key: 'flag', label: 'Flag', kind: 'boolean', default: false },
        { key: 'color', label: 'Color', kind: 'enum', options: ['red', 'blue'] },
        { key: 'range', label: 'Range', kind: 'time_range' },
        { key: 'install', label: 'Install', kind: 'resource', resource_type: 'install' },
      ],
    });
    const bad: [Record<string, unknown>, string][] = [
      [{}, 'body.inputs.q'],
      [{ q: 5 }, 'body.inputs.q'],
      [{ q: 'x', n: 11 }, 'body.inputs.n'],
      [{ q: 'x', n: '3' }, 'body.inputs.n'],
      [{ q: 'x', flag: 'yes' }, 'body.inputs.flag'],
      [{ q: 'x', color: 'green' }, 'body.inputs.color'],
      [{ q: 'x', range: { start: 10, end: 5 } }, 'body.inputs.range'],
      [{ q: 'x', install: 'clu_01jf8x3q6m2c4y7n0k5t9r1b3d' }, 'body.inputs.install'],
      [{ q: 'x', extra: 1 }, 'body.inputs.extra'],
    ];
    for (const [inputs, field] of bad) {
      const res = await run(id, { inputs });
      assert.equal(res.status, 400, `${JSON.stringify(inputs)}: ${res.text}`);
      assert.ok(res.body.error.field_violations.some((v: { field: string }) => v.field === field), `${field}: ${res.text}`);
    }
    const good = { q: 'x', n: 3, color: 'red', range: { start: 1, end: 2 }, install: 'inst_01jf8x3q6m2c4y7n0k5t9r1b3d' };
    const ok = await run(id, { inputs: good });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.output, { ...good, flag: false });
    const list = await t.request('GET', `/v1/snippets/${id}/runs`, as());
    assert.equal(list.body.data.length, 1);
  });

  test('runs list: newest first, state filter, view basic and full, cursors across pages', async () => {
    const id = await snippet("if (inputs.mode === 'throw') throw new Error('no'); if (inputs.mode === 'loop') while (true) {} return inputs.mode;", {
      inputs: [{ key: 'mode', label: 'Mode', kind: 'enum', options: ['ok', 'throw', 'loop'] }],
    });
    const ids: string[] = [];
    for (const mode of ['ok', 'throw', 'ok', 'loop', 'ok']) {
      const res = await run(id, { inputs: { mode }, overrides: { timeout_ms: 200 } });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.id);
    }
    const basic = await t.request('GET', `/v1/snippets/${id}/runs`, as());
    assert.equal(basic.status, 200);
    assert.deepEqual(basic.body.data.map((r: { id: string }) => r.id), [...ids].reverse());
    assert.deepEqual(basic.body.data.map((r: { state: string }) => r.state), ['succeeded', 'timed_out', 'succeeded', 'failed', 'succeeded']);
    for (const r of basic.body.data) {
      assert.ok(!('output' in r) && !('error' in r) && !('logs' in r), JSON.stringify(r));
      assert.equal(typeof r.stats.cpu_time_ms, 'number');
    }
    const full = await t.request('GET', `/v1/snippets/${id}/runs?view=full&state=failed`, as());
    assert.equal(full.body.data.length, 1);
    assert.equal(full.body.data[0].id, ids[1]);
    assert.equal(full.body.data[0].error.code, 'SNIPPET_THREW');
    assert.equal(full.body.data[0].output, null);
    const timedOut = await t.request('GET', `/v1/snippets/${id}/runs?state=timed_out`, as());
    assert.deepEqual(timedOut.body.data.map((r: { id: string }) => r.id), [ids[3]]);
    // Pages of 2 over the succeeded runs, in the full view.
    const seen: string[] = [];
    let cursor = '';
    for (let page = 0; page < 5; page++) {
      const res = await t.request('GET', `/v1/snippets/${id}/runs?state=succeeded&view=full&limit=2${cursor}`, as());
      assert.equal(res.status, 200, res.text);
      for (const r of res.body.data) {
        assert.equal(r.output, 'ok');
        seen.push(r.id);
      }
      if (!res.body.has_more) break;
      cursor = `&cursor=${res.body.next_cursor}`;
    }
    assert.deepEqual(seen, [ids[4], ids[2], ids[0]]);
    const first = await t.request('GET', `/v1/snippets/${id}/runs?state=succeeded&limit=2`, as());
    const wrongView = await t.request('GET', `/v1/snippets/${id}/runs?state=succeeded&view=full&limit=2&cursor=${first.body.next_cursor}`, as());
    assert.equal(wrongView.status, 400);
    assert.equal((await t.request('GET', `/v1/snippets/${id}/runs?state=running`, as())).status, 400);
    assert.equal((await t.request('GET', `/v1/snippets/${id}/runs?view=everything`, as())).status, 400);
    assert.equal((await t.request('GET', `/v1/snippets/snp_${'0'.repeat(26)}/runs`, as())).status, 404);
    assert.equal((await t.request('GET', `/v1/snippets/${id}/runs/snpr_${'0'.repeat(26)}`, as())).status, 404);
  });

  test('idempotent run: a retry with the key returns the recorded run and does not run again', async () => {
    const id = await snippet("await platform.request({ method: 'POST', path: '/v1/snippets', body: { name: 'side effect', code: 'return 0', display_type: 'stat' } }); return 'ran';");
    const count = async () => (await t.request('GET', '/v1/snippets?limit=100', as())).body.data.filter((s: { name: string }) => s.name === 'side effect').length;
    const first = await run(id, {}, { 'idempotency-key': 'run-once' });
    assert.equal(first.status, 201, first.text);
    const replay = await run(id, {}, { 'idempotency-key': 'run-once' });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.body, first.body);
    assert.equal(await count(), 1);
    assert.equal((await t.request('GET', `/v1/snippets/${id}/runs`, as())).body.data.length, 1);
    const reused = await run(id, { source: 'dashboard' }, { 'idempotency-key': 'run-once' });
    assert.equal(reused.status, 422);
    // Concurrent identical requests: one runs, the other is told the key is in flight or replays it.
    const [a, b] = await Promise.all([run(id, {}, { 'idempotency-key': 'run-twice' }), run(id, {}, { 'idempotency-key': 'run-twice' })]);
    assert.deepEqual([a.status, b.status].sort(), a.status === b.status ? [201, 201] : [201, 409]);
    assert.equal(await count(), 2);
  });

  test(':execute runs code without storing it; bad code is a failed outcome, bad bodies 400', async () => {
    const res = await t.request('POST', '/v1/snippets:execute', { ...as(), body: { code: "console.log('hi'); return inputs.x * 2", inputs: { x: 21 } } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.output, 42);
    assert.equal(res.body.error, null);
    assert.equal(res.body.logs[0].message, 'hi');
    const threw = await t.request('POST', '/v1/snippets:execute', { ...as(), body: { code: 'syntax error here(' } });
    assert.equal(threw.status, 200);
    assert.equal(threw.body.error.code, 'SNIPPET_THREW');
    assert.equal(threw.body.output, null);
    assert.equal((await t.request('POST', '/v1/snippets:execute', { ...as(), body: { code: '' } })).status, 400);
    assert.equal((await t.request('POST', '/v1/snippets:execute', { ...as(), body: { code: 'x'.repeat(50_001) } })).status, 400);
    assert.equal((await t.request('POST', '/v1/snippets:execute', { ...as(), body: { code: 'return 1', inputs: [] } })).status, 400);
  });
});
