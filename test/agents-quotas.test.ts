// The agents' quotas (API.md 8.6): `agents/turns` counts admitted turns per UTC day and refuses the
// next one at admission; `agents/cost_cents` adds what each model call cost (per month) and stops a
// turn before the call that would pass it, then refuses new turns. Both show in GET /v1/quotas.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { plansFile } from './plans-fixtures.js';
import { ScriptedModel } from './scripted-model.js';

describe('agents quotas', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  const model = new ScriptedModel();
  const as = (method: string, url: string, body?: unknown) =>
    t.request(method, url, { token: owner.token, headers: { 'svc-context': ws }, ...(body !== undefined ? { body } : {}) });
  const quota = async (metric: string) => (await as('GET', '/v1/quotas')).body.data.find((q: { metric: string }) => q.metric === metric);

  before(async () => {
    t = await startTestApp({ SVC_PLANS_FILE: plansFile({ 'agents/turns': 3, 'agents/cost_cents': 100 }) });
    t.services.modelProviders.set('local', model);
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Q')).id;
  });
  after(() => t.close());

  test('spend is counted per call and stops the turn before the call that would pass the month\'s limit', async () => {
    // Each call: 100,000 + 10,000 tokens at 300 / 1,500 cents per million = 45 cents: two fit in 100, a third would not.
    model.scripts.set('search forever', () => ({ tool_calls: [{ name: 'search', arguments: { query: 'secrets' } }], usage: { input_tokens: 100_000, output_tokens: 10_000 } }));
    const agent = (await as('POST', '/v1/agents', { name: 'q', instructions: 'x', capabilities: ['CHAT'] })).body;
    const session = (await as('POST', '/v1/agent_sessions', { agent_id: agent.id })).body;
    const first = (await as('POST', '/v1/agent_turns', { session_id: session.id, message: 'search forever' })).body;
    let done = first;
    for (let i = 0; i < 10 && !['COMPLETED', 'FAILED'].includes(done.state); i++) done = (await as('POST', `/v1/agent_turns/${first.id}:wait?timeout=10`)).body;
    assert.equal(done.state, 'FAILED');
    assert.equal(done.failure.code, 'BUDGET_EXHAUSTED');
    assert.match(done.failure.message, /agents\/cost_cents/);
    assert.equal(done.usage_summary.provider_cost_cents, 90, 'two calls ran; the third would have passed 100');
    const spend = await quota('agents/cost_cents');
    assert.equal(spend.usage, done.usage_summary.provider_cost_cents);
    assert.equal(spend.unit, 'cents');
    const monthEnd = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1)).getTime() / 1000;
    assert.equal(spend.resets_at, monthEnd, 'the spend resets at the start of the next UTC month');
    assert.equal((await quota('agents/turns')).usage, 1);
  });

  test('the daily turn quota refuses at admission: the turn exists, FAILED with QUOTA_EXCEEDED; refused turns are not counted', async () => {
    model.scripts.set('hello', [{ text: 'hi', usage: { input_tokens: 1, output_tokens: 1 } }]);
    const agent = (await as('POST', '/v1/agents', { name: 'r', instructions: 'x', capabilities: ['CHAT'] })).body;
    const session = (await as('POST', '/v1/agent_sessions', { agent_id: agent.id })).body;
    const states: string[] = [];
    for (let i = 0; i < 3; i++) {
      const turn = (await as('POST', '/v1/agent_turns', { session_id: session.id, message: 'hello' })).body;
      states.push(`${turn.runtime_decision}:${turn.admission_error.code}`);
    }
    // The first turn of this file counted one; two more fit in 3; the third here is refused.
    assert.deepEqual(states, ['ALLOWED:', 'ALLOWED:', 'DENIED:QUOTA_EXCEEDED']);
    assert.equal((await quota('agents/turns')).usage, 3);
    const spentOut = (await as('POST', '/v1/agent_turns', { session_id: session.id, message: 'hello' })).body;
    assert.equal(spentOut.admission_error.code, 'QUOTA_EXCEEDED');
    assert.match(spentOut.admission_error.message, /agents\/turns/);
  });
});
