// Domain events (src/events/, API.md 8.11): recorded in the transaction of the change they report
// (and not when it rolls back), shaped as the resource's GET; their subscribers run after commit
// from the job queue, once, also when the process that should have run them stopped or died first.
// The real flow: a customer's own server joins (POST /v1/machine_joins) with their order draft's
// token; the orders module reacts to machine.joined and moves the draft to configure.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { recordEvent } from '../src/events/record.js';
import { clock } from '../src/platform/clock.js';
import { createSystem } from '../src/system.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { roomyPlans } from './plans-fixtures.js';

const FACTS = { hostname: 'evt-01.example.net', os: 'linux', arch: 'x64', cpu_count: 2, memory_bytes: 4 * 1024 ** 3, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

describe('domain events', () => {
  let t: TestApp;
  let seller: Seller;

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_JOB_POLL_MS: '100' });
    seller = await makeSeller(t);
  });
  after(() => t.close());

  /** A BYO draft waiting for its server, and the token its server joins with. */
  async function waitingForServer(buyer: TestUser) {
    const offer = await makeOffer(t, seller, { max_uses: null, compute: { mode: 'bring_your_own' } });
    const draft = await draftToConfigure(t, buyer, offer.id);
    assert.equal(draft.status, 'compute_bootstrap', JSON.stringify(draft));
    const made = await customer(t, buyer)('POST', `/v1/order_drafts/${draft.id}:createWorkerBootstrap`, { etag: draft.etag, body: {} });
    assert.equal(made.status, 200, made.text);
    return { draft: made.body.order_draft, token: made.body.worker_bootstrap.token as string };
  }

  const eventsOf = async (machineId: string) =>
    (await t.services.db.selectFrom('events').selectAll().orderBy('id').execute())
      .map((e) => ({ ...e, data: JSON.parse(e.data) }))
      .filter((e) => e.data.id === machineId);
  const eventJobs = () => t.services.db.selectFrom('jobs').selectAll().where('event_id', 'is not', null).execute();

  test('a join records machine.created and machine.joined with it, each the machine as its GET returns it; the draft reacts after commit', async () => {
    const buyer = await t.user('buyer');
    const { draft, token } = await waitingForServer(buyer);
    const joined = await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } });
    assert.equal(joined.status, 201, joined.text);
    const machine = await t.request('GET', `/v1/machines/${joined.body.machine_id}`, { token: buyer.token, headers: { 'svc-context': draft.workspace_id } });
    assert.equal(machine.status, 200, machine.text);
    const events = await eventsOf(joined.body.machine_id);
    assert.deepEqual(events.map((e) => e.type), ['machine.created', 'machine.joined']);
    for (const e of events) {
      assert.match(e.id, /^evt_[0-9a-z]{26}$/);
      assert.equal(e.workspace_id, draft.workspace_id);
      assert.deepEqual(e.data, machine.body);
      assert.ok(Math.abs(Number(e.created_at) - clock.now()) < 60);
    }
    const moved = await waitDraft(t, buyer, draft.id, inStatus('configure'));
    assert.equal(moved.server_joined, true);
    // The subscriber's job ended with its effect.
    assert.deepEqual(await eventJobs(), []);
  });

  test('an event recorded in a transaction that rolls back leaves neither the event nor its subscribers\' jobs', async () => {
    const buyer = await t.user('buyer');
    const ws = (await t.workspace(buyer, 'Rolled back')).id;
    const before = (await t.services.db.selectFrom('events').select('id').execute()).length;
    await assert.rejects(t.services.db.transaction().execute(async (tx) => {
      await recordEvent(tx, { type: 'machine.joined', workspace_id: ws, data: { id: 'mch_never', cluster_id: 'clu_never' } });
      assert.equal((await tx.selectFrom('jobs').select('id').where('event_id', 'is not', null).execute()).length, 1, 'enqueued in the same transaction');
      throw new Error('the change failed');
    }), /the change failed/);
    assert.equal((await t.services.db.selectFrom('events').select('id').execute()).length, before);
    assert.deepEqual(await eventJobs(), []);
  });

  test('a subscriber whose process stopped before it ran, and whose next worker died holding it, runs once when another instance starts', async () => {
    const buyer = await t.user('buyer');
    const { draft, token } = await waitingForServer(buyer);
    // This process stops working the queue: it still serves requests, no job of it runs.
    await t.runtime.stop(2000);
    const joined = await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } });
    assert.equal(joined.status, 201, joined.text);
    const [job, ...others] = await eventJobs();
    assert.equal(others.length, 0);
    assert.equal(job!.kind, 'event:orders.server_joined');
    const pending = (await customer(t, buyer)('GET', `/v1/order_drafts/${draft.id}`)).body;
    assert.equal(pending.status, 'compute_bootstrap', 'nothing reacted before a worker ran the job');
    // A worker claimed the job and died: its lease runs out unrenewed.
    await t.services.db.updateTable('jobs').set({ lease_token: 'dead-worker-token', locked_by: 'dead-worker', locked_until: clock.nowMs() + 500, claims: 1 })
      .where('id', '=', job!.id).execute();
    // Another instance over the same database, with a worker pool.
    const other = await createSystem(t.config, { database: t.services });
    try {
      const moved = await waitDraft(t, buyer, draft.id, inStatus('configure'));
      assert.equal(moved.server_joined, true);
      assert.equal(Number(moved.etag.replace(/\D/g, '')), Number(pending.etag.replace(/\D/g, '')) + 1, 'the draft moved once');
      assert.deepEqual(await eventJobs(), []);
    } finally {
      await other.close();
    }
    assert.deepEqual((await eventsOf(joined.body.machine_id)).map((e) => e.type), ['machine.created', 'machine.joined'], 'recorded once');
  });
});
