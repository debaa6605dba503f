// The built-in local model, driven with conversations and tool results built by hand: the calls it
// plans (paths and methods in the code), the answers it writes from results, ask_user when a
// request is ambiguous, the wording of approvals, rejections, denials, refusals and unknown
// outcomes, determinism, streaming, abort, and the test triggers. No database, no sandbox here
// (models-local-sandbox.test.ts runs the code it writes).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ModelProviderError, type ModelMessage, type ToolCall } from '../src/drivers/models/driver.js';
import { createLocalModelProvider } from '../src/drivers/models/local.js';
import { readTurn } from '../src/drivers/models/local/conversation.js';
import { plan } from '../src/drivers/models/local/plans.js';
import { AGENT_TOOLS } from '../src/drivers/models/tools.js';
import { callModel, converse, system, WS } from './models-local-fixtures.js';

const model = createLocalModelProvider({ testHooks: true });
const ok = (output: unknown) => ({ ok: true, output, logs: [] });
const user = (content: string): ModelMessage[] => [system(), { role: 'user', content }];
const code = (call: ToolCall | undefined) => String(call?.arguments.code ?? '');

/** The calls of the first model call for a message. */
async function firstCalls(message: string, earlier: ModelMessage[] = []): Promise<ToolCall[]> {
  return (await callModel(model, [system(), ...earlier, { role: 'user', content: message }])).calls;
}

/** The answer after each tool call got the result `results(call)` gives. */
async function answerWith(message: string, results: (call: ToolCall) => Record<string, unknown>) {
  return converse(model, message, results);
}

describe('the local model plans reads as execute code', () => {
  const paths: [string, string][] = [
    ['installs', '"/v1/installs"'], ['clusters', '"/v1/clusters"'], ['machines', '"/v1/machines"'], ['secrets', '"/v1/secrets"'],
    ['snippets', '"/v1/snippets"'], ['operations', '"/v1/operations"'], ['packages', '"/v1/packages"'], ['agents', '"/v1/agents"'],
    ['members', `"/v1/workspaces/${WS}/members"`], ['api tokens', '"/v1/api_tokens"'],
  ];
  for (const [noun, path] of paths) {
    test(`"how many ${noun}" and "list my ${noun}" read ${path} with GET, following next_cursor`, async () => {
      for (const message of [`how many ${noun} are there?`, `list my ${noun}`]) {
        const calls = await firstCalls(message);
        assert.equal(calls.length, 1, message);
        assert.equal(calls[0]!.name, 'execute');
        assert.match(code(calls[0]), new RegExp(`all\\(${path.replace(/[/.]/g, '\\$&')}`));
        assert.match(code(calls[0]), /method: 'GET'/);
        assert.match(code(calls[0]), /next_cursor/);
        assert.doesNotMatch(code(calls[0]), /method: '(POST|PATCH|DELETE)'/);
      }
    });
  }

  test('wording variants of one request plan the same code', async () => {
    const variants = ['How many installs are there?', 'how many INSTALLS???', 'count installs', 'Number of installs, please.', 'how many installations do we have'];
    const codes = await Promise.all(variants.map(async (m) => code((await firstCalls(m))[0])));
    for (const c of codes) assert.equal(c, codes[0]);
    const lists = await Promise.all(['list my clusters', 'Show me the clusters.', 'which clusters do I have', 'CLUSTERS?'].map(async (m) => code((await firstCalls(m))[0])));
    for (const c of lists) assert.equal(c, lists[0]);
  });

  test('states filter the read: failed and running operations, degraded installs on a cluster, offline machines', async () => {
    assert.match(code((await firstCalls('which operations failed?'))[0]), /state: "FAILED"/);
    assert.match(code((await firstCalls('Any operations in progress?'))[0]), /state: "RUNNING"/);
    const degraded = code((await firstCalls('how many degraded installs are on cluster staging?'))[0]);
    assert.match(degraded, /state: "degraded"/);
    assert.match(degraded, /c\.name === "staging"/);
    assert.match(code((await firstCalls('which machines are offline'))[0]), /state: "UNREACHABLE"/);
  });

  test('"list them" reads what the earlier message was about; "how many are there?" alone asks which kind', async () => {
    const earlier: ModelMessage[] = [{ role: 'user', content: 'how many clusters are there?' }, { role: 'assistant', content: 'There are 2 clusters.' }];
    assert.match(code((await firstCalls('list them', earlier))[0]), /"\/v1\/clusters"/);
    const [question] = await firstCalls('how many are there?');
    assert.equal(question!.name, 'ask_user');
    assert.ok((question!.arguments.choices as string[]).includes('installs'));
    const conv = await answerWith('how many are there?', (call) => (call.name === 'ask_user' ? { answer: 'secrets' } : ok({ count: 4, more: false })));
    assert.match(code(conv.calls[1]!.call), /"\/v1\/secrets"/);
    assert.equal(conv.answer, 'There are 4 secrets.');
  });
});

describe('the local model counts several kinds at once', () => {
  test('"how many installs, clusters and secrets?" reads each kind in one step (three execute calls), then says each count', async () => {
    const calls = await firstCalls('How many installs, clusters and secrets are there?');
    assert.deepEqual(calls.map((c) => c.name), ['execute', 'execute', 'execute']);
    assert.deepEqual(calls.map((c) => /"\/v1\/(\w+)"/.exec(code(c))?.[1]), ['installs', 'clusters', 'secrets']);
    const counts: Record<string, number> = { installs: 0, clusters: 1, secrets: 4 };
    const answer = await answerWith('count installs, clusters and secrets', (call) => ok({ count: counts[/"\/v1\/(\w+)"/.exec(code(call))![1]!], more: false }));
    assert.equal(answer.answer, 'There are no installs. There is 1 cluster. There are 4 secrets.');
    assert.deepEqual((await firstCalls('how many clusters and api tokens')).map((c) => /"\/v1\/(\w+)"/.exec(code(c))?.[1]), ['clusters', 'api_tokens']);
  });
});

describe('the local model writes answers from results', () => {
  test('counts and lists in sentences, never more than twenty lines', async () => {
    assert.equal((await answerWith('How many installs are there?', () => ok({ count: 3, more: false }))).answer, 'There are 3 installs.');
    assert.equal((await answerWith('how many failed operations?', () => ok({ count: 1, more: false }))).answer, 'There is 1 failed operation.');
    assert.equal((await answerWith('how many secrets', () => ok({ count: 1000, more: true }))).answer, 'There are at least 1000 secrets (I read the first 1000; there are more).');
    const clusters = await answerWith('list my clusters', () => ok({ count: 2, more: false, shown: [
      { id: 'clu_1', name: 'dev', state: 'active', provider: 'local' }, { id: 'clu_2', name: 'prod', state: 'suspended', provider: 'kubernetes' }] }));
    assert.equal(clusters.answer, 'There are 2 clusters:\n- dev: active, local (clu_1)\n- prod: suspended, kubernetes (clu_2)');
    const many = Array.from({ length: 30 }, (_, i) => ({ name: `s${i}`, kind: 'generic', state: 'active' }));
    const secrets = await answerWith('list secrets', () => ok({ count: 30, more: false, shown: many }));
    assert.equal(secrets.answer.split('\n').length, 22);
    assert.match(secrets.answer, /…and 10 more$/);
    assert.equal((await answerWith('which operations failed?', () => ok({ count: 0, more: false, shown: [] }))).answer, 'There are no failed operations.');
  });

  test('explains a failed operation from its error, last error and failed step', async () => {
    const [read] = await firstCalls('Why did operation op_01kaxq3m7y0c9v8t6r5p4n3m002 fail?');
    assert.match(code(read), /path: "\/v1\/operations\/op_01kaxq3m7y0c9v8t6r5p4n3m002"/);
    const last = code((await firstCalls('why did the last deploy fail?'))[0]);
    assert.match(last, /path: '\/v1\/operations', query: \{ state: "FAILED", limit: 1, owner_type: "install" \}/);
    assert.match(last, /'\/v1\/operations\/' \+ page\.body\.data\[0\]\.id/);
    const conv = await answerWith('why did the last deploy fail?', () => ok({
      found: true, id: 'op_1', type: 'install.create', owner_type: 'install', owner_id: 'inst_1', state: 'FAILED',
      error: 'wait_healthy: not ready in 120 s', last_error: { message: 'pod crashed: exit code 1', step_name: 'wait_healthy' },
      failed_step: { name: 'wait_healthy', attempts: 3, error_message: 'pod crashed: exit code 1' }, html_url: 'https://svc.example.com/operations/op_1',
    }));
    assert.equal(conv.answer, 'Operation op_1 (install.create of inst_1) failed in the step wait_healthy after 3 attempts: wait_healthy: not ready in 120 s. ' +
      'The last error, in the step wait_healthy, was: pod crashed: exit code 1. Details: https://svc.example.com/operations/op_1');
    assert.equal((await answerWith('why did the last deploy fail?', () => ok({ found: false }))).answer, 'I found no failed operation of an install, so there is nothing to explain.');
  });

  test('refusals and failed runs are told honestly', async () => {
    const denied = await answerWith('list the secrets', () => ok({ failed: { status: 403, code: 'PERMISSION_DENIED', message: 'this needs the admin role' } }));
    assert.equal(denied.answer, 'You do not have permission to list the secrets (this needs the admin role).');
    const threw = await answerWith('how many installs', () => ({ ok: false, error: { code: 'TIMEOUT', message: 'the run took longer than 10000 ms' }, logs: [] }));
    assert.equal(threw.answer, 'I could not list the installs: the code failed (TIMEOUT: the run took longer than 10000 ms).');
    const unknown = await answerWith('how many installs', () => ({ ok: false, outcome_unknown: true, message: 'the worker stopped' }));
    assert.match(unknown.answer, /^I could not tell whether the attempt to list the installs finished/);
    const noRights = await answerWith('list clusters', () => ({ ok: false, error: { code: 'NO_RIGHTS', message: 'gone' } }));
    assert.equal(noRights.answer, 'I could not list the clusters: you no longer have rights in this workspace.');
  });

  test('a result cut short (not JSON) is said to be unreadable, not misread', async () => {
    const messages: ModelMessage[] = user('how many installs are there?');
    const first = await callModel(model, messages);
    messages.push({ role: 'assistant', content: first.text, tool_calls: first.calls });
    messages.push({ role: 'tool', tool_call_id: first.calls[0]!.id, name: 'execute', content: '{"ok":true,"output":{"count":3… [cut: 99999 characters in all]' });
    assert.match((await callModel(model, messages)).text, /^I could not list the installs: the code failed \(UNREADABLE_RESULT/);
  });

  test('unknown requests search the API and list what was found; greetings and help need no tool', async () => {
    const [found] = await firstCalls('Please delete the cluster dev.');
    assert.deepEqual(found, { ...found, name: 'search', arguments: { query: 'delete cluster dev' } });
    const conv = await answerWith('rotate the signing keys', () => ({ operations: [
      { method: 'POST', path: '/v1/secrets/{id}/versions', operation_id: 'createSecretVersion', summary: 'Add a secret version' }] }));
    assert.equal(conv.answer, 'I cannot do that myself yet. These API operations look related:\n' +
      '- POST /v1/secrets/{id}/versions (createSecretVersion): Add a secret version\nYou can call them with the svc CLI or the web app.');
    for (const hi of ['hello', 'Hi!', 'help', 'What can you do?']) {
      const out = await callModel(model, user(hi));
      assert.equal(out.calls.length, 0, hi);
      assert.match(out.text, /How many installs are there\?/);
      assert.equal(out.stopReason, 'end');
    }
  });
});

describe('the local model streams deterministically and stops when aborted', () => {
  test('the same conversation gives the same pieces, calls, ids and usage; text comes in several pieces', async () => {
    const messages = user('list my clusters');
    const a = await callModel(model, messages);
    const b = await callModel(model, structuredClone(messages));
    assert.deepEqual(a, b);
    const answer = await answerWith('What can you do?', () => ({}));
    const out = await callModel(model, answer.messages.slice(0, 2));
    assert.ok(out.pieces.length > 5);
    assert.equal(out.pieces.join(''), out.text);
    assert.deepEqual(await callModel(model, answer.messages.slice(0, 2)), out);
  });

  test('usage is estimated from characters (about 4 a token) of what the call read and wrote', async () => {
    for (const message of ['hi', `hi ${'x'.repeat(4000)}`]) {
      const out = await callModel(model, user(message));
      const read = JSON.stringify(AGENT_TOOLS).length + system().content.length + message.length;
      assert.deepEqual(out.usage, { input_tokens: Math.ceil(read / 4), output_tokens: Math.ceil(out.text.length / 4) });
    }
    const call = await callModel(model, user('list clusters'));
    assert.equal(call.usage.output_tokens, Math.ceil((call.text.length + JSON.stringify(call.calls).length) / 4));
  });

  test('call ids are unique within a turn and the same when the turn is replayed', async () => {
    const conv = await answerWith('deploy hello', (call) => (call.name === 'ask_user' ? { answer: 'dev' } : call.name === 'execute'
      ? ok({ packages: [{ id: 'pkg_1', name: 'hello', latest_version: '1.0.0' }], clusters: [{ id: 'clu_1', name: 'dev', state: 'active' }, { id: 'clu_2', name: 'prod', state: 'active' }] })
      : ok({ operation_id: 'op_1', install_id: 'inst_1' })));
    const ids = conv.calls.map((c) => c.call.id);
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 3);
    const again = await answerWith('deploy hello', (call) => conv.calls.find((c) => c.call.id === call.id)!.result);
    assert.deepEqual(again.calls.map((c) => c.call.id), ids);
    assert.equal(again.answer, conv.answer);
  });

  test('an aborted signal stops the call before it starts and between pieces', async () => {
    const gone = new AbortController();
    gone.abort();
    await assert.rejects(callModel(model, user('hello'), gone.signal), (err: unknown) => err instanceof ModelProviderError && err.kind === 'aborted' && !err.retryable);
    // [slow] waits about a second before each piece: abort after the first piece arrives
    const controller = new AbortController();
    const pieces: string[] = [];
    const run = (async () => {
      for await (const event of model.stream({ model: 'local-1', workspaceId: WS, messages: user('[slow] hello'), tools: AGENT_TOOLS, maxOutputTokens: 100, apiKey: null, signal: controller.signal })) {
        if (event.type === 'text') {
          pieces.push(event.text);
          controller.abort();
        }
        assert.notEqual(event.type, 'done');
      }
    })();
    await assert.rejects(run, (err: unknown) => err instanceof ModelProviderError && err.kind === 'aborted');
    assert.equal(pieces.length, 1);
  });
});

describe('the local model test triggers', () => {
  test('[fail] fails as unavailable (retryable); [slow] still answers the request', async () => {
    await assert.rejects(callModel(model, user('[fail] how many installs')), (err: unknown) => err instanceof ModelProviderError && err.kind === 'unavailable' && err.retryable);
    assert.match(code((await firstCalls('[slow] how many installs?'))[0]), /"\/v1\/installs"/);
  });

  test('[loop] asks for another execute every round, whatever the results', async () => {
    const messages = user('[loop] how many installs');
    for (let round = 0; round < 4; round++) {
      const out = await callModel(model, messages);
      assert.equal(out.calls.length, 1);
      assert.equal(out.calls[0]!.name, 'execute');
      messages.push({ role: 'assistant', content: out.text, tool_calls: out.calls });
      messages.push({ role: 'tool', tool_call_id: out.calls[0]!.id, name: 'execute', content: JSON.stringify(ok(200)) });
    }
  });

  test('[sleep-tool] runs code that never ends by itself, then tells how it ended', async () => {
    const conv = await answerWith('[sleep-tool]', () => ({ ok: false, error: { code: 'CANCELLED', message: 'the run was cancelled' }, logs: [] }));
    assert.match(code(conv.calls[0]!.call), /for \(;;\) \{\}/);
    assert.equal(conv.answer, 'The long task ended: CANCELLED.');
  });
});

describe('the local model reads messages of any size and shape', () => {
  test('long runs of spaces, punctuation, quotes and keywords after each kind of request plan a step (the reading is linear)', () => {
    const prefixes = ['', 'create a secret named x with value ', 'create a snippet named ', 'deploy ', 'create secret a=', 'store ', 'how many '];
    const runs = [' ', '.', '"', "'", '=', '-', 'value ', 'named ', 'v1.1.1-', 'to ', 'that '];
    for (const prefix of prefixes) {
      for (const run of runs) {
        for (const suffix of ['', 'a', ' that lists installs']) {
          const message = `${prefix}${run.repeat(Math.ceil(20_000 / run.length))}${suffix}`;
          const step = plan(readTurn([system(), { role: 'user', content: 'how many clusters?' }, { role: 'assistant', content: 'Two.' }, { role: 'user', content: message }], { workspaceId: WS, testHooks: true }));
          assert.ok(step.text || step.calls.length, JSON.stringify([prefix, run, suffix]));
        }
      }
    }
  });

  test('a long quoted value is taken whole; an unclosed quote does not break the reading', async () => {
    const value = 'k'.repeat(40_000);
    assert.match(code((await firstCalls(`create a secret named kube with value "${value}"`))[0]), new RegExp(`value: "${value}"`));
    const [ask] = await firstCalls('create a snippet named "');
    assert.equal(ask!.name, 'ask_user');
  });
});
