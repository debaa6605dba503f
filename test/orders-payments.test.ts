// Paying for an order through the local payment provider (API.md 8.7), end to end over HTTP: the
// checkout session created or reused (endpoint 13), the payment reaching the service by its signed
// webhook and by the return page in every order (one order, whatever comes first or twice), a
// stale session replaced, a payment that arrives after its draft ended refunded, renewals of a
// recurring order, and an offer's last use raced for by many customers.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';

type Captured = { body: string; headers: Record<string, string> };

describe('orders paid through the local provider', () => {
  let t: TestApp;
  let seller: Seller;
  /** events the local provider sent, held back when `hold` is set (the test delivers them itself) */
  const captured: Captured[] = [];
  let hold = false;
  let deliverForReal: (body: string, headers: Record<string, string>) => Promise<number>;

  before(async () => {
    t = await startTestApp({ SVC_LOCAL_PAYMENTS_MONTH_S: '100' }, {
      paymentDelivery: (toRoute) => {
        deliverForReal = toRoute;
        return async (body, headers) => {
          captured.push({ body, headers });
          return hold ? 503 : deliverForReal(body, headers);
        };
      },
    });
    seller = await makeSeller(t);
  });
  afterEach(() => {
    hold = false;
    clock.offsetMs = 0;
  });
  after(() => t.close());

  const webhook = (c: Captured) => t.request('POST', '/v1/payment_webhooks/local', { payload: c.body, headers: c.headers });
  const returnPage = (sessionId: string) => t.request('GET', `/checkout/return/local?session_id=${sessionId}`);

  /** A new customer's draft in payment, with its open checkout session. */
  async function inPayment(buyer: TestUser, offerId: string) {
    const configure = await draftToConfigure(t, buyer, offerId);
    const as = customer(t, buyer);
    const paying = await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } });
    assert.equal(paying.status, 200, paying.text);
    assert.equal(paying.body.status, 'payment');
    const session = await as('POST', `/v1/order_drafts/${configure.id}/checkout_sessions`, { etag: paying.body.etag });
    assert.equal(session.status, 201, session.text);
    return { draft: paying.body, session: session.body as { id: string; url: string; expires_at: number } };
  }

  async function ordersOfDraft(draftId: string) {
    const res = await t.request('GET', '/v1/orders?limit=100', { token: seller.user.token, headers: { 'svc-context': seller.ws } });
    return res.body.data.filter((o: { order_draft_id: string }) => o.order_draft_id === draftId);
  }

  for (const order of [['webhook', 'return'], ['return', 'webhook'], ['webhook', 'webhook', 'return'], ['return', 'return']] as const) {
    test(`paid once whatever the order of its reports: ${order.join(' then ')}`, async () => {
      const offer = await makeOffer(t, seller, { max_uses: null });
      const buyer = await t.user('buyer');
      const { draft, session } = await inPayment(buyer, offer.id);
      assert.match(session.id, /^chk_/);
      assert.equal(session.url, `${t.config.publicUrl}/checkout/${session.id}`);
      // The same call again reuses the open session of this revision.
      const again = await customer(t, buyer)('POST', `/v1/order_drafts/${draft.id}/checkout_sessions`, { etag: (await customer(t, buyer)('GET', `/v1/order_drafts/${draft.id}`)).body.etag });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.id, session.id);
      hold = true;
      const before = captured.length;
      assert.equal(await t.services.localPayments.pay(session.id, '4242'), 'paid');
      const event = captured[before]!;
      assert.ok(event, 'the provider sent an event');
      for (const step of order) {
        if (step === 'webhook') {
          const res = await webhook(event);
          assert.equal(res.status, 200, res.text);
        } else {
          const res = await returnPage(session.id);
          assert.equal(res.status, 303);
          assert.equal(res.headers.location, `/order_drafts/${draft.id}?checkout=returned`);
        }
      }
      const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
      assert.equal(done.status, 'done', JSON.stringify(done));
      assert.equal(done.payment_completed, true);
      assert.equal(done.order.payment_provider_checkout_id, session.id);
      const orders = await ordersOfDraft(draft.id);
      assert.equal(orders.length, 1);
      assert.equal(orders[0].amount, 4900);
      assert.equal(orders[0].payment_provider, 'local');
      // A late repeat of the event changes nothing.
      const late = await webhook(event);
      assert.equal(late.body.outcome, 'duplicate');
      assert.equal((await ordersOfDraft(draft.id)).length, 1);
    });
  }

  test('a forged or replayed-old webhook is 400 and changes nothing', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const { draft, session } = await inPayment(buyer, offer.id);
    hold = true;
    const before = captured.length;
    await t.services.localPayments.pay(session.id, '4242');
    const event = captured[before]!;
    const forged = await webhook({ body: event.body, headers: { ...event.headers, 'svc-signature': event.headers['svc-signature']!.replace(/v1=[0-9a-f]{4}/, 'v1=0000') } });
    assert.equal(forged.status, 400);
    assert.equal(forged.body.error.reason, 'WEBHOOK_SIGNATURE_INVALID');
    const tampered = await webhook({ body: event.body.replace('"complete"', '"expired"'), headers: event.headers });
    assert.equal(tampered.status, 400);
    // Bodies that are not JSON, or nest past any bound, are refused by the signature before anything parses them.
    for (const body of ['{', '[1, 2', `${'['.repeat(5000)}${']'.repeat(5000)}`, '']) {
      const res = await webhook({ body, headers: { ...event.headers, 'content-type': 'application/json' } });
      assert.equal(res.status, 400, body.slice(0, 20));
      assert.equal(res.body.error.reason, 'WEBHOOK_SIGNATURE_INVALID', res.text);
    }
    assert.equal((await t.request('POST', '/v1/payment_webhooks/paypal', { payload: event.body, headers: event.headers })).status, 400);
    clock.offsetMs = 10 * 60 * 1000;
    assert.equal((await webhook(event)).status, 400, 'an event signed 10 minutes ago is refused');
    clock.offsetMs = 0;
    assert.equal((await customer(t, buyer)('GET', `/v1/order_drafts/${draft.id}`)).body.payment_completed, false);
    assert.equal((await webhook(event)).status, 200);
    await waitDraft(t, buyer, draft.id, inStatus('done'));
  });

  test('a changed configuration makes the open session stale: the next call expires it and opens another', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, session } = await inPayment(buyer, offer.id);
    const current = (await as('GET', `/v1/order_drafts/${draft.id}`)).body;
    assert.equal(current.current_checkout_session.id, session.id);
    const revised = await as('POST', `/v1/order_drafts/${draft.id}:submitConfiguration`, { etag: current.etag, body: { field_values: { replicas: 3 } } });
    assert.equal(revised.status, 200, revised.text);
    assert.equal(revised.body.status, 'payment');
    const next = await as('POST', `/v1/order_drafts/${draft.id}/checkout_sessions`, { etag: revised.body.etag });
    assert.equal(next.status, 201, next.text);
    assert.notEqual(next.body.id, session.id);
    assert.equal((await t.services.localPayments.findSession(session.id))!.status, 'expired');
    assert.equal(await t.services.localPayments.pay(session.id, '4242'), 'expired');
    const shown = (await as('GET', `/v1/order_drafts/${draft.id}`)).body;
    assert.equal(shown.current_checkout_session.id, next.body.id);
    assert.equal(shown.current_checkout_session.draft_revision, current.current_checkout_session.draft_revision + 1);
  });

  test('a payment that arrives after its draft ended is refunded, and no order is made', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, session } = await inPayment(buyer, offer.id);
    hold = true;
    const before = captured.length;
    assert.equal(await t.services.localPayments.pay(session.id, '4242'), 'paid');
    const current = (await as('GET', `/v1/order_drafts/${draft.id}`)).body;
    const cancelled = await as('POST', `/v1/order_drafts/${draft.id}:cancel`, { etag: current.etag });
    assert.equal(cancelled.status, 200, cancelled.text);
    const ended = await waitDraft(t, buyer, draft.id, inStatus('terminated'));
    assert.equal(ended.termination_reason, 'revoked');
    assert.equal((await webhook(captured[before]!)).status, 200);
    assert.equal((await ordersOfDraft(draft.id)).length, 0);
    const row = await t.services.db.selectFrom('checkout_sessions').selectAll().where('provider_session_id', '=', session.id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'complete');
    assert.ok(row.refunded_at !== null, 'the payment was refunded');
    assert.ok((await t.services.localPayments.findSession(session.id))!.refunded_at !== null);
  });

  test('a payment for a draft whose workspace was deleted meanwhile is refunded, and no order is made', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const { draft, session } = await inPayment(buyer, offer.id);
    const wsEtag = (await t.request('GET', `/v1/workspaces/${draft.workspace_id}`, { token: buyer.token })).body.etag;
    const deletion = await t.request('DELETE', `/v1/workspaces/${draft.workspace_id}`, { token: buyer.token, headers: { 'if-match': wsEtag } });
    assert.equal(deletion.status, 202, deletion.text);
    const ended = await t.request('POST', `/v1/operations/${deletion.body.id}:wait?timeout=30`, { token: buyer.token, headers: { 'svc-context': draft.workspace_id } });
    assert.equal(ended.body.state, 'SUCCEEDED', ended.text);
    const before = captured.length;
    assert.equal(await t.services.localPayments.pay(session.id, '4242'), 'paid');
    assert.ok(captured[before], 'the provider sent its event');
    const row = await t.services.db.selectFrom('checkout_sessions').selectAll().where('provider_session_id', '=', session.id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'complete');
    assert.ok(row.refunded_at !== null, 'the payment was refunded');
    assert.equal((await ordersOfDraft(draft.id)).length, 0);
  });

  test('a recurring order shows its next renewal and renews once per period', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, pricing: { currency: 'usd', unit_amount: 1500, interval: 'month' } });
    const buyer = await t.user('buyer');
    const { draft, session } = await inPayment(buyer, offer.id);
    assert.equal(await t.services.localPayments.pay(session.id, '4242'), 'paid');
    const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done');
    const first = (await customer(t, buyer)('GET', `/v1/orders/${done.order.id}`)).body;
    assert.equal(first.interval, 'month');
    assert.equal(first.renewals, 0);
    assert.ok(first.next_renewal_at > first.committed_at && first.next_renewal_at <= first.committed_at + 101, JSON.stringify(first));
    clock.offsetMs = 101 * 1000;
    await t.runtime.sweepOrders();
    await t.runtime.sweepOrders();
    const renewed = (await customer(t, buyer)('GET', `/v1/orders/${done.order.id}`)).body;
    assert.equal(renewed.renewals, 1);
    assert.equal(renewed.next_renewal_at, first.next_renewal_at + 100);
  });

  test('customers racing for an offer\'s last uses: exactly max_uses drafts, and a revoked one gives its use back', async () => {
    const offer = await makeOffer(t, seller, { max_uses: 3 });
    const buyers = await Promise.all(Array.from({ length: 10 }, (_, i) => t.user(`racer${i}`)));
    const results = await Promise.all(buyers.map((b) => customer(t, b)('POST', `/v1/offers/${offer.id}/order_drafts`)));
    const won = results.filter((r) => r.status === 201);
    assert.equal(won.length, 3);
    for (const r of results.filter((x) => x.status !== 201)) {
      assert.equal(r.status, 422);
      assert.equal(r.body.error.reason, 'OFFER_NOT_REDEEMABLE');
    }
    const sellerView = await t.request('GET', `/v1/offers/${offer.id}`, { token: seller.user.token, headers: { 'svc-context': seller.ws } });
    assert.equal(sellerView.body.status, 'redeemed');
    const winner = buyers[results.indexOf(won[0]!)]!;
    assert.equal((await customer(t, winner)('POST', `/v1/order_drafts/${won[0]!.body.id}:cancel`, { etag: won[0]!.body.etag })).status, 200);
    await waitDraft(t, winner, won[0]!.body.id, inStatus('terminated'));
    const loser = buyers[results.findIndex((r) => r.status === 422)]!;
    assert.equal((await customer(t, loser)('POST', `/v1/offers/${offer.id}/order_drafts`)).status, 201);
  });
});
