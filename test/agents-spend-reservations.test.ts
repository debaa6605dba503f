// Spend is reserved before a model call (issue 33): sixteen turns started at once against a priced
// model (the OpenAI-compatible stand-in) each hold their call's estimated cost before calling, so
// together they never spend past the agent's daily budget nor the workspace's agents/cost_cents
// quota; the turns that find no room left end BUDGET_EXHAUSTED without calling the model. Checking
// what was already spent and recording the cost after the call let every one of them call (up to
// 6.6 times a daily budget). A held estimate is given back when the call ends, succeeds or fails.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createModelProviders } from '../src/drivers/models/registry.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { startOpenAiStandin, type OpenAiStandin } from './openai-standin.js';
import { plansFile } from './plans-fixtures.js';

const TURNS = 16;
// 100 output tokens at 25,000 cents per million (2.5 cents) and 300 input tokens at 100 (0.03):
// every call costs 3 cents, and its estimate (the output at SVC_AGENT_MAX_OUTPUT_TOKENS, the
// conversation's size) is 3 cents too.
const CALL_CENTS = 3;
const AGENT_BUDGET = 10;
const WORKSPACE_QUOTA = 25;

describe('spend reserved before model calls', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let openai: OpenAiStandin;
  const as = (method: string, url: string, body?: unknown) => t.request(method, url, { token: owner.token, headers: { 'svc-context': ws }, ...(body === undefined ? {} : { body }) });
  const quota = async () => (await as('GET', '/v1/quotas')).body.data.find((q: { metric: string }) => q.metric === 'agents/cost_cents');

  /** Starts TURNS turns on one agent at once, each in its own session; lets the model answer once every turn called it or ended; returns the ended turns. */
  async function concurrentTurns(modelPolicy: Record<string, unknown>): Promise<{ turns: any[]; calls: number; agentId: string }> {
    const agent = await as('POST', '/v1/agents', { name: 'spender', instructions: 'Answer.', capabilities: ['CHAT'], model_policy: modelPolicy });
    assert.equal(agent.status, 201, agent.text);
    const sessions = await Promise.all(Array.from({ length: TURNS }, () => as('POST', '/v1/agent_sessions', { agent_id: agent.body.id })));
    const calledBefore = openai.requests.length;
    const started = await Promise.all(sessions.map((s) => as('POST', '/v1/agent_turns', { session_id: s.body.id, message: 'hello' })));
    for (const res of started) assert.equal(res.status, 201, res.text);
    const ids = started.map((res) => res.body.id as string);
    const read = () => Promise.all(ids.map(async (id) => (await as('GET', `/v1/agent_turns/${id}`)).body));
    // Every answer pauses after its first frame: no call's cost is known until every turn has either called or ended.
    for (let i = 0; i < 600; i++) {
      const ended = (await read()).filter((turn) => turn.state === 'FAILED').length;
      if (openai.requests.length - calledBefore + ended >= TURNS) break;
      await sleep(50);
    }
    let turns = await read();
    for (let i = 0; i < 600 && turns.some((turn) => !['COMPLETED', 'FAILED', 'CANCELLED'].includes(turn.state)); i++) {
      openai.release();
      await sleep(20);
      turns = await read();
    }
    return { turns, calls: openai.requests.length - calledBefore, agentId: agent.body.id };
  }

  before(async () => {
    openai = await startOpenAiStandin();
    openai.key = null;
    openai.fallback = { text: ['Hello', ' there'], holdAfter: 1, usage: { prompt_tokens: 300, completion_tokens: 100 } };
    t = await startTestApp({
      SVC_PLANS_FILE: plansFile({ 'agents/turns': 1000, 'agents/cost_cents': WORKSPACE_QUOTA }),
      SVC_OPENAI_BASE_URL: openai.baseUrl, SVC_AGENT_PRICES: '{"*": [100, 25000]}', SVC_AGENT_MAX_OUTPUT_TOKENS: '100',
      SVC_WORKER_CONCURRENCY: String(TURNS), SVC_RETRY_BACKOFF_SCALE: '0', LOG_LEVEL: 'silent',
    });
    for (const [name, provider] of createModelProviders(t.config.agents)) t.services.modelProviders.set(name, provider);
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Spend')).id;
  });
  after(async () => {
    await t.close();
    await openai.close();
  });

  test('sixteen concurrent turns never spend past the agent\'s daily budget', { timeout: 120_000 }, async () => {
    const { turns, calls, agentId } = await concurrentTurns({ provider: 'openai', default_model: 'gpt-4o-mini', max_budget_cents: AGENT_BUDGET, budget_period: 'DAY' });
    const completed = turns.filter((turn) => turn.state === 'COMPLETED');
    const refused = turns.filter((turn) => turn.state === 'FAILED');
    assert.equal(completed.length + refused.length, TURNS);
    for (const turn of refused) {
      assert.equal(turn.failure.code, 'BUDGET_EXHAUSTED');
      assert.match(turn.failure.message, /agent's budget of 10 cents this day/);
    }
    const spent = turns.reduce((sum, turn) => sum + turn.usage_summary.provider_cost_cents, 0);
    assert.ok(spent <= AGENT_BUDGET, `the turns spent ${spent} cents of a budget of ${AGENT_BUDGET}`);
    assert.ok(calls <= Math.floor(AGENT_BUDGET / CALL_CENTS), `${calls} model calls were made; ${Math.floor(AGENT_BUDGET / CALL_CENTS)} fit the budget`);
    assert.equal(completed.length, calls, 'every turn that called the model completed; the others never called it');
    assert.ok(calls >= 1);
    const agent = (await as('GET', `/v1/agents/${agentId}`)).body;
    assert.equal(agent.usage_summary.provider_cost_cents, spent);
    assert.equal((await quota()).usage, spent, 'what the calls held is given back; the quota counts what they cost');
  });

  test('a failed call gives back what it held', { timeout: 60_000 }, async () => {
    const before = (await quota()).usage;
    openai.replies.push({ fault: 'bad_request', message: 'no such model' });
    const agent = (await as('POST', '/v1/agents', { name: 'failing', instructions: 'Answer.', capabilities: ['CHAT'], model_policy: { provider: 'openai', default_model: 'gpt-4o-mini' } })).body;
    const session = (await as('POST', '/v1/agent_sessions', { agent_id: agent.id })).body;
    let turn = (await as('POST', '/v1/agent_turns', { session_id: session.id, message: 'hello' })).body;
    for (let i = 0; i < 20 && !['COMPLETED', 'FAILED'].includes(turn.state); i++) turn = (await as('POST', `/v1/agent_turns/${turn.id}:wait?timeout=10`)).body;
    assert.equal(turn.state, 'FAILED');
    assert.equal(turn.failure.code, 'MODEL_ERROR');
    assert.equal((await quota()).usage, before, 'the failed call held 3 cents while it ran and gave them back');
  });

  test('sixteen concurrent turns never spend past the workspace\'s agents/cost_cents quota', { timeout: 120_000 }, async () => {
    const before = (await quota()).usage;
    const { turns, calls } = await concurrentTurns({ provider: 'openai', default_model: 'gpt-4o-mini' });
    const refused = turns.filter((turn) => turn.state === 'FAILED');
    for (const turn of refused) {
      assert.equal(turn.failure.code, 'BUDGET_EXHAUSTED');
      assert.match(turn.failure.message, /agents\/cost_cents/);
    }
    const spent = turns.reduce((sum, turn) => sum + turn.usage_summary.provider_cost_cents, 0);
    const usage = (await quota()).usage;
    assert.equal(usage, before + spent);
    assert.ok(usage <= WORKSPACE_QUOTA, `the workspace spent ${usage} cents of a quota of ${WORKSPACE_QUOTA}`);
    assert.ok(calls <= Math.floor((WORKSPACE_QUOTA - before) / CALL_CENTS), `${calls} model calls were made`);
    assert.ok(calls >= 1);
  });
});
