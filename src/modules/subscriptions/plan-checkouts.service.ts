// Plans paid through the payment provider (SVC_BILLING=payments; issue 34). A raise (:changeTier to
// a higher tier) makes a plan checkout: a monthly subscription checkout at the configured provider
// (the same `local` / `stripe` drivers as orders) charging the plan's price from the catalog. The
// plan moves only when the provider reports the session paid: the orders module's payment intake
// (webhooks, the return page) routes sessions whose metadata says `purpose: plan` to takeState
// here (commerce calls tenancy's service; this module imports no commerce module). Taking a paid
// session is forward only and happens once (one conditional update of the checkout), so a replayed
// webhook or a second return changes nothing; a payment the plan can no longer take (it moved
// meanwhile, the workspace is being deleted) is refunded. An expired or abandoned checkout changes
// nothing. A workspace has at most one payable checkout: a raise to another tier first expires the
// open one at the provider (and takes it in, should it have been paid meanwhile).
import type { Logger } from 'pino';
import type { BillingMode } from '../../config.js';
import type { Db, Executor } from '../../db/database.js';
import type { CheckoutState, PaymentEvent, PaymentProvider } from '../../drivers/payments/driver.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch } from '../../platform/etag.js';
import { derivedId, isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { actorOfId, recordAuditEvent } from '../audit/audit.js';
import { subscriptionChangeApplied } from '../notifications/sources.js';
import type { PlanCatalog } from '../plans/plans.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { lockWorkspace } from '../workspaces/workspaces.service.js';
import * as checkouts from './plan-checkouts.repo.js';
import type { PlanEventOutcome, PlanSubscriptionService } from './plan-subscriptions.service.js';
import * as repo from './subscriptions.repo.js';
import type { PlanCheckoutT } from './subscriptions.schemas.js';

/** An open checkout is handed out again only with at least this much time left to pay. */
export const PLAN_REUSE_MIN_SECONDS = 300;
/** A `creating` checkout older than this was given up by its caller (it failed or died): the next raise replaces it. */
export const PLAN_SLOT_SECONDS = 60;
/** What `purpose` the metadata of a plan's checkout session says: the payment intake routes by it. */
export const PLAN_PURPOSE = 'plan';

export type PlanIntakeOutcome = 'applied' | 'duplicate' | 'late' | 'refunded' | 'unknown_session' | 'ignored';

export interface PlanCheckoutDeps {
  db: Db;
  cursors: CursorCodec;
  plans: PlanCatalog;
  billing: BillingMode;
  /** the provider new checkouts go to (SVC_PAYMENT_PROVIDER) */
  provider: () => PaymentProvider;
  /** every provider by name (a checkout made before a switch is still read, expired and refunded at its own) */
  providers: ReadonlyMap<string, PaymentProvider>;
  publicUrl: string;
  /** SVC_CHECKOUT_TTL_S */
  checkoutTtlSeconds: number;
  log: Pick<Logger, 'warn' | 'info'>;
  /** the workspace's plan subscription at the provider: a paid raise starts it; the provider's renewals and end reach it */
  paidPlans: Pick<PlanSubscriptionService, 'started' | 'takeRenewal' | 'takeEnd' | 'takePaymentFailed'>;
}

const providerDown = (err: unknown) =>
  new ApiError('UNAVAILABLE', `the payment provider could not be reached: ${(err as Error).message}`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });

/** What a raise answered: 201 with a new checkout, 200 with the open one it reused. */
export interface RaiseAnswer {
  status: 200 | 201;
  body: PlanCheckoutT;
}

export function createPlanCheckoutService(deps: PlanCheckoutDeps) {
  const { db, plans } = deps;
  const base = deps.publicUrl.replace(/\/+$/, '');

  function toPlanCheckout(row: checkouts.PlanCheckoutRow, now = clock.now()): PlanCheckoutT {
    // An open one past its expiry is expired, whether or not the provider's event arrived yet.
    const state = row.state === 'open' && row.expires_at <= now ? 'expired' : (row.state as PlanCheckoutT['state']);
    return {
      id: row.id, workspace_id: row.workspace_id, tier: row.tier, previous_tier: row.previous_tier, state, status_reason: row.status_reason,
      provider: row.provider, provider_session_id: row.provider_session_id, checkout_url: row.url, amount: row.amount, currency: row.currency,
      interval: 'month', expires_at: row.expires_at, created_by: row.created_by, created_at: row.created_at, completed_at: row.completed_at,
      change_request_id: row.change_request_id,
    };
  }

  /** Is moving this workspace to `tier` a raise that is paid here (payments billing, a higher tier)? */
  function isPaidRaise(currentTier: string, tier: string): boolean {
    return deps.billing === 'payments' && plans.has(tier) && plans.rank(tier) > plans.rank(currentTier);
  }

  /** Expires a checkout at its provider and takes in what the provider says (paid meanwhile: taken as paid). */
  async function expireAtProvider(row: checkouts.PlanCheckoutRow): Promise<void> {
    if (row.provider_session_id === null) return;
    const provider = deps.providers.get(row.provider);
    if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${row.provider} is not configured`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
    let state: CheckoutState;
    try {
      state = await provider.expireCheckout(row.provider_session_id);
    } catch (err) {
      throw providerDown(err);
    }
    await takeState(row.provider, state);
  }

  /**
   * A raise with SVC_BILLING=payments: 201 with a new plan checkout, or 200 with the open one when
   * it is for the same tier and has at least 5 minutes left. Checked like :changeTier (role, etag,
   * a workspace being deleted); a tier without a price is the operator's to give (403
   * PLAN_SET_BY_OPERATOR). Nothing about the plan changes here.
   */
  async function raise(scope: WorkspaceScope, revision: number | null, tier: string): Promise<RaiseAnswer> {
    if (!plans.has(tier)) throw fieldInvalid('body.tier', `tier "${tier}" is not in the plan catalog (GET /v1/plans)`, 'UNKNOWN_TIER');
    const price = plans.plan(tier).price;
    // A stale open checkout (another tier, about to expire) or a slot given up is replaced: at most twice round.
    for (let round = 0; round < 3; round++) {
      const now = clock.now();
      const step = await db.transaction().execute(async (tx) => {
        requireRole(scope, 'admin');
        await assertWorkspaceActive(tx, scope.workspaceId);
        const current = await repo.findSubscription(tx, scope.workspaceId);
        if (!current) throw notFound('workspace');
        if (revision !== null && revision !== current.revision) {
          throw etagMismatch(`subscription ${derivedId('subscription', scope.workspaceId)}`, current.revision);
        }
        if (!isPaidRaise(current.tier, tier)) return { kind: 'not_a_raise' as const };
        if (!price) {
          throw new ApiError('PERMISSION_DENIED', `the ${tier} plan is not sold on this service: its operator moves workspaces to it (svc admin workspaces set-plan)`, {
            reason: 'PLAN_SET_BY_OPERATOR',
          });
        }
        const live = await checkouts.livePlanCheckout(tx, scope.workspaceId);
        if (live?.state === 'open' && live.tier === tier && live.expires_at - now >= PLAN_REUSE_MIN_SECONDS) return { kind: 'reuse' as const, row: live };
        if (live?.state === 'creating' && live.tier === tier && now - live.created_at <= PLAN_SLOT_SECONDS) return { kind: 'join' as const, row: live };
        if (live?.state === 'open') return { kind: 'replace' as const, row: live };
        if (live) await checkouts.movePlanCheckout(tx, live.id, ['creating'], 'canceled', { status_reason: 'given up while the provider was asked' });
        const provider = deps.provider();
        const row: checkouts.PlanCheckoutRow = {
          id: newId('planCheckout'), workspace_id: scope.workspaceId, tier, previous_tier: current.tier, state: 'creating', status_reason: null,
          provider: provider.name, provider_session_id: null, url: null, amount: price.unit_amount, currency: price.currency,
          // Stripe takes 30 minutes at least.
          expires_at: now + Math.max(provider.name === 'stripe' ? 1800 : 60, deps.checkoutTtlSeconds),
          created_by: scope.actorId, created_at: now, completed_at: null, change_request_id: null, payment_ref: null, subscription_id: null, refunded_at: null,
        };
        await checkouts.insertPlanCheckout(tx, row);
        return { kind: 'made' as const, row };
      });
      if (step.kind === 'not_a_raise') throw new ApiError('ABORTED', 'the plan changed meanwhile: read the subscription and try again', { reason: 'ETAG_MISMATCH' });
      if (step.kind === 'reuse') return { status: 200, body: toPlanCheckout(step.row) };
      if (step.kind === 'replace') {
        await expireAtProvider(step.row);
        // An open one whose provider did not answer `expired` (it was paid) was taken in by expireAtProvider; still open means gone at the provider.
        await db.transaction().execute((tx) => checkouts.movePlanCheckout(tx, step.row.id, ['open'], 'canceled', { status_reason: `replaced by a raise to ${tier}` }));
        continue;
      }
      return open(scope, step.row, step.kind === 'made' ? 201 : 200);
    }
    throw new ApiError('ABORTED', 'the workspace\'s plan checkout changed meanwhile: try again', { reason: 'CONFLICT' });
  }

  /** Asks the provider for the checkout's session (under the checkout's idempotency key: joiners get the same) and opens it. */
  async function open(scope: WorkspaceScope, row: checkouts.PlanCheckoutRow, status: 200 | 201): Promise<RaiseAnswer> {
    const provider = deps.providers.get(row.provider);
    if (!provider) throw new ApiError('UNAVAILABLE', `payment provider ${row.provider} is not configured`, { reason: 'PAYMENT_PROVIDER_UNAVAILABLE' });
    const plan = plans.plan(row.tier);
    let made;
    try {
      made = await provider.createCheckout({
        clientReferenceId: row.workspace_id,
        metadata: { purpose: PLAN_PURPOSE, plan_checkout_id: row.id, workspace_id: row.workspace_id, tier: row.tier },
        idempotencyKey: `plan:${row.id}`,
        title: `${plan.display_name} plan`,
        amount: row.amount, currency: row.currency as 'eur' | 'usd', interval: 'month',
        customerEmail: null, expiresAt: row.expires_at,
        successUrl: `${base}/checkout/return/${provider.name}?session_id={CHECKOUT_SESSION_ID}`,
        cancelUrl: `${base}/settings/plan?checkout=canceled`,
      });
    } catch (err) {
      await db.transaction().execute((tx) => checkouts.movePlanCheckout(tx, row.id, ['creating'], 'canceled', { status_reason: 'the payment provider could not make the session' }));
      throw providerDown(err);
    }
    const settled = await db.transaction().execute(async (tx) => {
      if (await checkouts.settlePlanCheckout(tx, row.id, { provider_session_id: made.id, url: made.url, expires_at: made.expiresAt })) {
        await checkouts.movePlanCheckout(tx, row.id, ['creating'], 'open');
        await recordAuditEvent(tx, scope, {
          action: 'subscription.checkout.create', resourceType: 'plan_checkout', resourceId: row.id,
          metadata: { tier: row.tier, previous_tier: row.previous_tier, amount: String(row.amount), currency: row.currency, provider: row.provider, provider_session_id: made.id },
        });
        return { status, row: (await checkouts.findPlanCheckoutById(tx, row.id))! };
      }
      // Someone else settled it first (a double click): the same session, answered 200.
      const now = (await checkouts.findPlanCheckoutById(tx, row.id))!;
      return now.provider_session_id === made.id && now.state === 'open' ? { status: 200 as const, row: now } : null;
    });
    if (!settled) throw new ApiError('ABORTED', 'the workspace\'s plan checkout changed meanwhile: try again', { reason: 'CONFLICT' });
    return { status: settled.status, body: toPlanCheckout(settled.row) };
  }

  /**
   * What the provider says of a plan's session, in the intake's transaction (the webhook's, with
   * its event recorded in it): expired moves an open checkout to expired; paid moves it to paid
   * once and raises the plan, or marks it refunded when the plan can no longer take it (the caller
   * refunds after the commit: `refund` names the checkout). Forward only and idempotent.
   */
  async function takeStateIn(tx: Executor, provider: string, state: CheckoutState): Promise<{ outcome: PlanIntakeOutcome; refund: checkouts.PlanCheckoutRow | null }> {
    const row = await checkouts.findPlanCheckoutBySession(tx, provider, state.id);
    if (!row) return { outcome: 'unknown_session', refund: null };
    const now = clock.now();
    if (state.status === 'expired') {
      return { outcome: (await checkouts.movePlanCheckout(tx, row.id, ['creating', 'open'], 'expired')) ? 'applied' : 'late', refund: null };
    }
    if (state.status !== 'complete' || !state.paid) return { outcome: 'ignored', refund: null };
    // The provider's word wins over our own expiry or replacement: a paid session is taken or refunded, never lost.
    const paid = await checkouts.movePlanCheckout(tx, row.id, ['creating', 'open', 'expired', 'canceled'], 'paid', {
      completed_at: now, payment_ref: state.paymentRef, subscription_id: state.subscriptionId,
    });
    if (!paid) return { outcome: 'duplicate', refund: null };
    const refuse = async (reason: string) => {
      await checkouts.movePlanCheckout(tx, row.id, ['paid'], 'refunded', { status_reason: reason });
      return { outcome: 'refunded' as const, refund: row };
    };
    const locked = await lockWorkspace(tx, row.workspace_id);
    if (locked?.state !== 'active') return refuse('the workspace is being deleted');
    const current = await repo.findSubscription(tx, row.workspace_id);
    if (!current) return refuse('the workspace is gone');
    if (plans.rank(row.tier) <= plans.rank(current.tier)) return refuse(`the workspace was already on ${current.tier} when the payment arrived`);
    const id = newId('subscriptionChangeRequest');
    if (current.pending) await repo.resolvePending(tx, current.pending.id, 'canceled', `superseded by the paid change request ${id}`, now);
    await repo.insertChangeRequest(tx, {
      id, workspace_id: row.workspace_id, kind: 'upgrade', previous_tier: current.tier, requested_tier: row.tier, status: 'applied',
      status_reason: `paid through ${provider} (plan checkout ${row.id})`, effective_at: now, resolved_at: now, operation_id: null,
      requested_by: row.created_by, created_at: now,
    });
    await repo.ensureSubscription(tx, row.workspace_id, now);
    await repo.setWorkspaceTier(tx, row.workspace_id, row.tier, now);
    await repo.updateSubscription(tx, row.workspace_id, 'active', null, now);
    await checkouts.setPlanCheckoutChange(tx, row.id, id);
    // The monthly subscription the payment started pays for the plan from now on (the one it replaces is ended at the provider).
    if (state.subscriptionId) {
      await deps.paidPlans.started(tx, {
        workspaceId: row.workspace_id, provider, subscriptionId: state.subscriptionId, planCheckoutId: row.id, tier: row.tier, periodEnd: state.currentPeriodEnd,
      });
    }
    await subscriptionChangeApplied(tx, { workspaceId: row.workspace_id, changeRequestId: id, kind: 'upgrade', previousTier: current.tier, tier: row.tier });
    await recordAuditEvent(tx, { workspaceId: row.workspace_id, actor: actorOfId(row.created_by), requestId: null }, {
      action: 'subscription.plan_paid', resourceType: 'workspace', resourceId: row.workspace_id,
      metadata: {
        previous_tier: current.tier, tier: row.tier, change_request_id: id, plan_checkout_id: row.id, amount: String(row.amount), currency: row.currency,
        provider, provider_session_id: state.id, ...(state.paymentRef ? { payment_ref: state.paymentRef } : {}),
        ...(state.subscriptionId ? { provider_subscription_id: state.subscriptionId } : {}),
      },
    });
    return { outcome: 'applied', refund: null };
  }

  /**
   * A provider's event about a subscription (the payment intake's transaction), for a plan's
   * subscription: a renewal, a renewal's failed payment, its end. `unknown_subscription` when it
   * is no plan's (an order's, say).
   */
  async function takeSubscriptionEventIn(tx: Executor, provider: string, event: PaymentEvent): Promise<PlanEventOutcome> {
    if (event.type === 'subscription.renewed') return deps.paidPlans.takeRenewal(tx, provider, event.subscriptionId, event.currentPeriodEnd);
    if (event.type === 'subscription.ended') return deps.paidPlans.takeEnd(tx, provider, event.subscriptionId);
    if (event.type === 'subscription.payment_failed') {
      return deps.paidPlans.takePaymentFailed(tx, provider, { eventId: event.id, subscriptionId: event.subscriptionId, attempt: event.attempt, nextAttemptAt: event.nextAttemptAt });
    }
    return 'unknown_subscription';
  }

  /** Gives back a payment no plan took; a failure is logged and retried by refundOrphans. */
  async function refund(row: checkouts.PlanCheckoutRow): Promise<void> {
    const provider = deps.providers.get(row.provider);
    if (!provider || row.provider_session_id === null) return;
    try {
      await provider.refundCheckout(row.provider_session_id);
      await checkouts.markPlanCheckoutRefunded(db, row.id, clock.now());
      deps.log.info({ plan_checkout_id: row.id, checkout_session_id: row.provider_session_id }, 'refunded a plan payment the plan could not take');
    } catch (err) {
      deps.log.warn({ plan_checkout_id: row.id, err: (err as Error).message }, 'plan refund failed; the sweep retries it');
    }
  }

  /** takeStateIn in a transaction of its own, then the refund (the return page, an expiry). */
  async function takeState(provider: string, state: CheckoutState): Promise<PlanIntakeOutcome> {
    const { outcome, refund: toRefund } = await db.transaction().execute((tx) => takeStateIn(tx, provider, state));
    if (toRefund) await refund(toRefund);
    return outcome;
  }

  /** The sweep's share: refunds that failed before are tried again. */
  async function refundOrphans(limit = 50): Promise<number> {
    const rows = await checkouts.unrefundedPlanCheckouts(db, limit);
    for (const row of rows) await refund(row);
    return rows.length;
  }

  /** A plan checkout by its provider's session id (the return page), or undefined. */
  const findBySession = (provider: string, providerSessionId: string) => checkouts.findPlanCheckoutBySession(db, provider, providerSessionId);

  async function list(scope: WorkspaceScope, query: PageQueryT): Promise<Page<PlanCheckoutT>> {
    const page = deps.cursors.request(query, scope.workspaceId);
    const rows = await checkouts.listPlanCheckouts(db, scope.workspaceId, page);
    const now = clock.now();
    return deps.cursors.page(rows, page, scope.workspaceId, {}, (r) => toPlanCheckout(r, now));
  }

  async function get(scope: WorkspaceScope, id: string): Promise<PlanCheckoutT> {
    const row = isId('planCheckout', id) ? await checkouts.findPlanCheckout(db, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('plan checkout');
    return toPlanCheckout(row);
  }

  return { isPaidRaise, raise, takeStateIn, takeState, takeSubscriptionEventIn, refund, refundOrphans, findBySession, list, get };
}

export type PlanCheckoutService = ReturnType<typeof createPlanCheckoutService>;
