// The operations engine through HTTP: every invariant on each state an operation passes through,
// retries with last_error, exhaustion, skippable steps, cancellation, pushed :wait, listing and
// tenancy. Test workflows are registered into the real registry and run by the real workers.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { StepError, type Json } from '../src/jobs/workflows.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { assertOperationInvariants } from './operation-invariants.js';

interface Gate { promise: Promise<void>; resolve(): void }
function gate(): Gate {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('operations engine', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wsA: string;
  let wsB: string;
  /** test.gated operations stay RUNNING until the test opens their gate: no race with a timer */
  const gates = new Map<string, Gate>();
  const gateOf = (id: string) => gates.get(id) ?? gates.set(id, gate()).get(id)!;
  /** test.hangs: set when its step finally returns (it waits on `hangRelease`, not on a timer) */
  const hangRelease = gate();
  let hangReturned = false;

  before(async () => {
    t = await startTestApp();
    alice = await t.user('alice');
    bob = await t.user('bob');
    wsA = (await t.workspace(alice, 'A')).id;
    wsB = (await t.workspace(bob, 'B')).id;
    const wf = t.services.workflows;
    // 20 s of production backoff is 200 ms here (SVC_RETRY_BACKOFF_SCALE=0.01): long enough to observe.
    const observableRetry = { maxAttempts: 3, initialDelayMs: 20_000, maxDelayMs: 20_000 };
    wf.register<{ fail_times: number }>({
      type: 'test.flaky',
      cancellable: true,
      steps: [
        { name: 'prepare', run: async () => ({ prepared: true }) },
        {
          name: 'flaky',
          retry: observableRetry,
          run: async (ctx) => {
            if (ctx.attempt <= ctx.input.fail_times) throw new Error(`flaky failure ${ctx.attempt}`);
            return { attempt: ctx.attempt, saw: ctx.results.prepare ?? null };
          },
        },
        { name: 'finish' },
      ],
      response: (ctx) => ({ flaky: ctx.results.flaky ?? null }),
    });
    wf.register<{ ms: number }>({
      type: 'test.timed',
      cancellable: true,
      steps: [{ name: 'slow', run: async (ctx) => { await sleep(ctx.input.ms); } }, { name: 'after' }],
    });
    wf.register<Record<string, Json>>({
      type: 'test.gated',
      cancellable: true,
      steps: [{ name: 'gate', run: async (ctx) => { await gateOf(ctx.operationId).promise; } }, { name: 'after' }],
    });
    wf.register<{ ms: number }>({
      type: 'test.uncancellable',
      cancellable: false,
      steps: [{ name: 'slow', run: async (ctx) => { await sleep(ctx.input.ms); } }, { name: 'done' }],
    });
    wf.register<Record<string, Json>>({
      type: 'test.hangs',
      cancellable: true,
      steps: [{ name: 'hang', retryable: false, timeoutMs: 150, run: async () => { await hangRelease.promise; hangReturned = true; } }],
    });
    wf.register<Record<string, Json>>({
      type: 'test.skippable',
      cancellable: true,
      steps: [
        { name: 'optional', skippable: true, run: async () => { throw new StepError('not available here', false); } },
        { name: 'required', run: async () => ({ ran: true }) },
      ],
    });
  });
  after(() => t.close());

  async function start(type: string, input: Record<string, Json>, workspaceId = wsA, user = alice): Promise<string> {
    const op = await t.services.db.transaction().execute((tx) =>
      t.services.operations.start(tx, {
        type, workspaceId, ownerType: 'workspace', ownerId: workspaceId, clusterId: null, input,
        actor: { actorId: user.id, userId: user.id },
      }));
    return op.id;
  }
  const ctx = (user = alice, ws = wsA) => ({ token: user.token, headers: { 'svc-context': ws } });
  const get = async (id: string, user = alice, ws = wsA) => {
    const res = await t.request('GET', `/v1/operations/${id}`, ctx(user, ws));
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: 'http://svc.test' });
    return res.body;
  };
  const wait = async (id: string, timeout = 10) => {
    const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=${timeout}`, ctx());
    assert.equal(res.status, 200, res.text);
    assertOperationInvariants(res.body, { publicUrl: 'http://svc.test' });
    return res.body;
  };
  async function until(id: string, predicate: (op: any) => boolean, ms = 30_000): Promise<any> {
    const deadline = Date.now() + ms;
    for (;;) {
      const op = await get(id);
      if (predicate(op)) return op;
      if (Date.now() > deadline) throw new Error(`operation ${id} never reached the expected state: ${JSON.stringify(op)}`);
      await sleep(10);
    }
  }

  test('a step that fails twice then succeeds: last_error while RUNNING, cleared after', async () => {
    const id = await start('test.flaky', { fail_times: 2 });
    const running = await until(id, (op) => op.last_error !== null);
    assert.equal(running.state, 'RUNNING');
    assert.equal(running.done, false);
    assert.equal(running.last_error.step_name, 'flaky');
    assert.match(running.last_error.message, /flaky failure/);
    const flakyStep = running.steps.find((s: any) => s.name === 'flaky');
    assert.equal(flakyStep.status, 'failed');
    assert.match(flakyStep.error_message, /flaky failure/);
    assert.equal(running.steps[0].status, 'completed');

    const done = await wait(id);
    assert.equal(done.state, 'SUCCEEDED');
    assert.equal(done.last_error, null, 'cleared when the step succeeds on retry');
    assert.deepEqual(done.response, { type: 'test.flaky', cluster_id: null, flaky: { attempt: 3, saw: { prepared: true } } });
    assert.deepEqual(done.steps.map((s: any) => [s.name, s.status, s.attempts]), [['prepare', 'completed', 1], ['flaky', 'completed', 3], ['finish', 'completed', 1]]);
    assert.equal(done.steps[1].error_message, undefined);
  });

  test('a step that keeps failing ends FAILED with error.message', async () => {
    const id = await start('test.flaky', { fail_times: 99 });
    const op = await wait(id);
    assert.equal(op.state, 'FAILED');
    assert.match(op.error.message, /flaky failed: flaky failure 3/);
    assert.equal(op.last_error.step_name, 'flaky');
    assert.deepEqual(op.steps.map((s: any) => s.status), ['completed', 'failed', 'pending']);
    assert.equal(op.steps[1].attempts, 3);
  });

  test('terminal operations never change: cancel is 422 and the body stays the same', async () => {
    const id = await start('test.flaky', { fail_times: 0 });
    const done = await wait(id);
    assert.equal(done.state, 'SUCCEEDED');
    const res = await t.request('POST', `/v1/operations/${id}:cancel`, ctx());
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'FAILED_PRECONDITION');
    assert.equal(res.body.error.reason, 'OPERATION_DONE');
    assert.deepEqual(await get(id), done);
  });

  test('a skippable step that fails for good is skipped and the workflow goes on', async () => {
    const op = await wait(await start('test.skippable', {}));
    assert.equal(op.state, 'SUCCEEDED');
    assert.deepEqual(op.steps.map((s: any) => [s.status, s.attempts]), [['skipped', 1], ['completed', 1]]);
    assert.equal(op.steps[0].skippable, true);
    assert.equal(op.steps[0].error_message, 'not available here');
    assert.equal(op.last_error.step_name, 'optional');
  });

  test('cancel during a slow step: 202 RUNNING, the step drains, then CANCELLED', async () => {
    const id = await start('test.gated', {});
    await until(id, (op) => op.steps[0].status === 'running');
    const res = await t.request('POST', `/v1/operations/${id}:cancel`, ctx());
    assert.equal(res.status, 202);
    assertOperationInvariants(res.body);
    assert.equal(res.body.state, 'RUNNING');
    gateOf(id).resolve();
    const op = await wait(id);
    assert.equal(op.state, 'CANCELLED');
    assert.match(op.error.message, /cancel/);
    assert.deepEqual(op.steps.map((s: any) => s.status), ['completed', 'pending'], 'the running step drained; the next never ran');
    const again = await t.request('POST', `/v1/operations/${id}:cancel`, ctx());
    assert.equal(again.status, 422);
  });

  test('cancel while a step waits for its retry lands without running it again', async () => {
    const id = await start('test.flaky', { fail_times: 99 });
    await until(id, (op) => op.last_error !== null);
    const res = await t.request('POST', `/v1/operations/${id}:cancel`, ctx());
    assert.equal(res.status, 202);
    const op = await wait(id);
    assert.equal(op.state, 'CANCELLED');
    assert.equal(op.steps[1].attempts, 1);
  });

  test('an operation whose workflow cannot be cancelled: 422 NOT_CANCELLABLE', async () => {
    const id = await start('test.uncancellable', { ms: 300 });
    const res = await t.request('POST', `/v1/operations/${id}:cancel`, ctx());
    assert.equal(res.status, 422);
    assert.equal(res.body.error.reason, 'NOT_CANCELLABLE');
    assert.equal((await wait(id)).state, 'SUCCEEDED');
  });

  test('a step that outlives its timeout fails with a message saying so, while the step has still not returned', async () => {
    const op = await wait(await start('test.hangs', {}), 60);
    assert.equal(op.state, 'FAILED');
    assert.match(op.error.message, /step hang failed: step hang timed out after 150 ms/);
    assert.equal(hangReturned, false, 'failed at the timeout, not when the step finally returned');
    hangRelease.resolve();
  });

  test(':wait is woken by the operation\'s end (pushed), not by its safety poll', async () => {
    for (let i = 0; i < 3; i++) {
      const id = await start('test.gated', {});
      const before_ = t.services.operations.waitCounts().woken;
      // A safety poll and a timeout of 10 minutes: only the notification can end this wait.
      const waiting = t.services.operations.wait({ workspaceId: wsA, role: 'owner', actorId: alice.id }, id, 600_000, 600_000);
      await until(id, (op) => op.steps[0].status === 'running');
      gateOf(id).resolve();
      const op = await waiting;
      assert.equal(op.state, 'SUCCEEDED');
      assert.ok(t.services.operations.waitCounts().woken > before_, 'a notification woke the wait');
    }
  });

  test(':wait returns the running operation at its timeout, not before', async () => {
    const id = await start('test.gated', {});
    const t0 = Date.now();
    const op = await wait(id, 1);
    const waitedMs = Date.now() - t0;
    assert.equal(op.state, 'RUNNING');
    assert.equal(op.done, false);
    // A lower bound only: no machine is too slow for it. How soon after it belongs to bench/.
    assert.ok(waitedMs >= 950, `returned after ${waitedMs} ms, before its timeout`);
    gateOf(id).resolve();
    assert.equal((await wait(id)).state, 'SUCCEEDED');
  });

  test(':wait timeout is 1-60 seconds', async () => {
    const id = await start('test.flaky', { fail_times: 0 });
    for (const bad of ['0', '61', 'x']) {
      const res = await t.request('POST', `/v1/operations/${id}:wait?timeout=${bad}`, ctx());
      assert.equal(res.status, 400, bad);
    }
    const encoded = await t.request('POST', `/v1/operations/${id}%3Await?timeout=5`, ctx());
    assert.equal(encoded.status, 200);
  });

  test('list: newest first, owner filters, no steps in items, keyset cursors', async () => {
    const ids = [await start('test.flaky', { fail_times: 0 }), await start('test.flaky', { fail_times: 0 })];
    for (const id of ids) await wait(id);
    const res = await t.request('GET', '/v1/operations?limit=1', ctx());
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    assert.equal(res.body.data[0].id, ids[1]);
    assertOperationInvariants(res.body.data[0], { listItem: true });
    assert.equal(res.body.has_more, true);
    const next = await t.request('GET', `/v1/operations?limit=1&cursor=${res.body.next_cursor}`, ctx());
    assert.equal(next.body.data[0].id, ids[0]);
    const filtered = await t.request('GET', `/v1/operations?owner_type=workspace&owner_id=${wsA}&limit=100`, ctx());
    assert.ok(filtered.body.data.length >= 2);
    assert.ok(filtered.body.data.every((op: any) => op.owner_id === wsA && op.steps === undefined));
    const none = await t.request('GET', '/v1/operations?owner_type=cluster', ctx());
    assert.deepEqual(none.body.data, []);
    const wrongFilter = await t.request('GET', `/v1/operations?limit=1&owner_type=cluster&cursor=${res.body.next_cursor}`, ctx());
    assert.equal(wrongFilter.status, 400, 'a cursor is bound to its filters');
    const badType = await t.request('GET', '/v1/operations?owner_type=nope', ctx());
    assert.equal(badType.status, 400);
  });

  test('list: the state filter, alone and with owner filters, pages by its own cursors', async () => {
    const finished = await start('test.flaky', { fail_times: 0 });
    assert.equal((await wait(finished)).state, 'SUCCEEDED');
    const running = [await start('test.gated', {}), await start('test.gated', {})];
    const list = async (query: string) => {
      const res = await t.request('GET', `/v1/operations?${query}`, ctx());
      assert.equal(res.status, 200, res.text);
      return res.body;
    };
    const runningPage = await list('state=RUNNING&limit=100');
    assert.ok(runningPage.data.every((op: any) => op.state === 'RUNNING' && op.steps === undefined));
    assert.deepEqual(runningPage.data.slice(0, 2).map((op: any) => op.id), [...running].reverse(), 'newest first');
    assert.ok(!runningPage.data.some((op: any) => op.id === finished));
    const succeeded = await list('state=SUCCEEDED&limit=100');
    assert.ok(succeeded.data.some((op: any) => op.id === finished));
    assert.ok(succeeded.data.every((op: any) => op.state === 'SUCCEEDED'));
    const both = await list(`state=RUNNING&owner_type=workspace&owner_id=${wsA}&limit=100`);
    assert.ok(running.every((id) => both.data.some((op: any) => op.id === id)));
    assert.deepEqual((await list('state=RUNNING&owner_type=cluster')).data, []);
    assert.deepEqual((await list('state=CANCELLED')).data.filter((op: any) => running.includes(op.id)), []);

    const first = await list('state=RUNNING&limit=1');
    assert.equal(first.data[0].id, running[1]);
    assert.equal(first.has_more, true);
    const second = await list(`state=RUNNING&limit=1&cursor=${first.next_cursor}`);
    assert.equal(second.data[0].id, running[0]);
    for (const query of [`state=FAILED&limit=1&cursor=${first.next_cursor}`, `limit=1&cursor=${first.next_cursor}`]) {
      assert.equal((await t.request('GET', `/v1/operations?${query}`, ctx())).status, 400, `a cursor is bound to its state filter: ${query}`);
    }
    const unfiltered = await list('limit=1');
    assert.equal((await t.request('GET', `/v1/operations?state=RUNNING&limit=1&cursor=${unfiltered.next_cursor}`, ctx())).status, 400);
    for (const bad of ['running', 'PENDING', '']) {
      const res = await t.request('GET', `/v1/operations?state=${bad}`, ctx());
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.error.code, 'INVALID_ARGUMENT');
    }
    for (const id of running) gateOf(id).resolve();
    for (const id of running) assert.equal((await wait(id)).state, 'SUCCEEDED');
    assert.ok(!(await list('state=RUNNING&limit=100')).data.some((op: any) => running.includes(op.id)));
  });

  test("another workspace's operation is not found; malformed ids are 404", async () => {
    const id = await start('test.flaky', { fail_times: 0 }, wsB, bob);
    await t.request('POST', `/v1/operations/${id}:wait`, ctx(bob, wsB));
    for (const [method, path] of [['GET', `/v1/operations/${id}`], ['POST', `/v1/operations/${id}:wait`], ['POST', `/v1/operations/${id}:cancel`]] as const) {
      const res = await t.request(method, path, ctx());
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    const list = await t.request('GET', '/v1/operations?limit=100', ctx());
    assert.ok(list.body.data.every((op: any) => op.workspace_id === wsA));
    assert.equal((await t.request('GET', '/v1/operations/inst_01aaaaaaaaaaaaaaaaaaaaaaaa', ctx())).status, 404);
    assert.equal((await t.request('GET', `/v1/operations/${id}`, ctx(bob, wsA))).status, 403, 'not a member of A');
    assert.equal((await t.request('GET', `/v1/operations/${id}`, { token: bob.token })).status, 403, 'no svc-context');
  });

  // Last: after it, this app's waits no longer sleep.
  test('shutdown releases pending waits at once with the current state', async () => {
    const id = await start('test.gated', {});
    await until(id, (op) => op.steps[0].status === 'running');
    const woken = t.services.operations.waitCounts().woken;
    const pending = t.request('POST', `/v1/operations/${id}:wait?timeout=60`, ctx());
    // Asleep, not still reading: a release during the read is noticed by the loop, not counted as a wake.
    while (t.services.operations.waitCounts().sleeping === 0) await sleep(10);
    t.services.operations.releaseWaiters();
    const res = await pending;
    assert.equal(res.status, 200);
    assert.equal(res.body.state, 'RUNNING', 'released with the current state, not at the operation\'s end');
    assert.ok(t.services.operations.waitCounts().woken > woken, 'released by the shutdown, not by its timeout');
    gateOf(id).resolve();
  });
});
