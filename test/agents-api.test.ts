// Agents and sessions through HTTP: create (admin), read, change with if-match, archive and
// restore; sessions are their creator's (another member 404, admins read but do not post); turn
// admission recorded on the turn (every DENIED code, APPROVAL_REQUIRED for a member on an agent that
// writes freely); spec 2.4 field by field; idempotent submission; the audit log; OpenAPI examples.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertNamed } from './notification-wording.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

const TURN_FIELDS = [
  'id', 'workspace_id', 'organization_id', 'agent_id', 'session_id', 'state', 'origin', 'input', 'runtime_hint', 'model', 'created_by', 'started_at',
  'completed_at', 'runtime_decision', 'decision_reason', 'resolved_execution_mode', 'admission_error', 'usage_summary', 'failure', 'created_at',
  'updated_at', 'etag',
];
const USAGE = ['provider_cost_cents', 'provider_token_count', 'runtime_compute_seconds', 'runtime_storage_gb_hours', 'mcp_call_count', 'api_call_count', 'ambient_trigger_count'];

describe('agents API', () => {
  let t: TestApp;
  let owner: TestUser;
  let member: TestUser;
  let other: TestUser;
  let stranger: TestUser;
  let ws: string;
  const as = (user: TestUser, method: string, url: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
    t.request(method, url, { token: user.token, headers: { 'svc-context': ws, ...opts.headers }, ...(opts.body !== undefined ? { body: opts.body } : {}) });

  async function agent(body: Record<string, unknown> = {}) {
    const res = await as(owner, 'POST', '/v1/agents', { body: { name: 'ops', instructions: 'Help the team.', capabilities: ['CHAT'], ...body } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function session(user: TestUser, agentId: string) {
    const res = await as(user, 'POST', '/v1/agent_sessions', { body: { agent_id: agentId, title: 'talk' } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  const submit = (user: TestUser, sessionId: string, message: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    as(user, 'POST', '/v1/agent_turns', { body: { session_id: sessionId, message, ...extra }, headers });

  before(async () => {
    // No worker runs turns here: this file is about the records and the admission.
    t = await startTestApp({ ...roomyPlans(), SVC_ROLE: 'api' });
    owner = await t.user('owner');
    member = await t.user('member');
    other = await t.user('other');
    stranger = await t.user('stranger');
    ws = (await t.workspace(owner, 'A')).id;
    await t.addMember(owner, ws, member, 'member');
    await t.addMember(owner, ws, other, 'member');
    await t.workspace(stranger, 'S');
  });
  after(() => t.close());

  test('an admin creates an agent with defaults filled in; members read it and may not manage it', async () => {
    const a = await agent({ description: 'answers' });
    assert.match(a.id, /^agt_/);
    assert.deepEqual(a.model_policy, {
      provider: 'local', default_model: 'local-1', allowed_models: [], credential_secret_id: null, max_turn_budget_cents: null, max_budget_cents: null, budget_period: 'MONTH',
    });
    assert.deepEqual(a.tool_policy, { writes: 'APPROVAL_REQUIRED' });
    assert.equal(a.state, 'ENABLED');
    assert.equal(a.origin, 'USER');
    assert.equal(a.organization_id, null);
    assert.deepEqual(Object.keys(a.usage_summary).sort(), [...USAGE].sort());
    assert.match(a.html_url, new RegExp(`/agents/${a.id}$`));
    const read = await as(member, 'GET', `/v1/agents/${a.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.headers.etag, `"${a.etag}"`);
    const refused = await as(member, 'POST', '/v1/agents', { body: { name: 'x', instructions: 'y', capabilities: ['CHAT'] } });
    assert.equal(refused.status, 403, refused.text);
    assert.equal((await as(member, 'PATCH', `/v1/agents/${a.id}`, { body: { name: 'z' }, headers: { 'if-match': a.etag } })).status, 403);
    assert.equal((await as(stranger, 'GET', `/v1/agents/${a.id}`, { headers: { 'svc-context': '' } })).status === 200, false);
  });

  test('bad bodies are 400 and change nothing', async () => {
    const before = (await as(owner, 'GET', '/v1/agents?limit=100')).body.data.length;
    for (const body of [
      { name: '', instructions: 'x', capabilities: ['CHAT'] },
      { name: 'a', instructions: 'x', capabilities: [] },
      { name: 'a', instructions: 'x', capabilities: ['CHAT', 'CHAT'] },
      { name: 'a', instructions: 'x', capabilities: ['NOPE'] },
      { name: 'a', instructions: 'x'.repeat(20_001), capabilities: ['CHAT'] },
      { name: 'a', instructions: 'x', capabilities: ['CHAT'], model_policy: { default_model: 'm', allowed_models: ['n'] } },
      { name: 'a', instructions: 'x', capabilities: ['CHAT'], model_policy: { default_model: 'm', credential_secret_id: 'sec_01kaxq3m7y0c9v8t6r5p4n3m2k' } },
      { name: 'a', instructions: 'x', capabilities: ['CHAT'], tool_policy: { writes: 'SOMETIMES' } },
      { name: 'a', instructions: 'x', capabilities: ['CHAT'], extra: 1 },
    ]) {
      const res = await as(owner, 'POST', '/v1/agents', { body });
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
    assert.equal((await as(owner, 'GET', '/v1/agents?limit=100')).body.data.length, before);
  });

  test('PATCH needs the current etag; DELETE archives, :undelete restores; both audited', async () => {
    const a = await agent();
    const stale = await as(owner, 'PATCH', `/v1/agents/${a.id}`, { body: { name: 'renamed' }, headers: { 'if-match': '99' } });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.metadata.etag, a.etag);
    const renamed = await as(owner, 'PATCH', `/v1/agents/${a.id}`, { body: { name: 'renamed', tool_policy: { writes: 'DENIED' } }, headers: { 'if-match': a.etag } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'renamed');
    assert.deepEqual(renamed.body.tool_policy, { writes: 'DENIED' });
    const archived = await as(owner, 'DELETE', `/v1/agents/${a.id}`, { headers: { 'if-match': renamed.body.etag } });
    assert.equal(archived.status, 200, archived.text);
    assert.equal(archived.body.state, 'ARCHIVED');
    assert.ok(archived.body.archived_at > 0);
    const restored = await as(owner, 'POST', `/v1/agents/${a.id}:undelete`, { headers: { 'if-match': archived.body.etag } });
    assert.equal(restored.body.state, 'ENABLED');
    const audit = await as(owner, 'GET', `/v1/audit_events?resource_id=${a.id}`);
    assert.deepEqual(audit.body.data.map((e: { action: string }) => e.action).sort(), ['agent.create', 'agent.delete', 'agent.undelete', 'agent.update']);
  });

  test('a session is its creator\'s: another member gets 404, an admin reads it but may not post to it', async () => {
    const a = await agent();
    const mine = await session(member, a.id);
    assert.match(mine.id, /^ags_/);
    assert.equal(mine.state, 'ACTIVE');
    assert.equal(mine.origin, 'API');
    assert.equal((await as(other, 'GET', `/v1/agent_sessions/${mine.id}`)).status, 404);
    assert.equal((await submit(other, mine.id, 'hi')).status, 404);
    assert.equal((await as(owner, 'GET', `/v1/agent_sessions/${mine.id}`)).status, 200);
    const adminPost = await submit(owner, mine.id, 'hi');
    assert.equal(adminPost.status, 403, adminPost.text);
    assert.equal(adminPost.body.error.reason, 'SESSION_NOT_YOURS');
    const listOther = await as(other, 'GET', '/v1/agent_sessions');
    assert.ok(!listOther.body.data.some((x: { id: string }) => x.id === mine.id));
    const listOwner = await as(owner, 'GET', `/v1/agent_sessions?agent_id=${a.id}`);
    assert.ok(listOwner.body.data.some((x: { id: string }) => x.id === mine.id));
  });

  test('a turn is spec 2.4 field by field; an idempotent retry returns the same turn', async () => {
    const a = await agent();
    const s = await session(owner, a.id);
    const res = await submit(owner, s.id, 'How many installs are there?', {}, { 'idempotency-key': 'turn-1' });
    assert.equal(res.status, 201, res.text);
    const turn = res.body;
    assert.deepEqual(Object.keys(turn).sort(), [...TURN_FIELDS].sort());
    assert.match(turn.id, /^agtt_/);
    assert.ok(turn.id.length <= 54 && turn.workspace_id.length <= 53);
    assert.equal(turn.state, 'QUEUED');
    assert.equal(turn.origin, 'API');
    assert.deepEqual(turn.input, { content: 'How many installs are there?' });
    assert.equal(turn.runtime_hint, 'AUTO');
    assert.equal(turn.model, 'local-1');
    assert.equal(turn.started_at, null);
    assert.equal(turn.completed_at, null);
    assert.equal(turn.runtime_decision, 'ALLOWED');
    assert.equal(typeof turn.decision_reason, 'string');
    assert.equal(turn.resolved_execution_mode, 'CODE_MODE');
    assert.deepEqual(turn.admission_error, { code: '', message: '' });
    assert.deepEqual(turn.failure, { code: '', message: '' });
    for (const k of USAGE) assert.equal(turn.usage_summary[k], 0);
    assert.equal(res.headers.location, `/v1/agent_turns/${turn.id}`);
    const replay = await submit(owner, s.id, 'How many installs are there?', {}, { 'idempotency-key': 'turn-1' });
    assert.equal(replay.status, 201);
    assert.equal(replay.body.id, turn.id);
    const reused = await submit(owner, s.id, 'something else', {}, { 'idempotency-key': 'turn-1' });
    assert.equal(reused.status, 422);
    const list = await as(owner, 'GET', `/v1/agent_turns?session_id=${s.id}`);
    assert.deepEqual(list.body.data.map((x: { id: string }) => x.id), [turn.id]);
    const events = await as(owner, 'GET', `/v1/agent_events?session_id=${s.id}`);
    assert.deepEqual(events.body.data.map((e: { type: string; sequence: number }) => [e.type, e.sequence]), [['turn.queued', 1]]);
  });

  test('admission DENIED is recorded on a FAILED turn with the same admission_error and failure', async () => {
    const a = await agent();
    const s = await session(owner, a.id);
    const retained = await submit(owner, s.id, 'hi', { runtime_hint: 'RETAINED_RUNTIME' });
    assert.equal(retained.status, 201, retained.text);
    assert.equal(retained.body.state, 'FAILED');
    assert.equal(retained.body.runtime_decision, 'DENIED');
    assert.equal(retained.body.resolved_execution_mode, null);
    assert.equal(retained.body.admission_error.code, 'RUNTIME_UNAVAILABLE');
    assert.deepEqual(retained.body.failure, retained.body.admission_error);
    assert.ok(retained.body.completed_at > 0);
    assert.match(retained.body.decision_reason, /retained runtime/);

    const openai = await agent({ model_policy: { provider: 'openai', default_model: 'gpt-4o-mini' } });
    const s2 = await session(owner, openai.id);
    const noKey = await submit(owner, s2.id, 'hi');
    assert.equal(noKey.body.admission_error.code, 'CREDENTIAL_UNAVAILABLE');
    assert.match(noKey.body.admission_error.message, /SVC_OPENAI_API_KEY/);

    const broke = await agent({ model_policy: { default_model: 'local-1', max_turn_budget_cents: 0 } });
    const s3 = await session(owner, broke.id);
    assert.equal((await submit(owner, s3.id, 'hi')).body.admission_error.code, 'BUDGET_EXHAUSTED');

    const archivedSession = await session(owner, a.id);
    await as(owner, 'DELETE', `/v1/agent_sessions/${archivedSession.id}`, { headers: { 'if-match': archivedSession.etag } });
    assert.equal((await submit(owner, archivedSession.id, 'hi')).body.admission_error.code, 'SESSION_ARCHIVED');

    const gone = await agent();
    const s4 = await session(owner, gone.id);
    await as(owner, 'DELETE', `/v1/agents/${gone.id}`, { headers: { 'if-match': gone.etag } });
    const denied = await submit(owner, s4.id, 'hi');
    assert.equal(denied.body.admission_error.code, 'AGENT_ARCHIVED');
    const events = await as(owner, 'GET', `/v1/agent_events?turn_id=${denied.body.id}`);
    assert.deepEqual(events.body.data.map((e: { type: string }) => e.type), ['turn.queued', 'turn.failed']);
    assert.equal((await as(owner, 'GET', `/v1/agent_sessions/${s4.id}`)).body.state, 'FAILED');
  });

  test('a member\'s turn on an agent that writes without asking waits for an admin\'s approval (TURN); a rejection cancels it, audited', async () => {
    const a = await agent({ tool_policy: { writes: 'ALLOWED' } });
    const s = await session(member, a.id);
    const turn = (await submit(member, s.id, 'rotate the db password')).body;
    assert.equal(turn.state, 'WAITING_FOR_PERMISSION');
    assert.equal(turn.runtime_decision, 'APPROVAL_REQUIRED');
    const pending = await as(owner, 'GET', `/v1/approval_requests?state=PENDING&session_id=${s.id}`);
    assert.equal(pending.body.data.length, 1);
    const approval = pending.body.data[0];
    assert.equal(approval.kind, 'TURN');
    assert.equal(approval.turn_id, turn.id);
    // The member cannot decide on their own turn, nor see the request.
    assert.equal((await as(member, 'GET', `/v1/approval_requests/${approval.id}`)).status, 404);
    const notes = await t.request('GET', '/v1/notifications', { token: owner.token });
    const waiting = notes.body.data.find((n: { type: string; resource_id: string }) => n.type === 'agent_turn_waiting' && n.resource_id === turn.id);
    assert.ok(waiting, JSON.stringify(notes.body));
    // The approvers read who asked (the member has no name: their e-mail), never an id.
    assert.ok(waiting.body.startsWith(`${member.email} asked agent ${a.name}`), waiting.body);
    assertNamed(waiting);
    const stale = await as(owner, 'POST', `/v1/approval_requests/${approval.id}:resolve`, { body: { decision: 'REJECT' }, headers: { 'if-match': '7' } });
    assert.equal(stale.status, 409);
    const rejected = await as(owner, 'POST', `/v1/approval_requests/${approval.id}:resolve`, { body: { decision: 'REJECT', reason: 'not now' }, headers: { 'if-match': approval.etag } });
    assert.equal(rejected.status, 200, rejected.text);
    assert.equal(rejected.body.state, 'REJECTED');
    const after = (await as(member, 'GET', `/v1/agent_turns/${turn.id}`)).body;
    assert.equal(after.state, 'CANCELLED');
    assert.match(after.decision_reason, /not now/);
    const again = await as(owner, 'POST', `/v1/approval_requests/${approval.id}:resolve`, { body: { decision: 'APPROVE' }, headers: { 'if-match': rejected.body.etag } });
    assert.equal(again.status, 422);
    assert.equal(again.body.error.reason, 'APPROVAL_NOT_PENDING');
    const audit = await as(owner, 'GET', `/v1/audit_events?resource_id=${approval.id}`);
    assert.deepEqual(audit.body.data.map((e: { action: string }) => e.action), ['approval_request.reject']);
    const byAdmin = (await submit(owner, (await session(owner, a.id)).id, 'rotate it')).body;
    assert.equal(byAdmin.runtime_decision, 'ALLOWED');
  });

  test('verbs on turns in the wrong state: 422; another tenant sees nothing', async () => {
    const a = await agent();
    const s = await session(owner, a.id);
    const turn = (await submit(owner, s.id, 'hi', { runtime_hint: 'RETAINED_RUNTIME' })).body;
    const respond = await as(owner, 'POST', `/v1/agent_turns/${turn.id}:respond`, { body: { content: 'x' }, headers: { 'if-match': turn.etag } });
    assert.equal(respond.status, 422);
    assert.equal(respond.body.error.reason, 'TURN_NOT_WAITING');
    const cancel = await as(owner, 'POST', `/v1/agent_turns/${turn.id}:cancel`);
    assert.equal(cancel.status, 422);
    assert.equal(cancel.body.error.reason, 'TURN_ENDED');
    const strangerWs = (await t.request('GET', '/v1/workspaces', { token: stranger.token })).body.data[0].id;
    const foreign = await t.request('GET', `/v1/agent_turns/${turn.id}`, { token: stranger.token, headers: { 'svc-context': strangerWs } });
    assert.equal(foreign.status, 404);
    const foreignEvents = await t.request('GET', `/v1/agent_events?session_id=${s.id}`, { token: stranger.token, headers: { 'svc-context': strangerWs } });
    assert.equal(foreignEvents.status, 404);
    assert.equal((await as(owner, 'GET', '/v1/agent_turns/agt_01kaxq3m7y0c9v8t6r5p4n3m2k')).status, 404);
    const both = await as(owner, 'GET', `/v1/agent_events?session_id=${s.id}&turn_id=${turn.id}`);
    assert.equal(both.status, 400);
  });
});
