// The `local` payment provider (the default, API.md 8.7): what a real provider holds, kept in our
// own tables (local_checkouts, local_payment_events). Its hosted page is src/web/checkout.page.ts;
// paying there completes the session here, and the outcome reaches the service's webhook route as
// a signed, Stripe-shaped event (local-events.ts), the same path Stripe's events take. Recurring
// sessions start a subscription (`lsub_`) whose renewals the service's sweep drives with the clock
// (renewDue). Every change is one conditional statement, so two instances never do one twice.
import type { Db } from '../../db/database.js';
import type { LocalCheckoutsTable } from '../../db/schema.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { PaymentProviderError, type CheckoutRequest, type CheckoutState, type CreatedCheckout, type PaymentProvider, type PriceInterval } from './driver.js';
import { deliverEvents, recordEvent, sessionObject, verifyLocalWebhook, type DeliverEvent } from './local-events.js';

export interface LocalPaymentOptions {
  db: Db;
  /** the service's public URL: sessions are paid at {publicUrl}/checkout/{id} */
  publicUrl: string;
  /** signs the events (svc-signature); the webhook route verifies with the same key */
  signingKey: Buffer;
  /** hands a signed event to the service's webhook route (POST /v1/payment_webhooks/local) */
  deliver: DeliverEvent;
  /** the length of a subscription's "month" (SVC_LOCAL_PAYMENTS_MONTH_S); a year is 12 of them */
  monthSeconds: number;
}

/** What paying on the hosted page came to. */
export type PayOutcome = 'paid' | 'already_paid' | 'expired' | 'not_found';

export interface LocalPaymentProvider extends PaymentProvider {
  readonly name: 'local';
  /** The session as the hosted page shows it (status `expired` once expires_at passed), or undefined. */
  findSession(id: string): Promise<(LocalCheckoutsTable & { status: 'open' | 'complete' | 'expired' }) | undefined>;
  /** Marks an open session paid (one conditional statement), writes checkout.session.completed and delivers it at once. */
  pay(id: string, cardLast4: string): Promise<PayOutcome>;
  /** Counts a declined attempt (the card number is never kept). */
  recordDecline(id: string): Promise<void>;
  /** Sends every event that is due (the periodic sweep); answers how many were delivered. */
  deliverDue(): Promise<number>;
  /**
   * Renews every active subscription whose period ended, one interval each, and delivers the
   * invoice.paid events; one set to end at its period end ends instead (customer.subscription.deleted).
   * Answers how many events it delivered.
   */
  renewDue(): Promise<number>;
  /** Expires open sessions whose expires_at passed, with their checkout.session.expired events; answers how many. */
  expireDue(): Promise<number>;
}

const MAX_SWEEP = 100;
const ID = /^chk_[0-9a-z]{26}$/;

function intervalSeconds(interval: string, monthSeconds: number): number {
  return interval === 'year' ? 12 * monthSeconds : monthSeconds;
}

/** An open session whose expiry passed is expired, whether or not the sweep got to it yet. */
function effectiveStatus(row: LocalCheckoutsTable, now: number): 'open' | 'complete' | 'expired' {
  if (row.status === 'complete' || row.status === 'expired') return row.status;
  return Number(row.expires_at) <= now ? 'expired' : 'open';
}

function stateOf(row: LocalCheckoutsTable, now = clock.now()): CheckoutState {
  const status = effectiveStatus(row, now);
  return {
    id: row.id,
    clientReferenceId: row.client_reference_id,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
    status,
    paid: status === 'complete',
    amount: Number(row.amount),
    currency: row.currency,
    paymentRef: row.payment_ref,
    subscriptionId: row.subscription_id,
    currentPeriodEnd: row.current_period_end === null ? null : Number(row.current_period_end),
    expiresAt: Number(row.expires_at),
  };
}

function checkRequest(r: CheckoutRequest): void {
  const problems: string[] = [];
  if (!Number.isSafeInteger(r.amount) || r.amount <= 0) problems.push('amount must be a positive whole number of cents');
  if (!['eur', 'usd'].includes(r.currency)) problems.push('currency must be eur or usd');
  if (!(['one_time', 'month', 'year'] as PriceInterval[]).includes(r.interval)) problems.push('interval must be one_time, month or year');
  if (!r.idempotencyKey || r.idempotencyKey.length > 255) problems.push('idempotencyKey must be 1-255 characters');
  if (!r.title || r.title.length > 200) problems.push('title must be 1-200 characters');
  if (!Number.isSafeInteger(r.expiresAt) || r.expiresAt <= clock.now()) problems.push('expiresAt must be in the future');
  if (r.clientReferenceId.length > 200 || r.successUrl.length > 2048 || r.cancelUrl.length > 2048) problems.push('a reference or URL is too long');
  if (problems.length) throw new PaymentProviderError(`invalid checkout request: ${problems.join('; ')}`, false, 400);
}

export function createLocalPaymentProvider(options: LocalPaymentOptions): LocalPaymentProvider {
  const { db, publicUrl, signingKey, deliver, monthSeconds } = options;
  const base = publicUrl.replace(/\/+$/, '');
  const delivery = { db, signingKey, deliver };

  async function row(id: string): Promise<LocalCheckoutsTable | undefined> {
    if (!ID.test(id)) return undefined;
    return db.selectFrom('local_checkouts').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async function existing(id: string): Promise<LocalCheckoutsTable> {
    const found = await row(id);
    if (!found) throw new PaymentProviderError(`checkout session ${id.slice(0, 80)} not found`, false, 404);
    return found;
  }

  /** Ends a subscription once (one conditional statement) with its customer.subscription.deleted event. */
  async function endSubscription(tx: Db, subscriptionId: string): Promise<string | null> {
    const now = clock.now();
    const ended = await tx.updateTable('local_checkouts').set({ subscription_canceled_at: now })
      .where('subscription_id', '=', subscriptionId).where('subscription_canceled_at', 'is', null).executeTakeFirst();
    if (Number(ended.numUpdatedRows) !== 1) return null;
    return recordEvent(tx, 'customer.subscription.deleted', { id: subscriptionId, object: 'subscription', status: 'canceled', canceled_at: now });
  }

  const provider: LocalPaymentProvider = {
    name: 'local',

    async createCheckout(request): Promise<CreatedCheckout> {
      checkRequest(request);
      const now = clock.now();
      const id = newId('checkoutSession');
      await db.insertInto('local_checkouts').values({
        id, idempotency_key: request.idempotencyKey, client_reference_id: request.clientReferenceId,
        metadata: JSON.stringify(request.metadata), title: request.title, amount: request.amount, currency: request.currency,
        interval: request.interval, customer_email: request.customerEmail, status: 'open', success_url: request.successUrl,
        cancel_url: request.cancelUrl, expires_at: request.expiresAt, created_at: now, completed_at: null, card_last4: null,
        declines: 0, payment_ref: null, refunded_at: null, subscription_id: null, current_period_end: null, subscription_canceled_at: null,
        cancel_at_period_end: 0,
      }).onConflict((oc) => oc.column('idempotency_key').doNothing()).execute();
      // A repeated key answers the session it made first, as Stripe's Idempotency-Key does; other parameters under it are refused.
      const made = await db.selectFrom('local_checkouts').selectAll().where('idempotency_key', '=', request.idempotencyKey).executeTakeFirstOrThrow();
      if (made.client_reference_id !== request.clientReferenceId || Number(made.amount) !== request.amount
        || made.currency !== request.currency || made.interval !== request.interval) {
        throw new PaymentProviderError('idempotency key reused with different parameters', false, 400);
      }
      return { id: made.id, url: `${base}/checkout/${made.id}`, expiresAt: Number(made.expires_at) };
    },

    async getCheckout(id) {
      return stateOf(await existing(id));
    },

    async expireCheckout(id) {
      await existing(id);
      const eventId = await db.transaction().execute(async (tx) => {
        const res = await tx.updateTable('local_checkouts').set({ status: 'expired' }).where('id', '=', id).where('status', '=', 'open').executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) return null;
        const after = await tx.selectFrom('local_checkouts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        return recordEvent(tx, 'checkout.session.expired', sessionObject(after, 'expired'));
      });
      if (eventId) await deliverEvents(delivery, [eventId]);
      // Paid first: the session stays complete, and the caller must honour that.
      return stateOf(await existing(id));
    },

    async refundCheckout(id) {
      const found = await existing(id);
      if (found.status !== 'complete') return;
      const eventId = await db.transaction().execute(async (tx) => {
        await tx.updateTable('local_checkouts').set({ refunded_at: clock.now() }).where('id', '=', id).where('refunded_at', 'is', null).execute();
        return found.subscription_id ? endSubscription(tx, found.subscription_id) : null;
      });
      if (eventId) await deliverEvents(delivery, [eventId]);
    },

    async cancelSubscription(subscriptionId) {
      const found = await db.selectFrom('local_checkouts').select('id').where('subscription_id', '=', subscriptionId.slice(0, 100)).executeTakeFirst();
      if (!found) throw new PaymentProviderError(`subscription ${subscriptionId.slice(0, 80)} not found`, false, 404);
      const eventId = await db.transaction().execute((tx) => endSubscription(tx, subscriptionId));
      if (eventId) await deliverEvents(delivery, [eventId]);
    },

    async updateSubscription(subscriptionId, change) {
      const found = await db.selectFrom('local_checkouts').select('id').where('subscription_id', '=', subscriptionId.slice(0, 100)).executeTakeFirst();
      if (!found) throw new PaymentProviderError(`subscription ${subscriptionId.slice(0, 80)} not found`, false, 404);
      if (!Number.isSafeInteger(change.price.amount) || change.price.amount <= 0) throw new PaymentProviderError('price amount must be a positive whole number of cents', false, 400);
      // An ended subscription stays ended (conditional on it): nothing to change, as with Stripe's canceled ones.
      await db.updateTable('local_checkouts')
        .set({ cancel_at_period_end: change.cancelAtPeriodEnd ? 1 : 0, amount: change.price.amount, currency: change.price.currency, title: change.price.title.slice(0, 200) })
        .where('subscription_id', '=', subscriptionId).where('subscription_canceled_at', 'is', null).execute();
    },

    verifyWebhook(rawBody, headers) {
      return verifyLocalWebhook(signingKey, rawBody, headers);
    },

    async findSession(id) {
      const found = await row(id);
      return found && { ...found, status: effectiveStatus(found, clock.now()) };
    },

    async pay(id, cardLast4) {
      const now = clock.now();
      const found = await row(id);
      if (!found) return 'not_found';
      const recurring = found.interval !== 'one_time';
      const eventId = await db.transaction().execute(async (tx) => {
        const res = await tx.updateTable('local_checkouts').set({
          status: 'complete', completed_at: now, card_last4: cardLast4, payment_ref: newId('localPayment'),
          subscription_id: recurring ? newId('localSubscription') : null,
          current_period_end: recurring ? now + intervalSeconds(found.interval, monthSeconds) : null,
        }).where('id', '=', id).where('status', '=', 'open').where('expires_at', '>', now).executeTakeFirst();
        if (Number(res.numUpdatedRows) !== 1) return null;
        const after = await tx.selectFrom('local_checkouts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        return recordEvent(tx, 'checkout.session.completed', sessionObject(after, 'complete'));
      });
      if (!eventId) {
        const status = effectiveStatus((await row(id))!, now);
        return status === 'complete' ? 'already_paid' : 'expired';
      }
      await deliverEvents(delivery, [eventId]);
      return 'paid';
    },

    async recordDecline(id) {
      await db.updateTable('local_checkouts').set((eb) => ({ declines: eb('declines', '+', 1) })).where('id', '=', id).execute();
    },

    deliverDue: () => deliverEvents(delivery),

    async renewDue() {
      const now = clock.now();
      const due = await db.selectFrom('local_checkouts').selectAll()
        .where('current_period_end', '<=', now).where('subscription_canceled_at', 'is', null).where('subscription_id', 'is not', null)
        .orderBy('current_period_end').limit(MAX_SWEEP).execute();
      const events: string[] = [];
      for (const sub of due) {
        const from = Number(sub.current_period_end);
        const to = from + intervalSeconds(sub.interval, monthSeconds);
        const eventId = await db.transaction().execute(async (tx) => {
          // Set to end at the period end (a cancel): it ends now instead of charging another period.
          if (sub.cancel_at_period_end === 1) return endSubscription(tx, sub.subscription_id!);
          // Conditional on the period it saw: of two instances renewing at once, one moves it.
          const res = await tx.updateTable('local_checkouts').set({ current_period_end: to })
            .where('id', '=', sub.id).where('current_period_end', '=', from).where('subscription_canceled_at', 'is', null).executeTakeFirst();
          if (Number(res.numUpdatedRows) !== 1) return null;
          return recordEvent(tx, 'invoice.paid', {
            id: `in_${newId('localPayment').slice(4)}`, object: 'invoice', billing_reason: 'subscription_cycle', subscription: sub.subscription_id,
            amount_paid: Number(sub.amount), currency: sub.currency, status: 'paid',
            lines: { object: 'list', data: [{ object: 'line_item', amount: Number(sub.amount), period: { start: from, end: to } }] },
          });
        });
        if (eventId) events.push(eventId);
      }
      if (events.length) await deliverEvents(delivery, events);
      return events.length;
    },

    async expireDue() {
      const now = clock.now();
      const due = await db.selectFrom('local_checkouts').select('id').where('status', '=', 'open').where('expires_at', '<=', now).limit(MAX_SWEEP).execute();
      for (const { id } of due) await provider.expireCheckout(id);
      return due.length;
    },
  };
  return provider;
}
