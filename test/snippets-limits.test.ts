// Bounds of snippet runs (issue 20): output nested too deep is a recorded INVALID_OUTPUT run (never a
// 500); inputs nested past their bound are 400 on every route that takes them; only runs that ran
// count against the daily quota; a run waiting for a worker waits at most its own time limit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';

/** JSON text of a value nested `depth` levels deep (built as text: JSON.stringify itself would overflow the stack). */
const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const deepOutput = (depth: number) => `let v = 1; for (let i = 0; i < ${depth}; i++) v = [v]; return v;`;

describe('snippet limits', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  const ctx = (headers: Record<string, string> = {}) => ({ token: owner.token, headers: { 'svc-context': ws, ...headers } });
  const runsUsage = async () =>
    (await t.request('GET', '/v1/quotas', ctx())).body.data.find((q: { metric: string }) => q.metric === 'snippets/runs').usage as number;
  async function snippet(code: string, extra: Record<string, unknown> = {}): Promise<{ id: string; etag: string }> {
    const res = await t.request('POST', '/v1/snippets', { ...ctx(), body: { name: 'limits', code, display_type: 'json', ...extra } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function busyWorkers(n: number): Promise<void> {
    for (let i = 0; i < 500 && (t.services.snippetRunner.stats()?.busy ?? 0) < n; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(t.services.snippetRunner.stats()?.busy, n);
  }

  before(async () => {
    t = await startTestApp({ SVC_SANDBOX_WORKERS: '1', SVC_SNIPPET_CONCURRENCY: '1', SVC_SNIPPET_QUEUE: '1', SVC_SANDBOX_QUEUE_TIMEOUT_MS: '600000' });
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Limits')).id;
  });
  after(() => t.close());

  test('output nested thousands of levels deep is a recorded failed run (INVALID_OUTPUT), and a 200 with that error from :execute', async () => {
    const deep = await snippet(deepOutput(5000));
    const usage = await runsUsage();
    const run = await t.request('POST', `/v1/snippets/${deep.id}/runs`, { ...ctx(), body: {} });
    assert.equal(run.status, 201, run.text);
    assert.equal(run.body.state, 'failed');
    assert.equal(run.body.error.code, 'INVALID_OUTPUT');
    assert.deepEqual(run.body.error.details, { type: 'object', limit_depth: 64 });
    assert.equal(await runsUsage(), usage + 1, 'it ran, so it counts');
    const listed = await t.request('GET', `/v1/snippets/${deep.id}/runs?view=full`, ctx());
    assert.equal(listed.body.data[0].id, run.body.id, 'the run is on record');
    const executed = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: deepOutput(10_000) } });
    assert.equal(executed.status, 200, executed.text);
    assert.equal(executed.body.error.code, 'INVALID_OUTPUT');
    // Logged and requested values are held to the same depth (inside the sandbox, as they are serialized).
    const logged = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: `let v = 1; for (let i = 0; i < 10000; i++) v = [v]; console.log(v); return 'logged';` } });
    assert.equal(logged.body.output, 'logged');
    assert.equal(logged.body.logs[0].message, '[the value is nested deeper than 64 levels]');
  });

  test('output nested exactly 64 levels is kept; 65 is INVALID_OUTPUT', async () => {
    const ok = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: deepOutput(64) } });
    assert.equal(ok.body.error, null, ok.text);
    const tooDeep = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: deepOutput(65) } });
    assert.equal(tooDeep.body.error.code, 'INVALID_OUTPUT', tooDeep.text);
  });

  test('inputs nested past the bound are 400 on every snippet route that takes inputs, and cost nothing', async () => {
    const usage = await runsUsage();
    const target = await snippet('return inputs', { inputs: [{ key: 'range', label: 'Range', kind: 'time_range' }] });
    for (const depth of [40, 5000]) {
      const decl = `[{"key": "range", "label": "Range", "kind": "time_range", "default": ${nested(depth)}}]`;
      const responses = [
        await t.request('POST', '/v1/snippets', { ...ctx(), payload: `{"name": "deep", "code": "return 1", "display_type": "json", "inputs": ${decl}}` }),
        await t.request('PATCH', `/v1/snippets/${target.id}`, { ...ctx({ 'if-match': target.etag }), payload: `{"inputs": ${decl}}` }),
        await t.request('POST', `/v1/snippets/${target.id}/runs`, { ...ctx(), payload: `{"inputs": {"range": ${nested(depth)}}}` }),
        await t.request('POST', '/v1/snippets:execute', { ...ctx(), payload: `{"code": "return 1", "inputs": {"deep": ${nested(depth)}}}` }),
      ];
      for (const res of responses) {
        assert.equal(res.status, 400, `depth ${depth}: ${res.text.slice(0, 300)}`);
        assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
      }
      if (depth === 40) {
        // Past the snippet rule (32 for :execute, the kind's shape for declared inputs), within the body bound: field violations.
        assert.deepEqual(responses.map((r) => r.body.error.field_violations?.[0]?.field), ['body.inputs[0].default', 'body.inputs[0].default', 'body.inputs.range', 'body.inputs']);
        assert.match(responses[3]!.body.error.field_violations[0].description, /nested deeper than 32 levels/);
      }
    }
    assert.equal(await runsUsage(), usage);
    const current = await t.request('GET', `/v1/snippets/${target.id}`, ctx());
    assert.equal(current.body.etag, target.etag, 'nothing changed');
  });

  test('a run refused with 429 SANDBOX_BUSY costs nothing; so does a refused run (archived)', async () => {
    const loop = await snippet('while (true) {}');
    const usage = await runsUsage();
    const holding = t.request('POST', `/v1/snippets/${loop.id}/runs`, { ...ctx(), body: { overrides: { timeout_ms: 3000 } } });
    await busyWorkers(1);
    // One more waits (the workspace's queue holds 1); the next is refused at once.
    const waiting = t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: 'return 1', overrides: { timeout_ms: 60_000 } } });
    for (let i = 0; i < 500 && t.services.snippetRunner.stats()?.queued !== 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const refused = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: 'return 2' } });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error.reason, 'SANDBOX_BUSY');
    assert.equal(refused.body.error.metadata.cause, 'tenant_queue_full');
    assert.ok(Number(refused.headers['retry-after']) >= 1);
    assert.equal(await runsUsage(), usage + 2, 'the running and the waiting run count; the refused one does not');
    const archived = await t.request('DELETE', `/v1/snippets/${loop.id}`, ctx({ 'if-match': loop.etag }));
    assert.equal(archived.status, 200, archived.text);
    assert.equal((await t.request('POST', `/v1/snippets/${loop.id}/runs`, { ...ctx(), body: {} })).status, 422);
    assert.equal(await runsUsage(), usage + 2);
    assert.equal((await holding).body.state, 'timed_out');
    assert.equal((await waiting).body.output, 1, 'the waiting run ran once the worker was free');
  });

  test('a run waits for a worker at most its own time limit, then 429 (cause time_limit), not the whole queue timeout; uncounted', async () => {
    const holding = t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: 'while (true) {}', overrides: { timeout_ms: 3000 } } });
    await busyWorkers(1);
    const usage = await runsUsage();
    // The queue timeout is 10 minutes here: only the run's own 300 ms limit can end its wait.
    const short = await t.request('POST', '/v1/snippets:execute', { ...ctx(), body: { code: 'return 1', overrides: { timeout_ms: 300 } } });
    assert.equal(short.status, 429, short.text);
    assert.equal(short.body.error.reason, 'SANDBOX_BUSY');
    assert.equal(short.body.error.metadata.cause, 'time_limit');
    assert.ok(Number(short.headers['retry-after']) >= 1);
    assert.equal(await runsUsage(), usage, 'a refused run costs nothing');
    assert.equal((await holding).body.error.code, 'TIMEOUT');
  });
});
