// The whole flow of API.md 8.7 as two users, with an offer that charges nothing (the paid flow
// through a payment provider is in orders-payments.test.ts): offer -> draft -> workspace ->
// compute (a cluster registered in the customer's workspace) -> configure -> install -> done,
// the order delivered with the install's URLs, each side seeing what it may.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertNamed } from './notification-wording.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';

describe('order flow (free offer)', () => {
  let t: TestApp;
  let seller: Seller;
  let buyer: TestUser;

  before(async () => {
    t = await startTestApp();
    seller = await makeSeller(t);
    buyer = await t.user('buyer');
  });
  after(() => t.close());

  test('a customer orders a free offer and receives a running install; the seller sees the order without the values', async () => {
    const offer = await makeOffer(t, seller, { commercial_mode: 'non_billable_test' });
    const as = customer(t, buyer);
    const configure = await draftToConfigure(t, buyer, offer.id);
    assert.equal(configure.status, 'configure');
    assert.equal(configure.cluster_ready, true);
    assert.match(configure.cluster_id, /^clu_/);
    assert.deepEqual(configure.locked_keys, ['greeting']);
    assert.deepEqual(configure.field_values, { greeting: 'Hi from ACME' });
    const submitted = await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: { replicas: 2 } } });
    assert.equal(submitted.status, 200, submitted.text);
    assert.equal(submitted.body.status, 'install');
    assert.equal(submitted.body.payment_completed, true);
    assert.deepEqual(submitted.body.field_values, { greeting: 'Hi from ACME', replicas: 2 });
    const done = await waitDraft(t, buyer, configure.id, inStatus('done', 'terminated'), 'done');
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.match(done.order.id, /^ord_/);
    assert.equal(done.order.payment_provider_checkout_id, null);
    assert.match(done.delivery.install_id, /^inst_/);
    assert.ok(done.delivery.urls.length >= 1, JSON.stringify(done.delivery));
    assert.ok(done.delivery.completed_at >= done.delivery.started_at);
    assert.equal(done.install_operation_id, done.delivery.install_operation_id);

    // The install is the customer's, in their workspace, with the merged values.
    const install = await t.request('GET', `/v1/installs/${done.delivery.install_id}`, { token: buyer.token, headers: { 'svc-context': done.workspace_id } });
    assert.equal(install.status, 200, install.text);
    assert.equal(install.body.state, 'healthy');

    // The seller: the draft without field_values, the order, the audit event.
    const sellerHeaders = { token: seller.user.token, headers: { 'svc-context': seller.ws } };
    const seen = await t.request('GET', `/v1/order_drafts/${configure.id}`, sellerHeaders);
    assert.equal(seen.status, 200);
    assert.equal(seen.body.field_values, undefined);
    assert.equal(seen.body.locked_keys, undefined);
    assert.equal(seen.body.status, 'done');
    const orders = await t.request('GET', '/v1/orders', sellerHeaders);
    assert.deepEqual(orders.body.data.map((o: { id: string }) => o.id), [done.order.id]);
    assert.equal(orders.body.data[0].status, 'delivered');
    const audit = await t.request('GET', `/v1/audit_events?resource_id=${done.order.id}`, sellerHeaders);
    assert.deepEqual(audit.body.data.map((e: { action: string }) => e.action), ['order.commit']);
    const mine = await as('GET', '/v1/orders');
    assert.deepEqual(mine.body.data.map((o: { id: string }) => o.id), [done.order.id]);

    // Nobody else sees any of it.
    const stranger = await t.user('stranger');
    assert.equal((await customer(t, stranger)('GET', `/v1/order_drafts/${configure.id}`)).status, 404);
    assert.equal((await customer(t, stranger)('GET', `/v1/orders/${done.order.id}`)).status, 404);
    // The offer's id leads to its page for the seller, and to nothing for anyone else.
    const lookup = await t.request('GET', `/v1/lookup/${offer.id}`, { token: seller.user.token });
    assert.equal(lookup.status, 200, lookup.text);
    assert.equal(lookup.body.workspace_id, seller.ws);
    assert.equal(lookup.body.html_url, `${t.config.publicUrl}/offers/${offer.id}`);
    assert.equal((await customer(t, stranger)('GET', `/v1/lookup/${offer.id}`)).status, 404);
    const notifications = await as('GET', '/v1/notifications');
    const delivered = notifications.body.data.find((n: { type: string }) => n.type === 'order_delivered');
    assert.ok(delivered, JSON.stringify(notifications.body));
    assertNamed(delivered, '"Hello, hosted" is ready');
  });
});
