// The code the local model writes, run in the real sandbox against a canned workspace API (records
// built from the response schemas' examples; models-local-fixtures.ts): each read of the
// repertoire returns what the answer writer expects and gives the answer a person would read, list
// reads follow next_cursor up to their cap, `execute` code never writes, and the bodies of its
// writes pass the API's own request schemas.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Value } from 'typebox/value';
import type { ToolCall } from '../src/drivers/models/driver.js';
import { createLocalModelProvider } from '../src/drivers/models/local.js';
import { CreateInstallBody } from '../src/modules/installs/installs.schemas.js';
import { CreateSecretBody } from '../src/modules/secrets/secrets.schemas.js';
import { CreateSnippetBody } from '../src/modules/snippets/snippets.schemas.js';
import { createSandbox, type JsonValue, type RunResult, type Sandbox, type SandboxBridge } from '../src/sandbox/index.js';
import { cannedApi, converse, manyInstalls, workspace, type Workspace } from './models-local-fixtures.js';

const model = createLocalModelProvider({ testHooks: true });
let sandbox: Sandbox;
before(async () => {
  sandbox = createSandbox({ workers: 1 });
  await sandbox.ready();
});
after(() => sandbox.close());

/** The tool result of a run, as the turn runner reports it (tools.ts). */
function asToolResult(run: RunResult): Record<string, unknown> {
  return run.ok ? { ok: true, output: run.output, logs: run.logs.map((l) => l.message) } : { ok: false, error: { code: run.error.code, message: run.error.message }, logs: [] };
}

/** execute only reads: a write reaching this bridge fails the test (the runner answers it 403 TOOL_READ_ONLY). */
const readOnly = (bridge: SandboxBridge): SandboxBridge => ({
  request(request, options) {
    assert.equal(request.method, 'GET', `execute code wrote: ${request.method} ${request.path}`);
    return bridge.request(request, options);
  },
});

/** A whole turn through the sandbox; ask_user is answered from `answers` by the question's first words. */
async function turn(message: string, o: { ws?: Workspace; role?: 'admin' | 'member'; answers?: Record<string, string> } = {}) {
  const api = cannedApi(o.ws ?? workspace(), { role: o.role ?? 'admin' });
  const conv = await converse(model, message, async (call: ToolCall) => {
    if (call.name === 'ask_user') {
      const key = Object.keys(o.answers ?? {}).find((k) => String(call.arguments.question).startsWith(k));
      assert.ok(key, `unexpected question ${String(call.arguments.question)}`);
      return { answer: o.answers![key]! };
    }
    assert.notEqual(call.name, 'search');
    const bridge = call.name === 'execute' ? readOnly(api.bridge) : api.bridge;
    return asToolResult(await sandbox.run({ code: String(call.arguments.code), tenant: 'ws_test', bridge }));
  });
  return { ...conv, seen: api.seen };
}

const id = (prefix: string, n: number) => `${prefix}_01kaxq3m7y0c9v8t6r5p4n3m${String(n).padStart(3, '0')}`;

describe('the local model\'s reads run in the sandbox and answer from the canned API', () => {
  const cases: [string, string | RegExp][] = [
    ['How many installs are there?', 'There are 3 installs.'],
    ['list my clusters', `There are 3 clusters:\n- dev: active, local (${id('clu', 1)})\n- staging: active, local (${id('clu', 2)})\n- old: suspended, local (${id('clu', 3)})`],
    ['list installs', `There are 3 installs:\n- hello 1.2.0 on staging: failed (${id('inst', 3)})\n- shop 2.0.1 on staging: degraded (${id('inst', 2)})\n- hello 1.2.0 on dev: healthy (${id('inst', 1)})`],
    ['which operations failed?', `There are 2 failed operations:\n- ${id('op', 3)}: install.create of ${id('inst', 3)}, failed (wait_healthy: the deployment hello did not become ready in 120 s)\n` +
      `- ${id('op', 2)}: cluster.capabilities.refresh of ${id('clu', 3)}, failed (the cluster did not answer)`],
    ['how many operations are running?', 'There is 1 running operation.'],
    ['list secrets', 'There are 2 secrets:\n- registry-password (oci_registry)\n- db-url (generic)'],
    ['who are the members?', 'There are 2 members:\n- ada@example.com (owner)\n- bob@example.com (member)'],
    ['list API tokens', 'There is 1 API token:\n- ci (member, expires 2027-01-01)'],
    ['list machines', `There is 1 machine:\n- build-01: active, byo, in dev (${id('mch', 1)})`],
    ['which agents are there', `There is 1 agent:\n- ops (enabled, ${id('agt', 1)})`],
    ['list packages', 'There are 3 packages:\n- hello (latest 1.2.0)\n- shop (latest 2.0.1)\n- draft (no released version)'],
    ['how many snippets', 'There is 1 snippet.'],
    ['how many installs are on cluster staging?', 'There are 2 installs on the cluster staging.'],
    ['which clusters are suspended', `There is 1 suspended cluster:\n- old: suspended, local (${id('clu', 3)})`],
    ['list installs on cluster mars', 'There is no cluster named mars. The clusters are: dev, staging, old.'],
    ['why did the last deploy fail?', new RegExp(`^Operation ${id('op', 3)} \\(install\\.create of ${id('inst', 3)}\\) failed in the step wait_healthy after 3 attempts: ` +
      'wait_healthy: the deployment hello did not become ready in 120 s\\. The last error, in the step wait_healthy, was: pod hello-7d9f crashed: exit code 1 \\(CrashLoopBackOff\\)\\.')],
    [`why did operation ${id('op', 2)} fail?`, /failed in the step probe after 5 attempts: the cluster did not answer\. The step reported: connect ECONNREFUSED 10\.0\.0\.4:6443\./],
    [`what went wrong with ${id('op', 1)}?`, `Operation ${id('op', 1)} (install.update of ${id('inst', 2)}) has not failed: it is still running. Its latest error, in the step apply, was: apply: the API server timed out. The step is retried.`],
    [`why did operation ${id('op', 77)} fail?`, `I could not read the operation ${id('op', 77)}: not found (operation ${id('op', 77)} not found).`],
    [`why is install ${id('inst', 2)} degraded?`, `I found no failed operation of ${id('inst', 2)}, so there is nothing to explain.`],
    [`Show the URLs of install ${id('inst', 1)}`, `Install ${id('inst', 1)} (hello 1.2.0 on dev) is healthy. Its URL:\n- web: http://web--inst-1.preview.example.com`],
    ['where is hello reachable?', `Install ${id('inst', 3)} (hello 1.2.0 on staging) has failed. It has no URLs yet.\nInstall ${id('inst', 1)} (hello 1.2.0 on dev) is healthy. Its URL:\n- web: http://web--inst-1.preview.example.com`],
  ];
  for (const [message, expected] of cases) {
    test(message, async () => {
      const conv = await turn(message);
      assert.deepEqual(conv.calls.map((c) => c.call.name), ['execute']);
      assert.equal(conv.calls[0]!.result.ok, true, JSON.stringify(conv.calls[0]!.result));
      if (typeof expected === 'string') assert.equal(conv.answer, expected);
      else assert.match(conv.answer, expected);
    });
  }

  test('a list read follows next_cursor, and stops after ten pages of a hundred', async () => {
    const ws = workspace();
    ws.installs = manyInstalls(150);
    const some = await turn('how many installs are there?', { ws });
    assert.equal(some.answer, 'There are 150 installs.');
    assert.deepEqual(some.seen.map((r) => r.query), [{ limit: '100' }, { limit: '100', cursor: '100' }]);
    ws.installs = manyInstalls(1050);
    const lots = await turn('list installs', { ws });
    assert.equal(lots.seen.filter((r) => r.path === '/v1/installs').length, 10);
    assert.match(lots.answer, /^There are at least 1000 installs \(I read the first 1000; there are more\):\n(- .+\n){20}- …and 980 more$/);
  });
});

describe('the local model\'s writes run in the sandbox with bodies the API accepts', () => {
  const posted = (seen: { method: string; path: string; body?: JsonValue }[], path: string) => seen.filter((r) => r.method === 'POST' && r.path === path).map((r) => r.body);

  test('a secret: created, already taken, or refused to a member', async () => {
    const created = await turn('create a secret named db-password with value hunter2hunter2');
    assert.equal(created.answer, `Created secret db-password (${id('sec', 9)}).`);
    const [body] = posted(created.seen, '/v1/secrets');
    assert.deepEqual(body, { name: 'db-password', value: 'hunter2hunter2' });
    assert.ok(Value.Check(CreateSecretBody, body));
    assert.doesNotMatch(JSON.stringify(created.calls[0]!.result), /hunter2/);
    assert.match((await turn('create a secret named db-url with value x')).answer, /409 ALREADY_EXISTS: a secret named db-url already exists/);
    assert.equal((await turn('create a secret named db-password with value hunter2hunter2', { role: 'member' })).answer,
      'You do not have permission to create the secret db-password (this needs the admin or owner role).');
  });

  test('a snippet: its own code runs in the sandbox and returns rows (table) or a number (stat)', async () => {
    for (const [message, expected] of [
      ['create a snippet named failed-ops that lists failed operations', (out: JsonValue) => Array.isArray(out) && out.length === 2],
      ["make a snippet called 'Install count' that counts installs on cluster dev", (out: JsonValue) => out === 3],
    ] as const) {
      const conv = await turn(message);
      assert.match(conv.answer, /^Created snippet /);
      const [body] = posted(conv.seen, '/v1/snippets') as { code: string }[];
      assert.ok(Value.Check(CreateSnippetBody, body), JSON.stringify([...Value.Errors(CreateSnippetBody, body)].slice(0, 2)));
      const run = await sandbox.run({ code: body!.code, tenant: 'ws_test', bridge: readOnly(cannedApi(workspace()).bridge) });
      assert.ok(run.ok && expected(run.output), JSON.stringify(run));
    }
  });

  test('a deploy: asks which cluster, then POSTs /v1/installs with exactly the fields of CreateInstallBody', async () => {
    const conv = await turn('deploy hello', { answers: { 'Which cluster should I deploy to?': 'dev' } });
    assert.deepEqual(conv.calls.map((c) => c.call.name), ['execute', 'ask_user', 'propose_change']);
    assert.deepEqual(conv.calls[1]!.call.arguments.choices, ['dev', 'staging']);
    const [body] = posted(conv.seen, '/v1/installs');
    assert.deepEqual(body, { package_id: id('pkg', 1), package_version_pin: { kind: 'latest' }, cluster_id: id('clu', 1) });
    assert.ok(Value.Check(CreateInstallBody, body));
    assert.equal(conv.answer, `Deploying hello 1.2.0 (latest) to dev: install ${id('inst', 9)} is being created by operation ${id('op', 9)}. ` +
      `Follow it with \`svc operations wait ${id('op', 9)}\`, or ask me why it failed if it does.`);
    const pinned = await turn('install shop@2.0.1 on staging');
    assert.ok(Value.Check(CreateInstallBody, posted(pinned.seen, '/v1/installs')[0]));
  });
});

describe('the [sleep-tool] code', () => {
  test('runs until its time limit or until the run is cancelled', async () => {
    const [call] = (await converse(model, '[sleep-tool]', () => ({ ok: false, error: { code: 'TIMEOUT', message: 'x' } }))).calls;
    const code = String(call!.call.arguments.code);
    const timedOut = await sandbox.run({ code, tenant: 'ws_test', bridge: cannedApi(workspace()).bridge, limits: { wallMs: 200 } });
    assert.equal(timedOut.ok ? 'ok' : timedOut.error.code, 'TIMEOUT');
    const controller = new AbortController();
    const running = sandbox.run({ code, tenant: 'ws_test', bridge: cannedApi(workspace()).bridge, signal: controller.signal });
    setImmediate(() => controller.abort());
    const cancelled = await running;
    assert.equal(cancelled.ok ? 'ok' : cancelled.error.code, 'CANCELLED');
  });
});
