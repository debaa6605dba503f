// The security model of snippet runs (issue 13): a run never has more rights than whoever runs it
// nor than whoever wrote its code; the escape battery through the HTTP surface; the daily quota;
// the per-workspace concurrency cap with its bounded queue; the API stays responsive while
// runaway snippets occupy every worker.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { plansFile } from './plans-fixtures.js';

const WORKERS = 2;

describe('snippet security', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let ws: string;
  const ctx = (user: TestUser, headers: Record<string, string> = {}) => ({ token: user.token, headers: { 'svc-context': ws, ...headers } });

  async function snippet(user: TestUser, code: string): Promise<{ id: string; etag: string }> {
    const res = await t.request('POST', '/v1/snippets', { ...ctx(user), body: { name: 'sec', code, display_type: 'json' } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function runAs(user: TestUser, id: string, body: Record<string, unknown> = {}) {
    const res = await t.request('POST', `/v1/snippets/${id}/runs`, { ...ctx(user), body });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const execute = async (code: string, inputs?: Record<string, unknown>) => {
    const res = await t.request('POST', '/v1/snippets:execute', { ...ctx(owner), body: { code, ...(inputs ? { inputs } : {}) } });
    assert.equal(res.status, 200, res.text);
    return res.body;
  };

  const CREATE_TOKEN = "const r = await platform.request({ method: 'POST', path: '/v1/api_tokens', body: { name: 'from-snippet', role: 'admin' } }); return { status: r.status, reason: r.body.error?.reason ?? null, hasToken: typeof r.body.token === 'string' };";

  before(async () => {
    t = await startTestApp({
      SVC_SANDBOX_WORKERS: String(WORKERS), SVC_SNIPPET_CONCURRENCY: '1', SVC_SNIPPET_QUEUE: '1',
      SVC_PLANS_FILE: plansFile({ 'snippets/runs': 60 }),
    });
    owner = await t.user('owner');
    admin = await t.user('admin');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'Security')).id;
    await t.addMember(owner, ws, admin, 'admin');
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  test('a member\'s snippet cannot create an API token or add a member; an admin\'s can', async () => {
    const mine = await snippet(member, CREATE_TOKEN);
    const denied = await runAs(member, mine.id);
    assert.deepEqual(denied.output, { status: 403, reason: 'ROLE_TOO_LOW', hasToken: false });
    const theirs = await snippet(admin, CREATE_TOKEN);
    const allowed = await runAs(admin, theirs.id);
    assert.deepEqual(allowed.output, { status: 201, reason: null, hasToken: true });
    // Member management needs admin too.
    const outsider = await t.user('outsider');
    const addMember = `const r = await platform.request({ method: 'POST', path: '/v1/workspaces/${ws}/members', body: { user_id: '${outsider.id}', role: 'member' } }); return r.status;`;
    assert.equal((await runAs(member, (await snippet(member, addMember)).id)).output, 403);
    assert.equal((await runAs(admin, (await snippet(admin, addMember)).id)).output, 201);
  });

  test('a member\'s snippet cannot read a secret value (metadata only); an admin\'s can', async () => {
    const created = await t.request('POST', '/v1/secrets', { ...ctx(owner), body: { name: 'snippet-target', value: 's3cr3t-value' } });
    assert.equal(created.status, 201, created.text);
    const read = `const meta = await platform.request({ path: '/v1/secrets/${created.body.id}' });
      const r = await platform.request({ method: 'POST', path: '/v1/secrets/${created.body.id}/versions/latest:access' });
      return { meta: meta.status, status: r.status, value: r.body.value ?? null };`;
    assert.deepEqual((await runAs(member, (await snippet(member, read)).id)).output, { meta: 200, status: 403, value: null });
    // The admin's run read the value; what the run stored and answered has it masked (README, Sandbox).
    assert.deepEqual((await runAs(admin, (await snippet(admin, read)).id)).output, { meta: 200, status: 200, value: '[masked]' });
    // The admin's read is on record, as the admin, like any other.
    const audit = await t.request('GET', `/v1/audit_events?action=secret.version.access`, ctx(owner));
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.data.filter((e: { actor: { id: string } }) => e.actor.id === admin.id).length, 1, audit.text);
  });

  test('code written by a member never runs with an admin\'s rights, even when the admin runs it', async () => {
    const planted = await snippet(member, CREATE_TOKEN);
    assert.equal((await runAs(admin, planted.id)).output.status, 403);
    // A member rewriting an admin's snippet demotes it the same way.
    const adminOwn = await snippet(admin, 'return 1');
    const patched = await t.request('PATCH', `/v1/snippets/${adminOwn.id}`, { ...ctx(member, { 'if-match': adminOwn.etag }), body: { code: CREATE_TOKEN } });
    assert.equal(patched.status, 200);
    assert.equal((await runAs(admin, adminOwn.id)).output.status, 403);
    // Once an admin writes the code again, the admin's runs have the admin's rights.
    const rewritten = await t.request('PATCH', `/v1/snippets/${adminOwn.id}`, { ...ctx(admin, { 'if-match': patched.body.etag }), body: { code: CREATE_TOKEN } });
    assert.equal(rewritten.status, 200);
    assert.equal((await runAs(admin, adminOwn.id)).output.status, 201);
    assert.equal((await runAs(member, adminOwn.id)).output.status, 403);
  });

  test('a member API token\'s runs act as a member; the run credential is gone when the run ends', async () => {
    const token = await t.apiToken(owner, ws, { name: 'member-token', role: 'member' });
    const res = await t.request('POST', '/v1/snippets:execute', { token: token.token, body: { code: CREATE_TOKEN } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.output.status, 403);
    assert.equal(t.services.runCredentials.liveCount(), 0);
  });

  test('escape battery: no process, require, import(), host this, constructor walks, WebAssembly or shared memory', async () => {
    const r = await execute(`
      const probe = (f) => { try { const v = f(); return v === undefined ? 'undefined' : typeof v; } catch (e) { return 'threw ' + e.name; } };
      let dynamicImport;
      try { await import('node:fs'); dynamicImport = 'imported'; } catch (e) { dynamicImport = 'threw ' + e.name; }
      const g = Function('return this')();
      const viaConstructor = (() => {}).constructor.constructor('return typeof process + typeof require')();
      const viaPromise = Promise.resolve().constructor.constructor('return typeof globalThis.process')();
      // platform.request is an async function: its constructor makes async functions (a promise to await).
      let viaPlatform;
      try { viaPlatform = typeof (await platform.request.constructor('return process')()); } catch (e) { viaPlatform = 'threw ' + e.name; }
      return {
        process: typeof process, require: typeof require, module: typeof module, Buffer: typeof Buffer,
        WebAssembly: typeof WebAssembly, SharedArrayBuffer: typeof SharedArrayBuffer, Atomics: typeof Atomics,
        setTimeout: typeof setTimeout, fetch: typeof fetch, dynamicImport,
        sameGlobal: g === globalThis, gProcess: typeof g.process, viaConstructor, viaPromise, viaPlatform,
        platformKeys: Object.getOwnPropertyNames(platform).sort(),
        evalProcess: probe(() => eval('process')),
      };`);
    assert.equal(r.error, null, JSON.stringify(r.error));
    const o = r.output;
    for (const k of ['process', 'require', 'module', 'Buffer', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', 'setTimeout', 'fetch', 'gProcess']) {
      assert.equal(o[k], 'undefined', `${k}: ${o[k]}`);
    }
    assert.match(o.dynamicImport, /^threw/);
    assert.equal(o.sameGlobal, true);
    assert.equal(o.viaConstructor, 'undefinedundefined');
    assert.equal(o.viaPromise, 'undefined');
    assert.match(o.viaPlatform, /^threw/);
    assert.match(o.evalProcess, /^threw/);
    assert.deepEqual(o.platformKeys, ['request']);
  });

  test('prototype pollution of inputs and outputs stays inside: the host\'s objects are unchanged', async () => {
    const inputs = { nested: { a: 1 }, list: [1, 2] };
    const copy = structuredClone(inputs);
    const r = await execute(`
      const frozen = Object.isFrozen(inputs) && Object.isFrozen(inputs.nested);
      try { inputs.nested.a = 2; } catch {}
      try { Object.prototype.polluted = 'yes'; Array.prototype.evil = 1; } catch {}
      try { inputs.__proto__.pwned = true; } catch {}
      return JSON.parse('{"__proto__": {"injected": true}, "constructor": {"prototype": {"viaConstructor": true}}, "ok": 1}');`, inputs);
    assert.equal(r.error, null, JSON.stringify(r.error));
    assert.deepEqual(inputs, copy);
    for (const key of ['polluted', 'pwned', 'injected', 'viaConstructor']) {
      assert.equal((Object.prototype as Record<string, unknown>)[key], undefined, key);
      assert.equal(({} as Record<string, unknown>)[key], undefined, key);
    }
    assert.equal((Array.prototype as unknown as Record<string, unknown>).evil, undefined);
    assert.equal(r.output.ok, 1);
    assert.equal(Object.getPrototypeOf(r.output), Object.prototype);
    // The next run starts clean.
    const next = await execute('return [typeof Object.prototype.polluted, typeof [].evil]');
    assert.deepEqual(next.output, ['undefined', 'undefined']);
  });

  test('per-workspace cap: one runs, one waits, the next is 429 SANDBOX_BUSY; another workspace still runs', async () => {
    const loop = await snippet(owner, 'while (true) {}');
    const other = (await t.workspace(owner, 'Neighbour')).id;
    // The first run holds the workspace's worker until its 2 s limit; the second may wait for it
    // because its own limit (5 s, counted from its request) leaves time to run after that.
    const run = (timeout_ms: number) => t.request('POST', `/v1/snippets/${loop.id}/runs`, { ...ctx(owner), body: { overrides: { timeout_ms } } });
    const first = run(2000);
    while ((t.services.snippetRunner.stats()?.busy ?? 0) < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const runs = [first, run(5000), run(5000)];
    const neighbour = t.request('POST', '/v1/snippets:execute', { token: owner.token, headers: { 'svc-context': other }, body: { code: 'return 7' } });
    const statuses = (await Promise.all(runs)).map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, 201, 429]);
    const refused = (await Promise.all(runs)).find((r) => r.status === 429)!;
    assert.equal(refused.body.error.reason, 'SANDBOX_BUSY');
    assert.match(refused.headers['retry-after'] as string, /^[1-9][0-9]*$/);
    const n = await neighbour;
    assert.equal(n.status, 200);
    assert.equal(n.body.output, 7);
  });

  test('while runaway snippets hold every worker, API requests keep being answered', async () => {
    const other = (await t.workspace(owner, 'Runaway 2')).id;
    const loop = await snippet(owner, 'while (true) {}');
    const runaway = [
      ...[0, 1].map(() => t.request('POST', `/v1/snippets/${loop.id}/runs`, { ...ctx(owner), body: { overrides: { timeout_ms: 5000 } } })),
      ...[0, 1].map(() => t.request('POST', '/v1/snippets:execute', { token: owner.token, headers: { 'svc-context': other }, body: { code: 'while (true) {}', overrides: { timeout_ms: 5000 } } })),
    ];
    while ((t.services.snippetRunner.stats()?.busy ?? 0) < WORKERS) await new Promise((resolve) => setTimeout(resolve, 20));
    // Order of events, not latency (bench/hostile.js measures that): requests answered while the
    // loops still held every worker, i.e. the loops run off the event loop.
    let answeredWhileBusy = 0;
    for (let i = 0; i < 20; i++) {
      const res = await t.request('GET', '/v1/snippets?limit=20', ctx(owner));
      assert.equal(res.status, 200);
      if (t.services.snippetRunner.stats()!.busy === WORKERS) answeredWhileBusy++;
    }
    assert.ok(answeredWhileBusy > 0, 'no request was answered while the runaway loops held every worker');
    const outcomes = await Promise.all(runaway);
    assert.ok(outcomes.every((r) => r.status === 201 || r.status === 200 || r.status === 429), outcomes.map((r) => r.status).join());
  });

  test('the daily snippets/runs quota: 429 QUOTA_EXCEEDED past the plan\'s limit, reported by GET /v1/quotas', async () => {
    const quota = async () => (await t.request('GET', '/v1/quotas', ctx(owner))).body.data.find((q: { metric: string }) => q.metric === 'snippets/runs');
    const before_ = await quota();
    assert.equal(before_.limit, 60);
    const id = (await snippet(owner, 'return 1')).id;
    for (let i = before_.usage; i < 60; i++) await runAs(owner, id);
    const refused = await t.request('POST', `/v1/snippets/${id}/runs`, { ...ctx(owner), body: {} });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.reason, 'QUOTA_EXCEEDED');
    assert.equal(refused.body.error.metadata.metric, 'snippets/runs');
    assert.ok(Number(refused.headers['retry-after']) > 0);
    const adHoc = await t.request('POST', '/v1/snippets:execute', { ...ctx(owner), body: { code: 'return 1' } });
    assert.equal(adHoc.status, 429);
    const after_ = await quota();
    assert.equal(after_.usage, 60);
    assert.equal(after_.remaining, 0);
  });
});
