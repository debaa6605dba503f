// The payment provider interface (API.md 8.7): hosted checkout sessions, their state read back from
// the provider, expiring one, refunding a payment that no order can take, and verifying the
// provider's webhook deliveries. `local` (the default: the service's own checkout page, see
// local.ts) and `stripe` (Stripe Checkout through the official package, see stripe.ts) implement it.
// Nothing here knows order drafts: the orders module maps drafts to these calls.

export type Currency = 'eur' | 'usd';
export type PriceInterval = 'one_time' | 'month' | 'year';

export interface CheckoutRequest {
  /** the order draft paid for: Stripe's client_reference_id */
  clientReferenceId: string;
  /** string metadata kept with the session (the draft revision among it) */
  metadata: Record<string, string>;
  /**
   * makes the create idempotent at the provider: the same key answers the same session (Stripe's
   * Idempotency-Key); built from the draft id and revision
   */
  idempotencyKey: string;
  /** the product line's name */
  title: string;
  /** cents, > 0 */
  amount: number;
  currency: Currency;
  /** one_time: a payment; month or year: a subscription billed every interval */
  interval: PriceInterval;
  customerEmail: string | null;
  /** Unix seconds; the provider expires the session then */
  expiresAt: number;
  /** where the browser goes after paying; `{CHECKOUT_SESSION_ID}` is replaced by the session id */
  successUrl: string;
  /** where the browser goes when the customer gives up */
  cancelUrl: string;
}

export interface CreatedCheckout {
  /** the provider's session id (spec 2.6 `id`) */
  id: string;
  /** the provider-hosted page the customer pays on */
  url: string;
  expiresAt: number;
}

/** What a subscription does at its period end (PaymentProvider.updateSubscription). */
export interface SubscriptionChange {
  cancelAtPeriodEnd: boolean;
  /** the price of each period from the next one on: cents, its currency, and the product line's name */
  price: { amount: number; currency: Currency; title: string };
}

/** A checkout session as the provider holds it now. */
export interface CheckoutState {
  id: string;
  clientReferenceId: string | null;
  metadata: Record<string, string>;
  /** open: not paid yet; complete: paid; expired: can no longer be paid */
  status: 'open' | 'complete' | 'expired';
  /** true once the money is captured (complete and paid; a delayed method may complete unpaid) */
  paid: boolean;
  amount: number;
  currency: string;
  /** the payment (payment intent) of a one-time session, once paid */
  paymentRef: string | null;
  /** the subscription a recurring session started, once paid */
  subscriptionId: string | null;
  /** the end of the subscription's paid period (its next renewal), when known */
  currentPeriodEnd: number | null;
  expiresAt: number;
}

/** A provider event after its signature was checked; the kinds the service acts on, others are `ignored`. */
export type PaymentEvent =
  | { id: string; created: number; type: 'checkout.completed'; checkout: CheckoutState }
  | { id: string; created: number; type: 'checkout.expired'; checkout: CheckoutState }
  | { id: string; created: number; type: 'subscription.renewed'; subscriptionId: string; currentPeriodEnd: number }
  | { id: string; created: number; type: 'subscription.ended'; subscriptionId: string }
  /** a renewal's payment failed; the provider tries again at nextAttemptAt (null: it gave up, and ends the subscription) */
  | { id: string; created: number; type: 'subscription.payment_failed'; subscriptionId: string; attempt: number; nextAttemptAt: number | null }
  | { id: string; created: number; type: 'ignored'; providerType: string };

/** Why a call failed; `retryable` when trying again later may succeed (network, 429, 5xx). */
export class PaymentProviderError extends Error {
  constructor(message: string, readonly retryable: boolean, readonly status: number | null = null) {
    super(message);
    this.name = 'PaymentProviderError';
  }
}

/** A webhook delivery whose signature, timestamp or body does not hold: the route answers 400 and changes nothing. */
export class WebhookSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

export interface PaymentProvider {
  readonly name: 'local' | 'stripe';
  createCheckout(request: CheckoutRequest, signal?: AbortSignal): Promise<CreatedCheckout>;
  getCheckout(id: string, signal?: AbortSignal): Promise<CheckoutState>;
  /** Expires an open session; answers the state after (complete when it was paid first, which the caller must honour). */
  expireCheckout(id: string, signal?: AbortSignal): Promise<CheckoutState>;
  /** Refunds the payment of a paid session (and cancels its subscription, if any); repeating it is harmless. */
  refundCheckout(id: string, signal?: AbortSignal): Promise<void>;
  /** Ends a subscription at the provider now (an order's cancellation, a plan replaced); repeating it is harmless. */
  cancelSubscription(subscriptionId: string, signal?: AbortSignal): Promise<void>;
  /**
   * Sets what a subscription does at its period end: end there (`cancelAtPeriodEnd`, Stripe's
   * cancel_at_period_end) or renew charging `price` from the next period on (no proration: the
   * period paid for stays as it was). A subscription that already ended is left alone; repeating
   * it is harmless.
   */
  updateSubscription(subscriptionId: string, change: SubscriptionChange, signal?: AbortSignal): Promise<void>;
  /**
   * Checks a webhook delivery on its raw body and headers (lowercased names) and parses it; throws
   * WebhookSignatureError on a bad or missing signature, a timestamp outside the tolerance, or a
   * body that is not an event.
   */
  verifyWebhook(rawBody: Buffer, headers: Record<string, string | undefined>): PaymentEvent;
}
