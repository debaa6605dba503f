// Domain events (src/events/, API.md 8.11): recorded in the transaction of the change they report
// (and not when it rolls back), shaped as the resource's GET; their subscribers run after commit
// from the job queue, once, also when the process that should have run them stopped or died first.
// The real flow: a customer's own server joins (POST /v1/machine_joins) with their order draft's
// token; the orders module reacts to machine.joined and moves the draft to configure. An install's
// deletion records install.deleted in the transaction that removes it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { recordEvent } from '../src/events/record.js';
import { clock } from '../src/platform/clock.js';
import { createSystem } from '../src/system.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { InstallFixtures, type Caller } from './installs-fixtures.js';
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

  /** The events about a draft or order, by its id, oldest first. */
  const eventsAbout = async (id: string) =>
    (await t.services.db.selectFrom('events').selectAll().orderBy('id').execute())
      .map((e) => ({ ...e, data: JSON.parse(e.data) }))
      .filter((e) => e.data.id === id);
  /** A GET by a member of the seller's workspace. */
  const sellerGet = (url: string) => t.request('GET', url, { token: seller.user.token, headers: { 'svc-context': seller.ws } });

  test('a draft\'s termination records order_draft.terminated in the seller\'s workspace, the draft as the seller\'s GET returns it', async () => {
    const buyer = await t.user('buyer');
    const offer = await makeOffer(t, seller, { max_uses: null });
    const configure = await draftToConfigure(t, buyer, offer.id);
    const cancelled = await customer(t, buyer)('POST', `/v1/order_drafts/${configure.id}:cancel`, { etag: configure.etag });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal((await eventsAbout(configure.id)).filter((e) => e.type === 'order_draft.terminated').length,
      cancelled.body.status === 'terminated' ? 1 : 0, 'recorded with the terminate move, not before it');
    await waitDraft(t, buyer, configure.id, inStatus('terminated'), 'terminated');
    const seen = await sellerGet(`/v1/order_drafts/${configure.id}`);
    assert.equal(seen.status, 200, seen.text);
    const events = await eventsAbout(configure.id);
    assert.deepEqual(events.map((e) => e.type), ['order_draft.terminated']);
    assert.equal(events[0]!.workspace_id, seller.ws);
    assert.deepEqual(events[0]!.data, seen.body);
    assert.equal(events[0]!.data.termination_reason, 'revoked');
  });

  test('a delivery records order.delivered in the seller\'s workspace, the order as the seller\'s GET returns it', async () => {
    const buyer = await t.user('buyer');
    const offer = await makeOffer(t, seller, { max_uses: null, commercial_mode: 'non_billable_test' });
    const configure = await draftToConfigure(t, buyer, offer.id);
    const submitted = await customer(t, buyer)('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    assert.equal(submitted.status, 200, submitted.text);
    const done = await waitDraft(t, buyer, configure.id, inStatus('done', 'terminated'), 'done');
    assert.equal(done.status, 'done', JSON.stringify(done));
    const order = await sellerGet(`/v1/orders/${done.order.id}`);
    assert.equal(order.status, 200, order.text);
    assert.equal(order.body.status, 'delivered');
    const events = await eventsAbout(done.order.id);
    assert.deepEqual(events.map((e) => e.type), ['order.delivered']);
    assert.equal(events[0]!.workspace_id, seller.ws);
    assert.deepEqual(events[0]!.data, order.body);
    assert.deepEqual(await eventsAbout(configure.id), [], 'a delivered draft is not terminated');
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

describe('install events', () => {
  let t: TestApp;
  let f: InstallFixtures;
  let A: Caller;

  before(async () => {
    t = await startTestApp();
    f = new InstallFixtures(t);
    const alice = await t.user('alice');
    A = { user: alice, ws: (await t.workspace(alice, 'A')).id };
  });
  after(() => t.close());

  const eventsOf = async (installId: string) =>
    (await t.services.db.selectFrom('events').selectAll().orderBy('id').execute())
      .map((e) => ({ ...e, data: JSON.parse(e.data) }))
      .filter((e) => e.data.id === installId);

  test('an install\'s deletion records install.deleted with the install as its GET showed it last, once the install is gone', async () => {
    const { pkgId } = await f.packageWithVersion(A);
    const clusterId = await f.cluster(A, [{ action: 'undeploy', latency_ms: 200 }]);
    const installId = (await f.healthyInstall(A, pkgId, clusterId, { replicas: 2 })).owner_id as string;
    const live = (await f.getInstall(A, installId)).body;
    const etag = live.etag;
    const del = await t.request('DELETE', `/v1/installs/${installId}`, f.opts(A, { headers: { 'if-match': etag } }));
    assert.equal(del.status, 202, del.text);
    // Recorded with the change, not before it: none while the install is still there.
    const during = await f.getInstall(A, installId);
    if (during.status === 200) assert.ok(!(await eventsOf(installId)).some((e) => e.type === 'install.deleted'));
    assert.equal((await f.waitOp(A, del.body.id)).state, 'SUCCEEDED');
    assert.equal((await f.getInstall(A, installId)).status, 404);

    const events = await eventsOf(installId);
    assert.deepEqual(events.map((e) => e.type), ['install.created', 'install.deleted']);
    const deleted = events[1]!;
    assert.match(deleted.id, /^evt_[0-9a-z]{26}$/);
    assert.equal(deleted.workspace_id, A.ws);
    assert.ok(Math.abs(Number(deleted.created_at) - clock.now()) < 60);
    // The install as GET returned it, in the state its deletion left it: undeployed, reconciling.
    const { state, reconciling, etag: lastEtag, updated_at: updatedAt, ...rest } = deleted.data;
    const { state: _s, reconciling: _r, etag: _e, updated_at: _u, ...liveRest } = live;
    assert.deepEqual(rest, liveRest);
    assert.equal(state, 'deleted');
    assert.equal(reconciling, true);
    assert.notEqual(lastEtag, etag);
    assert.ok(updatedAt >= live.updated_at);
    assert.deepEqual(rest.values, { replicas: 2, greeting: 'hello' });
  });
});
