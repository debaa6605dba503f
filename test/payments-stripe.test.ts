// The stripe payment provider against a local stand-in of Stripe's API (test/stripe-standin.ts):
// what it sends to create a session (idempotent by key), reading a session back (the subscription's
// period end from its items), expiring one (a paid one stays paid), refunds that never happen twice,
// subscriptions cancelled once; webhooks signed as Stripe signs them sent over HTTP to a receiver
// that verifies them with the adapter (duplicates, out of order, a forged signature, an old
// timestamp, none); errors that say whether to retry and never contain the key. No database: the
// same on both dialects.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import { PaymentProviderError, WebhookSignatureError, type CheckoutRequest, type PaymentEvent, type PaymentProvider } from '../src/drivers/payments/driver.js';
import { createStripePaymentProvider, periodEndOf } from '../src/drivers/payments/stripe.js';
import { clock } from '../src/platform/clock.js';
import { startStripeStandin, STRIPE_STANDIN_KEY, STRIPE_STANDIN_WHSEC, type StripeStandin } from './stripe-standin.js';

/** Awaits a call that must fail, and returns its PaymentProviderError. */
async function failure(p: Promise<unknown>): Promise<PaymentProviderError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof PaymentProviderError, `expected PaymentProviderError, got ${String(err)}`);
    return err;
  }
  assert.fail('the call succeeded');
}

describe('stripe payment provider', () => {
  let standin: StripeStandin;
  let stripe: PaymentProvider;
  let receiver: Server;
  let webhookUrl: string;
  /** what the receiver verified, in arrival order; refused deliveries as their error */
  let received: Array<PaymentEvent | string>;
  let n = 0;
  const request = (over: Partial<CheckoutRequest> = {}): CheckoutRequest => ({
    clientReferenceId: 'odft_01jtest', metadata: { draft_id: 'odft_01jtest', draft_revision: '4' }, idempotencyKey: `odft_01jtest-4-${++n}`,
    title: 'Wiki for Acme', amount: 4900, currency: 'eur', interval: 'one_time', customerEmail: 'buyer@example.test', expiresAt: clock.now() + 3600,
    successUrl: 'http://svc.test/checkout/return/stripe?session_id={CHECKOUT_SESSION_ID}', cancelUrl: 'http://svc.test/order_drafts/odft_01jtest', ...over,
  });
  const settings = (over: Partial<{ secretKey: string; apiUrl: string }> = {}) => ({ secretKey: STRIPE_STANDIN_KEY, webhookSecret: STRIPE_STANDIN_WHSEC, apiUrl: standin.apiUrl, ...over });

  before(async () => {
    standin = await startStripeStandin();
    stripe = createStripePaymentProvider(settings());
    // The webhook route's part: the raw body and the lowercased headers to verifyWebhook; 400 when refused.
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          received.push(stripe.verifyWebhook(Buffer.concat(chunks), req.headers as Record<string, string>));
          res.writeHead(200).end();
        } catch (err) {
          assert.ok(err instanceof WebhookSignatureError, String(err));
          received.push(err.message);
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/payment_webhooks/stripe`;
  });
  after(async () => {
    clock.offsetMs = 0;
    await standin.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });
  beforeEach(() => {
    received = [];
    standin.calls.length = 0;
    Object.assign(standin.faults, { serverErrors: 0, rateLimited: 0 });
    clock.offsetMs = 0;
  });

  test('create sends a Checkout Session as Stripe expects it, idempotent by key', async () => {
    const r = request();
    const created = await stripe.createCheckout(r);
    assert.match(created.id, /^cs_test_/);
    assert.equal(created.url, `${standin.apiUrl}/c/pay/${created.id}`);
    assert.equal(created.expiresAt, r.expiresAt);
    const call = standin.calls.find((c) => c.method === 'POST' && c.path === '/v1/checkout/sessions')!;
    assert.equal(call.idempotencyKey, r.idempotencyKey);
    assert.deepEqual(call.params, {
      mode: 'payment',
      line_items: [{ quantity: '1', price_data: { currency: 'eur', unit_amount: '4900', product_data: { name: 'Wiki for Acme' } } }],
      client_reference_id: 'odft_01jtest', metadata: { draft_id: 'odft_01jtest', draft_revision: '4' },
      payment_intent_data: { metadata: { draft_id: 'odft_01jtest', draft_revision: '4' } },
      customer_email: 'buyer@example.test', expires_at: String(r.expiresAt), success_url: r.successUrl, cancel_url: r.cancelUrl,
    });
    const again = await stripe.createCheckout(r);
    assert.equal(again.id, created.id);
    assert.equal([...standin.sessions.values()].filter((s) => s.client_reference_id === 'odft_01jtest' && s.id === created.id).length, 1);
    // Other parameters under the same key: Stripe's idempotency_error, not a second session.
    const reused = await failure(stripe.createCheckout({ ...r, amount: 100 }));
    assert.equal(reused.retryable, false);
    assert.equal(reused.status, 400);
  });

  test('a recurring price makes a subscription session; its period end comes from the subscription items', async () => {
    const created = await stripe.createCheckout(request({ interval: 'month', customerEmail: null }));
    const call = standin.calls.find((c) => c.path === '/v1/checkout/sessions')!;
    assert.equal(call.params.mode, 'subscription');
    assert.deepEqual(call.params.line_items[0].price_data.recurring, { interval: 'month' });
    assert.deepEqual(call.params.subscription_data, { metadata: { draft_id: 'odft_01jtest', draft_revision: '4' } });
    assert.equal(call.params.customer_email, undefined);
    const open = await stripe.getCheckout(created.id);
    assert.deepEqual({ status: open.status, paid: open.paid, sub: open.subscriptionId }, { status: 'open', paid: false, sub: null });
    standin.pay(created.id);
    const paid = await stripe.getCheckout(created.id);
    assert.equal(paid.status, 'complete');
    assert.equal(paid.paid, true);
    assert.match(paid.subscriptionId!, /^sub_/);
    assert.equal(paid.currentPeriodEnd, standin.subscriptions.get(paid.subscriptionId!)!.items.data[0].current_period_end);
    assert.deepEqual(paid.metadata, { draft_id: 'odft_01jtest', draft_revision: '4' });
    assert.equal(periodEndOf({ current_period_end: 1234 }), 1234, 'older API versions keep it on the subscription');
  });

  test('expire: an open session expires; a paid one is answered complete; an expired one stays expired', async () => {
    const open = await stripe.createCheckout(request());
    assert.equal((await stripe.expireCheckout(open.id)).status, 'expired');
    assert.equal((await stripe.expireCheckout(open.id)).status, 'expired');
    const paid = await stripe.createCheckout(request());
    standin.pay(paid.id);
    const state = await stripe.expireCheckout(paid.id);
    assert.deepEqual({ status: state.status, paid: state.paid }, { status: 'complete', paid: true });
    assert.match(state.paymentRef!, /^pi_/);
    const unknown = await failure(stripe.getCheckout('cs_test_nope'));
    assert.deepEqual({ status: unknown.status, retryable: unknown.retryable }, { status: 404, retryable: false });
  });

  test('refunds happen once, for a payment and for a subscription (which is also cancelled once)', async () => {
    const one = await stripe.createCheckout(request());
    await stripe.refundCheckout(one.id); // not paid: nothing to refund
    assert.equal(standin.refunds.length, 0);
    standin.pay(one.id);
    await stripe.refundCheckout(one.id);
    await stripe.refundCheckout(one.id);
    assert.equal(standin.refunds.length, 1);
    assert.equal(standin.refunds[0]!.payment_intent, standin.sessions.get(one.id)!.payment_intent);
    const sub = await stripe.createCheckout(request({ interval: 'year' }));
    standin.pay(sub.id);
    await stripe.refundCheckout(sub.id);
    await stripe.refundCheckout(sub.id);
    assert.equal(standin.refunds.length, 2);
    const subscriptionId = standin.sessions.get(sub.id)!.subscription as string;
    assert.equal(standin.subscriptions.get(subscriptionId)!.status, 'canceled');
    await stripe.cancelSubscription(subscriptionId);
    assert.equal(standin.events.filter((e) => e.type === 'customer.subscription.deleted' && e.data.object.id === subscriptionId).length, 1);
  });

  test('webhooks signed as Stripe signs them verify; duplicates and out-of-order deliveries keep their ids', async () => {
    const created = await stripe.createCheckout(request({ interval: 'month' }));
    const completed = standin.pay(created.id);
    const subscriptionId = standin.sessions.get(created.id)!.subscription as string;
    const renewal = standin.renew(subscriptionId);
    // Out of order: the renewal first, then the completion twice.
    assert.equal(await standin.send(webhookUrl, renewal), 200);
    assert.equal(await standin.send(webhookUrl, completed), 200);
    assert.equal(await standin.send(webhookUrl, completed), 200);
    const [renewed, first, duplicate] = received as PaymentEvent[];
    assert.deepEqual(renewed, { id: renewal.id, created: renewal.created, type: 'subscription.renewed', subscriptionId, currentPeriodEnd: renewal.data.object.lines.data[0].period.end });
    assert.equal(first!.type, 'checkout.completed');
    assert.equal(duplicate!.id, first!.id, 'the same event id: the intake takes it once');
    if (first?.type === 'checkout.completed') {
      assert.deepEqual({ id: first.checkout.id, paid: first.checkout.paid, ref: first.checkout.clientReferenceId, sub: first.checkout.subscriptionId }, { id: created.id, paid: true, ref: 'odft_01jtest', sub: subscriptionId });
    }
    // The first invoice of a subscription is not a renewal; other event types are ignored.
    const firstInvoice = { ...renewal, id: 'evt_first', data: { object: { ...renewal.data.object, billing_reason: 'subscription_create' } } };
    assert.equal(await standin.send(webhookUrl, firstInvoice), 200);
    assert.equal(await standin.send(webhookUrl, { ...completed, id: 'evt_other', type: 'payment_intent.created' }), 200);
    assert.deepEqual(received.slice(3).map((e) => (e as PaymentEvent).type), ['ignored', 'ignored']);
    await stripe.cancelSubscription(subscriptionId);
    const deleted = standin.events.find((e) => e.type === 'customer.subscription.deleted' && e.data.object.id === subscriptionId)!;
    assert.equal(await standin.send(webhookUrl, deleted), 200);
    assert.deepEqual(received.at(-1), { id: deleted.id, created: deleted.created, type: 'subscription.ended', subscriptionId });
  });

  test('an expired session arrives as checkout.expired, and async payments as completed', async () => {
    const created = await stripe.createCheckout(request());
    await stripe.expireCheckout(created.id);
    const expired = standin.events.find((e) => e.type === 'checkout.session.expired' && e.data.object.id === created.id)!;
    assert.equal(await standin.send(webhookUrl, expired), 200);
    assert.equal((received[0] as PaymentEvent).type, 'checkout.expired');
    const other = await stripe.createCheckout(request());
    const completed = standin.pay(other.id);
    assert.equal(await standin.send(webhookUrl, { ...completed, id: 'evt_async', type: 'checkout.session.async_payment_succeeded' }), 200);
    assert.equal((received[1] as PaymentEvent).type, 'checkout.completed');
  });

  test('forged, tampered, old and missing signatures are refused', async () => {
    const created = await stripe.createCheckout(request());
    const completed = standin.pay(created.id);
    assert.equal(await standin.send(webhookUrl, completed, { secret: 'whsec_someoneelse' }), 400);
    const tampered = standin.signature(standin.payload({ ...completed, id: 'evt_x' }));
    assert.equal(await standin.send(webhookUrl, completed, { signature: tampered }), 400);
    assert.equal(await standin.send(webhookUrl, completed, { t: clock.now() - 301 }), 400, 'replayed after the tolerance');
    assert.equal(await standin.send(webhookUrl, completed, { signature: null }), 400);
    assert.equal(await standin.send(webhookUrl, completed, { signature: 't=abc' }), 400);
    assert.equal(received.length, 5);
    assert.ok(received.every((r) => typeof r === 'string' && !r.includes(STRIPE_STANDIN_WHSEC)));
    assert.equal(await standin.send(webhookUrl, completed, { t: clock.now() - 200 }), 200, 'inside the tolerance');
  });

  test('errors say whether to retry and never contain the key', async () => {
    const wrongKey = 'sk_test_WrongKey9876543210zyxwvutsrqponm';
    const denied = await failure(createStripePaymentProvider(settings({ secretKey: wrongKey })).createCheckout(request()));
    assert.deepEqual({ status: denied.status, retryable: denied.retryable }, { status: 401, retryable: false });
    assert.ok(!denied.message.includes(wrongKey) && !denied.message.includes('WrongKey'), denied.message);
    standin.faults.serverErrors = 1;
    assert.equal((await stripe.getCheckout((await stripe.createCheckout(request())).id)).status, 'open', 'one 500 is retried away');
    standin.faults.serverErrors = 3;
    const down = await failure(stripe.getCheckout('cs_test_any'));
    assert.deepEqual({ status: down.status, retryable: down.retryable }, { status: 500, retryable: true });
    standin.faults.rateLimited = 1;
    const limited = await failure(stripe.getCheckout('cs_test_any'));
    assert.deepEqual({ status: limited.status, retryable: limited.retryable }, { status: 429, retryable: true });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = await failure(createStripePaymentProvider(settings({ apiUrl: `http://127.0.0.1:${port}` })).getCheckout('cs_test_any'));
    assert.equal(unreachable.retryable, true);
    for (const err of [denied, down, limited, unreachable]) assert.ok(!err.message.includes(STRIPE_STANDIN_KEY), err.message);
  });
});
