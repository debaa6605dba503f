// The `openai` model provider against a local stand-in of the Chat Completions API
// (test/openai-standin.ts): what it sends (the conversation, the tools, the key), text streamed in
// order as it arrives, tool calls assembled from fragments, usage reported or estimated, the
// differences of Ollama and llama.cpp, and every failure mapped to its kind: rate limited (with the
// wait asked for), server errors, a refused key, a context too long, a stream cut or stopped, an
// abort that closes the connection at once. No message ever quotes the key. Also the registry of
// providers built from the SVC_OPENAI_* settings. No database here.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import type { ModelEndpoint, ModelMessage, ModelRequest, ModelStreamEvent } from '../src/drivers/models/driver.js';
import { createOpenAiProvider } from '../src/drivers/models/openai.js';
import { createModelProviders } from '../src/drivers/models/registry.js';
import { AGENT_TOOLS } from '../src/drivers/models/tools.js';
import { estimateTokens } from '../src/modules/agents/agent-usage.js';
import { freePort } from './harness.js';
import { calls, collect, done, failure, texts } from './model-standin.js';
import { OPENAI_STANDIN_KEY, startOpenAiStandin, type OpenAiStandin } from './openai-standin.js';

const WRONG_KEY = 'sk-proj-WrongKey9876543210zyxwvutsrqpONMLKJIHgfedcba';
const KEYS = [OPENAI_STANDIN_KEY, WRONG_KEY];
const CONVERSATION: ModelMessage[] = [
  { role: 'system', content: 'You help with the workspace.' },
  { role: 'user', content: 'How many installs are there?' },
  { role: 'assistant', content: '', tool_calls: [{ id: 'call_a1', name: 'execute', arguments: { code: 'return 3;' } }] },
  { role: 'tool', tool_call_id: 'call_a1', name: 'execute', content: '{"ok":true,"output":3,"logs":[]}' },
];

describe('openai model provider', () => {
  let standin: OpenAiStandin;
  let endpoint: ModelEndpoint;
  const request = (over: Partial<ModelRequest> = {}): ModelRequest => ({
    model: 'gpt-4o-mini', workspaceId: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', messages: CONVERSATION, tools: AGENT_TOOLS, maxOutputTokens: 1000, apiKey: OPENAI_STANDIN_KEY, signal: new AbortController().signal, ...over,
  });
  const stream = (over: Partial<ModelRequest> = {}, ep: Partial<ModelEndpoint> = {}) => createOpenAiProvider({ ...endpoint, ...ep }).stream(request(over));

  before(async () => {
    standin = await startOpenAiStandin();
  });
  after(() => standin.close());
  beforeEach(() => {
    standin.requests.length = 0;
    standin.replies.length = 0;
    standin.key = OPENAI_STANDIN_KEY;
    endpoint = { baseUrl: standin.baseUrl, apiKey: null, timeoutMs: 10_000 };
  });

  test('sends the conversation, the tools and the key as Chat Completions asks', async () => {
    const { error } = await collect(stream());
    assert.equal(error, null);
    const sent = standin.requests[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, `Bearer ${OPENAI_STANDIN_KEY}`);
    assert.equal(sent.body.model, 'gpt-4o-mini');
    assert.equal(sent.body.stream, true);
    assert.deepEqual(sent.body.stream_options, { include_usage: true });
    assert.equal(sent.body.max_tokens, 1000);
    assert.deepEqual(sent.body.messages, [
      { role: 'system', content: 'You help with the workspace.' },
      { role: 'user', content: 'How many installs are there?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a1', type: 'function', function: { name: 'execute', arguments: '{"code":"return 3;"}' } }] },
      { role: 'tool', tool_call_id: 'call_a1', content: '{"ok":true,"output":3,"logs":[]}' },
    ]);
    assert.deepEqual(sent.body.tools.map((t: any) => [t.type, t.function.name]), AGENT_TOOLS.map((t) => ['function', t.name]));
    assert.deepEqual(sent.body.tools[1].function.parameters, AGENT_TOOLS[1]!.parameters);
  });

  test('yields the text in order as it arrives, then done with the usage', async () => {
    standin.replies.push({ text: ['There ', 'are ', '3 installs.'], holdAfter: 2 });
    const it = stream()[Symbol.asyncIterator]();
    // The server holds the rest of its answer until released: the first piece came before it.
    assert.deepEqual((await it.next()).value, { type: 'text', text: 'There ' });
    standin.release();
    const events: ModelStreamEvent[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) events.push(r.value);
    assert.deepEqual(texts(events), ['are ', '3 installs.']);
    assert.deepEqual(done(events), { type: 'done', usage: { input_tokens: 321, output_tokens: 17 }, stop_reason: 'end' });
  });

  test('assembles tool calls streamed in fragments, several in one answer', async () => {
    standin.replies.push({
      text: ['Let me look.'],
      calls: [
        { id: 'call_x', name: 'search', fragments: ['{"qu', 'ery": "lis', 't installs"}'] },
        { id: 'call_y', name: 'execute', fragments: ['{"code":', '"return (await platform.request({method: \\"GET\\", path: \\"/v1/installs\\"})).body;', '","summary":"naïve ✓"}'] },
        { id: 'call_z', name: 'ask_user', fragments: [] },
      ],
    });
    const { events, error } = await collect(stream());
    assert.equal(error, null);
    assert.deepEqual(texts(events), ['Let me look.']);
    assert.deepEqual(calls(events), [
      { id: 'call_x', name: 'search', arguments: { query: 'list installs' } },
      { id: 'call_y', name: 'execute', arguments: { code: 'return (await platform.request({method: "GET", path: "/v1/installs"})).body;', summary: 'naïve ✓' } },
      { id: 'call_z', name: 'ask_user', arguments: {} },
    ]);
    assert.equal(done(events).stop_reason, 'tool_calls');
  });

  test('arguments that are not a JSON object keep the call and show the model what it wrote', async () => {
    standin.replies.push({ calls: [{ id: 'call_bad', name: 'execute', fragments: ['{"code": "return 1', ';'] }, { id: 'call_arr', name: 'search', fragments: ['[1,2]'] }] });
    const { events } = await collect(stream());
    assert.deepEqual(calls(events), [
      { id: 'call_bad', name: 'execute', arguments: { _invalid_arguments: '{"code": "return 1;' } },
      { id: 'call_arr', name: 'search', arguments: { _invalid_arguments: '[1,2]' } },
    ]);
  });

  test('works as Ollama and llama.cpp answer: no key, no usage, no ids, whole calls without index, "stop" beside tool calls', async () => {
    standin.key = null;
    standin.replies.push({ text: ['Checking.'], calls: [{ id: null, name: 'search', fragments: ['{"query":"installs"}'] }, { id: null, name: 'search', fragments: ['{"query":"secrets"}'] }], usage: null, finish: 'stop', wholeCalls: true });
    const { events, error } = await collect(stream({ apiKey: null }));
    assert.equal(error, null);
    assert.equal(standin.requests[0]!.headers.authorization, 'Bearer no-key');
    const made = calls(events);
    assert.deepEqual(made.map((c) => [c.name, c.arguments]), [['search', { query: 'installs' }], ['search', { query: 'secrets' }]]);
    for (const c of made) assert.match(c.id, /^call_[0-9a-f]{24}$/);
    assert.notEqual(made[0]!.id, made[1]!.id);
    const last = done(events);
    assert.equal(last.stop_reason, 'tool_calls');
    // No usage from the server: estimated at four characters a token.
    assert.equal(last.usage.input_tokens, estimateTokens(CONVERSATION));
    assert.equal(last.usage.output_tokens, estimateTokens([{ role: 'assistant', content: 'Checking.', tool_calls: made }]));
  });

  test('the operator key of the endpoint serves when the request brings none; finish_reason length is length', async () => {
    standin.replies.push({ text: ['cut short'], finish: 'length' });
    const { events } = await collect(stream({ apiKey: null }, { apiKey: OPENAI_STANDIN_KEY }));
    assert.equal(standin.requests[0]!.headers.authorization, `Bearer ${OPENAI_STANDIN_KEY}`);
    assert.equal(done(events).stop_reason, 'length');
  });

  test('429 is rate_limited with the wait of retry-after-ms, else retry-after (seconds or a date)', async () => {
    standin.replies.push({ fault: 'rate_limited', retryAfter: '7', retryAfterMs: '1500' }, { fault: 'rate_limited', retryAfter: '7' }, { fault: 'rate_limited' });
    const first = await failure(stream(), KEYS);
    assert.equal(first.kind, 'rate_limited');
    assert.equal(first.retryable, true);
    assert.equal(first.retryAfterMs, 1500);
    assert.equal(first.options.status, 429);
    assert.match(first.message, /rate limiting.*HTTP 429 rate_limit_exceeded.*tokens per min/);
    assert.equal((await failure(stream(), KEYS)).retryAfterMs, 7000);
    const bare = await failure(stream(), KEYS);
    assert.equal(bare.kind, 'rate_limited');
    assert.equal(bare.retryAfterMs, undefined);
    standin.replies.push({ fault: 'rate_limited', retryAfter: new Date(Date.now() + 60_000).toUTCString() });
    const dated = (await failure(stream(), KEYS)).retryAfterMs!;
    assert.ok(dated > 0 && dated <= 60_000, String(dated));
  });

  test('500 and a refused connection are unavailable (retryable)', async () => {
    standin.replies.push({ fault: 'server_error' });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'unavailable');
    assert.equal(e.retryable, true);
    assert.match(e.message, /HTTP 500/);
    const closed = await failure(stream({}, { baseUrl: `http://127.0.0.1:${await freePort()}/v1` }), KEYS);
    assert.equal(closed.kind, 'unavailable');
    assert.match(closed.message, /could not reach the OpenAI-compatible server at 127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  test('a refused key is invalid_key, and the masked key the server quotes is not repeated', async () => {
    const e = await failure(stream({ apiKey: WRONG_KEY }), KEYS);
    assert.equal(e.kind, 'invalid_key');
    assert.equal(e.retryable, false);
    assert.match(e.message, /refused the API key \(HTTP 401 invalid_api_key\): Incorrect API key provided: \[key\]/);
  });

  test('a server message that echoes the key is scrubbed', async () => {
    standin.replies.push({ fault: 'bad_request', message: `Invalid header Authorization: Bearer ${OPENAI_STANDIN_KEY} (unexpected model)` });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'bad_request');
    assert.equal(e.retryable, false);
    assert.match(e.message, /Bearer \[key\] \(unexpected model\)/);
  });

  test('a context-length 400 is context_too_long, as OpenAI and llama.cpp say it', async () => {
    standin.replies.push({ fault: 'context_too_long' }, { fault: 'context_too_long', server: 'llamacpp' });
    for (const said of [/maximum context length is 128000/, /exceeds the available context size/]) {
      const e = await failure(stream(), KEYS);
      assert.equal(e.kind, 'context_too_long');
      assert.equal(e.retryable, false);
      assert.match(e.message, said);
    }
  });

  test('a stream cut in the middle, or ended before its final chunk, is stream_cut after the text that came', async () => {
    standin.replies.push({ text: ['one ', 'two ', 'three'], cutAfter: 3 }, { text: ['one ', 'two'], endAfter: 2 });
    const cut = await failure(stream(), KEYS);
    assert.equal(cut.kind, 'stream_cut');
    assert.equal(cut.retryable, true);
    assert.deepEqual(texts(cut.events), ['one ', 'two ']);
    const ended = await failure(stream(), KEYS);
    assert.equal(ended.kind, 'stream_cut');
    assert.match(ended.message, /no finish_reason/);
    assert.deepEqual(texts(ended.events), ['one ']);
  });

  test('an error inside the stream (OpenRouter) is mapped by its code', async () => {
    standin.replies.push({ text: ['partial'], streamError: { code: 502, message: 'Provider returned error' } });
    const e = await failure(stream(), KEYS);
    assert.equal(e.kind, 'unavailable');
    assert.match(e.message, /HTTP 502.*Provider returned error/);
  });

  test('an abort mid-stream ends the HTTP request at once and the call is aborted', async () => {
    // Ends with a character that begins no piece of the key: the end of a delta that could waits for the next one (answer-scrub.ts).
    standin.replies.push({ text: ['first.', 'never sent'], holdAfter: 2 });
    const abort = new AbortController();
    const it = stream({ signal: abort.signal })[Symbol.asyncIterator]();
    assert.deepEqual((await it.next()).value, { type: 'text', text: 'first.' });
    const pending = it.next();
    abort.abort();
    await assert.rejects(pending, (err: any) => err.kind === 'aborted' && err.retryable === false);
    // The stand-in still holds the answer: only the client closing the connection ends it.
    await standin.requests[0]!.closed;
    assert.equal(standin.requests[0]!.closedByClient, true);
  });

  test('an abort before the answer begins closes the connection too', async () => {
    standin.replies.push({ fault: 'hang' });
    const abort = new AbortController();
    const result = collect(stream({ signal: abort.signal }));
    const sent = await standin.received(1);
    abort.abort();
    const { error } = await result;
    assert.equal((error as any).kind, 'aborted');
    await sent.closed;
    assert.equal(sent.closedByClient, true);
  });

  test('a server that never answers, or stops sending, fails at the deadline', async () => {
    standin.replies.push({ fault: 'hang' }, { text: ['a', 'b'], holdAfter: 2 });
    const silent = await failure(stream({}, { timeoutMs: 300 }), KEYS);
    assert.equal(silent.kind, 'unavailable');
    assert.match(silent.message, /did not answer within 0\.3 s/);
    const stalled = await failure(stream({}, { timeoutMs: 300 }), KEYS);
    assert.equal(stalled.kind, 'stream_cut');
    assert.match(stalled.message, /stopped sending/);
    assert.deepEqual(texts(stalled.events), ['a']);
    await standin.requests[1]!.closed;
  });
});

describe('the providers registry', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-models-config-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('holds openai and anthropic, configured by SVC_OPENAI_* and SVC_ANTHROPIC_*', async () => {
    const standin = await startOpenAiStandin();
    try {
      const config = loadConfig({ SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'ab'.repeat(32), SVC_OPENAI_BASE_URL: standin.baseUrl, SVC_OPENAI_API_KEY: OPENAI_STANDIN_KEY });
      const providers = createModelProviders(config.agents);
      assert.deepEqual([...providers.keys()].sort(), ['anthropic', 'openai']);
      assert.equal(providers.get('anthropic')!.name, 'anthropic');
      const openai = providers.get('openai')!;
      assert.equal(openai.name, 'openai');
      standin.replies.push({ text: ['configured'] });
      // The runner passes the operator's key when the agent brings none.
      const { events, error } = await collect(openai.stream({ model: 'llama3.2', workspaceId: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', messages: CONVERSATION, tools: [], maxOutputTokens: 64, apiKey: config.agents.openai.apiKey, signal: new AbortController().signal }));
      assert.equal(error, null);
      assert.equal(texts(events).join(''), 'configured');
      assert.equal(standin.requests[0]!.headers.authorization, `Bearer ${OPENAI_STANDIN_KEY}`);
      assert.equal(standin.requests[0]!.body.tools, undefined, 'no tools, no tools field');
    } finally {
      await standin.close();
    }
  });
});
