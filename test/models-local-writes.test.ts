// The local model's changes, driven with tool results built by hand: creating a secret (asking
// for a missing name or value), creating a snippet, deploying a package (asking which cluster or
// package when the request does not say), and how each outcome is told: approved and done,
// rejected, denied by the agent's policy, refused by the API (403), of unknown outcome.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ToolCall } from '../src/drivers/models/driver.js';
import { createLocalModelProvider } from '../src/drivers/models/local.js';
import { converse } from './models-local-fixtures.js';

const model = createLocalModelProvider({ testHooks: true });
const ok = (output: unknown) => ({ ok: true, output, logs: [] });
const code = (call: ToolCall | undefined) => String(call?.arguments.code ?? '');
const SECRET = 'create a secret named db-password with value hunter2hunter2';

/** Converses, answering ask_user from `answers` (by the question's first words) and other calls with `write`. */
function talk(message: string, write: (call: ToolCall) => Record<string, unknown>, answers: Record<string, string> = {}) {
  return converse(model, message, (call) => {
    if (call.name !== 'ask_user') return write(call);
    const question = String(call.arguments.question);
    const key = Object.keys(answers).find((k) => question.startsWith(k));
    assert.ok(key, `unexpected question: ${question}`);
    return { answer: answers[key]! };
  });
}

describe('the local model creates a secret', () => {
  test('proposes code that POSTs /v1/secrets with the name and value; once approved, says what it created', async () => {
    const conv = await talk(SECRET, () => ok({ id: 'sec_01', name: 'db-password' }));
    assert.equal(conv.calls.length, 1);
    const call = conv.calls[0]!.call;
    assert.equal(call.name, 'propose_change');
    assert.equal(call.arguments.summary, 'Create the secret db-password');
    assert.match(code(call), /method: 'POST', path: "\/v1\/secrets", body: \{ name: "db-password", value: "hunter2hunter2" \}/);
    assert.equal(conv.answer, 'Created secret db-password (sec_01).');
    assert.doesNotMatch(conv.messages.filter((m) => m.role === 'assistant').map((m) => m.content).join(' '), /hunter2/);
  });

  test('wording variants read the same name and value, with their case', async () => {
    for (const message of [
      'Create a secret named DB_PASSWORD with value Hunter2!', 'add secret DB_PASSWORD=Hunter2!', 'please create a secret called `DB_PASSWORD` with the value "Hunter2!"',
      'store Hunter2! as a secret named DB_PASSWORD', 'New secret DB_PASSWORD, value: Hunter2!',
    ]) {
      const conv = await talk(message, () => ok({ id: 'sec_01', name: 'DB_PASSWORD' }));
      assert.match(code(conv.calls[0]!.call), /body: \{ name: "DB_PASSWORD", value: "Hunter2!" \}/, message);
    }
  });

  test('asks for a missing value, then for a missing name, and uses the answers exactly', async () => {
    const conv = await talk('create a secret named api-key', () => ok({ id: 'sec_02', name: 'api-key' }), { 'What value should the secret api-key hold?': ' sk live 42 ' });
    assert.equal(conv.calls[0]!.call.name, 'ask_user');
    assert.match(code(conv.calls[1]!.call), /body: \{ name: "api-key", value: "sk live 42" \}/);
    const both = await talk('create a secret', () => ok({ id: 'sec_03', name: 'token' }), {
      'What should the secret be called?': 'call it "token".', 'What value should the secret token hold?': 'abc',
    });
    assert.deepEqual(both.calls.map((c) => c.call.name), ['ask_user', 'ask_user', 'propose_change']);
    assert.match(code(both.calls[2]!.call), /body: \{ name: "token", value: "abc" \}/);
  });

  test('rejected: acknowledges and changes nothing; denied: writes are not allowed; 403: no permission; unknown: check first', async () => {
    const rejected = await talk(SECRET, () => ({ ok: false, rejected: true, reason: 'wrong name' }));
    assert.equal(rejected.answer, 'Understood: I did not create the secret db-password (you said: wrong name). Nothing was changed.');
    const denied = await talk(SECRET, () => ({ ok: false, denied: true, message: 'this agent may not write' }));
    assert.match(denied.answer, /^This agent is not allowed to make changes \(its tool policy denies writes\), so I did not create the secret db-password\./);
    const forbidden = await talk(SECRET, () => ok({ failed: { status: 403, code: 'PERMISSION_DENIED', message: 'creating secrets needs the admin or owner role' } }));
    assert.equal(forbidden.answer, 'You do not have permission to create the secret db-password (creating secrets needs the admin or owner role).');
    const unknown = await talk(SECRET, () => ({ ok: false, outcome_unknown: true, message: 'the worker stopped' }));
    assert.equal(unknown.answer, 'I could not tell whether the attempt to create the secret db-password happened: it was cut off before it reported. ' +
      'Check the secrets (svc secrets list) before retrying.');
    const taken = await talk(SECRET, () => ok({ failed: { status: 409, code: 'ALREADY_EXISTS', message: 'a secret named db-password already exists' } }));
    assert.equal(taken.answer, 'I could not create the secret db-password: the API answered 409 ALREADY_EXISTS: a secret named db-password already exists.');
  });
});

describe('the local model creates a snippet', () => {
  test('proposes POST /v1/snippets with code that lists (table) or counts (stat)', async () => {
    const table = await talk('create a snippet named failed-ops that lists failed operations', () => ok({ id: 'snp_1', name: 'failed-ops', html_url: 'https://svc.example.com/snippets/snp_1' }));
    const proposed = code(table.calls[0]!.call);
    assert.match(proposed, /path: "\/v1\/snippets", body: \{ name: "failed-ops", description: "Lists the failed operations \(written by the local agent model\)\.", display_type: "table", code \}/);
    assert.match(proposed, /all\("\/v1\/operations", \{ state: "FAILED" \}\)/);
    assert.equal(table.answer, 'Created snippet failed-ops (snp_1). Open it at https://svc.example.com/snippets/snp_1.');
    const stat = await talk("make a snippet called 'Install count' that counts installs", () => ok({ id: 'snp_2', name: 'Install count' }));
    assert.match(code(stat.calls[0]!.call), /name: "Install count", description: "Counts the installs[^"]*", display_type: "stat"/);
    assert.match(code(stat.calls[0]!.call), /return items\.length;/);
  });

  test('asks what it should be called and what it should show when the message does not say', async () => {
    const conv = await talk('create a snippet', () => ok({ id: 'snp_3', name: 'ops' }), {
      'What should the snippet be called?': 'ops', 'What should the snippet show?': 'count running operations',
    });
    assert.deepEqual(conv.calls.map((c) => c.call.name), ['ask_user', 'ask_user', 'propose_change']);
    assert.match(code(conv.calls[2]!.call), /display_type: "stat"/);
    assert.match(code(conv.calls[2]!.call), /state: "RUNNING"/);
  });
});

const catalog = (clusters: [string, string][]) => ok({
  packages: [{ id: 'pkg_1', name: 'hello', latest_version: '1.2.0' }, { id: 'pkg_2', name: 'draft', latest_version: null }],
  clusters: clusters.map(([name, state], i) => ({ id: `clu_${i + 1}`, name, state })),
});
const started = ok({ operation_id: 'op_9', install_id: 'inst_9', state: 'RUNNING' });

describe('the local model deploys a package', () => {
  test('reads packages and clusters, then proposes POST /v1/installs with package_id, package_version_pin and cluster_id', async () => {
    const conv = await talk('Deploy hello to dev', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['prod', 'active']]) : started));
    assert.match(code(conv.calls[0]!.call), /all\('\/v1\/packages'\)[\s\S]*all\('\/v1\/clusters'\)/);
    assert.equal(conv.calls[1]!.call.name, 'propose_change');
    assert.match(code(conv.calls[1]!.call), /path: "\/v1\/installs", body: \{ package_id: "pkg_1", package_version_pin: \{ kind: "latest" \}, cluster_id: "clu_1" \}/);
    assert.equal(conv.answer, 'Deploying hello 1.2.0 (latest) to dev: install inst_9 is being created by operation op_9. ' +
      'Follow it with `svc operations wait op_9`, or ask me why it failed if it does.');
    const pinned = await talk('please install the hello package version 1.1.0 on cluster prod', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['prod', 'active']]) : started));
    assert.match(code(pinned.calls[1]!.call), /package_version_pin: \{ kind: "pinned", version: "1\.1\.0" \}, cluster_id: "clu_2"/);
  });

  test('asks "Which cluster?" with the active clusters as choices when there are several; uses the only one otherwise', async () => {
    const conv = await talk('deploy hello', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['staging', 'active'], ['old', 'suspended']]) : started),
      { 'Which cluster should I deploy to?': 'Staging' });
    const question = conv.calls[1]!.call;
    assert.equal(question.name, 'ask_user');
    assert.deepEqual(question.arguments, { question: 'Which cluster should I deploy to?', choices: ['dev', 'staging'] });
    assert.match(code(conv.calls[2]!.call), /cluster_id: "clu_2"/);
    const single = await talk('deploy hello', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['old', 'suspended']]) : started));
    assert.deepEqual(single.calls.map((c) => c.call.name), ['execute', 'propose_change']);
    assert.match(code(single.calls[1]!.call), /cluster_id: "clu_1"/);
  });

  test('a cluster or package that does not exist is asked about again; what cannot be deployed is said', async () => {
    const conv = await talk('deploy hello to nowhere', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['prod', 'active']]) : started),
      { 'Which cluster should I deploy to?': 'prod' });
    assert.equal(conv.calls[1]!.call.arguments.question, 'Which cluster should I deploy to? There is no cluster named nowhere.');
    assert.match(code(conv.calls[2]!.call), /cluster_id: "clu_2"/);
    const unknownAnswer = await talk('deploy hello', (call) => (call.name === 'execute' ? catalog([['dev', 'active'], ['prod', 'active']]) : started),
      { 'Which cluster should I deploy to?': 'mars' });
    assert.equal(unknownAnswer.answer, 'I could not find a cluster named mars. The active clusters are: dev, prod.');
    const suspended = await talk('deploy hello to old', () => catalog([['dev', 'active'], ['old', 'suspended']]));
    assert.equal(suspended.answer, 'The cluster old is suspended, not active, so I cannot deploy to it now.');
    const draft = await talk('deploy draft to dev', () => catalog([['dev', 'active']]));
    assert.equal(draft.answer, 'The package draft has no released version yet, so there is nothing to deploy. Publish a version first.');
    const which = await talk('deploy to dev', (call) => (call.name === 'execute' ? catalog([['dev', 'active']]) : started), { 'Which package should I deploy?': 'hello' });
    assert.deepEqual(which.calls[1]!.call.arguments, { question: 'Which package should I deploy?', choices: ['hello', 'draft'] });
    assert.match(code(which.calls[2]!.call), /package_id: "pkg_1"/);
  });

  test('a member without rights, a rejection and a refused read are told', async () => {
    const refused = await talk('deploy hello to dev', (call) => (call.name === 'execute' ? catalog([['dev', 'active']])
      : ok({ failed: { status: 422, code: 'FAILED_PRECONDITION', message: 'cluster dev is not active' } })));
    assert.equal(refused.answer, 'I could not deploy hello to dev: the API answered 422 FAILED_PRECONDITION: cluster dev is not active.');
    const rejected = await talk('deploy hello to dev', (call) => (call.name === 'execute' ? catalog([['dev', 'active']]) : { ok: false, rejected: true, reason: 'no reason given' }));
    assert.equal(rejected.answer, 'Understood: I did not deploy hello to dev. Nothing was changed.');
    const cannotRead = await talk('deploy hello to dev', () => ok({ failed: { status: 403, code: 'PERMISSION_DENIED', message: 'no access' } }));
    assert.equal(cannotRead.answer, 'You do not have permission to read the packages and clusters (no access).');
  });
});
