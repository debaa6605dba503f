// An agent tool call (propose_change) whose code read a secret value is secret-derived (issue 33): the code returns
// the value reversed, which masking cannot catch. The tool.completed event says secret_derived, and
// its result is shown only to roles that may read secret values: the admin who ran the turn reads
// it; once demoted to member, the same person reads the event with the result withheld, in the
// page of events and in the event stream.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';
import { ScriptedModel } from './scripted-model.js';

const VALUE = 'correct-horse-battery-staple-42';
const REVERSED = [...VALUE].reverse().join('');

describe('secret-derived agent tool calls', () => {
  let t: TestApp;
  let owner: TestUser;
  let admin: TestUser;
  let ws: string;
  const model = new ScriptedModel();
  const ctx = (user: TestUser) => ({ token: user.token, headers: { 'svc-context': ws } });

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_RETRY_BACKOFF_SCALE: '0', LOG_LEVEL: 'silent' });
    t.services.modelProviders.set('local', model);
    owner = await t.user('owner');
    admin = await t.user('admin');
    ws = (await t.workspace(owner, 'Derived')).id;
    await t.addMember(owner, ws, admin, 'admin');
    // The sandbox's first worker starts on the first run: start it here, so a loaded machine does not make the tool call SANDBOX_BUSY.
    for (let i = 0; i < 10; i++) {
      const warm = await t.request('POST', '/v1/snippets:execute', { ...ctx(owner), body: { code: 'return 1;' } });
      if (warm.status === 200 && warm.body.output === 1) break;
    }
  });
  after(() => t.close());

  test('a tool call that outputs a secret reversed: its result only for roles that may read secret values', async () => {
    const secret = await t.request('POST', '/v1/secrets', { ...ctx(owner), body: { name: 'db-password', value: VALUE } });
    assert.equal(secret.status, 201, secret.text);
    const code = `const v = (await platform.request({ method: 'POST', path: '/v1/secrets/${secret.body.id}/versions/latest:access' })).body.value; return [...v].reverse().join('');`;
    // :access is a POST: execute refuses it (read only), propose_change on an agent that writes without asking runs it.
    model.scripts.set('reverse it', [{ tool_calls: [{ name: 'propose_change', arguments: { code, summary: 'read the password' } }] }, { text: 'done' }]);
    model.scripts.set('count', [{ tool_calls: [{ name: 'execute', arguments: { code: 'return 7;' } }] }, { text: 'seven' }]);
    const agent = await t.request('POST', '/v1/agents', { ...ctx(owner), body: { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'], tool_policy: { writes: 'ALLOWED' } } });
    assert.equal(agent.status, 201, agent.text);
    const session = (await t.request('POST', '/v1/agent_sessions', { ...ctx(admin), body: { agent_id: agent.body.id } })).body;
    const run = async (message: string) => {
      let turn = (await t.request('POST', '/v1/agent_turns', { ...ctx(admin), body: { session_id: session.id, message } })).body;
      for (let i = 0; i < 20 && !['COMPLETED', 'FAILED'].includes(turn.state); i++) turn = (await t.request('POST', `/v1/agent_turns/${turn.id}:wait?timeout=10`, ctx(admin))).body;
      assert.equal(turn.state, 'COMPLETED', JSON.stringify(turn.failure));
      return turn;
    };
    const derived = await run('reverse it');
    const plain = await run('count');
    const completed = async (user: TestUser, turnId: string) => {
      const res = await t.request('GET', `/v1/agent_events?turn_id=${turnId}&limit=100`, ctx(user));
      assert.equal(res.status, 200, res.text);
      return { event: res.body.data.find((e: { type: string }) => e.type === 'tool.completed'), text: res.text };
    };

    for (const reader of [admin, owner]) {
      const { event } = await completed(reader, derived.id);
      assert.equal(event.data.secret_derived, true, JSON.stringify(event.data));
      assert.deepEqual(event.data.result, { ok: true, output: REVERSED, logs: [] });
    }

    const demoted = await t.request('PATCH', `/v1/workspaces/${ws}/members/${admin.id}`, { token: owner.token, body: { role: 'member' } });
    assert.equal(demoted.status, 200, demoted.text);
    const { event, text } = await completed(admin, derived.id);
    assert.equal(event.data.secret_derived, true);
    assert.equal(event.data.result, null);
    assert.equal(event.data.result_withheld, true);
    assert.ok(!text.includes(REVERSED), text);
    const stream = await t.request('GET', `/v1/agent_events:stream?turn_id=${derived.id}`, ctx(admin));
    assert.equal(stream.status, 200);
    assert.match(stream.text, /"result_withheld":true/);
    assert.ok(!stream.text.includes(REVERSED), stream.text);

    const other = (await completed(admin, plain.id)).event;
    assert.equal(other.data.secret_derived, false);
    assert.deepEqual(other.data.result, { ok: true, output: 7, logs: [] });
  });
});
