// Orders paid through Stripe end to end (API.md 8.7): the service runs with SVC_PAYMENT_PROVIDER=stripe
// against the local stand-in of Stripe's API (test/stripe-standin.ts) and listens on a real port,
// where the stand-in sends its webhooks signed as Stripe signs them. Endpoint 13 creates a Checkout
// Session (client_reference_id = the draft, the revision in metadata and in the idempotency key);
// the stand-in "pays" it; webhooks arrive twice, out of order, forged and replayed old; the return
// page re-reads the session. Exactly one order. A recurring offer: subscription mode, the order's
// next renewal from the subscription, moved forward by invoice.paid and never back by a late one.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { clock } from '../src/platform/clock.js';
import { startTestApp, type TestApp, type TestUser } from './harness.js';
import { customer, draftToConfigure, inStatus, makeOffer, makeSeller, waitDraft, type Seller } from './commerce-fixtures.js';
import { roomyPlans } from './plans-fixtures.js';
import { startStripeStandin, STRIPE_STANDIN_KEY, STRIPE_STANDIN_WHSEC, type StripeStandin } from './stripe-standin.js';

type Json = Record<string, any>;

describe('orders paid through Stripe (stand-in)', () => {
  let t: TestApp;
  let stripe: StripeStandin;
  let seller: Seller;
  let base: string;

  before(async () => {
    stripe = await startStripeStandin();
    t = await startTestApp({
      ...roomyPlans(), SVC_PAYMENT_PROVIDER: 'stripe', SVC_STRIPE_API_URL: stripe.apiUrl,
      SVC_STRIPE_SECRET_KEY: STRIPE_STANDIN_KEY, SVC_STRIPE_WEBHOOK_SECRET: STRIPE_STANDIN_WHSEC,
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    seller = await makeSeller(t);
  });
  after(async () => {
    await t?.close();
    await stripe?.close();
  });

  /** Sends an event to the service's real webhook route as Stripe would; answers the status and body. */
  async function webhook(event: Json, opts: { t?: number; secret?: string; signature?: string } = {}) {
    const payload = stripe.payload(event);
    const res = await fetch(`${base}/v1/payment_webhooks/stripe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': opts.signature ?? stripe.signature(payload, opts) },
      body: payload,
    });
    return { status: res.status, body: (await res.json()) as Json };
  }
  const returnPage = (sessionId: string) => fetch(`${base}/checkout/return/stripe?session_id=${sessionId}`, { redirect: 'manual' });
  const ordersOf = async (draftId: string) =>
    (await t.request('GET', '/v1/orders?limit=100', { token: seller.user.token, headers: { 'svc-context': seller.ws } })).body.data
      .filter((o: { order_draft_id: string }) => o.order_draft_id === draftId);

  async function inPayment(buyer: TestUser, offerId: string) {
    const as = customer(t, buyer);
    const configure = await draftToConfigure(t, buyer, offerId);
    const paying = (await as('POST', `/v1/order_drafts/${configure.id}:submitConfiguration`, { etag: configure.etag, body: { field_values: {} } })).body;
    assert.equal(paying.status, 'payment');
    const calls = stripe.calls.length;
    const session = await as('POST', `/v1/order_drafts/${configure.id}/checkout_sessions`, { etag: paying.etag });
    assert.equal(session.status, 201, session.text);
    const create = stripe.calls.slice(calls).find((c) => c.method === 'POST' && c.path === '/v1/checkout/sessions')!;
    assert.ok(create, 'a Checkout Session was created at Stripe');
    return { draft: (await as('GET', `/v1/order_drafts/${configure.id}`)).body, session: session.body as Json, create, paying };
  }

  test('one-time: the session as Stripe gets it; webhooks twice, out of order, forged and old; the return page; one order', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, session, create, paying } = await inPayment(buyer, offer.id);
    assert.match(session.id, /^cs_/);
    assert.equal(session.url, stripe.sessions.get(session.id)!.url);
    assert.equal(create.params.mode, 'payment');
    assert.equal(create.params.client_reference_id, draft.id);
    assert.equal(create.params.metadata.order_draft_id, draft.id);
    assert.equal(create.params.metadata.draft_revision, String(draft.current_checkout_session.draft_revision));
    assert.ok(create.idempotencyKey?.includes(draft.id) && create.idempotencyKey.includes(`:${draft.current_checkout_session.draft_revision}:`), create.idempotencyKey);
    assert.equal(create.params.line_items[0].price_data.unit_amount, '4900');
    assert.match(create.params.success_url, /\/checkout\/return\/stripe\?session_id=\{CHECKOUT_SESSION_ID\}$/);
    // Asked again for the same revision: the open session is reused, Stripe not called.
    const calls = stripe.calls.length;
    const again = await as('POST', `/v1/order_drafts/${draft.id}/checkout_sessions`, { etag: draft.etag });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, session.id);
    assert.equal(stripe.calls.length, calls);
    assert.ok(paying);

    const completed = stripe.pay(session.id);
    const forged = await webhook(completed, { secret: 'whsec_not_the_endpoint_secret' });
    assert.equal(forged.status, 400, JSON.stringify(forged.body));
    assert.equal(forged.body.error.reason, 'WEBHOOK_SIGNATURE_INVALID');
    const old = await webhook(completed, { t: clock.now() - 600 });
    assert.equal(old.status, 400, 'a replayed event signed 10 minutes ago');
    const unsigned = await fetch(`${base}/v1/payment_webhooks/stripe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: stripe.payload(completed) });
    assert.equal(unsigned.status, 400);
    assert.equal((await as('GET', `/v1/order_drafts/${draft.id}`)).body.payment_completed, false, 'nothing refused changed the draft');

    const first = await webhook(completed);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.outcome, 'applied');
    assert.equal((await webhook(completed)).body.outcome, 'duplicate');
    // Out of order: an expiry of the paid session arriving after its completion changes nothing.
    const expired = structuredClone(completed);
    Object.assign(expired, { id: `${completed.id}x`, type: 'checkout.session.expired' });
    Object.assign(expired.data.object, { status: 'expired', payment_status: 'unpaid' });
    assert.equal((await webhook(expired)).status, 200);
    const back = await returnPage(session.id);
    assert.equal(back.status, 303);
    assert.equal(back.headers.get('location'), `/order_drafts/${draft.id}?checkout=returned`);
    const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.equal(done.order.payment_provider_checkout_id, session.id);
    const orders = await ordersOf(draft.id);
    assert.equal(orders.length, 1);
    assert.equal(orders[0].payment_provider, 'stripe');
    assert.equal(stripe.refunds.length, 0, 'nothing refunded');
  });

  test('the return page first, then the webhook: one order', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null });
    const buyer = await t.user('buyer');
    const { draft, session } = await inPayment(buyer, offer.id);
    // Before paying, the return page changes nothing (it re-reads the session: still open).
    assert.equal((await returnPage(session.id)).status, 303);
    assert.equal((await customer(t, buyer)('GET', `/v1/order_drafts/${draft.id}`)).body.status, 'payment');
    const completed = stripe.pay(session.id);
    assert.equal((await returnPage(session.id)).status, 303);
    const late = await webhook(completed);
    assert.equal(late.status, 200);
    assert.equal(late.body.outcome, 'duplicate');
    const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done');
    assert.equal((await ordersOf(draft.id)).length, 1);
  });

  test('recurring: subscription mode, the next renewal from the subscription; invoice.paid moves it forward, a late older one does not', async () => {
    const offer = await makeOffer(t, seller, { max_uses: null, pricing: { currency: 'usd', unit_amount: 1500, interval: 'month' } });
    const buyer = await t.user('buyer');
    const as = customer(t, buyer);
    const { draft, session, create } = await inPayment(buyer, offer.id);
    assert.equal(create.params.mode, 'subscription');
    assert.equal(create.params.line_items[0].price_data.recurring.interval, 'month');
    const completed = stripe.pay(session.id);
    assert.equal((await webhook(completed)).body.outcome, 'applied');
    const done = await waitDraft(t, buyer, draft.id, inStatus('done', 'terminated'));
    assert.equal(done.status, 'done');
    const subscription = stripe.subscriptions.get(stripe.sessions.get(session.id)!.subscription)!;
    const firstEnd = subscription.items.data[0].current_period_end;
    const order = async () => (await as('GET', `/v1/orders/${done.order.id}`)).body;
    const first = await order();
    assert.equal(first.interval, 'month');
    assert.equal(first.next_renewal_at, firstEnd);
    assert.equal(first.renewals, 0);

    const second = stripe.renew(subscription.id);
    const third = stripe.renew(subscription.id);
    const thirdEnd = subscription.items.data[0].current_period_end;
    assert.equal((await webhook(third)).body.outcome, 'applied');
    assert.equal((await order()).next_renewal_at, thirdEnd);
    const late = await webhook(second);
    assert.equal(late.status, 200);
    assert.equal(late.body.outcome, 'late');
    assert.equal((await webhook(third)).body.outcome, 'duplicate');
    const now = await order();
    assert.equal(now.next_renewal_at, thirdEnd, 'never moved back');
    assert.equal(now.renewals, 1);
  });
});
