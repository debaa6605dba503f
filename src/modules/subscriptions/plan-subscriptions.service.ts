// A workspace's paid plan subscription at the payment provider (SVC_BILLING=payments, issue 34),
// after its first payment: the paid raise (plan-checkouts.service.ts) starts it; from then on the
// provider must hold what the plan does, and the plan must follow what the provider does.
//
// What the service asks of the provider, decided under the workspace lock in the transaction of
// the plan's change, and carried out after commit by a `plan_subscription_sync` job (never inside a
// transaction), retried with growing delays until the provider took it:
// - a cancel, or a downgrade to free, scheduled at the period end: the subscription is set to end
//   at its period end (Stripe's cancel_at_period_end); the plan stays paid until then; withdrawing
//   the change (:reactivate, :changeTier back to the current tier, the operator keeping the plan)
//   sets it to renew again;
// - a downgrade to a lower paid plan: from the next period on it charges that plan's price, without
//   proration (Stripe's guidance for a change at the period end);
// - ended now: a newer paid raise replaced it (the new subscription charges from today; the old one
//   is ended without a refund of its unused days), the operator set the plan (`svc admin workspaces
//   set-plan`: the operator's plan replaces what was paid), the workspace is being deleted, or the
//   plan went to free.
// A job that keeps failing is logged at each attempt, shown on the subscription
// (`paid_subscription.sync`), and after PLAN_SYNC_NOTIFY_AFTER attempts notifies the owners and admins once.
//
// What the provider says, taken in the payment intake's transaction (the webhook, exactly once by
// event id): a renewal moves the paid period on (audited subscription.plan_renewed); a renewal's
// failed payment notifies the owners and admins; the provider ending the subscription on its own
// (it gave up charging, someone canceled it in the provider's dashboard, the period ended after a
// cancel) lowers the workspace to free at once, as an applied change request audited with actor
// system, whatever its usage (the payment stopped). An end the service asked for changes no plan.
import type { Logger } from 'pino';
import type { Db, Dialect, Executor } from '../../db/database.js';
import { PaymentProviderError, type PaymentProvider } from '../../drivers/payments/driver.js';
import type { Notifier } from '../../jobs/notifier.js';
import { completeJob, enqueueJob, holdsJob, rescheduleJob, type ClaimedJob } from '../../jobs/queue.js';
import type { JobHandler } from '../../jobs/worker.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { recordAuditEvent } from '../audit/audit.js';
import { planSubscriptionPaymentFailed, planSubscriptionSyncFailing, subscriptionChangeApplied } from '../notifications/sources.js';
import { DEFAULT_TIER, type PlanCatalog } from '../plans/plans.js';
import { lockWorkspace } from '../workspaces/workspaces.service.js';
import * as psubs from './plan-subscriptions.repo.js';
import * as repo from './subscriptions.repo.js';
import type { PaidSubscriptionT } from './subscriptions.schemas.js';

export const PLAN_SYNC_JOB_KIND = 'plan_subscription_sync';
/** failed attempts after which the owners and admins are told (once) that the provider keeps refusing */
export const PLAN_SYNC_NOTIFY_AFTER = 3;
/** who lowers a plan when the provider ended its subscription: the audit's system actor */
export const PROVIDER_ACTOR = 'payment_provider';

/** The delay after failed attempt `n` (1-based): 10 s doubling, at most an hour, ±20%. Never given up: a subscription left running keeps charging. */
export function planSyncDelayMs(n: number, random = Math.random): number {
  const base = Math.min(3600_000, 10_000 * 2 ** Math.max(0, n - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

export type PlanEventOutcome = 'applied' | 'duplicate' | 'late' | 'unknown_subscription';

export interface PlanSubscriptionDeps {
  db: Db;
  dialect: Dialect;
  notifier: Pick<Notifier, 'publish'>;
  plans: PlanCatalog;
  /** every payment provider by name (resolved when a job runs: the providers are built after this) */
  providers: () => ReadonlyMap<string, PaymentProvider>;
  /** SVC_RETRY_BACKOFF_SCALE */
  backoffScale: number;
}

export function createPlanSubscriptionService(deps: PlanSubscriptionDeps) {
  const { db, dialect, plans } = deps;

  /** Queues the sync job unless one is queued already (it reads the newest wish when it runs). */
  async function wantSync(tx: Executor, row: psubs.PlanSubscriptionRow): Promise<void> {
    if (row.sync_job_id !== null) return;
    const jobId = await enqueueJob(tx, { kind: PLAN_SYNC_JOB_KIND, operationId: null });
    await psubs.setSyncJob(tx, row.id, jobId);
    await deps.notifier.publish(tx, 'svc_jobs', jobId);
  }

  /** Changes what the active subscription must hold, in the caller's transaction (under the workspace lock), and queues the sync. */
  async function change(tx: Executor, workspaceId: string, set: Parameters<typeof psubs.changeDesired>[3]): Promise<psubs.PlanSubscriptionRow | undefined> {
    const active = await psubs.activePlanSubscription(tx, workspaceId);
    if (!active) return undefined;
    const same = Object.entries(set).every(([k, v]) => (active as unknown as Record<string, unknown>)[k] === v);
    if (same) return active;
    if (!(await psubs.changeDesired(tx, active.id, ['active'], set))) return undefined;
    await wantSync(tx, active);
    return active;
  }

  /**
   * A paid raise started a subscription at the provider (the paid checkout's transaction): it is
   * the workspace's plan subscription now, and the one it replaces is ended at the provider at once.
   */
  async function started(tx: Executor, s: {
    workspaceId: string; provider: string; subscriptionId: string; planCheckoutId: string; tier: string; periodEnd: number | null;
  }): Promise<void> {
    const now = clock.now();
    await endNow(tx, s.workspaceId, `replaced by the paid raise to ${s.tier} (plan checkout ${s.planCheckoutId})`);
    // Without the provider's period end (it could not be read), a month from now: the first renewal corrects it.
    const periodEnd = s.periodEnd ?? now + 30 * 24 * 3600;
    await psubs.insertPlanSubscription(tx, {
      id: newId('planSubscription'), workspace_id: s.workspaceId, provider: s.provider, provider_subscription_id: s.subscriptionId,
      plan_checkout_id: s.planCheckoutId, tier: s.tier, state: 'active', cancel_at_period_end: 0, next_tier: null,
      current_period_start: now, current_period_end: periodEnd, renewals: 0, end_reason: null, desired_revision: 1, synced_revision: 1,
      sync_job_id: null, sync_attempts: 0, last_error: null, failure_notified: 0, created_at: now, ended_at: null,
    });
  }

  /** Ends the workspace's plan subscription at the provider now (replaced, set by the operator, workspace deleted, plan at free). */
  async function endNow(tx: Executor, workspaceId: string, reason: string): Promise<void> {
    await change(tx, workspaceId, { state: 'ending', end_reason: reason.slice(0, 300) });
  }

  /**
   * The plan's pending change, as the provider must hold it: a cancel or a downgrade to free ends
   * the subscription at its period end; a downgrade to a lower paid plan charges that plan's price
   * from the next period; none (withdrawn) renews it as it is.
   */
  async function schedule(tx: Executor, workspaceId: string, pending: { tier: string } | null): Promise<void> {
    if (pending === null) {
      await change(tx, workspaceId, { cancel_at_period_end: 0, next_tier: null });
      return;
    }
    const paid = pending.tier !== DEFAULT_TIER && plans.has(pending.tier) && plans.plan(pending.tier).price !== null;
    await change(tx, workspaceId, paid ? { cancel_at_period_end: 0, next_tier: pending.tier } : { cancel_at_period_end: 1, next_tier: null });
  }

  /** A scheduled change was applied: the subscription pays for the new plan, or ends when the plan is free now. */
  async function planApplied(tx: Executor, workspaceId: string, tier: string): Promise<void> {
    const active = await psubs.activePlanSubscription(tx, workspaceId);
    if (!active || active.tier === tier) return;
    if (tier === DEFAULT_TIER || !plans.has(tier) || plans.plan(tier).price === null) {
      await endNow(tx, workspaceId, `the plan went to ${tier}`);
      return;
    }
    await psubs.setPlanSubscriptionTier(tx, active.id, tier);
  }

  /** The end of the paid period, when the workspace has a renewing plan subscription: scheduled changes take effect then. */
  async function paidPeriod(db_: Executor, workspaceId: string): Promise<{ start: number; end: number } | null> {
    const active = await psubs.activePlanSubscription(db_, workspaceId);
    return active ? { start: active.current_period_start, end: active.current_period_end } : null;
  }

  /** The newest plan subscription as the subscription shows it (null when the workspace never paid for a plan). */
  async function view(db_: Executor, workspaceId: string): Promise<PaidSubscriptionT | null> {
    const [row] = await psubs.listPlanSubscriptions(db_, workspaceId, 1);
    if (!row) return null;
    const sync = row.state === 'ended' || row.synced_revision >= row.desired_revision ? 'done' : row.sync_attempts > 0 ? 'retrying' : 'pending';
    return {
      provider: row.provider, provider_subscription_id: row.provider_subscription_id, plan_checkout_id: row.plan_checkout_id, tier: row.tier,
      state: row.state as PaidSubscriptionT['state'], cancel_at_period_end: row.cancel_at_period_end === 1, next_tier: row.next_tier,
      current_period_start: row.current_period_start, current_period_end: row.current_period_end, renewals: row.renewals,
      end_reason: row.end_reason, ended_at: row.ended_at, sync, sync_attempts: row.sync_attempts, last_error: row.last_error,
    };
  }

  // ---- the provider's word (in the payment intake's transaction) ----

  /** invoice.paid of a renewal: the paid period moves on, once. */
  async function takeRenewal(tx: Executor, provider: string, subscriptionId: string, periodEnd: number): Promise<PlanEventOutcome> {
    const row = await psubs.findPlanSubscriptionByProviderId(tx, provider, subscriptionId);
    if (!row) return 'unknown_subscription';
    if (row.state !== 'active') return 'late';
    // The workspace first, then its subscription: the order every other writer of both keeps
    // (a scheduled change applied at the period end). The other way round, a renewal arriving
    // while that change applies deadlocks on PostgreSQL.
    const ws = await lockWorkspace(tx, row.workspace_id);
    if (!(await psubs.renewPlanSubscription(tx, row.id, periodEnd))) return 'duplicate';
    if (ws) {
      await recordAuditEvent(tx, { workspaceId: row.workspace_id, actor: { type: 'system', id: PROVIDER_ACTOR }, requestId: null }, {
        action: 'subscription.plan_renewed', resourceType: 'workspace', resourceId: row.workspace_id,
        metadata: { tier: row.next_tier ?? row.tier, provider, provider_subscription_id: subscriptionId, current_period_start: String(row.current_period_end), current_period_end: String(periodEnd) },
      });
    }
    return 'applied';
  }

  /** invoice.payment_failed of a renewal: the owners and admins are told (once per attempt). */
  async function takePaymentFailed(tx: Executor, provider: string, e: { eventId: string; subscriptionId: string; attempt: number; nextAttemptAt: number | null }): Promise<PlanEventOutcome> {
    const row = await psubs.findPlanSubscriptionByProviderId(tx, provider, e.subscriptionId);
    if (!row) return 'unknown_subscription';
    if (row.state !== 'active') return 'late';
    await planSubscriptionPaymentFailed(tx, {
      workspaceId: row.workspace_id, key: `${row.id}:${e.attempt}:${e.eventId}`, tier: row.tier, provider, attempt: e.attempt, nextAttemptAt: e.nextAttemptAt,
    });
    return 'applied';
  }

  /**
   * customer.subscription.deleted: an end the service asked for (ending) is recorded; one the
   * provider made on its own lowers the workspace to free now, once.
   */
  async function takeEnd(tx: Executor, provider: string, subscriptionId: string): Promise<PlanEventOutcome> {
    const row = await psubs.findPlanSubscriptionByProviderId(tx, provider, subscriptionId);
    if (!row) return 'unknown_subscription';
    const now = clock.now();
    if (row.state === 'ended') return 'duplicate';
    // The workspace first, then its subscription (as takeRenewal).
    const ws = await lockWorkspace(tx, row.workspace_id);
    if (row.state === 'ending') {
      await psubs.movePlanSubscription(tx, row.id, ['ending'], 'ended', { ended_at: now });
      return 'applied';
    }
    if (!(await psubs.movePlanSubscription(tx, row.id, ['active'], 'ended', { ended_at: now, end_reason: `ended at ${provider}` }))) return 'duplicate';
    const current = ws?.state === 'active' ? await repo.findSubscription(tx, row.workspace_id) : undefined;
    if (!current || current.tier === DEFAULT_TIER) return 'applied';
    const reason = `the plan's subscription ended at ${provider} (${subscriptionId})`;
    let id: string;
    let kind = 'cancel';
    if (current.pending?.requested_tier === DEFAULT_TIER && (await repo.resolvePending(tx, current.pending.id, 'applied', reason, now))) {
      // The cancel (or downgrade to free) that set it to end at the period end: it is the change that applies now.
      id = current.pending.id;
      kind = current.pending.kind;
    } else {
      id = newId('subscriptionChangeRequest');
      if (current.pending) await repo.resolvePending(tx, current.pending.id, 'canceled', `superseded by change request ${id}: ${reason}`, now);
      await repo.insertChangeRequest(tx, {
        id, workspace_id: row.workspace_id, kind: 'cancel', previous_tier: current.tier, requested_tier: DEFAULT_TIER, status: 'applied',
        status_reason: reason, effective_at: now, resolved_at: now, operation_id: null, requested_by: PROVIDER_ACTOR, created_at: now,
      });
    }
    await repo.ensureSubscription(tx, row.workspace_id, now);
    await repo.setWorkspaceTier(tx, row.workspace_id, DEFAULT_TIER, now);
    await repo.updateSubscription(tx, row.workspace_id, 'active', null, now);
    await subscriptionChangeApplied(tx, { workspaceId: row.workspace_id, changeRequestId: id, kind, previousTier: current.tier, tier: DEFAULT_TIER });
    await recordAuditEvent(tx, { workspaceId: row.workspace_id, actor: { type: 'system', id: PROVIDER_ACTOR }, requestId: null }, {
      action: 'subscription.plan_ended', resourceType: 'workspace', resourceId: row.workspace_id,
      metadata: { previous_tier: current.tier, tier: DEFAULT_TIER, change_request_id: id, provider, provider_subscription_id: subscriptionId },
    });
    return 'applied';
  }

  // ---- the sync job ----

  /** In the transaction that settles the job, unless another worker has taken it over. */
  const settle = (job: ClaimedJob, fn: (tx: Executor) => Promise<void>) =>
    db.transaction().execute(async (tx) => {
      if (await holdsJob(tx, dialect, job)) await fn(tx);
    });

  /** A failed attempt: counted and logged, the owners told once it keeps failing, the job retried later. */
  async function failed(job: ClaimedJob, row: psubs.PlanSubscriptionRow, revision: number, err: unknown, logger: Logger): Promise<void> {
    const error = ((err as Error).message ?? String(err)).slice(0, 500);
    let attempts = 0;
    await settle(job, async (tx) => {
      attempts = await psubs.markSyncFailed(tx, row.id, error);
      if (attempts >= PLAN_SYNC_NOTIFY_AFTER && (await psubs.markFailureNotified(tx, row.id))) {
        await planSubscriptionSyncFailing(tx, { workspaceId: row.workspace_id, key: `${row.id}:${revision}`, provider: row.provider, ending: row.state === 'ending', error });
      }
      await rescheduleJob(tx, job, clock.nowMs() + Math.round(planSyncDelayMs(attempts) * deps.backoffScale));
    });
    logger.warn({ plan_subscription_id: row.id, provider: row.provider, state: row.state, attempts, err: error }, 'the payment provider did not take the plan subscription change; retrying');
  }

  /** The worker pool's handler of `plan_subscription_sync` jobs: tells the provider what the row wants, idempotently. */
  const sync: JobHandler = async (job, signal, logger: Logger) => {
    const row = await psubs.findPlanSubscriptionByJob(db, job.id);
    if (!row || row.state === 'ended') {
      await settle(job, async (tx) => {
        if (row) await psubs.releaseSyncJob(tx, row.id);
        await completeJob(tx, job);
      });
      return;
    }
    const revision = row.desired_revision;
    const provider = deps.providers().get(row.provider);
    try {
      if (!provider) throw new Error(`payment provider ${row.provider} is not configured`);
      if (row.state === 'ending') await provider.cancelSubscription(row.provider_subscription_id, signal);
      else {
        const tier = row.next_tier ?? row.tier;
        const price = plans.has(tier) ? plans.plan(tier).price : null;
        if (!price) throw new Error(`the ${tier} plan has no price any more`);
        await provider.updateSubscription(row.provider_subscription_id, {
          cancelAtPeriodEnd: row.cancel_at_period_end === 1,
          price: { amount: price.unit_amount, currency: price.currency, title: `${plans.plan(tier).display_name} plan` },
        }, signal);
      }
    } catch (err) {
      // Ending one the provider does not know (deleted by hand, say): nothing is left to stop.
      const gone = row.state === 'ending' && err instanceof PaymentProviderError && err.status === 404;
      if (!gone) {
        await failed(job, row, revision, err, logger);
        return;
      }
    }
    await settle(job, async (tx) => {
      const now = (await psubs.findPlanSubscriptionById(tx, row.id))!;
      // Ended now (our cancel answered): recorded at once; the provider's deleted event then changes nothing.
      if (row.state === 'ending') await psubs.movePlanSubscription(tx, row.id, ['ending'], 'ended', { ended_at: clock.now() });
      const newer = now.desired_revision > revision && now.state !== 'ended' && row.state !== 'ending';
      await psubs.markSynced(tx, row.id, revision, !newer);
      // Changed again while the provider was asked: the same job runs again now with the newer wish.
      if (newer) await rescheduleJob(tx, job, clock.nowMs());
      else await completeJob(tx, job);
    });
    logger.info({ plan_subscription_id: row.id, provider: row.provider, state: row.state }, 'the payment provider took the plan subscription change');
  };

  return { started, endNow, schedule, planApplied, paidPeriod, view, takeRenewal, takePaymentFailed, takeEnd, sync };
}

export type PlanSubscriptionService = ReturnType<typeof createPlanSubscriptionService>;
