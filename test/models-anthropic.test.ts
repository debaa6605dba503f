// The `anthropic` model provider against a local stand-in of the Messages API
// (test/anthropic-standin.ts): the system prompt and the tool_use / tool_result blocks it sends
// (the results of one assistant turn in one user message), text streamed in order as it arrives,
// tool calls assembled from input_json_delta fragments, usage from message_start and
// message_delta, stop reasons, and every failure mapped to its kind: 429 with retry-after, 500,
// 529 overloaded, a refused key, "prompt is too long", an error event inside the stream, a stream
// cut or ended before message_stop, an abort that closes the connection at once. No message ever
// quotes the key. No database here.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createAnthropicProvider } from '../src/drivers/models/anthropic.js';
import type { ModelEndpoint, ModelMessage, ModelRequest, ModelStreamEvent } from '../src/drivers/models/driver.js';
import { AGENT_TOOLS } from '../src/drivers/models/tools.js';
import { ANTHROPIC_STANDIN_KEY, startAnthropicStandin, type AnthropicStandin } from './anthropic-standin.js';
import { calls, collect, done, failure, texts } from './model-standin.js';

const WRONG_KEY = 'sk-ant-api03-WrongKey9876543210zyxwvutsrqpONMLKJIHgfedcba-ZZ';
const KEYS = [ANTHROPIC_STANDIN_KEY, WRONG_KEY];
const CONVERSATION: ModelMessage[] = [
  { role: 'system', content: 'You help with the workspace.' },
  { role: 'user', content: 'What failed?' },
  { role: 'assistant', content: 'Two things to read.', tool_calls: [
    { id: 'call_1', name: 'search', arguments: { query: 'operations' } },
    { id: 'local.call:2', name: 'execute', arguments: { code: 'return 1;' } },
  ] },
  { role: 'tool', tool_call_id: 'call_1', name: 'search', content: '{"operations":[]}' },
  { role: 'tool', tool_call_id: 'local.call:2', name: 'execute', content: '{"ok":true,"output":1,"logs":[]}' },
];

describe('anthropic model provider', () => {
  let standin: AnthropicStandin;
  let endpoint: ModelEndpoint;
  const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
    model: 'claude-sonnet-4-6', workspaceId: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', messages: CONVERSATION, tools: AGENT_TOOLS, maxOutputTokens: 2000, apiKey: ANTHROPIC_STANDIN_KEY, signal: new AbortController().signal, ...over,
  });
  const stream = (over: Partial<ModelRequest> = {}, ep: Partial<ModelEndpoint> = {}) => createAnthropicProvider({ ...endpoint, ...ep }).stream(request(over));

  before(async () => {
    standin = await startAnthropicStandin();
  });
  after(() => standin.close());
  beforeEach(() => {
    standin.requests.length = 0;
    standin.replies.length = 0;
    endpoint = { baseUrl: standin.baseUrl, apiKey: null, timeoutMs: 10_000 };
  });

  test('sends the system prompt, the tools and the blocks of the conversation as the Messages API asks', async () => {
    const { error } = await collect(stream());
    assert.equal(error, null);
    const sent = standin.requests[0]!;
    assert.equal(sent.path, '/v1/messages');
    assert.ok(sent.headers['x-api-key'] === ANTHROPIC_STANDIN_KEY || sent.headers.authorization === `Bearer ${ANTHROPIC_STANDIN_KEY}`);
    assert.ok(sent.headers['anthropic-version'], 'the API version header is sent');
    assert.equal(sent.body.model, 'claude-sonnet-4-6');
    assert.equal(sent.body.max_tokens, 2000);
    assert.equal(sent.body.stream, true);
    assert.equal(sent.body.system, 'You help with the workspace.');
    assert.deepEqual(sent.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'What failed?' }] },
      { role: 'assistant', content: [
        { type: 'text', text: 'Two things to read.' },
        { type: 'tool_use', id: 'call_1', name: 'search', input: { query: 'operations' } },
        { type: 'tool_use', id: 'local_call_2', name: 'execute', input: { code: 'return 1;' } },
      ] },
      // Both results of that assistant turn, in one user message.
      { role: 'user', content: [
        { type: 'tool_result', tool_use_id: 'call_1', content: '{"operations":[]}' },
        { type: 'tool_result', tool_use_id: 'local_call_2', content: '{"ok":true,"output":1,"logs":[]}' },
      ] },
    ]);
    assert.deepEqual(sent.body.tools.map((t: any) => t.name), AGENT_TOOLS.map((t) => t.name));
    assert.deepEqual(sent.body.tools[2].input_schema, AGENT_TOOLS[2]!.parameters);
  });

  test('yields the text in order as it arrives, then done with the usage', async () => {
    // message_start, ping, content_block_start, the first delta: then the server holds.
    standin.replies.push({ text: ['Two ', 'runs ', 'failed.'], holdAfter: 4, usage: { input_tokens: 900, output_tokens: 31, cache_read_input_tokens: 100 } });
    const it = stream()[Symbol.asyncIterator]();
    assert.deepEqual((await it.next()).value, { type: 'text', text: 'Two ' });
    standin.release();
    const events: ModelStreamEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) events.push(r.value);
    assert.deepEqual(texts(events), ['runs ', 'failed.']);
    assert.deepEqual(done(events), { type: 'done', usage: { input_tokens: 1000, output_tokens: 31 }, stop_reason: 'end' });
  });

  test('assembles tool_use input from its input_json_delta fragments, several calls in one answer', async () => {
    standin.replies.push({
      text: ['Looking.'],
      calls: [
        { id: 'toolu_A', name: 'execute', fragments: ['{"code": "return (await platform', '.request({method: \\"GET\\", path: \\"/v1/runs\\"})).body;"', ', "summary": "läuft"}'] },
        { id: 'toolu_B', name: 'ask_user', fragments: ['{"question": "Which cluster?", "choices": ["prod",', ' "staging"]}'] },
        { id: 'toolu_C', name: 'search', fragments: [] },
      ],
    });
    const { events, error } = await collect(stream());
    assert.equal(error, null);
    assert.deepEqual(texts(events), ['Looking.']);
    assert.deepEqual(calls(events), [
      { id: 'toolu_A', name: 'execute', arguments: { code: 'return (await platform.request({method: "GET", path: "/v1/runs"})).body;', summary: 'läuft' } },
      { id: 'toolu_B', name: 'ask_user', arguments: { question: 'Which cluster?', choices: ['prod', 'staging'] } },
      { id: 'toolu_C', name: 'search', arguments: {} },
    ]);
    assert.equal(done(events).stop_reason, 'tool_calls');
  });

  test('max_tokens is length; input that is not JSON keeps the call', async () => {
    standin.replies.push({ text: ['and so'], stopReason: 'max_tokens' }, { calls: [{ name: 'execute', fragments: ['{"code": "retu'] }], stopReason: 'max_tokens' });
    assert.equal(done((await collect(stream())).events).stop_reason, 'length');
    const { events } = await collect(stream());
    assert.deepEqual(calls(events)[0]!.arguments, { _invalid_arguments: '{"code": "retu' });
    assert.equal(done(events).stop_reason, 'length');
  });

  test('429 is rate_limited with the wait of retry-after', async () => {
    standin.replies.push({ fault: 'rate_limited', retryAfter: '12' }, { fault: 'rate_limited' });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'rate_limited');
    assert.equal(e.retryable, true);
    assert.equal(e.retryAfterMs, 12_000);
    assert.match(e.message, /rate limiting this key \(HTTP 429 rate_limit_error\): This request would exceed/);
    assert.equal((await failure(stream(), KEYS)).retryAfterMs, undefined);
  });

  test('500 and 529 overloaded are unavailable (retryable)', async () => {
    standin.replies.push({ fault: 'server_error' }, { fault: 'overloaded' });
    for (const said of [/HTTP 500 api_error/, /HTTP 529 overloaded_error\): Overloaded/]) {
      const e = await failure(stream(), KEYS);
      assert.equal(e.kind, 'unavailable');
      assert.equal(e.retryable, true);
      assert.match(e.message, said);
    }
  });

  test('a refused key is invalid_key', async () => {
    const e = await failure(stream({ apiKey: WRONG_KEY }), KEYS);
    assert.equal(e.kind, 'invalid_key');
    assert.equal(e.retryable, false);
    assert.match(e.message, /the Anthropic API at 127\.0\.0\.1:\d+ refused the API key \(HTTP 401 authentication_error\)/);
  });

  test('"prompt is too long" is context_too_long', async () => {
    standin.replies.push({ fault: 'context_too_long' });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'context_too_long');
    assert.equal(e.retryable, false);
  });

  test('an error event inside the stream is mapped by its type', async () => {
    standin.replies.push({ text: ['half'], streamError: { type: 'overloaded_error', message: 'Overloaded' } });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'unavailable');
    // All the text that came before the error, the end that could begin a piece of the key held back until then (answer-scrub.ts).
    assert.equal(texts(e.events).join(''), 'half');
  });

  test('a stream cut in the middle, or ended before message_stop, is stream_cut', async () => {
    standin.replies.push({ text: ['one ', 'two ', 'three'], cutAfter: 5 }, { calls: [{ name: 'search', fragments: ['{"query":', '"x"}'] }], endAfter: 5 });
    const cut = await failure(stream(), KEYS);
    assert.equal(cut.kind, 'stream_cut');
    assert.equal(cut.retryable, true);
    assert.deepEqual(texts(cut.events), ['one ', 'two ']);
    const ended = await failure(stream(), KEYS);
    assert.equal(ended.kind, 'stream_cut');
    assert.match(ended.message, /no message_stop/);
    assert.deepEqual(calls(ended.events), [], 'a call whose block never stopped is not yielded');
  });

  test('an abort mid-stream ends the HTTP request at once and the call is aborted', async () => {
    // Ends with a character that begins no piece of the key: the end of a delta that could waits for the next one (answer-scrub.ts).
    standin.replies.push({ text: ['first.', 'never sent'], holdAfter: 4 });
    const abort = new AbortController();
    const it = stream({ signal: abort.signal })[Symbol.asyncIterator]();
    assert.deepEqual((await it.next()).value, { type: 'text', text: 'first.' });
    const pending = it.next();
    abort.abort();
    await assert.rejects(pending, (err: any) => err.kind === 'aborted');
    await standin.requests[0]!.closed;
    assert.equal(standin.requests[0]!.closedByClient, true);
  });

  test('an abort before the answer begins closes the connection; a server that never answers fails at the deadline', async () => {
    standin.replies.push({ fault: 'hang' }, { fault: 'hang' });
    const abort = new AbortController();
    const result = collect(stream({ signal: abort.signal }));
    const sent = await standin.received(1);
    abort.abort();
    assert.equal(((await result).error as any).kind, 'aborted');
    await sent.closed;
    assert.equal(sent.closedByClient, true);
    const silent = await failure(stream({}, { timeoutMs: 300 }), KEYS);
    assert.equal(silent.kind, 'unavailable');
    assert.match(silent.message, /did not answer within 0\.3 s/);
  });
});
