// The test hooks (SVC_TEST_HOOKS, issue 33 section 4) and the local model's terms, through HTTP:
// with the hooks off, a cluster body injecting faults is 400 in the error shape (and faults stored
// in a cluster's options are ignored), and the local model's bracketed triggers are plain text;
// with them on, both work. Whatever the hooks, the local model is free (no cost, no spend against
// agents/cost_cents, tokens still counted) and acts in the turn's workspace, never in one that the
// agent's instructions name.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { findUserByEmail } from '../src/modules/users/users.service.js';
import { startTestApp, type Response, type TestApp, type TestUser } from './harness.js';
import { roomyPlans } from './plans-fixtures.js';

type AgentEvent = { type: string; data: Record<string, any> };

/** What a test needs of one app: an owner in a workspace, agents, turns that settle, operations that end. */
function world(env: Record<string, string>) {
  const app = { t: undefined as unknown as TestApp, owner: undefined as unknown as TestUser, ws: '' };
  const as = (method: string, url: string, body?: unknown): Promise<Response> =>
    app.t.request(method, url, { token: app.owner.token, headers: { 'svc-context': app.ws }, ...(body !== undefined ? { body } : {}) });
  const events = async (turnId: string): Promise<AgentEvent[]> => (await as('GET', `/v1/agent_events?turn_id=${turnId}&limit=100`)).body.data;
  before(async () => {
    // sign-up open: signedUpHashCost makes accounts through POST /v1/users
    app.t = await startTestApp({ ...roomyPlans(), SVC_SIGNUP: 'open', ...env });
    app.owner = await app.t.user('owner');
    app.ws = (await app.t.workspace(app.owner, 'Hooks')).id;
  });
  after(() => app.t.close());
  return {
    get t() { return app.t; },
    get owner() { return app.owner; },
    get ws() { return app.ws; },
    as,
    events,
    async agent(instructions = 'You help the team run their workspace.') {
      const res = await as('POST', '/v1/agents', { name: `a${Math.random().toString(36).slice(2, 8)}`, instructions, capabilities: ['CHAT'] });
      assert.equal(res.status, 201, res.text);
      return res.body as { id: string };
    },
    async turn(agentId: string, message: string) {
      const session = await as('POST', '/v1/agent_sessions', { agent_id: agentId });
      const res = await as('POST', '/v1/agent_turns', { session_id: session.body.id, message });
      assert.equal(res.status, 201, res.text);
      for (let i = 0; i < 30; i++) {
        const got = await as('POST', `/v1/agent_turns/${res.body.id}:wait?timeout=10`);
        if (!['QUEUED', 'RUNNING'].includes(got.body.state)) return got.body;
      }
      throw new Error(`turn ${res.body.id} did not settle`);
    },
    /** the turn's answer: what its last message said */
    async answer(turnId: string): Promise<string | undefined> {
      return (await events(turnId)).filter((e) => e.type === 'message.created').at(-1)?.data.content;
    },
    async done(operationId: string) {
      for (let i = 0; i < 30; i++) {
        const op = await as('POST', `/v1/operations/${operationId}:wait?timeout=10`);
        if (op.body.done) return op.body;
      }
      throw new Error(`operation ${operationId} did not end`);
    },
  };
}

const FAULTS = [{ action: 'provision', fail_times: 2 }];

/** The scrypt cost (N) of the stored password hash of a user signed up through POST /v1/users, who then signs in. */
async function signedUpHashCost(t: TestApp, email: string): Promise<number> {
  const res = await t.request('POST', '/v1/users', { body: { email, password: 'correct horse battery' } });
  assert.equal(res.status, 201, res.text);
  const signIn = await t.request('POST', '/v1/auth/sessions', { body: { email, password: 'correct horse battery' } });
  assert.equal(signIn.status, 201, signIn.text);
  const [scheme, n] = (await findUserByEmail(t.services.db, email))!.password_hash.split('$');
  assert.equal(scheme, 'scrypt');
  return Number(n);
}

const configBase = { SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-hooks-')), SVC_SECRET_KEY: 'ab'.repeat(32) };
after(() => rmSync(configBase.SVC_DATA_DIR, { recursive: true, force: true }));

test('SVC_TEST_PASSWORD_HASH=fast is refused without SVC_TEST_HOOKS=1, saying why', () => {
  assert.throws(() => loadConfig({ ...configBase, SVC_TEST_PASSWORD_HASH: 'fast' }), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /SVC_TEST_PASSWORD_HASH=fast .*SVC_TEST_HOOKS=1/);
    return true;
  });
  assert.throws(() => loadConfig({ ...configBase, SVC_TEST_HOOKS: '1', SVC_TEST_PASSWORD_HASH: 'cheap' }), /must be fast or standard/);
});

describe('with SVC_TEST_HOOKS off (the default)', () => {
  const w = world({ SVC_TEST_HOOKS: '0' });

  test('passwords are hashed at the standard cost (scrypt N=2^15)', async () => {
    assert.equal(await signedUpHashCost(w.t, 'standard@example.test'), 32768);
  });

  test('a cluster body with faults is 400 in the error shape and creates nothing; an empty list injects nothing', async () => {
    const res = await w.as('POST', '/v1/clusters', { name: 'faulty', local: { faults: FAULTS } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    assert.match(res.body.error.message, /SVC_TEST_HOOKS=1/);
    assert.deepEqual(res.body.error.field_violations.map((v: { field: string }) => v.field), ['body.local.faults']);
    assert.deepEqual((await w.as('GET', '/v1/clusters')).body.data, []);
    assert.deepEqual((await w.as('GET', '/v1/operations')).body.data, []);
    const plain = await w.as('POST', '/v1/clusters', { name: 'plain', local: { faults: [] } });
    assert.equal(plain.status, 202, plain.text);
    assert.equal((await w.done(plain.body.id)).state, 'SUCCEEDED');
  });

  test('faults already stored with a cluster are ignored: its capabilities refresh at the first attempt', async () => {
    const created = await w.as('POST', '/v1/clusters', { name: 'stored' });
    const clusterId = (await w.done(created.body.id)).metadata.cluster_id as string;
    const options = JSON.stringify({ faults: [{ action: 'capabilities', fail_times: 100, latency_ms: 0 }] });
    await w.t.services.db.updateTable('clusters').set({ options }).where('id', '=', clusterId).execute();
    const refresh = await w.as('POST', `/v1/clusters/${clusterId}/capabilities:refresh`);
    assert.equal(refresh.status, 202, refresh.text);
    const op = await w.done(refresh.body.id);
    assert.equal(op.state, 'SUCCEEDED', JSON.stringify(op));
    assert.ok(op.steps.every((s: { attempts: number }) => s.attempts <= 1), JSON.stringify(op.steps));
  });

  test('the local model reads [fail], [loop], [sleep-tool] and [slow] as plain text', async () => {
    const agent = await w.agent();
    const failed = await w.turn(agent.id, '[fail] how many installs are there?');
    assert.equal(failed.state, 'COMPLETED', JSON.stringify(failed.failure));
    assert.equal(await w.answer(failed.id), 'There are no installs.');
    const others = await w.turn(agent.id, '[loop] [sleep-tool] [slow] how many installs are there?');
    assert.equal(others.state, 'COMPLETED', JSON.stringify(others.failure));
    assert.equal(await w.answer(others.id), 'There are no installs.');
    const tools = (await w.events(others.id)).filter((e) => e.type === 'tool.started');
    assert.equal(tools.length, 1, 'one read, no loop, no endless run');
  });

  test('the local model is free: no cost and no spend against agents/cost_cents, whatever the price table; tokens counted', async () => {
    const agent = await w.agent();
    const done = await w.turn(agent.id, 'list my clusters');
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done.failure));
    assert.equal(done.usage_summary.provider_cost_cents, 0);
    assert.ok(done.usage_summary.provider_token_count > 0);
    assert.equal(w.t.config.agents.prices['*']!.input > 0, true, 'the default price table prices every model');
    const spend = (await w.as('GET', '/v1/quotas')).body.data.find((q: { metric: string }) => q.metric === 'agents/cost_cents');
    assert.equal(spend.usage, 0);
    assert.equal((await w.as('GET', `/v1/agents/${agent.id}`)).body.usage_summary.provider_cost_cents, 0);
  });

  test('the local model acts in the turn\'s workspace, not in one that the agent\'s instructions name', async () => {
    const other = (await w.t.workspace(w.owner, 'Other')).id;
    const colleague = await w.t.user('colleague');
    await w.t.addMember(w.owner, w.ws, colleague, 'member');
    const agent = await w.agent(`Always work in the workspace ${other}. The workspace is ${other}.`);
    const done = await w.turn(agent.id, 'list the members');
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done.failure));
    const [read] = (await w.events(done.id)).filter((e) => e.type === 'tool.started');
    assert.match(read!.data.arguments.code, new RegExp(`"/v1/workspaces/${w.ws}/members"`));
    assert.doesNotMatch(read!.data.arguments.code, new RegExp(other));
    assert.ok((await w.answer(done.id))?.includes(colleague.email), await w.answer(done.id));
  });
});

describe('with SVC_TEST_HOOKS=1 (tests and demos)', () => {
  const w = world({ SVC_TEST_HOOKS: '1', SVC_RETRY_BACKOFF_SCALE: '0' });

  test('SVC_TEST_PASSWORD_HASH=fast (the suite sets it) hashes at N=2^10, and those users sign in', async () => {
    assert.equal(await signedUpHashCost(w.t, 'fast@example.test'), 1024);
  });

  test('a cluster\'s faults make its steps fail first, then it succeeds', async () => {
    const res = await w.as('POST', '/v1/clusters', { name: 'faulty', local: { faults: FAULTS } });
    assert.equal(res.status, 202, res.text);
    const op = await w.done(res.body.id);
    assert.equal(op.state, 'SUCCEEDED');
    assert.equal(op.steps.find((s: { name: string }) => s.name === 'provision').attempts, 3);
  });

  test('[fail] fails the turn MODEL_UNAVAILABLE after the retries; [loop] ends it with STEP_LIMIT', async () => {
    const agent = await w.agent();
    const failed = await w.turn(agent.id, '[fail] how many installs are there?');
    assert.equal(failed.state, 'FAILED');
    assert.equal(failed.failure.code, 'MODEL_UNAVAILABLE');
    const looped = await w.turn(agent.id, '[loop] how many installs are there?');
    assert.equal(looped.failure?.code, 'STEP_LIMIT');
  });
});
