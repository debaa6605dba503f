// Unit tests of the agent pages' logic kept free of the DOM: the event-stream parser (web/src/lib/
// sse.ts), the conversation built from a session's events and what is announced (chat.ts), and the
// agent form's bodies, money and usage words (agents.ts), and where agent records link (links.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconnectDelay, SseParser } from '../../web/src/lib/sse.js';
import { activeTurn, announcement, applyEvents, EMPTY, toolLine, toolOutcome, withTurn, type AgentEvent } from '../../web/src/lib/chat.js';
import { agentBody, agentChanges, busyWords, dollarsText, fieldsOfAgent, formatCents, NEW_AGENT, parseDollars, titleFrom, usageWords, type Agent } from '../../web/src/lib/agents.js';
import { resourceHref } from '../../web/src/lib/links.js';

test('the SSE parser reads events split anywhere, CRLF or LF, skips comments and keeps the last id', () => {
  const body = 'retry: 1000\n\n: keepalive\n\nid: 1\r\nevent: turn.queued\r\ndata: {"a":1}\r\n\r\nid: 2\nevent: message.delta\ndata: line one\ndata: line two\n\n';
  // Every split point gives the same messages.
  for (let cut = 0; cut <= body.length; cut++) {
    const p = new SseParser();
    const got = [...p.feed(body.slice(0, cut)), ...p.feed(body.slice(cut))];
    assert.deepEqual(got, [
      { event: 'turn.queued', data: '{"a":1}', lastEventId: '1' },
      { event: 'message.delta', data: 'line one\nline two', lastEventId: '2' },
    ], `cut at ${cut}`);
    assert.equal(p.retryMs, 1000);
    assert.equal(p.lastEventId, '2');
  }
  const p = new SseParser();
  assert.deepEqual(p.feed('data:no space\nevent\n\nid: 7\n\n'), [{ event: 'message', data: 'no space', lastEventId: '' }]);
  assert.equal(p.lastEventId, '7', 'an id with no data still moves the resume point');
});

test('reconnecting waits the server\'s retry, doubled per failure in a row, at most 15 s', () => {
  assert.equal(reconnectDelay(undefined, 0), 1000);
  assert.equal(reconnectDelay(1000, 1), 1000);
  assert.equal(reconnectDelay(1000, 3), 4000);
  assert.equal(reconnectDelay(1000, 10), 15_000);
});

let seq = 0;
const ev = (turn: string, type: AgentEvent['type'], data: Record<string, unknown>): AgentEvent => ({ sequence: ++seq, turn_id: turn, type, data });

test('a turn reads as the message, streamed text, a tool row, usage and the answer once', () => {
  seq = 0;
  const events = [
    ev('t1', 'turn.queued', { state: 'QUEUED', content: 'how many installs are there?' }),
    ev('t1', 'turn.started', { state: 'RUNNING', model: 'local-1' }),
    ev('t1', 'message.delta', { text: 'Let me ' }),
    ev('t1', 'message.delta', { text: 'count.' }),
  ];
  let c = applyEvents(EMPTY, events);
  assert.equal(c.turns.length, 1);
  assert.deepEqual(c.turns[0]!.items, [{ kind: 'text', key: 'e3', content: 'Let me count.', streaming: true }]);
  assert.equal(activeTurn(c)?.id, 't1');
  c = applyEvents(c, [
    // A retried call repeats pieces; message.created holds the whole text.
    ev('t1', 'message.delta', { text: 'Let me ' }),
    ev('t1', 'message.created', { content: 'Let me count.' }),
    ev('t1', 'usage.updated', { usage_summary: { provider_token_count: 10, provider_cost_cents: 0, api_call_count: 0, runtime_compute_seconds: 0 } }),
    ev('t1', 'tool.started', { call_id: 'c1', tool: 'execute', arguments: { code: 'return 2', summary: 'count installs' } }),
  ]);
  const t = c.turns[0]!;
  assert.deepEqual(t.items[0], { kind: 'text', key: 'e3', content: 'Let me count.', streaming: false });
  assert.equal(t.items[1]!.kind, 'tool');
  c = applyEvents(c, [
    ev('t1', 'tool.completed', { call_id: 'c1', tool: 'execute', result: { ok: true, output: 2, logs: [] } }),
    ev('t1', 'message.delta', { text: 'There are 2 installs.' }),
    ev('t1', 'message.created', { content: 'There are 2 installs.' }),
    ev('t1', 'turn.completed', { state: 'COMPLETED', content: 'There are 2 installs.' }),
  ]);
  const done = c.turns[0]!;
  assert.equal(done.state, 'COMPLETED');
  assert.deepEqual(done.items.map((i) => i.kind), ['text', 'tool', 'text'], 'the final answer is not shown twice');
  assert.equal(done.usage?.provider_token_count, 10);
  assert.equal(activeTurn(c), undefined);
  // Replayed events (a reconnection overlapping what was read) change nothing.
  assert.equal(applyEvents(c, events), c);
});

test('an answer without streamed text still shows; a failure keeps its code and message', () => {
  seq = 0;
  let c = applyEvents(EMPTY, [ev('t1', 'turn.queued', { content: 'hi' }), ev('t1', 'turn.completed', { state: 'COMPLETED', content: 'Hello.' })]);
  assert.deepEqual(c.turns[0]!.items, [{ kind: 'text', key: 'e2', content: 'Hello.', streaming: false }]);
  c = applyEvents(c, [ev('t2', 'turn.queued', { content: 'again' }), ev('t2', 'message.delta', { text: 'Wor' }), ev('t2', 'turn.failed', { state: 'FAILED', failure: { code: 'MODEL_UNAVAILABLE', message: 'down' } })]);
  const t2 = c.turns[1]!;
  assert.equal(t2.state, 'FAILED');
  assert.deepEqual(t2.failure, { code: 'MODEL_UNAVAILABLE', message: 'down' });
  assert.deepEqual(t2.items, [{ kind: 'text', key: 'e4', content: 'Wor', streaming: false }], 'text cut by the failure is no longer shown as being written');
});

test('approvals and questions attach to their tool call and move the turn\'s state', () => {
  seq = 0;
  let c = applyEvents(EMPTY, [
    ev('t1', 'turn.queued', { content: 'create a secret' }),
    ev('t1', 'tool.started', { call_id: 'c1', tool: 'propose_change', arguments: { code: 'POST', summary: 'Create the secret db-password' } }),
    ev('t1', 'approval.requested', { approval_request_id: 'apr_1', kind: 'CHANGE', call_id: 'c1', code: 'POST', summary: 'Create the secret db-password' }),
  ]);
  let item = c.turns[0]!.items[0]!;
  assert.equal(c.turns[0]!.state, 'WAITING_FOR_PERMISSION');
  assert.ok(item.kind === 'tool' && item.approval?.id === 'apr_1' && item.approval.code === 'POST');
  c = applyEvents(c, [ev('t1', 'approval.resolved', { approval_request_id: 'apr_1', decision: 'REJECT', reason: 'not now', resolved_by: 'usr_1' })]);
  item = c.turns[0]!.items[0]!;
  assert.equal(c.turns[0]!.state, 'RUNNING');
  assert.ok(item.kind === 'tool' && item.approval?.decision === 'REJECT' && item.approval.reason === 'not now');

  c = applyEvents(c, [
    ev('t1', 'tool.started', { call_id: 'c2', tool: 'ask_user', arguments: { question: 'Which cluster?', choices: ['dev', 'prod'] } }),
    ev('t1', 'input.requested', { call_id: 'c2', question: 'Which cluster?', choices: ['dev', 'prod'] }),
  ]);
  assert.equal(c.turns[0]!.state, 'WAITING_FOR_INPUT');
  c = applyEvents(c, [ev('t1', 'input.received', { content: 'prod' })]);
  item = c.turns[0]!.items[1]!;
  assert.ok(item.kind === 'tool' && item.question?.answer === 'prod');
  assert.equal(c.turns[0]!.state, 'RUNNING');

  // A member's turn waiting for an admin: an approval of no tool call; approved, it is queued again.
  c = applyEvents(c, [ev('t2', 'turn.queued', { content: 'deploy' }), ev('t2', 'approval.requested', { approval_request_id: 'apr_2', kind: 'TURN', call_id: null, code: null, summary: 'deploy' })]);
  assert.equal(c.turns[1]!.items[0]!.kind, 'approval');
  c = applyEvents(c, [ev('t2', 'approval.resolved', { approval_request_id: 'apr_2', decision: 'APPROVE', reason: null, resolved_by: 'usr_2' })]);
  assert.equal(c.turns[1]!.state, 'QUEUED');
});

test('a turn just submitted shows before its first event, and its events do not repeat it', () => {
  seq = 0;
  let c = withTurn(EMPTY, { id: 't1', state: 'QUEUED', input: { content: 'hello' } });
  assert.equal(withTurn(c, { id: 't1', state: 'QUEUED', input: { content: 'hello' } }), c);
  c = applyEvents(c, [ev('t1', 'turn.queued', { content: 'hello' }), ev('t1', 'turn.cancelled', { state: 'CANCELLED' })]);
  assert.equal(c.turns.length, 1);
  assert.equal(c.turns[0]!.message, 'hello');
  assert.equal(c.turns[0]!.state, 'CANCELLED');
});

test('screen readers hear whole messages, questions, approvals and endings, never deltas', () => {
  seq = 0;
  const c = applyEvents(EMPTY, [ev('t1', 'turn.queued', { content: 'x' }), ev('t1', 'message.created', { content: 'Two installs.' })]);
  assert.equal(announcement(ev('t1', 'message.delta', { text: 'Two' }), c), undefined);
  assert.equal(announcement(ev('t1', 'tool.started', { call_id: 'c', tool: 'execute', arguments: {} }), c), undefined);
  assert.equal(announcement(ev('t1', 'message.created', { content: 'Two installs.' }), c), 'The agent says: Two installs.');
  assert.equal(announcement(ev('t1', 'turn.completed', { content: 'Two installs.' }), c), 'The agent is done.', 'the answer already said is not said again');
  assert.equal(announcement(ev('t1', 'turn.completed', { content: 'Other.' }), c), 'The agent says: Other.');
  assert.equal(announcement(ev('t1', 'input.requested', { question: 'Which cluster?', choices: ['dev', 'prod'] }), c), 'The agent asks: Which cluster? Choices: dev, prod.');
  assert.match(announcement(ev('t1', 'approval.requested', { kind: 'CHANGE', summary: 'Create the secret' }), c)!, /^Approval needed: Create the secret/);
  assert.equal(announcement(ev('t1', 'turn.failed', { failure: { code: 'X', message: 'boom' } }), c), 'The turn failed: boom');
  assert.equal(announcement(ev('t1', 'turn.cancelled', {}), c), 'The turn was cancelled.');
});

test('tool rows say what the call did and how it ended', () => {
  assert.equal(toolLine({ tool: 'search', arguments: { query: 'installs' } }), 'Searched the API for “installs”');
  assert.equal(toolLine({ tool: 'execute', arguments: { code: 'x', summary: 'count installs' } }), 'Read: count installs');
  assert.equal(toolLine({ tool: 'execute', arguments: { code: 'x' } }), 'Ran read-only code');
  assert.deepEqual(toolOutcome({ ok: true, output: 1 }), { ok: true, words: 'Done' });
  assert.deepEqual(toolOutcome('{"ok":false,"error":{"code":"TOOL_READ_ONLY","message":"reads only"}}'), { ok: false, words: 'Failed (TOOL_READ_ONLY): reads only' });
  assert.deepEqual(toolOutcome({ ok: false, rejected: true, reason: 'no' }), { ok: false, words: 'Rejected: no' });
  assert.equal(toolOutcome({ ok: false, outcome_unknown: true }).words, 'Outcome unknown: the worker stopped while it ran');
});

test('money and usage read in dollars and words', () => {
  assert.equal(formatCents(2), '$0.02');
  assert.equal(formatCents(123_456), '$1,234.56');
  assert.deepEqual(usageWords({ provider_cost_cents: 2, provider_token_count: 1840, runtime_compute_seconds: 0, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 1, ambient_trigger_count: 0 }), ['1,840 tokens', '$0.02', '1 API call']);
  assert.deepEqual(parseDollars(''), { ok: true, value: null });
  assert.deepEqual(parseDollars('5'), { ok: true, value: 500 });
  assert.deepEqual(parseDollars('$0.5'), { ok: true, value: 50 });
  assert.deepEqual(parseDollars('1,200.25'), { ok: true, value: 120_025 });
  for (const bad of ['-1', '1.234', 'five', '1e3']) assert.equal(parseDollars(bad).ok, false, bad);
  assert.equal(dollarsText(500), '5.00');
  assert.equal(dollarsText(null), '');
});

const AGENT: Agent = {
  id: 'agt_1', workspace_id: 'ws_1', organization_id: null, name: 'ops', description: null, instructions: 'Help.', capabilities: ['CHAT'],
  model_policy: { provider: 'local', default_model: 'local-1', allowed_models: [], credential_secret_id: null, max_turn_budget_cents: null, max_budget_cents: 500, budget_period: 'MONTH' },
  tool_policy: { writes: 'APPROVAL_REQUIRED' }, state: 'ENABLED', origin: 'USER', created_by: 'usr_1',
  usage_summary: { provider_cost_cents: 0, provider_token_count: 0, runtime_compute_seconds: 0, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 0, ambient_trigger_count: 0 },
  html_url: 'http://x/agents/agt_1', created_at: 1, updated_at: 1, archived_at: null, etag: '1',
};

test('the agent form sends model_policy only when set, and then with a model', () => {
  const plain = agentBody({ ...NEW_AGENT, name: ' ops ', instructions: 'Help.' });
  assert.deepEqual(plain, { ok: true, body: { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'], tool_policy: { writes: 'APPROVAL_REQUIRED' } } });
  const noModel = agentBody({ ...NEW_AGENT, name: 'ops', instructions: 'Help.', turnBudget: '1' });
  assert.equal(noModel.ok, false);
  assert.ok(!noModel.ok && noModel.problems.has('body.model_policy.default_model'));
  const bad = agentBody({ ...NEW_AGENT, name: 'ops', instructions: 'Help.', model: 'm', agentBudget: 'lots', capabilities: [] });
  assert.ok(!bad.ok && bad.problems.has('body.model_policy.max_budget_cents') && bad.problems.has('body.capabilities'));
  const full = agentBody({ ...NEW_AGENT, name: 'ops', instructions: 'Help.', provider: 'openai', model: 'gpt-4o-mini', allowedModels: 'gpt-4o-mini, gpt-4o', turnBudget: '0.25', writes: 'DENIED' });
  assert.ok(full.ok);
  assert.deepEqual(full.body.model_policy, {
    provider: 'openai', default_model: 'gpt-4o-mini', allowed_models: ['gpt-4o-mini', 'gpt-4o'], credential_secret_id: null, max_turn_budget_cents: 25, max_budget_cents: null, budget_period: 'MONTH',
  });
});

test('an edit sends only what changed', () => {
  const same = agentChanges(AGENT, fieldsOfAgent(AGENT));
  assert.deepEqual(same, { ok: true, body: {} });
  const changed = agentChanges(AGENT, { ...fieldsOfAgent(AGENT), name: 'ops2', writes: 'DENIED', agentBudget: '7' });
  assert.ok(changed.ok);
  assert.deepEqual(Object.keys(changed.body).sort(), ['model_policy', 'name', 'tool_policy']);
  assert.equal(changed.body.model_policy?.max_budget_cents, 700);
  const cleared = agentChanges({ ...AGENT, description: 'old' }, { ...fieldsOfAgent(AGENT), description: '' });
  assert.ok(cleared.ok);
  assert.deepEqual(cleared.body, { description: null });
});

test('a chat is titled by its first message; agent records link to their pages', () => {
  assert.equal(titleFrom('\n  how many   installs are there?\nthanks'), 'how many installs are there?');
  assert.equal(titleFrom('x'.repeat(100)).length, 80);
  assert.equal(resourceHref('agent', 'agt_1'), '/agents/agt_1');
  assert.equal(resourceHref('agent_session', 'ags_1'), '/agent_sessions/ags_1');
  // agent_turn_waiting notifications name the turn, with its session in their context.
  assert.equal(resourceHref('agent_turn', 'agtt_1', { session_id: 'ags_1', turn_id: 'agtt_1' }), '/agent_sessions/ags_1');
});

test('the composer says what a turn under way waits on', () => {
  assert.equal(busyWords('WAITING_FOR_INPUT', 'ops'), 'ops asked you something above: answer it there to go on.');
  assert.equal(busyWords('WAITING_FOR_PERMISSION', 'ops'), 'ops waits for a decision above before it goes on.');
  assert.match(busyWords('RUNNING', 'ops'), /^ops is working/);
  assert.match(busyWords('QUEUED', 'ops'), /^Your message waits for ops/);
});
