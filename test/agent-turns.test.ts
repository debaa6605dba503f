// The turn runner through HTTP, in one process with a scripted model: a tool round, execute as the
// turn's creator (reads only; a member's 403s; secret values masked), propose_change approved,
// rejected, denied and allowed; ask_user and :respond; :cancel during a model call and during a
// sandbox run; budgets stopping a turn before the call that would pass them; STEP_LIMIT;
// MODEL_UNAVAILABLE after retries; turns of a session run one at a time, in order; usage; events.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { ScriptedModel } from './scripted-model.js';

const COUNT_INSTALLS = "const r = await platform.request({ method: 'GET', path: '/v1/installs' }); return r.body.data.length;";

describe('agent turns', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let ws: string;
  const model = new ScriptedModel();
  const as = (user: TestUser, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.request(method, url, { token: user.token, headers: { 'svc-context': ws, ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });

  async function agent(body: Record<string, unknown> = {}) {
    const res = await as(owner, 'POST', '/v1/agents', { body: { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'], ...body } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function turn(user: TestUser, agentId: string, message: string, sessionId?: string) {
    const sid = sessionId ?? (await as(user, 'POST', '/v1/agent_sessions', { body: { agent_id: agentId } })).body.id;
    const res = await as(user, 'POST', '/v1/agent_turns', { body: { session_id: sid, message } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function settle(user: TestUser, id: string) {
    for (let i = 0; i < 20; i++) {
      const res = await as(user, 'POST', `/v1/agent_turns/${id}:wait?timeout=10`);
      assert.equal(res.status, 200, res.text);
      if (res.body.state !== 'QUEUED' && res.body.state !== 'RUNNING') return res.body;
    }
    throw new Error(`turn ${id} did not settle`);
  }
  const eventsOf = async (user: TestUser, id: string) => (await as(user, 'GET', `/v1/agent_events?turn_id=${id}&limit=100`)).body.data as { type: string; data: any; sequence: number }[];
  const toolResults = async (user: TestUser, id: string) => (await eventsOf(user, id)).filter((e) => e.type === 'tool.completed').map((e) => e.data.result);

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_RETRY_BACKOFF_SCALE: '0', LOG_LEVEL: process.env.AGENT_TEST_LOG ?? 'silent' });
    t.services.modelProviders.set('local', model);
    owner = await t.user('owner');
    member = await t.user('member');
    ws = (await t.workspace(owner, 'A')).id;
    await t.addMember(owner, ws, member, 'member');
  });
  after(() => t.close());

  test('a tool round then an answer: events in order, usage summed, session and agent usage', async () => {
    model.scripts.set('how many installs?', [
      { text: 'Let me count.', tool_calls: [{ name: 'execute', arguments: { code: COUNT_INSTALLS } }] },
      { text: 'There are 0 installs.' },
    ]);
    const a = await agent();
    const started = await turn(owner, a.id, 'how many installs?');
    const done = await settle(owner, started.id);
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done.failure));
    assert.ok(done.started_at > 0 && done.completed_at >= done.started_at);
    const events = await eventsOf(owner, started.id);
    const types = events.map((e) => e.type).filter((x) => x !== 'message.delta' && x !== 'usage.updated');
    assert.deepEqual(types, ['turn.queued', 'turn.started', 'message.created', 'tool.started', 'tool.completed', 'message.created', 'turn.completed']);
    assert.deepEqual(events.map((e) => e.sequence), events.map((_, i) => i + 1), 'sequences are 1, 2, 3... without a gap');
    assert.equal(events.filter((e) => e.type === 'message.delta').map((e) => e.data.text).join(''), 'Let me count.There are 0 installs.');
    assert.deepEqual(events.find((e) => e.type === 'tool.completed')!.data.result, { ok: true, output: 0, logs: [] });
    assert.equal(events.at(-1)!.data.content, 'There are 0 installs.');
    // 2 calls of 1,000 + 100 tokens at 300 / 1,500 cents per million: 0.9 cents, rounded up.
    assert.deepEqual(done.usage_summary, {
      provider_cost_cents: 1, provider_token_count: 2200, runtime_compute_seconds: done.usage_summary.runtime_compute_seconds, runtime_storage_gb_hours: 0,
      mcp_call_count: 0, api_call_count: 1, ambient_trigger_count: 0,
    });
    assert.ok(done.usage_summary.runtime_compute_seconds >= 1);
    const sessionUsage = (await as(owner, 'GET', `/v1/agent_sessions/${done.session_id}`)).body;
    assert.equal(sessionUsage.state, 'COMPLETED');
    assert.equal(sessionUsage.usage_summary.provider_token_count, 2200);
    assert.equal((await as(owner, 'GET', `/v1/agents/${a.id}`)).body.usage_summary.api_call_count, 1);
    const told = model.requests.at(-1)!.messages;
    assert.equal(told[0]!.role, 'system');
    assert.ok(told.some((m) => m.role === 'tool' && m.content === '{"ok":true,"output":0,"logs":[]}'));
  });

  test('execute reads only, as the turn\'s creator with their rights now', async () => {
    await as(owner, 'POST', '/v1/secrets', { body: { name: 'db-password', value: 'hunter2hunter2' } });
    const secret = (await as(owner, 'GET', '/v1/secrets')).body.data[0];
    model.scripts.set('try things', [
      {
        tool_calls: [
          { name: 'execute', arguments: { code: "return (await platform.request({ method: 'POST', path: '/v1/secrets', body: { name: 'x', value: 'y' } })).body;" } },
          { name: 'execute', arguments: { code: `return (await platform.request({ method: 'POST', path: '/v1/secrets/${secret.id}/versions/latest:access' })).body;` } },
          { name: 'execute', arguments: { code: "return (await platform.request({ method: 'GET', path: '/v1/audit_events' })).status;" } },
        ],
      },
      { text: 'done' },
    ]);
    const a = await agent();
    const byOwner = await settle(owner, (await turn(owner, a.id, 'try things')).id);
    const [write, access, audit] = await toolResults(owner, byOwner.id);
    assert.equal(write.output.error.reason, 'TOOL_READ_ONLY');
    assert.equal((await as(owner, 'GET', '/v1/secrets')).body.data.length, 1, 'nothing was written');
    assert.equal(access.output.error.reason, 'TOOL_READ_ONLY', ':access is a POST: not a read for execute');
    assert.equal(audit.output, 200);
    const byMember = await settle(member, (await turn(member, a.id, 'try things')).id);
    const memberResults = await toolResults(member, byMember.id);
    assert.equal(memberResults[2].output, 403, 'a member\'s tool call gets the member\'s 403');
  });

  test('propose_change: approved runs the exact code; rejected tells the model; DENIED refuses; ALLOWED runs at once', async () => {
    const code = "return (await platform.request({ method: 'POST', path: '/v1/secrets', body: { name: inputsName(), value: 'v-123456789' } })).status; function inputsName() { return 'made-by-agent'; }";
    model.scripts.set('make a secret', [
      { text: 'I will create it.', tool_calls: [{ name: 'propose_change', arguments: { code, summary: 'Create the secret made-by-agent' } }] },
      { text: 'Finished.' },
    ]);
    const a = await agent();
    const waiting = await settle(owner, (await turn(owner, a.id, 'make a secret')).id);
    assert.equal(waiting.state, 'WAITING_FOR_PERMISSION');
    const approvals = (await as(owner, 'GET', `/v1/approval_requests?session_id=${waiting.session_id}&state=PENDING`)).body.data;
    assert.equal(approvals.length, 1);
    assert.equal(approvals[0].kind, 'CHANGE');
    assert.equal(approvals[0].code, code);
    assert.equal(approvals[0].summary, 'Create the secret made-by-agent');
    const notes = await t.request('GET', '/v1/notifications', { token: owner.token });
    assert.ok(notes.body.data.some((n: any) => n.type === 'agent_turn_waiting' && n.resource_id === waiting.id && n.context.waiting_for === 'approval'));
    const ok = await as(owner, 'POST', `/v1/approval_requests/${approvals[0].id}:resolve`, { body: { decision: 'APPROVE' }, headers: { 'if-match': approvals[0].etag } });
    assert.equal(ok.status, 200, ok.text);
    const done = await settle(owner, waiting.id);
    assert.equal(done.state, 'COMPLETED');
    assert.deepEqual((await toolResults(owner, done.id))[0], { ok: true, output: 201, logs: [] });
    assert.ok((await as(owner, 'GET', '/v1/secrets?limit=100')).body.data.some((s: any) => s.name === 'made-by-agent'));
    const audit = (await as(owner, 'GET', `/v1/audit_events?resource_id=${approvals[0].id}`)).body.data;
    assert.deepEqual(audit.map((e: any) => e.action), ['approval_request.approve']);

    const second = await settle(owner, (await turn(owner, a.id, 'make a secret')).id);
    const pending = (await as(owner, 'GET', `/v1/approval_requests?session_id=${second.session_id}&state=PENDING`)).body.data[0];
    await as(owner, 'POST', `/v1/approval_requests/${pending.id}:resolve`, { body: { decision: 'REJECT', reason: 'not that name' }, headers: { 'if-match': pending.etag } });
    const rejected = await settle(owner, second.id);
    assert.equal(rejected.state, 'COMPLETED');
    assert.deepEqual((await toolResults(owner, rejected.id))[0], { ok: false, rejected: true, reason: 'not that name' });

    const denying = await agent({ tool_policy: { writes: 'DENIED' } });
    const denied = await settle(owner, (await turn(owner, denying.id, 'make a secret')).id);
    assert.equal(denied.state, 'COMPLETED');
    assert.equal((await toolResults(owner, denied.id))[0].denied, true);

    // ALLOWED: the change runs at once; a secret value it reads is masked in what the model and the events get.
    const made = (await as(owner, 'GET', '/v1/secrets?limit=100')).body.data.find((s: any) => s.name === 'made-by-agent');
    model.scripts.set('read the value', [
      { tool_calls: [{ name: 'propose_change', arguments: { code: `return (await platform.request({ method: 'POST', path: '/v1/secrets/${made.id}/versions/latest:access' })).body.value;`, summary: 'read it' } }] },
      { text: 'done' },
    ]);
    const free = await agent({ tool_policy: { writes: 'ALLOWED' } });
    const read = await settle(owner, (await turn(owner, free.id, 'read the value')).id);
    assert.equal(read.state, 'COMPLETED');
    assert.deepEqual((await toolResults(owner, read.id))[0], { ok: true, output: '[masked]', logs: [] });
    const allEvents = JSON.stringify(await eventsOf(owner, read.id));
    assert.ok(!allEvents.includes('v-123456789'), 'the value is in no event');
    assert.ok(!JSON.stringify(model.requests.at(-1)!.messages).includes('v-123456789'), 'nor in what the model was told');
  });

  test('ask_user waits for input; :respond with the etag resumes it; the answer reaches the model', async () => {
    model.scripts.set('deploy it', [
      { tool_calls: [{ name: 'ask_user', arguments: { question: 'Which cluster?', choices: ['edge', 'core'] } }] },
      { text: 'OK, core it is.' },
    ]);
    const a = await agent();
    const waiting = await settle(member, (await turn(member, a.id, 'deploy it')).id);
    assert.equal(waiting.state, 'WAITING_FOR_INPUT');
    const asked = (await eventsOf(member, waiting.id)).find((e) => e.type === 'input.requested')!;
    assert.deepEqual(asked.data.choices, ['edge', 'core']);
    const stale = await as(member, 'POST', `/v1/agent_turns/${waiting.id}:respond`, { body: { content: 'core' }, headers: { 'if-match': '99' } });
    assert.equal(stale.status, 409);
    const notYours = await as(owner, 'POST', `/v1/agent_turns/${waiting.id}:respond`, { body: { content: 'core' }, headers: { 'if-match': waiting.etag } });
    assert.equal(notYours.status, 403);
    const res = await as(member, 'POST', `/v1/agent_turns/${waiting.id}:respond`, { body: { content: 'core' }, headers: { 'if-match': waiting.etag } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.state, 'RUNNING');
    const done = await settle(member, waiting.id);
    assert.equal(done.state, 'COMPLETED');
    assert.ok(model.requests.at(-1)!.messages.some((m) => m.role === 'tool' && m.content === '{"answer":"core"}'));
    assert.ok((await eventsOf(member, done.id)).some((e) => e.type === 'input.received' && e.data.content === 'core'));
  });

  test(':cancel during a model call and during a sandbox run stops at once; what happened stays recorded', async () => {
    model.scripts.set('think slowly', [{ text: 'hm', waitMs: 60_000 }]);
    model.scripts.set('run forever', [{ tool_calls: [{ name: 'execute', arguments: { code: 'for (;;) {}' } }] }, { text: 'never' }]);
    const a = await agent();
    for (const message of ['think slowly', 'run forever']) {
      const started = await turn(owner, a.id, message);
      // wait until it runs (the model call or the tool call began)
      for (let i = 0; i < 200; i++) {
        const ev = await eventsOf(owner, started.id);
        if (ev.some((e) => e.type === (message === 'think slowly' ? 'turn.started' : 'tool.started'))) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const cancelled = await as(owner, 'POST', `/v1/agent_turns/${started.id}:cancel`);
      assert.equal(cancelled.status, 200, cancelled.text);
      assert.equal(cancelled.body.state, 'CANCELLED');
      const events = await eventsOf(owner, started.id);
      assert.equal(events.at(-1)!.type, 'turn.cancelled');
      if (message === 'run forever') assert.deepEqual(events.find((e) => e.type === 'tool.completed')!.data.result.cancelled, true);
      assert.equal((await as(owner, 'POST', `/v1/agent_turns/${started.id}:cancel`)).status, 422);
    }
    // The sandbox's worker was freed: a new run goes through at once.
    model.scripts.set('after cancel', [{ tool_calls: [{ name: 'execute', arguments: { code: 'return 1;' } }] }, { text: 'ok' }]);
    assert.equal((await settle(owner, (await turn(owner, a.id, 'after cancel')).id)).state, 'COMPLETED');
  });

  test('turns of a session run one at a time, in order', async () => {
    model.scripts.set('first', [{ text: 'one', waitMs: 200 }]);
    model.scripts.set('second', [{ text: 'two' }]);
    const a = await agent();
    const one = await turn(owner, a.id, 'first');
    const two = await turn(owner, a.id, 'second', one.session_id);
    assert.equal(two.state, 'QUEUED');
    const doneTwo = await settle(owner, two.id);
    const doneOne = (await as(owner, 'GET', `/v1/agent_turns/${one.id}`)).body;
    assert.equal(doneOne.state, 'COMPLETED');
    assert.ok(doneTwo.started_at >= doneOne.completed_at);
    const session = (await as(owner, 'GET', `/v1/agent_events?session_id=${one.session_id}&limit=100`)).body.data.map((e: any) => `${e.turn_id === one.id ? 1 : 2}:${e.type}`);
    assert.ok(session.indexOf('1:turn.completed') < session.indexOf('2:turn.started'));
    // The second sees the first in its conversation.
    const told = model.requests.filter((r) => r.messages.at(-1)!.content === 'second').at(-1)!.messages;
    assert.deepEqual(told.slice(1, 3).map((m) => [m.role, m.content]), [['user', 'first'], ['assistant', 'one']]);
  });

  test('budgets stop a turn before the model call that would pass them; STEP_LIMIT; MODEL_UNAVAILABLE after retries', async () => {
    model.scripts.set('loop', () => ({ tool_calls: [{ name: 'search', arguments: { query: 'installs' } }] }));
    // A call holds its most (4096 output tokens at 1,500 cents per million: 6.2 cents) before it is made; each costs 0.45.
    const capped = await agent({ model_policy: { default_model: 'local-1', max_turn_budget_cents: 8 } });
    const broke = await settle(owner, (await turn(owner, capped.id, 'loop')).id);
    assert.equal(broke.state, 'FAILED');
    assert.equal(broke.failure.code, 'BUDGET_EXHAUSTED');
    assert.ok(broke.usage_summary.provider_cost_cents <= 8, 'the turn never passed its budget');
    const search = (await toolResults(owner, broke.id))[0];
    assert.ok(search.operations.some((o: any) => o.path === '/v1/installs'));

    const looping = await agent();
    const limited = await settle(owner, (await turn(owner, looping.id, 'loop')).id);
    assert.equal(limited.failure.code, 'STEP_LIMIT');

    model.scripts.set('flaky', [{ text: 'made it', failTimes: 2 }]);
    assert.equal((await settle(owner, (await turn(owner, looping.id, 'flaky')).id)).state, 'COMPLETED');
    model.scripts.set('down', [{ text: 'never', failTimes: 100 }]);
    const down = await settle(owner, (await turn(owner, looping.id, 'down')).id);
    assert.equal(down.failure.code, 'MODEL_UNAVAILABLE');
    model.scripts.set('bad', [{ error: 'bad_request' }]);
    assert.equal((await settle(owner, (await turn(owner, looping.id, 'bad')).id)).failure.code, 'MODEL_ERROR');
  });
});
