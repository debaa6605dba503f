// Turns run by the real provider adapters against the stand-ins of their protocols, through HTTP
// and the turn runner: an `openai` agent with its own key in a workspace secret makes a tool call
// streamed in fragments and answers with the result; a 429 is waited out and retried; a refused
// key fails the turn MODEL_ERROR and a context too long CONTEXT_TOO_LONG, saying why without the
// key; an `anthropic` turn cancelled while its answer streams closes the provider connection. The
// key appears in no event, turn or failure.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ANTHROPIC_STANDIN_KEY, type AnthropicStandin } from './anthropic-standin.js';
import type { TestApp, TestUser } from './harness.js';
import { assertNoPieceOf, startAppWithModelStandins, type StandinsApp } from './model-standins-app.js';
import { OPENAI_STANDIN_KEY, type OpenAiStandin } from './openai-standin.js';
import { roomyPlans } from './plans-fixtures.js';

const COUNT = '{"code": "const r = await platform.request({ method: \'GET\', path: \'/v1/installs\' }); return r.body.data.length;"}';

describe('turns through the real provider adapters', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let openai: OpenAiStandin;
  let anthropic: AnthropicStandin;
  let app: StandinsApp;
  const as = (method: string, url: string, body?: unknown) => t.request(method, url, { token: owner.token, headers: { 'svc-context': ws }, ...(body === undefined ? {} : { body }) });

  async function keyed(name: string, value: string): Promise<string> {
    const res = await as('POST', '/v1/secrets', { name, value });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  }
  async function turn(modelPolicy: Record<string, unknown>, message: string) {
    const agent = await as('POST', '/v1/agents', { name: 'ops', instructions: 'Help.', capabilities: ['CHAT'], model_policy: modelPolicy });
    assert.equal(agent.status, 201, agent.text);
    const session = await as('POST', '/v1/agent_sessions', { agent_id: agent.body.id });
    const res = await as('POST', '/v1/agent_turns', { session_id: session.body.id, message });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }
  async function settle(id: string) {
    for (let i = 0; i < 20; i++) {
      const res = await as('POST', `/v1/agent_turns/${id}:wait?timeout=10`);
      if (res.body.state !== 'QUEUED' && res.body.state !== 'RUNNING') return res.body;
    }
    throw new Error(`turn ${id} did not settle`);
  }
  const eventsOf = async (id: string) => (await as('GET', `/v1/agent_events?turn_id=${id}&limit=100`)).body.data as { type: string; data: any }[];
  /** Everything a person can read about a turn holds no piece of a key. */
  async function assertNoKey(id: string) {
    const seen = JSON.stringify([(await as('GET', `/v1/agent_turns/${id}`)).body, await eventsOf(id)]);
    for (const key of [OPENAI_STANDIN_KEY, ANTHROPIC_STANDIN_KEY, 'sk-proj-WrongWrongWrong0123456789']) {
      assertNoPieceOf(seen, key);
    }
  }

  before(async () => {
    app = await startAppWithModelStandins({ ...roomyPlans(), SVC_RETRY_BACKOFF_SCALE: '0', LOG_LEVEL: 'silent', SVC_AGENT_MODEL_TRIES: '3' });
    ({ t, openai, anthropic } = app);
    openai.key = null; // as Ollama: any key or none, unless a test says otherwise
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'A')).id;
  });
  after(() => app.close());

  test('an openai agent with its own key: a tool call streamed in fragments, its result sent back, the answer', async () => {
    const secret = await keyed('openai-key', OPENAI_STANDIN_KEY);
    openai.replies.push(
      { text: ['Let me ', 'count.'], calls: [{ name: 'execute', fragments: [COUNT.slice(0, 20), COUNT.slice(20, 61), COUNT.slice(61)] }] },
      { text: ['There are ', '0 installs.'], usage: { prompt_tokens: 900, completion_tokens: 12 } },
    );
    const started = await turn({ provider: 'openai', default_model: 'llama3.1:8b', credential_secret_id: secret }, 'how many installs?');
    const done = await settle(started.id);
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done.failure));
    const events = await eventsOf(started.id);
    assert.equal(events.find((e) => e.type === 'tool.started')!.data.arguments.code, JSON.parse(COUNT).code);
    assert.deepEqual(events.find((e) => e.type === 'tool.completed')!.data.result, { ok: true, output: 0, logs: [] });
    assert.equal(events.at(-1)!.data.content, 'There are 0 installs.');
    assert.equal(done.usage_summary.provider_token_count, 321 + 17 + 900 + 12);
    const [first, second] = openai.requests;
    assert.equal(first!.headers.authorization, `Bearer ${OPENAI_STANDIN_KEY}`);
    assert.equal(first!.body.model, 'llama3.1:8b');
    const sent = second!.body.messages as any[];
    const asked = sent.find((m) => m.role === 'assistant' && m.tool_calls);
    assert.deepEqual(JSON.parse(asked.tool_calls[0].function.arguments), JSON.parse(COUNT));
    assert.deepEqual(sent.at(-1), { role: 'tool', tool_call_id: asked.tool_calls[0].id, content: '{"ok":true,"output":0,"logs":[]}' });
    await assertNoKey(started.id);
  });

  test('a 429 is waited out and the call tried again; a refused key fails MODEL_ERROR, a long context CONTEXT_TOO_LONG', async () => {
    openai.replies.push({ fault: 'rate_limited', retryAfter: '0' }, { text: ['fine'] });
    const retried = await settle((await turn({ provider: 'openai', default_model: 'gpt-4o-mini' }, 'hello')).id);
    assert.equal(retried.state, 'COMPLETED', JSON.stringify(retried.failure));
    openai.key = OPENAI_STANDIN_KEY;
    try {
      const wrong = await keyed('wrong-key', 'sk-proj-WrongWrongWrong0123456789');
      const refused = await settle((await turn({ provider: 'openai', default_model: 'gpt-4o-mini', credential_secret_id: wrong }, 'hello')).id);
      assert.equal(refused.state, 'FAILED');
      assert.equal(refused.failure.code, 'MODEL_ERROR');
      assert.match(refused.failure.message, /refused the API key \(HTTP 401 invalid_api_key\)/);
      await assertNoKey(refused.id);
    } finally {
      openai.key = null;
    }
    openai.replies.push({ fault: 'context_too_long' });
    const long = await settle((await turn({ provider: 'openai', default_model: 'gpt-4o-mini' }, 'hello')).id);
    assert.equal(long.failure.code, 'CONTEXT_TOO_LONG');
  });

  test('an anthropic turn cancelled while its answer streams ends the provider connection', async () => {
    anthropic.replies.push({ text: ['Thinking', ' on and on'], holdAfter: 4 });
    const started = await turn({ provider: 'anthropic', default_model: 'claude-sonnet-4-6' }, 'think');
    const request = await anthropic.received(1);
    assert.equal(request.body.system.startsWith('Help.'), true);
    const cancelled = await as('POST', `/v1/agent_turns/${started.id}:cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.state, 'CANCELLED');
    await request.closed;
    assert.equal(request.closedByClient, true);
    await assertNoKey(started.id);
  });
});
