// Bring your own server (API.md 8.7 with 8.5): an offer with compute {mode: bring_your_own} takes
// the draft from compute to compute_bootstrap; :createWorkerBootstrap gives the customer a join
// command for the draft's cluster; the first machine that joins with it sets server_joined and
// moves the draft to configure; the order then completes on that cluster. A revoked draft keeps a
// cluster the customer's server joined.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { roomyPlans } from './plans-fixtures.js';

const FACTS = { hostname: 'byo-01.example.net', os: 'linux', arch: 'x64', cpu_count: 4, memory_bytes: 8 * 1024 ** 3, kernel: '6.1.0-28-amd64', agent_version: '0.1.0' };

describe('order drafts: bring your own server', () => {
  let t: TestApp;
  let seller: Seller;

  before(async () => {
    t = await startTestApp(roomyPlans());
    seller = await makeSeller(t);
  });
  after(() => t.close());

  /** A draft of a BYO offer waiting for its server, with a join token made for it. */
  async function waitingForServer(buyer: TestUser, offerId: string) {
    const as = customer(t, buyer);
    const bootstrapPhase = await draftToConfigure(t, buyer, offerId);
    assert.equal(bootstrapPhase.status, 'compute_bootstrap', JSON.stringify(bootstrapPhase));
    assert.equal(bootstrapPhase.compute_mode, 'bring_your_own');
    assert.equal(bootstrapPhase.cluster_ready, true);
    assert.equal(bootstrapPhase.server_joined, false);
    const first = await as('POST', `/v1/order_drafts/${bootstrapPhase.id}:createWorkerBootstrap`, { etag: bootstrapPhase.etag, body: { ttl_seconds: 600 } });
    assert.equal(first.status, 200, first.text);
    // A second one revokes the first: only the newest token joins.
    const second = await as('POST', `/v1/order_drafts/${bootstrapPhase.id}:createWorkerBootstrap`, { etag: first.body.order_draft.etag, body: {} });
    assert.equal(second.status, 200, second.text);
    const { order_draft: draft, worker_bootstrap: bootstrap } = second.body;
    assert.equal(draft.status, 'compute_bootstrap');
    assert.match(bootstrap.token, /^svcb_/);
    assert.ok(bootstrap.command.includes(bootstrap.token), bootstrap.command);
    const stale = await t.request('POST', '/v1/machine_joins', { body: { token: first.body.worker_bootstrap.token, facts: FACTS } });
    assert.ok(stale.status >= 400 && stale.status < 500, stale.text);
    return { draft, token: bootstrap.token as string };
  }

  test('the server joins with the draft\'s token: server_joined, configure, then the order is delivered on that cluster', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, compute: { mode: 'bring_your_own' }, commercial_mode: 'non_billable_test' });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, token } = await waitingForServer(buyer, offer.id);
    const joined = await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } });
    assert.equal(joined.status, 201, joined.text);
    const beat = await t.request('POST', '/v1/machine_heartbeats', { token: joined.body.credential, body: { facts: FACTS } });
    assert.equal(beat.status, 200, beat.text);
    // The draft reacts to the machine.joined event after the join's commit, from the job queue.
    const configure = await waitDraft(t, buyer, draft.id, inStatus('configure'));
    assert.equal(configure.status, 'configure');
    assert.equal(configure.server_joined, true);
    const machine = await t.request('GET', `/v1/machines/${joined.body.machine_id}`, { token: buyer.token, headers: { 'svc-context': configure.workspace_id } });
    assert.equal(machine.body.cluster_id, configure.cluster_id);
    // The token was for one machine.
    assert.ok((await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } })).status >= 400);
    const submitted = await as('POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    assert.equal(submitted.status, 200, submitted.text);
    const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done', JSON.stringify(done));
    const install = await t.request('GET', `/v1/installs/${done.delivery.install_id}`, { token: buyer.token, headers: { 'svc-context': done.workspace_id } });
    assert.equal(install.body.cluster_id, done.cluster_id);
    assert.equal(install.body.state, 'healthy');
  });

  test('revoked after the server joined: the draft ends, the cluster with the customer\'s machine on it is kept', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, compute: { mode: 'bring_your_own' } });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, token } = await waitingForServer(buyer, offer.id);
    assert.equal((await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } })).status, 201);
    // Joined once the draft has taken the machine.joined event in (after the join's commit).
    const current = await waitDraft(t, buyer, draft.id, (d) => d.server_joined === true);
    assert.equal((await as('POST', `/v1/order_drafts/${draft.id}:cancel`, { etag: current.etag })).status, 200);
    const ended = await waitDraft(t, buyer, draft.id, inStatus('terminated'));
    assert.equal(ended.termination_reason, 'revoked');
    const cluster = await t.request('GET', `/v1/clusters/${ended.cluster_id}`, { token: buyer.token, headers: { 'svc-context': ended.workspace_id } });
    assert.equal(cluster.status, 200);
    assert.notEqual(cluster.body.state, 'deleting');
  });

  test('revoked while waiting for the server: the cluster is released and the join token no longer works', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, compute: { mode: 'bring_your_own' } });
    const buyer = await t.user('buyer');
    const { draft, token } = await waitingForServer(buyer, offer.id);
    assert.equal((await customer(t, buyer)('POST', `/v1/order_drafts/${draft.id}:cancel`, { etag: draft.etag })).status, 200);
    const ended = await waitDraft(t, buyer, draft.id, inStatus('terminated'));
    assert.equal(ended.termination_reason, 'revoked');
    let status = 0;
    for (let i = 0; i < 600 && status !== 404; i++) {
      status = (await t.request('GET', `/v1/clusters/${ended.cluster_id}`, { token: buyer.token, headers: { 'svc-context': ended.workspace_id } })).status;
      if (status !== 404) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status, 404, 'the empty cluster was released');
    const refused = await t.request('POST', '/v1/machine_joins', { body: { token, facts: FACTS } });
    assert.ok(refused.status >= 400 && refused.status < 500, refused.text);
  });
});
