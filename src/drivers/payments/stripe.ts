// The `stripe` payment provider: Stripe Checkout through the official `stripe` package (API.md
// 8.7). A session per draft revision (the draft id as client_reference_id, the revision in metadata
// and in the Idempotency-Key), subscriptions for recurring prices, refunds keyed by the session so
// repeating one never refunds twice, and webhooks verified with stripe.webhooks.constructEvent on
// the raw body. No message this module makes contains the secret key: Stripe's own error messages
// are scrubbed of anything shaped like one before they leave.
import Stripe from 'stripe';
import type { StripeSettings } from '../../config-commerce.js';
import { clock } from '../../platform/clock.js';
import { PaymentProviderError, WebhookSignatureError, type CheckoutState, type PaymentEvent, type PaymentProvider } from './driver.js';

/** How old a delivery may be (Stripe's default too): a captured one cannot be replayed later. */
const WEBHOOK_TOLERANCE_SECONDS = 300;
const REQUEST_TIMEOUT_MS = 20_000;
const KEY_SHAPE = /\b(sk|rk|pk|whsec)_[A-Za-z0-9_*]+/g;

type Session = Stripe.Checkout.Session;
const idOf = (v: string | { id: string } | null | undefined): string | null => (v == null ? null : typeof v === 'string' ? v : v.id);

/** The end of the subscription's paid period: on its items in recent API versions, on itself in older ones. */
export function periodEndOf(subscription: unknown): number | null {
  if (!subscription || typeof subscription !== 'object') return null;
  const s = subscription as { current_period_end?: unknown; items?: { data?: Array<{ current_period_end?: unknown }> } };
  if (typeof s.current_period_end === 'number') return s.current_period_end;
  const ends = (s.items?.data ?? []).map((i) => i.current_period_end).filter((e): e is number => typeof e === 'number');
  return ends.length ? Math.min(...ends) : null;
}

function stateOf(session: Session): CheckoutState {
  const status: CheckoutState['status'] = session.status === 'complete' ? 'complete' : session.status === 'expired' ? 'expired' : 'open';
  return {
    id: session.id,
    clientReferenceId: session.client_reference_id,
    metadata: { ...(session.metadata ?? {}) },
    status,
    paid: status === 'complete' && (session.payment_status === 'paid' || session.payment_status === 'no_payment_required'),
    amount: session.amount_total ?? 0,
    currency: session.currency ?? '',
    paymentRef: idOf(session.payment_intent),
    subscriptionId: idOf(session.subscription),
    currentPeriodEnd: typeof session.subscription === 'object' ? periodEndOf(session.subscription) : null,
    expiresAt: session.expires_at,
  };
}

/** A Stripe failure as a PaymentProviderError: retryable for connection errors, 429 and 5xx; never quoting a key. */
function providerError(err: unknown, secretKey: string): PaymentProviderError {
  if (err instanceof PaymentProviderError) return err;
  const scrub = (text: string) => text.split(secretKey).join('[key]').replace(KEY_SHAPE, '[key]').slice(0, 500);
  if (err instanceof Stripe.errors.StripeError) {
    const status = err.statusCode ?? null;
    const retryable = err instanceof Stripe.errors.StripeConnectionError || status === 429 || (status !== null && status >= 500) || err.type === 'StripeAPIError';
    return new PaymentProviderError(`stripe: ${scrub(err.message)}${err.code ? ` (${err.code})` : ''}`, retryable, status);
  }
  return new PaymentProviderError(`stripe: ${scrub(err instanceof Error ? err.message : String(err))}`, true, null);
}

function checkoutEvent(event: Stripe.Event, type: 'checkout.completed' | 'checkout.expired'): PaymentEvent {
  return { id: event.id, created: event.created, type, checkout: stateOf(event.data.object as Session) };
}

export function mapStripeEvent(event: Stripe.Event): PaymentEvent {
  const base = { id: event.id, created: event.created };
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      return checkoutEvent(event, 'checkout.completed');
    case 'checkout.session.expired':
      return checkoutEvent(event, 'checkout.expired');
    case 'invoice.paid': {
      // The subscription is on invoice.parent in recent API versions, on the invoice in older ones.
      const invoice = event.data.object as Stripe.Invoice & { subscription?: string | { id: string } | null };
      const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription ?? invoice.subscription);
      const end = invoice.lines?.data?.[0]?.period?.end;
      if (invoice.billing_reason === 'subscription_cycle' && subscriptionId && typeof end === 'number') {
        return { ...base, type: 'subscription.renewed', subscriptionId, currentPeriodEnd: end };
      }
      return { ...base, type: 'ignored', providerType: event.type };
    }
    case 'invoice.payment_failed': {
      const invoice = event.data.object as Stripe.Invoice & { subscription?: string | { id: string } | null };
      const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription ?? invoice.subscription);
      if (invoice.billing_reason === 'subscription_cycle' && subscriptionId) {
        return {
          ...base, type: 'subscription.payment_failed', subscriptionId, attempt: invoice.attempt_count ?? 1,
          nextAttemptAt: typeof invoice.next_payment_attempt === 'number' ? invoice.next_payment_attempt : null,
        };
      }
      return { ...base, type: 'ignored', providerType: event.type };
    }
    case 'customer.subscription.deleted':
      return { ...base, type: 'subscription.ended', subscriptionId: (event.data.object as Stripe.Subscription).id };
    default:
      return { ...base, type: 'ignored', providerType: String(event.type).slice(0, 100) };
  }
}

export function createStripePaymentProvider(settings: StripeSettings): PaymentProvider {
  const url = new URL(settings.apiUrl);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const stripe = new Stripe(settings.secretKey, {
    host: url.hostname,
    port: url.port || (protocol === 'http' ? 80 : 443),
    protocol,
    maxNetworkRetries: 2,
    timeout: REQUEST_TIMEOUT_MS,
    telemetry: false,
    appInfo: { name: 'svc' },
  });

  async function call<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    try {
      return await fn();
    } catch (err) {
      throw providerError(err, settings.secretKey);
    }
  }

  const retrieve = (id: string, signal?: AbortSignal) => call(signal, () => stripe.checkout.sessions.retrieve(id, { expand: ['subscription'] }));

  /** Cancels a subscription unless it already ended; repeating it is harmless. */
  async function endSubscription(subscriptionId: string, signal?: AbortSignal): Promise<void> {
    const sub = await call(signal, () => stripe.subscriptions.retrieve(subscriptionId));
    if (sub.status === 'canceled' || sub.status === 'incomplete_expired') return;
    await call(signal, () => stripe.subscriptions.cancel(subscriptionId, {}, { idempotencyKey: `svc-cancel-${subscriptionId}` }));
  }

  /** Refunds one payment intent, keyed by the session so a repeat (or a retry) never refunds twice. */
  async function refundIntent(sessionId: string, paymentIntent: string, signal?: AbortSignal): Promise<void> {
    try {
      await call(signal, () => stripe.refunds.create({ payment_intent: paymentIntent }, { idempotencyKey: `svc-refund-${sessionId}` }));
    } catch (err) {
      // Refunded before (by us under another key, or by hand in the dashboard): nothing left to do.
      if (!(err instanceof PaymentProviderError && /charge_already_refunded/.test(err.message))) throw err;
    }
  }

  return {
    name: 'stripe',

    async createCheckout(r, signal) {
      const recurring = r.interval !== 'one_time';
      const session = await call(signal, () => stripe.checkout.sessions.create({
        mode: recurring ? 'subscription' : 'payment',
        line_items: [{
          quantity: 1,
          price_data: {
            currency: r.currency,
            unit_amount: r.amount,
            product_data: { name: r.title },
            ...(recurring ? { recurring: { interval: r.interval as 'month' | 'year' } } : {}),
          },
        }],
        client_reference_id: r.clientReferenceId,
        metadata: r.metadata,
        ...(recurring ? { subscription_data: { metadata: r.metadata } } : { payment_intent_data: { metadata: r.metadata } }),
        ...(r.customerEmail ? { customer_email: r.customerEmail } : {}),
        expires_at: r.expiresAt,
        success_url: r.successUrl,
        cancel_url: r.cancelUrl,
      }, { idempotencyKey: r.idempotencyKey }));
      if (!session.url) throw new PaymentProviderError('stripe: the checkout session has no url', false, null);
      return { id: session.id, url: session.url, expiresAt: session.expires_at };
    },

    async getCheckout(id, signal) {
      return stateOf(await retrieve(id, signal));
    },

    async expireCheckout(id, signal) {
      try {
        await call(signal, () => stripe.checkout.sessions.expire(id, {}, { idempotencyKey: `svc-expire-${id}` }));
      } catch (err) {
        // Stripe refuses to expire a session that is no longer open (paid first, or expired already): answer its state.
        if (!(err instanceof PaymentProviderError) || err.status !== 400) throw err;
        const state = stateOf(await retrieve(id, signal));
        if (state.status === 'open') throw err;
        return state;
      }
      return stateOf(await retrieve(id, signal));
    },

    async refundCheckout(id, signal) {
      const session = await retrieve(id, signal);
      if (session.status !== 'complete' || session.payment_status !== 'paid') return;
      const subscriptionId = idOf(session.subscription);
      const intent = idOf(session.payment_intent);
      if (intent) await refundIntent(id, intent, signal);
      else if (subscriptionId) {
        // A subscription's first payment is on the session's invoice (the subscription's latest one otherwise).
        const sub = typeof session.subscription === 'object' ? session.subscription : null;
        const invoice = idOf(session.invoice) ?? idOf(sub?.latest_invoice);
        if (invoice) {
          const payments = await call(signal, () => stripe.invoicePayments.list({ invoice, limit: 10 }));
          const paid = payments.data.find((p) => p.status === 'paid' && p.payment.payment_intent);
          if (paid) await refundIntent(id, idOf(paid.payment.payment_intent)!, signal);
        }
      }
      if (subscriptionId) await endSubscription(subscriptionId, signal);
    },

    async cancelSubscription(subscriptionId, signal) {
      await endSubscription(subscriptionId, signal);
    },

    async updateSubscription(subscriptionId, change, signal) {
      const sub = await call(signal, () => stripe.subscriptions.retrieve(subscriptionId));
      if (sub.status === 'canceled' || sub.status === 'incomplete_expired') return;
      // Stripe's guidance for a change at the period end: the item's price changes with
      // proration_behavior=none, so the period paid for is left as it is and the next invoice charges
      // the new price; cancel_at_period_end ends it there instead of renewing.
      const item = sub.items.data[0];
      const price = item?.price;
      const priceChanges = item && price && (price.unit_amount !== change.price.amount || price.currency !== change.price.currency);
      await call(signal, () => stripe.subscriptions.update(subscriptionId, {
        cancel_at_period_end: change.cancelAtPeriodEnd,
        ...(priceChanges
          ? {
            proration_behavior: 'none' as const,
            items: [{
              id: item.id,
              price_data: {
                currency: change.price.currency, unit_amount: change.price.amount,
                product: typeof price.product === 'string' ? price.product : price.product.id,
                recurring: { interval: price.recurring?.interval ?? 'month' },
              },
            }],
          }
          : {}),
      }));
    },

    verifyWebhook(rawBody, headers) {
      const header = headers['stripe-signature'];
      if (!header) throw new WebhookSignatureError('missing Stripe-Signature header');
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(rawBody, header, settings.webhookSecret, WEBHOOK_TOLERANCE_SECONDS, undefined, clock.nowMs());
      } catch (err) {
        const message = err instanceof Error ? err.message.replace(KEY_SHAPE, '[secret]').slice(0, 200) : 'invalid';
        throw new WebhookSignatureError(`Stripe-Signature does not verify: ${message}`);
      }
      if (!event || typeof event.id !== 'string' || typeof event.type !== 'string' || typeof event.data?.object !== 'object' || event.data.object === null) {
        throw new WebhookSignatureError('body is not an event');
      }
      return mapStripeEvent(event);
    },
  };
}
