// A turn survives the death of the process running it: two `svc serve` processes share one
// database and the local model; the process whose worker runs a turn's tool call is killed with
// SIGKILL while the call runs; the other takes the job over when its lease expires, does not run the
// call again (it is recorded as of unknown outcome, and the model is told so), and the turn ends.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Agent0Crash0Bootstrap0Token00000';
const call = svcCaller(TOKEN);

describe(`an agent turn across a crash (${DIALECT})`, () => {
  let db: TestDatabase;
  let handle: DatabaseHandle;
  const processes: RunningSvc[] = [];

  before(async () => {
    db = await createTestDatabase();
    const env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN,
      SVC_JOB_LEASE_MS: '1500', SVC_JOB_POLL_MS: '100', SVC_RETRY_BACKOFF_SCALE: '0.01',
    });
    processes.push(await startSvc(env), await startSvc(env));
    handle = openDatabase({ databaseUrl: db.databaseUrl, dataDir: db.dataDir, poolSize: 1 });
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await handle?.close();
    await db?.drop();
  });

  test('kill -9 during a tool call: the other process resumes the turn without running the call again', { timeout: 240_000 }, async () => {
    const [a] = processes;
    const ws = (await call(a!.url, 'POST', '/v1/workspaces', { body: { name: 'Crash' } })).body.id;
    const scope = { 'svc-context': ws };
    const agent = (await call(a!.url, 'POST', '/v1/agents', { headers: scope, body: { name: 'a', instructions: 'x', capabilities: ['CHAT'] } })).body;
    const session = (await call(a!.url, 'POST', '/v1/agent_sessions', { headers: scope, body: { agent_id: agent.id } })).body;
    // `[sleep-tool]`: the local model's test trigger, an execute call that runs for seconds.
    const turn = (await call(a!.url, 'POST', '/v1/agent_turns', { headers: scope, body: { session_id: session.id, message: '[sleep-tool] count installs' } })).body;
    assert.equal(turn.state, 'QUEUED');

    // Wait for the tool call to start, then kill the process whose worker holds the turn's job.
    let holder: RunningSvc | undefined;
    for (let i = 0; i < 400 && !holder; i++) {
      const started = (await call(a!.url, 'GET', `/v1/agent_events?turn_id=${turn.id}`, { headers: scope })).body.data.some((e: { type: string }) => e.type === 'tool.started');
      const job = await handle.db.selectFrom('jobs').select('locked_by').where('agent_turn_id', '=', turn.id).executeTakeFirst();
      if (started && job?.locked_by) holder = processes.find((p) => job.locked_by!.includes(`:${p.child.pid}:`));
      else await sleep(50);
    }
    assert.ok(holder, 'a worker runs the tool call');
    holder.child.kill('SIGKILL');
    const survivor = processes.find((p) => p !== holder)!;

    let done = turn;
    for (let i = 0; i < 30 && !['COMPLETED', 'FAILED', 'CANCELLED'].includes(done.state); i++) {
      done = (await call(survivor.url, 'POST', `/v1/agent_turns/${turn.id}:wait?timeout=10`, { headers: scope })).body;
    }
    assert.equal(done.state, 'COMPLETED', JSON.stringify(done.failure));
    const events = (await call(survivor.url, 'GET', `/v1/agent_events?turn_id=${turn.id}&limit=100`, { headers: scope })).body.data as { type: string; data: any; sequence: number }[];
    const starts = events.filter((e) => e.type === 'tool.started');
    assert.equal(starts.length, 1, 'the tool call started once, and was not run again');
    const completed = events.filter((e) => e.type === 'tool.completed');
    assert.equal(completed.length, 1);
    assert.equal(completed[0]!.data.call_id, starts[0]!.data.call_id);
    assert.equal(completed[0]!.data.result.outcome_unknown, true);
    assert.deepEqual(events.map((e) => e.sequence), events.map((_, i) => i + 1), 'no gap in the events across the crash');
    const steps = await handle.db.selectFrom('agent_turn_steps').select(['kind', 'state']).where('turn_id', '=', turn.id).orderBy('position').execute();
    assert.deepEqual(steps.filter((s) => s.kind === 'tool').map((s) => s.state), ['UNKNOWN']);
    assert.equal(await handle.db.selectFrom('jobs').select('id').where('agent_turn_id', '=', turn.id).executeTakeFirst(), undefined, 'the job is gone');
  });
});
