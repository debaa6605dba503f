// The local payment provider and its hosted checkout page (/checkout/{id}) through the real app:
// idempotent create; pay, decline, refuse and cancel on the page as a browser without JavaScript
// does (a cookie jar over app.inject); expired and paid sessions; the CSRF binding; the signed
// events handed to a recorder standing in for the webhook route, verified by verifyWebhook
// (forged, old and missing signatures refused); delivery retried with backoff; renewals once.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createHmac } from 'node:crypto';
import { WebhookSignatureError, type CheckoutRequest } from '../src/drivers/payments/driver.js';
import { clock } from '../src/platform/clock.js';
import { Browser, csrfOf, type Page } from './browser.js';
import { startTestApp, type TestApp } from './harness.js';

const MONTH_S = 1000;
interface Delivered { body: string; headers: Record<string, string> }

/** Opens a session's page and submits the card form, as a browser without JavaScript does. */
async function payWith(browser: Browser, id: string, card: string, extra: Record<string, string> = {}) {
  const page = await browser.get(`/checkout/${id}`);
  return browser.post(`/checkout/${id}`, { card_number: card, expiry: '12 / 40', cvc: '123', csrf: csrfOf(page.html), action: 'pay', ...extra });
}
const locationOf = (page: Page) => page.headers.location as string | undefined;

describe('local payment provider', () => {
  let t: TestApp;
  let delivered: Delivered[];
  let answer: number;
  /** set: deliveries go on to the service's own webhook route (the app's delivery), and answer its status */
  let forward: ((body: string, headers: Record<string, string>) => Promise<number>) | null;
  let routeDelivery: (body: string, headers: Record<string, string>) => Promise<number>;
  let n = 0;
  const local = () => t.services.localPayments;
  const request = (over: Partial<CheckoutRequest> = {}): CheckoutRequest => ({
    clientReferenceId: 'odft_test', metadata: { draft_revision: '3' }, idempotencyKey: `key-${++n}`, title: 'Wiki for Acme',
    amount: 1250, currency: 'eur', interval: 'one_time', customerEmail: 'buyer@example.test', expiresAt: clock.now() + 1800,
    successUrl: 'http://svc.test/checkout/return/local?session_id={CHECKOUT_SESSION_ID}', cancelUrl: 'http://svc.test/order_drafts/odft_test', ...over,
  });
  const row = (id: string) => t.services.db.selectFrom('local_checkouts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const verify = (d: Delivered) => local().verifyWebhook(Buffer.from(d.body), d.headers);

  before(async () => {
    t = await startTestApp({ SVC_LOCAL_PAYMENTS_MONTH_S: String(MONTH_S) }, {
      paymentDelivery: (toRoute) => {
        routeDelivery = toRoute;
        return async (body, headers) => {
          delivered.push({ body, headers });
          return forward ? forward(body, headers) : answer;
        };
      },
    });
  });
  after(async () => {
    clock.offsetMs = 0;
    await t.close();
  });
  beforeEach(() => {
    delivered = [];
    answer = 200;
    forward = null;
    clock.offsetMs = 0;
  });

  test('by default the events reach the service\'s own webhook route, which verifies and records them', async () => {
    forward = routeDelivery;
    const { id } = await local().createCheckout(request());
    assert.equal((await payWith(new Browser(t), id, '4242424242424242')).status, 303);
    const eventId = JSON.parse(delivered[0]!.body).id as string;
    const taken = await t.services.db.selectFrom('payment_events').selectAll().where('provider', '=', 'local').where('event_id', '=', eventId).executeTakeFirst();
    assert.ok(taken, 'the webhook route took the event in');
    const outbox = await t.services.db.selectFrom('local_payment_events').selectAll().where('id', '=', eventId).executeTakeFirstOrThrow();
    assert.ok(outbox.delivered_at, 'the route answered 2xx');
    // A forged delivery is refused there.
    assert.equal(await routeDelivery(delivered[0]!.body.replace('"paid"', '"unpaid"'), delivered[0]!.headers), 400);
  });

  test('create is idempotent by key: the same session, and other parameters under the key are refused', async () => {
    const r = request();
    const a = await local().createCheckout(r);
    const b = await local().createCheckout(r);
    assert.equal(a.id, b.id);
    assert.match(a.id, /^chk_[0-9a-z]{26}$/);
    assert.equal(a.url, `http://svc.test/checkout/${a.id}`);
    await assert.rejects(local().createCheckout({ ...r, amount: 999 }), /idempotency key reused/);
    const state = await local().getCheckout(a.id);
    assert.deepEqual({ status: state.status, paid: state.paid, ref: state.clientReferenceId, meta: state.metadata }, { status: 'open', paid: false, ref: 'odft_test', meta: { draft_revision: '3' } });
  });

  test('the page shows the price and a card form, with the device page headers', async () => {
    const { id } = await local().createCheckout(request({ interval: 'month', amount: 900, currency: 'usd' }));
    const page = await new Browser(t).get(`/checkout/${id}`);
    assert.equal(page.status, 200);
    assert.match(page.html, /Wiki for Acme/);
    assert.match(page.html, /\$9\.00 per month/);
    for (const field of ['card_number', 'expiry', 'cvc']) assert.match(page.html, new RegExp(`name="${field}"`));
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.doesNotMatch(page.html, /<script|https?:\/\/(?!svc\.test)/);
    assert.equal((await new Browser(t).get('/checkout/chk_unknown')).status, 404);
  });

  test('4242 pays: 303 to success_url, the session complete with last 4 only, checkout.session.completed delivered and verified', async () => {
    const { id } = await local().createCheckout(request());
    const browser = new Browser(t);
    const res = await payWith(browser, id, '4242 4242 4242 4242');
    assert.equal(res.status, 303);
    assert.equal(locationOf(res), `http://svc.test/checkout/return/local?session_id=${id}`);
    const stored = await row(id);
    assert.equal(stored.status, 'complete');
    assert.equal(stored.card_last4, '4242');
    assert.doesNotMatch(JSON.stringify(stored), /4242424242424242/);
    assert.equal(delivered.length, 1);
    assert.match(delivered[0]!.headers['svc-signature']!, /^t=\d+,v1=[0-9a-f]{64}$/);
    const event = verify(delivered[0]!);
    assert.equal(event.type, 'checkout.completed');
    if (event.type !== 'checkout.completed') return;
    assert.match(event.id, /^evt_/);
    assert.deepEqual({ id: event.checkout.id, paid: event.checkout.paid, ref: event.checkout.clientReferenceId, amount: event.checkout.amount }, { id, paid: true, ref: 'odft_test', amount: 1250 });
    assert.match(event.checkout.paymentRef!, /^pay_/);
    const outbox = await t.services.db.selectFrom('local_payment_events').selectAll().where('id', '=', event.id).executeTakeFirstOrThrow();
    assert.ok(outbox.delivered_at);
    // Paying again shows the paid state; nothing is charged or sent twice.
    const again = await payWith(browser, id, '4242424242424242').catch(() => null);
    assert.equal(again, null, 'a paid page has no form to submit');
    const repost = await browser.post(`/checkout/${id}`, { card_number: '4242424242424242', expiry: '12/40', cvc: '123', csrf: 'x', action: 'pay' });
    assert.equal(repost.status, 409);
    assert.match(repost.html, /already been paid/);
    assert.equal((await browser.get(`/checkout/${id}`)).status, 200);
    assert.equal(delivered.length, 1);
    // A paid session cannot be expired: it is answered as complete.
    assert.equal((await local().expireCheckout(id)).status, 'complete');
  });

  test('declined and refused cards re-render the page with a message and keep the session open', async () => {
    const { id } = await local().createCheckout(request());
    const browser = new Browser(t);
    const generic = await payWith(browser, id, '4000 0000 0000 0002');
    assert.equal(generic.status, 402);
    assert.match(generic.html, /declined/);
    assert.doesNotMatch(generic.html, /4000 0000 0000 0002"|value="4000/);
    const funds = await payWith(browser, id, '4000000000009995');
    assert.equal(funds.status, 402);
    assert.match(funds.html, /insufficient funds/);
    const other = await payWith(browser, id, '4111 1111 1111 1111');
    assert.equal(other.status, 400);
    assert.match(other.html, /not a test card/);
    const expiredCard = await payWith(browser, id, '4242424242424242', { expiry: '01/20' });
    assert.equal(expiredCard.status, 400);
    const stored = await row(id);
    assert.equal(stored.status, 'open');
    assert.equal(stored.declines, 2);
    assert.doesNotMatch(JSON.stringify(stored), /4000000000000002|4111111111111111/);
    assert.equal(delivered.length, 0);
  });

  test('a cross-site post (no nonce cookie, or a wrong token) is refused and charges nothing', async () => {
    const { id } = await local().createCheckout(request());
    const page = await new Browser(t).get(`/checkout/${id}`);
    const stranger = new Browser(t);
    const res = await stranger.post(`/checkout/${id}`, { card_number: '4242424242424242', expiry: '12/40', cvc: '123', csrf: csrfOf(page.html), action: 'pay' });
    assert.equal(res.status, 403);
    assert.equal((await row(id)).status, 'open');
    const bad = await stranger.post(`/checkout/${id}`, { card_number: '4242424242424242', unknown: 'x' });
    assert.equal(bad.status, 400);
  });

  test('Cancel goes to cancel_url and the session stays open', async () => {
    const { id } = await local().createCheckout(request());
    const res = await new Browser(t).post(`/checkout/${id}`, { action: 'cancel' });
    assert.equal(res.status, 303);
    assert.equal(locationOf(res), 'http://svc.test/order_drafts/odft_test');
    assert.equal((await local().getCheckout(id)).status, 'open');
  });

  test('an expired session shows that state, cannot be paid, and expireDue sends checkout.session.expired once', async () => {
    const { id } = await local().createCheckout(request({ expiresAt: clock.now() + 60 }));
    const browser = new Browser(t);
    const page = await browser.get(`/checkout/${id}`);
    clock.offsetMs = 120_000;
    assert.equal((await browser.get(`/checkout/${id}`)).status, 410);
    const res = await browser.post(`/checkout/${id}`, { card_number: '4242424242424242', expiry: '12/40', cvc: '123', csrf: csrfOf(page.html), action: 'pay' });
    assert.equal(res.status, 410);
    assert.match(res.html, /expired/);
    assert.equal((await local().getCheckout(id)).status, 'expired');
    assert.ok((await local().expireDue()) >= 1);
    await local().expireCheckout(id);
    const expired = delivered.map(verify).filter((e) => e.type === 'checkout.expired' && e.checkout.id === id);
    assert.equal(expired.length, 1);
    assert.equal((await row(id)).status, 'expired');
  });

  test('verifyWebhook refuses forged, old, malformed and missing signatures', async () => {
    const { id } = await local().createCheckout(request());
    await payWith(new Browser(t), id, '4242424242424242');
    const good = delivered[0]!;
    assert.equal(verify(good).type, 'checkout.completed');
    const refused = (body: string, headers: Record<string, string | undefined>) => assert.throws(() => local().verifyWebhook(Buffer.from(body), headers), WebhookSignatureError);
    refused(good.body.replace('"complete"', '"expired"'), good.headers);
    refused(good.body, {});
    refused(good.body, { 'svc-signature': 'garbage' });
    const key = Buffer.alloc(32, 7);
    const t0 = clock.now();
    refused(good.body, { 'svc-signature': `t=${t0},v1=${createHmac('sha256', key).update(`${t0}.${good.body}`).digest('hex')}` });
    // The right signature, replayed after the tolerance.
    clock.offsetMs = 301_000;
    refused(good.body, good.headers);
  });

  test('a refused delivery is retried later with backoff, and delivered once the route takes it', async () => {
    answer = 500;
    const { id } = await local().createCheckout(request());
    assert.equal((await payWith(new Browser(t), id, '4242424242424242')).status, 303);
    assert.equal(delivered.length, 1);
    const eventId = JSON.parse(delivered[0]!.body).id as string;
    let outbox = await t.services.db.selectFrom('local_payment_events').selectAll().where('id', '=', eventId).executeTakeFirstOrThrow();
    assert.equal(outbox.delivered_at, null);
    assert.equal(outbox.attempts, 1);
    assert.ok(outbox.next_attempt_at > clock.now());
    assert.equal(await local().deliverDue(), 0, 'not due yet');
    assert.equal(delivered.length, 1);
    answer = 200;
    clock.offsetMs = (outbox.next_attempt_at - clock.now() + 1) * 1000;
    assert.equal(await local().deliverDue(), 1);
    assert.equal(JSON.parse(delivered[1]!.body).id, eventId, 'the same event, signed again');
    assert.equal(verify(delivered[1]!).type, 'checkout.completed');
    outbox = await t.services.db.selectFrom('local_payment_events').selectAll().where('id', '=', eventId).executeTakeFirstOrThrow();
    assert.ok(outbox.delivered_at);
    assert.equal(await local().deliverDue(), 0);
  });

  test('a monthly subscription renews once per period, even with two sweeps at once; refund ends it once', async () => {
    const { id } = await local().createCheckout(request({ interval: 'month' }));
    assert.equal((await payWith(new Browser(t), id, '4242424242424242')).status, 303);
    const paid = await local().getCheckout(id);
    assert.match(paid.subscriptionId!, /^lsub_/);
    const firstEnd = paid.currentPeriodEnd!;
    assert.ok(Math.abs(firstEnd - (clock.now() + MONTH_S)) <= 2);
    assert.equal(await local().renewDue(), 0);
    clock.offsetMs = (firstEnd - clock.now() + 1) * 1000;
    delivered = [];
    const counts = await Promise.all([local().renewDue(), local().renewDue()]);
    assert.equal(counts[0]! + counts[1]!, 1);
    assert.equal((await local().getCheckout(id)).currentPeriodEnd, firstEnd + MONTH_S);
    const renewed = delivered.map(verify).filter((e) => e.type === 'subscription.renewed');
    assert.deepEqual(renewed.map((e) => e.type === 'subscription.renewed' && [e.subscriptionId, e.currentPeriodEnd]), [[paid.subscriptionId, firstEnd + MONTH_S]]);
    delivered = [];
    await local().refundCheckout(id);
    await local().refundCheckout(id);
    await local().cancelSubscription(paid.subscriptionId!);
    assert.ok((await row(id)).refunded_at);
    const ended = delivered.map(verify).filter((e) => e.type === 'subscription.ended');
    assert.equal(ended.length, 1);
    clock.offsetMs += (MONTH_S + 1) * 1000;
    assert.equal(await local().renewDue(), 0, 'an ended subscription does not renew');
    await assert.rejects(local().cancelSubscription('lsub_unknown'), /not found/);
  });
});
