// Every way an order draft ends (API.md 8.7, termination_reason) and what its cleanup does: the
// draft passes through cleaning_up (the order_draft.cleanup operation) to terminated, the offer's
// use of an unpaid draft is given back, the cluster it registered is deleted unless something is on
// it, an open checkout session is expired at the provider, and a delivered install is never touched.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { assertNamed } from './notification-wording.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, faultOrderClusters, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { plansFile, roomyPlans } from './plans-fixtures.js';

const BROKEN_MANIFEST = {
  routes: [{ route_key: 'web' }],
  resources: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg' }, data: { a: '{{ values.missing }}' } }],
};

/** The checks every termination shares, bound to one app. */
function endings(t: TestApp, seller: () => Seller) {
  const sellerOpts = (extra: Record<string, string> = {}) => ({ token: seller().user.token, headers: { 'svc-context': seller().ws, ...extra } });
  const uses = async (offerId: string): Promise<number> => (await t.request('GET', `/v1/offers/${offerId}`, sellerOpts())).body.uses;

  /** Waits for `terminated` with `reason`; the cleanup operation ran (the draft was cleaning_up) unless nothing was allocated. */
  async function terminated(buyer: TestUser, id: string, reason: string): Promise<any> {
    const draft = await waitDraft(t, buyer, id, inStatus('terminated', 'done'), `terminated (${reason})`);
    assert.equal(draft.status, 'terminated', JSON.stringify(draft));
    assert.equal(draft.termination_reason, reason, JSON.stringify(draft));
    if (draft.workspace_id) {
      const ops = await t.services.db.selectFrom('operations').select(['state']).where('owner_id', '=', id).where('type', '=', 'order_draft.cleanup').execute();
      assert.deepEqual(ops.map((o) => o.state), ['SUCCEEDED'], 'one cleanup, done');
    }
    return draft;
  }

  /** The draft's cluster: gone (its delete finished) or kept as it was. */
  async function clusterGone(buyer: TestUser, draft: { workspace_id: string; cluster_id: string }): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const res = await t.request('GET', `/v1/clusters/${draft.cluster_id}`, { token: buyer.token, headers: { 'svc-context': draft.workspace_id } });
      if (res.status === 404) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`cluster ${draft.cluster_id} was not released`);
  }
  const cluster = (buyer: TestUser, draft: { workspace_id: string; cluster_id: string }) =>
    t.request('GET', `/v1/clusters/${draft.cluster_id}`, { token: buyer.token, headers: { 'svc-context': draft.workspace_id } });

  return { sellerOpts, uses, terminated, clusterGone, cluster };
}

describe('order drafts: every termination and its cleanup', () => {
  let t: TestApp;
  let seller: Seller;
  let e: ReturnType<typeof endings>;

  before(async () => {
    t = await startTestApp({ ...roomyPlans(), SVC_RETRY_BACKOFF_SCALE: '0.01' });
    seller = await makeSeller(t);
    e = endings(t, () => seller);
  });
  afterEach(() => {
    clock.offsetMs = 0;
  });
  after(() => t.close());

  async function inPayment(buyer: TestUser, offerId: string) {
    const as = customer(t, buyer);
    const configure = await draftToConfigure(t, buyer, offerId);
    const paying = (await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } })).body;
    const session = await as('POST', `/v1/order_drafts/${configure.id}/checkout_sessions`, { etag: paying.etag });
    assert.equal(session.status, 201, session.text);
    return { draft: (await as('GET', `/v1/order_drafts/${configure.id}`)).body, session: session.body };
  }

  test('revoked by the customer (in payment: the open session expired at the provider) and by a seller member; idempotent', async () => {
    const offer = await makeOffer(t, seller, { max_uses: 2 });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, session } = await inPayment(buyer, offer.id);
    assert.equal(await e.uses(offer.id), 1);
    const cancelled = await as('POST', `/v1/order_drafts/${draft.id}:cancel`, { etag: draft.etag });
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.ok(['cleaning_up', 'terminated'].includes(cancelled.body.status), cancelled.body.status);
    assert.equal(cancelled.body.termination_reason, 'revoked');
    const ended = await e.terminated(buyer, draft.id, 'revoked');
    await e.clusterGone(buyer, ended);
    assert.equal((await t.services.localPayments.findSession(session.id))!.status, 'expired');
    assert.equal(await e.uses(offer.id), 0, 'the use is given back');
    const again = await as('POST', `/v1/order_drafts/${draft.id}:cancel`, { etag: draft.etag });
    assert.equal(again.status, 200);
    assert.equal(again.body.etag, ended.etag, 'a repeated cancel changes nothing');

    const other = await t.user('buyer');
    const configure = await draftToConfigure(t, other, offer.id);
    const member = await t.user('clerk');
    await t.addMember(seller.user, seller.ws, member, 'member');
    const bySeller = await t.request('POST', `/v1/order_drafts/${configure.id}:cancel`, { token: member.token, headers: { 'svc-context': seller.ws, 'if-match': configure.etag } });
    assert.equal(bySeller.status, 200, bySeller.text);
    const gone = await e.terminated(other, configure.id, 'revoked');
    await e.clusterGone(other, gone);
    assert.equal(await e.uses(offer.id), 0);
    // A draft begun signed out and never claimed ends at once: it allocated nothing.
    const begun = (await t.request('POST', '/v1/order_drafts:begin', { body: { short_hash: offer.short_hash } })).body;
    const early = await t.request('POST', `/v1/order_drafts/${begun.order_draft.id}:cancel`, e.sellerOpts({ 'if-match': begun.order_draft.etag }));
    assert.equal(early.body.status, 'terminated', early.text);
  });

  test('timeout: the customer is told once before, then the sweep ends the draft past its ttl', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, order_ttl_minutes: 60 });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const draft = await draftToConfigure(t, buyer, offer.id);
    const notices = async () => (await as('GET', '/v1/notifications?limit=50')).body.data
      .filter((n: { type: string; resource_id: string }) => n.type === 'order_draft_expiring' && n.resource_id === draft.id);
    assert.equal((await notices()).length, 0);
    clock.offsetMs = (draft.ttl_expires_at - clock.now() - 600) * 1000;
    await t.runtime.sweepOrders();
    await t.runtime.sweepOrders();
    assert.equal((await notices()).length, 1, 'told once');
    assertNamed((await notices())[0], '"Hello, hosted" expires soon');
    assert.equal((await as('GET', `/v1/order_drafts/${draft.id}`)).body.status, 'configure', 'not ended before its ttl');
    clock.offsetMs = (draft.ttl_expires_at - clock.now() + 1) * 1000 + clock.offsetMs;
    await t.runtime.sweepOrders();
    const ended = await e.terminated(buyer, draft.id, 'timeout');
    await e.clusterGone(buyer, ended);
    assert.equal((await notices()).length, 1, 'no second notice');
  });

  test('offer_expired: archiving ends the unpaid drafts (a delivered one untouched); an expired offer\'s drafts end by the sweep or at the next verb', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const free = await makeOffer(t, seller, { max_uses: null, commercial_mode: 'non_billable_test' });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const configure = await draftToConfigure(t, buyer, offer.id);
    const { draft: paying, session } = await inPayment(buyer, offer.id);
    const toDeliver = await draftToConfigure(t, buyer, free.id);
    await as('POST', `/v1/order_drafts/${toDeliver.id}:submitConfiguration`, { etag: toDeliver.etag, body: { field_values: {} } });
    const done = await waitDraft(t, buyer, toDeliver.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done');
    for (const o of [offer, free]) {
      const current = (await t.request('GET', `/v1/offers/${o.id}`, e.sellerOpts())).body;
      assert.equal((await t.request('DELETE', `/v1/offers/${o.id}`, e.sellerOpts({ 'if-match': current.etag }))).status, 200);
    }
    for (const d of [configure, paying]) await e.clusterGone(buyer, await e.terminated(buyer, d.id, 'offer_expired'));
    assert.equal((await t.services.localPayments.findSession(session.id))!.status, 'expired');
    assert.equal(await e.uses(offer.id), 0);
    const still = (await as('GET', `/v1/order_drafts/${done.id}`)).body;
    assert.equal(still.status, 'done');
    const install = await t.request('GET', `/v1/installs/${done.delivery.install_id}`, { token: buyer.token, headers: { 'svc-context': done.workspace_id } });
    assert.equal(install.body.state, 'healthy', 'the delivered install is untouched');
    assert.equal((await e.cluster(buyer, done)).status, 200);

    // An offer that expires: the next verb ends its draft (422), and so does the sweep.
    const expiring = await makeOffer(t, seller, { max_uses: null, expires_at: clock.now() + 600 });
    const [c1, c2] = [await draftToConfigure(t, buyer, expiring.id), await draftToConfigure(t, buyer, expiring.id)];
    const p1 = (await inPayment(buyer, expiring.id)).draft;
    clock.offsetMs = 700_000;
    const submit = await as('POST', `/v1/order_drafts/${c1.id}:submitConfiguration`, { etag: c1.etag, body: { field_values: {} } });
    assert.equal(submit.status, 422, submit.text);
    assert.equal(submit.body.error.reason, 'OFFER_NOT_REDEEMABLE');
    const checkout = await as('POST', `/v1/order_drafts/${p1.id}/checkout_sessions`, { etag: p1.etag });
    assert.equal(checkout.status, 422, checkout.text);
    assert.equal(checkout.body.error.reason, 'OFFER_NOT_REDEEMABLE');
    const swept = await t.runtime.sweepOrders();
    assert.ok(swept.offer_expired <= 1);
    for (const d of [c1, p1, c2]) await e.clusterGone(buyer, await e.terminated(buyer, d.id, 'offer_expired'));
    assert.equal(await e.uses(expiring.id), 0);
  });

  test('install_failed: the order delivery_failed, the seller\'s owners and admins told; the cluster and the failed install kept', async () => {
    const h = e.sellerOpts();
    const pkg = await t.request('POST', '/v1/packages', { ...h, body: { name: 'broken' } });
    const v = await t.request('POST', `/v1/packages/${pkg.body.id}/versions`, { ...h, body: { semver: '1.0.0', input_schema: { type: 'object' }, manifest: BROKEN_MANIFEST } });
    assert.equal(v.status, 201, v.text);
    const offer = (await t.request('POST', '/v1/offers', {
      ...h, body: { package_id: pkg.body.id, title: 'Broken', pricing: { currency: 'eur', unit_amount: 100, interval: 'one_time' }, commercial_mode: 'non_billable_test' },
    })).body;
    const admin = await t.user('admin');
    const member = await t.user('member');
    await t.addMember(seller.user, seller.ws, admin, 'admin');
    await t.addMember(seller.user, seller.ws, member, 'member');
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const configure = await draftToConfigure(t, buyer, offer.id);
    const submitted = await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    assert.equal(submitted.status, 200, submitted.text);
    const ended = await e.terminated(buyer, configure.id, 'install_failed');
    const order = (await t.request('GET', `/v1/orders/${ended.order.id}`, h)).body;
    assert.equal(order.status, 'delivery_failed', JSON.stringify(order));
    assert.match(order.delivery.install_id, /^inst_/);
    const notes = async (user: TestUser) => (await t.request('GET', '/v1/notifications?limit=50', { token: user.token })).body.data
      .filter((n: { type: string; resource_id: string }) => n.type === 'order_delivery_failed' && n.resource_id === order.id);
    const told = async (user: TestUser) => (await notes(user)).length;
    assert.equal(await told(seller.user), 1);
    const [failed] = await notes(seller.user);
    assertNamed(failed, 'Delivering "Broken" failed');
    assert.equal(failed.context.order_id, order.id);
    assert.equal(await told(admin), 1);
    assert.equal(await told(member), 0);
    const cluster = await e.cluster(buyer, ended);
    assert.equal(cluster.status, 200, 'the cluster with the failed install on it is kept');
    assert.notEqual(cluster.body.state, 'deleting');
    const install = await t.request('GET', `/v1/installs/${order.delivery.install_id}`, { token: buyer.token, headers: { 'svc-context': ended.workspace_id } });
    assert.equal(install.status, 200);
    assert.equal(install.body.state, 'failed');
  });

  test('cluster_allocation_failed: a cluster.create that fails ends the draft; the use is given back', async () => {
    const offer = await makeOffer(t, seller, { max_uses: 1 });
    const buyer = await t.user('buyer');
    const removeFaults = await faultOrderClusters(t.services.db, [{ action: 'provision', fail_times: 100 }]);
    try {
      const created = (await customer(t, buyer)('POST', `/v1/offers/${offer.id}/order_drafts`)).body;
      await customer(t, buyer)('POST', `/v1/order_drafts/${created.id}:selectWorkspace`, { etag: created.etag, body: { kind: 'new', name: 'Unlucky' } });
      const ended = await e.terminated(buyer, created.id, 'cluster_allocation_failed');
      assert.equal(ended.cluster_ready, false);
      await e.clusterGone(buyer, ended);
      assert.equal(await e.uses(offer.id), 0);
    } finally {
      await removeFaults();
    }
  });
});

describe('order drafts: quota_exceeded', () => {
  let t: TestApp;
  let seller: Seller;
  let e: ReturnType<typeof endings>;

  before(async () => {
    t = await startTestApp({ SVC_PLANS_FILE: plansFile({ 'compute/clusters': 1, 'installs/installs': 0, 'workspaces/owned': 100 }), SVC_RETRY_BACKOFF_SCALE: '0.01' });
    seller = await makeSeller(t);
    e = endings(t, () => seller);
  });
  after(() => t.close());

  test('no room for a cluster in the chosen workspace: the draft ends in compute, its use given back', async () => {
    const offer = await makeOffer(t, seller, { max_uses: 1 });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const ws = await t.workspace(buyer, 'Full');
    const own = await t.request('POST', '/v1/clusters', { token: buyer.token, headers: { 'svc-context': ws.id }, body: { name: 'mine' } });
    assert.equal(own.status, 202, own.text);
    const draft = (await as('POST', `/v1/offers/${offer.id}/order_drafts`)).body;
    const picked = await as('POST', `/v1/order_drafts/${draft.id}:selectWorkspace`, { etag: draft.etag, body: { kind: 'existing', workspace_id: ws.id } });
    assert.equal(picked.status, 200, picked.text);
    const ended = await e.terminated(buyer, draft.id, 'quota_exceeded');
    assert.equal(ended.cluster_id, undefined);
    assert.equal(await e.uses(offer.id), 0);
    assert.equal((await t.request('GET', `/v1/clusters/${own.body.owner_id}`, { token: buyer.token, headers: { 'svc-context': ws.id } })).status, 200, 'the customer\'s own cluster is untouched');
  });

  test('no room for the install: the order delivery_failed, the draft ends in install, its cluster released', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, commercial_mode: 'non_billable_test' });
    const buyer = await t.user('buyer');
    const configure = await draftToConfigure(t, buyer, offer.id);
    await customer(t, buyer)('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    const ended = await e.terminated(buyer, configure.id, 'quota_exceeded');
    const order = (await t.request('GET', `/v1/orders/${ended.order.id}`, e.sellerOpts())).body;
    assert.equal(order.status, 'delivery_failed');
    assert.equal(order.delivery.install_id, null);
    await e.clusterGone(buyer, ended);
  });
});
