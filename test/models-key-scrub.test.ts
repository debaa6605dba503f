// A model provider's key is scrubbed from the answer, not only from errors (issue 33): the
// stand-ins of both protocols answer with the key they were sent, streamed in pieces of a few
// characters (as models stream tokens) and inside a tool call's arguments; nothing a person can
// read about the turn (the turn, its events: every delta, the message, the tool call, the final
// answer) holds any 8-character piece of the key, and `[key]` stands where it was.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ANTHROPIC_STANDIN_KEY, type AnthropicStandin } from './anthropic-standin.js';
import type { TestApp, TestUser } from './harness.js';
import { assertNoPieceOf, startAppWithModelStandins, type StandinsApp } from './model-standins-app.js';
import { OPENAI_STANDIN_KEY, type OpenAiStandin } from './openai-standin.js';
import { roomyPlans } from './plans-fixtures.js';

/** `text` as a model streams it: pieces of 1 to 4 characters. */
function tokens(text: string): string[] {
  const out: string[] = [];
  for (let i = 0, n = 0; i < text.length; n++) {
    const size = 1 + (n % 4);
    out.push(text.slice(i, i + size));
    i += size;
  }
  return out;
}

describe('the provider key is scrubbed from answers', () => {
  let t: TestApp;
  let owner: TestUser;
  let ws: string;
  let openai: OpenAiStandin;
  let anthropic: AnthropicStandin;
  let app: StandinsApp;
  const as = (method: string, url: string, body?: unknown) => t.request(method, url, { token: owner.token, headers: { 'svc-context': ws }, ...(body === undefined ? {} : { body }) });

  async function run(modelPolicy: Record<string, unknown>, message: string) {
    const agent = await as('POST', '/v1/agents', { name: 'echo', instructions: 'Help.', capabilities: ['CHAT'], model_policy: modelPolicy });
    assert.equal(agent.status, 201, agent.text);
    const session = await as('POST', '/v1/agent_sessions', { agent_id: agent.body.id });
    let turn = (await as('POST', '/v1/agent_turns', { session_id: session.body.id, message })).body;
    for (let i = 0; i < 20 && ['QUEUED', 'RUNNING'].includes(turn.state); i++) turn = (await as('POST', `/v1/agent_turns/${turn.id}:wait?timeout=10`)).body;
    const events = (await as('GET', `/v1/agent_events?turn_id=${turn.id}&limit=100`)).body.data as { type: string; data: any }[];
    return { turn, events, seen: JSON.stringify([turn, events]) };
  }

  function assertScrubbed(seen: string, key: string) {
    assertNoPieceOf(seen, key);
    assert.match(seen, /\[key\]/);
  }

  before(async () => {
    app = await startAppWithModelStandins({ ...roomyPlans(), SVC_RETRY_BACKOFF_SCALE: '0', LOG_LEVEL: 'silent' });
    ({ t, openai, anthropic } = app);
    owner = await t.user('owner');
    ws = (await t.workspace(owner, 'Keys')).id;
  });
  after(() => app.close());

  test('openai: the key the agent\'s secret holds, echoed in streamed text and in a tool call', async () => {
    openai.key = OPENAI_STANDIN_KEY; // the stand-in answers only the key it then echoes
    const secret = await as('POST', '/v1/secrets', { name: 'openai-key', value: OPENAI_STANDIN_KEY });
    assert.equal(secret.status, 201, secret.text);
    const query = JSON.stringify({ query: `installs ${OPENAI_STANDIN_KEY}` });
    openai.replies.push(
      { text: tokens(`You sent me ${OPENAI_STANDIN_KEY}; let me search.`), calls: [{ name: 'search', fragments: [query.slice(0, 20), query.slice(20, 40), query.slice(40)] }] },
      { text: tokens(`Done. Again: ${OPENAI_STANDIN_KEY}`) },
    );
    const { turn, events, seen } = await run({ provider: 'openai', default_model: 'gpt-4o-mini', credential_secret_id: secret.body.id }, 'what is my key?');
    assert.equal(turn.state, 'COMPLETED', JSON.stringify(turn.failure));
    assert.equal(turn.output_text ?? events.find((e) => e.type === 'turn.completed')!.data.content, 'Done. Again: [key]');
    assert.equal(events.find((e) => e.type === 'message.created')!.data.content, 'You sent me [key]; let me search.');
    assert.equal(events.find((e) => e.type === 'tool.started')!.data.arguments.query, 'installs [key]');
    assert.equal(events.filter((e) => e.type === 'message.delta').map((e) => e.data.text).join(''), 'You sent me [key]; let me search.Done. Again: [key]');
    assertScrubbed(seen, OPENAI_STANDIN_KEY);
  });

  test('anthropic: the operator\'s key, echoed in streamed text', async () => {
    anthropic.key = ANTHROPIC_STANDIN_KEY; // the stand-in answers only the key it then echoes
    anthropic.replies.push({ text: tokens(`Your key: ${ANTHROPIC_STANDIN_KEY}.`) });
    const { turn, seen } = await run({ provider: 'anthropic', default_model: 'claude-sonnet-4-6' }, 'what is my key?');
    assert.equal(turn.state, 'COMPLETED', JSON.stringify(turn.failure));
    assert.match(seen, /Your key: \[key\]\./);
    assertScrubbed(seen, ANTHROPIC_STANDIN_KEY);
  });
});
