// Checkout sessions and payment intake (spec 2.6, endpoint 13, API.md 8.7). Endpoint 13 reuses the
// draft's open session when it charges the draft's current content revision and has at least five
// minutes left, and otherwise expires the stale one at the provider and opens a new one. Payments
// come in two ways, a provider's signed webhook and the customer's return page (which re-reads the
// provider rather than trusting the redirect); both end in takeCheckoutState, which is forward only
// and idempotent: the first report of a paid session commits the order, every later one finds the
// session complete and changes nothing. A payment no order can take (the draft ended, or the session
// charged a stale revision) is refunded. Webhook events are taken in exactly once by their id.
import type { Db, Executor } from '../../db/database.js';
import type { CheckoutState, PaymentEvent, PaymentProvider } from '../../drivers/payments/driver.js';
import type { PaymentProviderName } from '../../config-commerce.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import type { Logger } from 'pino';
import type { OperationService } from '../operations/operations.service.js';
import { endDraft, workspaceLive } from './draft-endings.js';
import { allows, isPayable } from './draft-moves.js';
import { findOfferById, offerWithdrawn, type OfferRow } from './offer-uses.js';
import { commitOrder } from './order-commit.js';
import * as repo from './order-drafts.repo.js';
import { offerNotRedeemable, type OrderDraftService } from './order-drafts.service.js';
import { amountOf } from './order-drafts.view.js';
import type { CheckoutSessionT } from './orders.schemas.js';
import { PLAN_PURPOSE, type PlanCheckoutService } from '../subscriptions/plan-checkouts.service.js';

/** An open session is reused only with at least this much time left to pay. */
export const REUSE_MIN_SECONDS = 300;
/** A checkout slot whose caller has not settled it by then is taken as given up (its caller failed or died). */
export const SLOT_SECONDS = 60;

export interface CheckoutDeps {
  db: Db;
  drafts: OrderDraftService;
  operations: Pick<OperationService, 'start'>;
  /** the provider new sessions go to */
  provider: () => PaymentProvider;
  /** every provider by name (sessions made before a switch are still read and expired at theirs) */
  providers: ReadonlyMap<string, PaymentProvider>;
  publicUrl: string;
  checkoutTtlSeconds: number;
  /** the process log */
  log: Pick<Logger, 'warn' | 'info'>;
  /**
   * Plans paid through the provider (SVC_BILLING=payments): sessions whose metadata says `purpose:
   * plan` are subscriptions', which take them in the intake's transaction and refund after it.
   */
  planCheckouts: Pick<PlanCheckoutService, 'takeStateIn' | 'takeState' | 'refund' | 'findBySession' | 'takeSubscriptionEventIn'>;
}

export type IntakeOutcome = 'applied' | 'duplicate' | 'stale' | 'late' | 'refunded' | 'unknown_session' | 'ignored';
type PlanRefund = Awaited<ReturnType<PlanCheckoutService['takeStateIn']>>['refund'];

/** A plan's checkout session (SVC_BILLING=payments), told by the metadata the subscriptions service gave it. */
const isPlanSession = (state: CheckoutState) => state.metadata.purpose === PLAN_PURPOSE;

const providerDown = (err: unknown) =>
  new ApiError('UNAVAILABLE', `the payment provider could not be reached: ${(err as Error).message}`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });

export function createCheckoutService(deps: CheckoutDeps) {
  const { db, drafts } = deps;

  const toSession = (c: repo.CheckoutRow): CheckoutSessionT => ({ id: c.provider_session_id, url: c.url, expires_at: c.expires_at });

  /** An open session is handed out again while it charges the draft's content and has time left. */
  const reusable = (session: repo.CheckoutRow | undefined, draft: repo.DraftRow, now: number): session is repo.CheckoutRow =>
    session !== undefined && session.draft_revision === draft.content_revision && session.expires_at - now >= REUSE_MIN_SECONDS;

  /**
   * Endpoint 13: 200 with the reusable open session, or 201 with a new one (stale ones are expired).
   * Calls made at once (a double click) hand out one session: the first takes the draft's checkout
   * slot (a pending row, under the draft's lock) and the others join it; all ask the provider under
   * the slot's idempotency key with the slot's parameters, so they get the same session, and the
   * one conditional UPDATE that settles the slot decides who answers 201. The others answer 200
   * with it. A caller never expires a session someone recorded: only the stale open ones (of an
   * older content revision, or about to expire) and one it made itself that nobody will hand out.
   */
  async function createCheckoutSession(userId: string, id: string, revision: number | null): Promise<{ status: 200 | 201; body: CheckoutSessionT }> {
    const now = clock.now();
    // Checked and the slot taken first; the provider is called outside any transaction.
    const taken = await db.transaction().execute(async (tx) => {
      const row = await drafts.customerDraftIn(tx, userId, id, revision, 'checkoutOpened');
      const offer = (await findOfferById(tx, row.offer_id))!;
      if (offerWithdrawn(offer, now)) {
        await endDraft(tx, deps, row, 'offer_expired');
        return null;
      }
      const open = await repo.openCheckoutOf(tx, id);
      if (reusable(open, row, now)) return { kind: 'reuse' as const, session: open };
      return { kind: 'slot' as const, row, offer, stale: await repo.openCheckoutsOf(tx, id), slot: await checkoutSlot(tx, row, offer, now) };
    });
    if (!taken) throw offerNotRedeemable(`the offer of order draft ${id} was archived or expired; the draft ended`);
    if (taken.kind === 'reuse') return { status: 200, body: toSession(taken.session) };
    const { row, offer, stale, slot } = taken;
    for (const session of stale) await expireAtProvider(session);
    const provider = deps.providers.get(slot.provider);
    if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${slot.provider} is not configured`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
    let created;
    try {
      created = await provider.createCheckout({
        clientReferenceId: row.id,
        metadata: { order_draft_id: row.id, draft_revision: String(slot.draft_revision), offer_id: offer.id },
        idempotencyKey: `${row.id}:${slot.draft_revision}:${slot.id}`,
        title: offer.title, amount: slot.amount, currency: slot.currency as 'eur', interval: slot.interval as 'one_time',
        customerEmail: row.customer_email, expiresAt: slot.expires_at,
        successUrl: `${deps.publicUrl}/checkout/return/${provider.name}?session_id={CHECKOUT_SESSION_ID}`,
        cancelUrl: `${deps.publicUrl}/order_drafts/${row.id}`,
      });
    } catch (err) {
      throw providerDown(err);
    }
    const made = { provider_session_id: created.id, url: created.url, expires_at: created.expiresAt };
    const settled = await db.transaction().execute(async (tx) => {
      const current = await repo.lockDraft(tx, id);
      const payable = current !== undefined && isPayable(current, slot.draft_revision);
      const recorded = await repo.findCheckoutByProviderId(tx, slot.provider, created.id);
      if (payable && recorded?.status === 'open') return { kind: 'joined' as const, session: recorded };
      if (payable && !recorded && (await repo.settleCheckout(tx, slot.id, made))) {
        for (const session of await repo.openCheckoutsOf(tx, id)) if (session.id !== slot.id) await repo.moveCheckout(tx, session.id, 'expired', {});
        await repo.moveDraft(tx, id, 'checkoutOpened', null, {}, clock.now());
        return { kind: 'made' as const, session: (await repo.findCheckout(tx, slot.id))! };
      }
      const open = payable ? await repo.openCheckoutOf(tx, id) : undefined;
      return { kind: 'lost' as const, draft: current, winner: reusable(open, current!, clock.now()) ? open : null, ours: recorded ? null : slot };
    });
    if (settled.kind !== 'lost') return { status: settled.kind === 'made' ? 201 : 200, body: toSession(settled.session) };
    // The session this call got will not be handed out: it must not stay payable.
    if (settled.ours) await expireAtProvider({ ...settled.ours, ...made }).catch(() => {});
    if (settled.winner) return { status: 200, body: toSession(settled.winner) };
    const moved = settled.draft;
    if (moved && !allows('checkoutOpened', moved.status)) throw new ApiError('FAILED_PRECONDITION', `order draft ${id} is in ${moved.status} now`, { reason: 'WRONG_PHASE', metadata: { status: moved.status } });
    throw new ApiError('ABORTED', `etag mismatch for order draft ${id}`, { reason: 'ETAG_MISMATCH', metadata: { etag: String(moved?.revision ?? '') } });
  }

  /**
   * The draft's checkout slot for its current content, in the transaction that holds the draft's
   * lock: the pending one when it still fits (same content, younger than SLOT_SECONDS, time left to
   * pay), else a new one (a pending slot that no longer fits was given up by its caller).
   */
  async function checkoutSlot(tx: Executor, row: repo.DraftRow, offer: OfferRow, now: number): Promise<repo.CheckoutRow> {
    const pending = await repo.pendingCheckoutOf(tx, row.id);
    if (pending && pending.draft_revision === row.content_revision && now - pending.created_at <= SLOT_SECONDS && pending.expires_at - now >= REUSE_MIN_SECONDS) return pending;
    if (pending) await repo.abandonCheckout(tx, pending.id);
    const provider = deps.provider();
    // Stripe takes 30 minutes at least; a session that outlives its draft is expired by the draft's cleanup.
    const expiresAt = Math.max(now + (provider.name === 'stripe' ? 1800 : 60), Math.min(row.ttl_expires_at, now + deps.checkoutTtlSeconds));
    const slotId = newId('checkoutSession');
    const slot: repo.CheckoutRow = {
      id: slotId, draft_id: row.id, provider: provider.name, provider_session_id: `pending:${slotId}`, draft_revision: row.content_revision,
      url: '', status: 'pending', amount: amountOf(offer), currency: offer.currency, interval: offer.interval, expires_at: expiresAt,
      created_at: now, completed_at: null, payment_ref: null, subscription_id: null, refunded_at: null,
    };
    await repo.insertCheckout(tx, slot);
    return slot;
  }

  /** Expires a session at its provider; a session paid meanwhile is taken in as paid (never lost). */
  async function expireAtProvider(session: repo.CheckoutRow): Promise<void> {
    const provider = deps.providers.get(session.provider);
    if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${session.provider} is not configured`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
    let state: CheckoutState;
    try {
      state = await provider.expireCheckout(session.provider_session_id);
    } catch (err) {
      throw providerDown(err);
    }
    await takeCheckoutState(session.provider as PaymentProviderName, state);
  }

  /** Applies what the provider says of a session, in the caller's transaction; forward only. */
  async function applyCheckoutState(tx: Executor, provider: string, state: CheckoutState): Promise<{ outcome: IntakeOutcome; refund: repo.CheckoutRow | null }> {
    const session = await repo.findCheckoutByProviderId(tx, provider, state.id);
    if (!session) return { outcome: 'unknown_session', refund: null };
    if (state.status === 'expired') return { outcome: (await repo.moveCheckout(tx, session.id, 'expired', {})) ? 'applied' : 'late', refund: null };
    if (state.status !== 'complete' || !state.paid) return { outcome: 'ignored', refund: null };
    const draft = await repo.lockDraft(tx, session.draft_id);
    const moved = await repo.moveCheckout(tx, session.id, 'complete', {
      completed_at: clock.now(), payment_ref: state.paymentRef, subscription_id: state.subscriptionId,
    });
    if (!moved) return { outcome: 'duplicate', refund: null };
    // A customer workspace deleted meanwhile cannot take the install: the payment is refunded.
    const payable = draft && isPayable(draft, session.draft_revision) && draft.workspace_id !== null && (await workspaceLive(tx, draft.workspace_id));
    if (!payable) return { outcome: draft && session.draft_revision !== draft.content_revision ? 'stale' : 'late', refund: session };
    const offer = (await findOfferById(tx, draft.offer_id))!;
    const paidDraft = await repo.moveDraft(tx, draft.id, 'paid', null, { payment_completed: 1 }, clock.now());
    await commitOrder(tx, deps.operations, paidDraft!, offer, {
      provider, providerSessionId: session.provider_session_id, subscriptionId: state.subscriptionId, currentPeriodEnd: state.currentPeriodEnd,
    });
    return { outcome: 'applied', refund: null };
  }

  /** Refunds a payment no order took, then records it; a failure is retried by the sweep (refundOrphans). */
  async function refund(session: repo.CheckoutRow): Promise<void> {
    const provider = deps.providers.get(session.provider);
    if (!provider) return;
    try {
      await provider.refundCheckout(session.provider_session_id);
      await repo.markCheckoutRefunded(db, session.id, clock.now());
      deps.log.info({ checkout_session_id: session.provider_session_id, order_draft_id: session.draft_id }, 'refunded a payment no order could take');
    } catch (err) {
      deps.log.warn({ checkout_session_id: session.provider_session_id, err: (err as Error).message }, 'refund failed; the sweep retries it');
    }
  }

  /** The return page and expiries: what the provider says now of a session. */
  async function takeCheckoutState(provider: PaymentProviderName, state: CheckoutState): Promise<IntakeOutcome> {
    const { outcome, refund: toRefund } = await db.transaction().execute((tx) => applyCheckoutState(tx, provider, state));
    if (toRefund) await refund(toRefund);
    return toRefund ? 'refunded' : outcome;
  }

  /** A verified webhook event, taken in exactly once by its id (recorded in the transaction of its effect). */
  async function takePaymentEvent(provider: PaymentProviderName, received: PaymentEvent): Promise<IntakeOutcome> {
    const event = await withPeriodEnd(provider, received);
    const now = clock.now();
    const result = await db.transaction().execute(async (tx) => {
      const sessionId = event.type === 'checkout.completed' || event.type === 'checkout.expired' ? event.checkout.id : null;
      const fresh = await repo.recordPaymentEvent(tx, {
        provider, event_id: event.id, type: event.type === 'ignored' ? event.providerType : event.type, provider_session_id: sessionId,
        outcome: 'applied', created_at: event.created, received_at: now,
      });
      if (!fresh) return { outcome: 'duplicate' as IntakeOutcome, refund: null };
      let applied: { outcome: IntakeOutcome; refund: repo.CheckoutRow | null; planRefund?: PlanRefund };
      if ((event.type === 'checkout.completed' || event.type === 'checkout.expired') && isPlanSession(event.checkout)) {
        // A plan's session (SVC_BILLING=payments): the subscriptions service takes it, in this transaction.
        const plan = await deps.planCheckouts.takeStateIn(tx, provider, event.checkout);
        applied = { outcome: plan.outcome, refund: null, planRefund: plan.refund };
      } else if (event.type === 'checkout.completed' || event.type === 'checkout.expired') applied = await applyCheckoutState(tx, provider, event.checkout);
      else if (event.type === 'subscription.renewed' || event.type === 'subscription.ended' || event.type === 'subscription.payment_failed') {
        // An order's subscription, else a plan's (SVC_BILLING=payments), which the subscriptions service takes in this transaction.
        const orders = event.type === 'subscription.renewed' ? await repo.renewOrders(tx, event.subscriptionId, event.currentPeriodEnd, now)
          : event.type === 'subscription.ended' ? await repo.endSubscriptionOrders(tx, event.subscriptionId, now) : 0;
        const plan = orders > 0 ? null : await deps.planCheckouts.takeSubscriptionEventIn(tx, provider, event);
        const outcome: IntakeOutcome = orders > 0 || plan === 'applied' ? 'applied' : plan === 'duplicate' ? 'duplicate'
          : event.type === 'subscription.payment_failed' && plan === 'unknown_subscription' ? 'ignored' : 'late';
        applied = { outcome, refund: null };
      } else applied = { outcome: 'ignored', refund: null };
      if (applied.outcome !== 'applied') await repo.setPaymentEventOutcome(tx, provider, event.id, applied.refund ? 'refunded' : applied.outcome);
      return applied;
    });
    if (result.refund) await refund(result.refund);
    if (result.planRefund) await deps.planCheckouts.refund(result.planRefund);
    return result.refund ? 'refunded' : result.outcome;
  }

  /**
   * A webhook's paid session names its subscription but not the paid period (Stripe sends the
   * subscription unexpanded): the session is read back so the order shows its next renewal. If the
   * provider cannot be reached the event is taken as sent; the first renewal sets the date then.
   */
  async function withPeriodEnd(provider: string, event: PaymentEvent): Promise<PaymentEvent> {
    if (event.type !== 'checkout.completed' || event.checkout.subscriptionId === null || event.checkout.currentPeriodEnd !== null) return event;
    try {
      const state = await deps.providers.get(provider)?.getCheckout(event.checkout.id);
      return state && state.status === 'complete' && state.currentPeriodEnd !== null ? { ...event, checkout: state } : event;
    } catch (err) {
      deps.log.warn({ checkout_session_id: event.checkout.id, err: (err as Error).message }, 'could not read the subscription period of a paid session');
      return event;
    }
  }

  /** The sweep's share: refunds that failed before are tried again. */
  async function refundOrphans(limit = 50): Promise<number> {
    const orphans = await repo.unrefundedOrphans(db, limit);
    for (const session of orphans) await refund(session);
    return orphans.length;
  }

  /** A session by its provider's id (the return page). */
  const findSession = (provider: string, providerSessionId: string) => repo.findCheckoutByProviderId(db, provider, providerSessionId);

  return { createCheckoutSession, expireAtProvider, takeCheckoutState, takePaymentEvent, refundOrphans, findSession };
}

export type CheckoutService = ReturnType<typeof createCheckoutService>;
