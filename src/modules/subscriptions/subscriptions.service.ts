// Subscriptions (API.md 8.2): read; :changeTier, :cancel and :reactivate, each writing its change
// request and starting its operation in the request's transaction under the workspace lock; and
// applying a change request, exactly once, by its operation (at once for an upgrade) or by the
// workers' sweep when the clock passes its effective_at (downgrades and cancels at the period end).
// The applied change request and the workspace's plan change in one transaction.
import type { BillingMode } from '../../config.js';
import type { Db, Executor } from '../../db/database.js';
import type { Json } from '../../jobs/workflows.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock, isoFromSeconds } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { derivedId, isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import { subscriptionChangeApplied, subscriptionChangeRejected } from '../notifications/sources.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import { DEFAULT_TIER, type PlanCatalog } from '../plans/plans.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { lockWorkspace } from '../workspaces/workspaces.service.js';
import { billingPeriod } from './periods.js';
import { livePlanCheckout } from './plan-checkouts.repo.js';
import type { PlanSubscriptionService } from './plan-subscriptions.service.js';
import * as repo from './subscriptions.repo.js';
import {
  CANCEL, CHANGE_TIER, REACTIVATE, type ChangeKind, type ChangeRequestT, type ChangeStatus, type SubscriptionT,
} from './subscriptions.schemas.js';

export interface SubscriptionServiceDeps {
  db: Db;
  cursors: CursorCodec;
  plans: PlanCatalog;
  quotas: Pick<QuotaService, 'firstOverLimit'>;
  operations: Pick<OperationService, 'start'>;
  /**
   * SVC_BILLING: with `operator`, people cannot raise a plan through the API (only setPlan, the
   * operator's command); with `payments` a raise is a plan checkout (plan-checkouts.service.ts)
   */
  billing: BillingMode;
  /**
   * SVC_BILLING=payments: the workspace's plan subscription at the payment provider, told of every
   * change in the change's transaction (plan-subscriptions.service.ts)
   */
  paidPlans: Pick<PlanSubscriptionService, 'schedule' | 'endNow' | 'planApplied' | 'paidPeriod' | 'view'>;
}

/** Who recorded a change request the operator made (`svc admin workspaces set-plan`), in place of a user id. */
export const OPERATOR_ACTOR = 'operator';

/** What a subscription operation reports: the change request as it stands after the operation. */
/** A change request by id alone: for its operation's wording. */
export { findChangeRequestById } from './subscriptions.repo.js';

export function changeOutcome(row: repo.ChangeRequestRow): Record<string, Json> {
  return {
    workspace_id: row.workspace_id, change_request_id: row.id, kind: row.kind, requested_tier: row.requested_tier,
    status: row.status, effective_at: isoFromSeconds(row.effective_at),
  };
}

export function toChangeRequest(row: repo.ChangeRequestRow): ChangeRequestT {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    kind: row.kind as ChangeKind,
    previous_tier: row.previous_tier,
    requested_tier: row.requested_tier,
    status: row.status as ChangeStatus,
    status_reason: row.status_reason,
    effective_at: isoFromSeconds(row.effective_at),
    resolved_at: row.resolved_at === null ? null : isoFromSeconds(row.resolved_at),
    operation_id: row.operation_id,
    created_at: isoFromSeconds(row.created_at),
  };
}

const wouldExceed = (tier: string, over: { metric: string; limit: number; usage: number }) =>
  new ApiError('FAILED_PRECONDITION', `the ${tier} plan allows ${over.limit} of ${over.metric} and the workspace uses ${over.usage}; reduce the usage first`, {
    reason: 'QUOTA_WOULD_BE_EXCEEDED',
    metadata: { metric: over.metric, limit: String(over.limit), usage: String(over.usage), tier },
  });

export function createSubscriptionService(deps: SubscriptionServiceDeps) {
  const { db, cursors, plans, quotas, operations, paidPlans } = deps;

  /** The period a scheduled change waits for: the one paid for at the provider while a plan subscription renews, else months from the workspace's creation. */
  async function periodOf(tx: Executor, row: repo.SubscriptionRow, now: number): Promise<{ start: number; end: number }> {
    return (await paidPlans.paidPeriod(tx, row.workspace_id)) ?? billingPeriod(row.workspace_created_at, now);
  }

  function toSubscription(row: repo.SubscriptionRow, period: { start: number; end: number }): Omit<SubscriptionT, 'paid_subscription'> {
    const pending = row.pending && row.pending.kind !== 'upgrade' ? row.pending : null;
    return {
      id: derivedId('subscription', row.workspace_id),
      workspace_id: row.workspace_id,
      tier: row.tier,
      status: row.status as SubscriptionT['status'],
      cancellation_scheduled: row.status === 'canceling',
      current_period_start: period.start,
      current_period_end: period.end,
      billed_by: row.billed_by === 'seller' ? 'seller' : 'platform',
      scheduled_change: pending
        ? { change_request_id: pending.id, kind: pending.kind as ChangeKind, requested_tier: pending.requested_tier, effective_at: isoFromSeconds(pending.effective_at) }
        : null,
      pending_checkout: null,
      created_at: row.workspace_created_at,
      etag: etagOf(row.revision),
    };
  }

  async function get(scope: WorkspaceScope): Promise<SubscriptionT> {
    const row = await repo.findSubscription(db, scope.workspaceId);
    if (!row) throw notFound('workspace');
    const live = await livePlanCheckout(db, scope.workspaceId);
    const pending = live && live.state === 'open' && live.url !== null && live.expires_at > clock.now()
      ? { plan_checkout_id: live.id, tier: live.tier, checkout_url: live.url, expires_at: live.expires_at }
      : null;
    return { ...toSubscription(row, await periodOf(db, row, clock.now())), pending_checkout: pending, paid_subscription: await paidPlans.view(db, scope.workspaceId) };
  }

  /** The start of every change: role, lock, etag. Returns the subscription as it stands under the lock. */
  async function begin(scope: WorkspaceScope, revision: number | null, tx: Executor): Promise<repo.SubscriptionRow> {
    requireRole(scope, 'admin');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const current = await repo.findSubscription(tx, scope.workspaceId);
    if (!current) throw notFound('workspace');
    if (revision !== null && revision !== current.revision) {
      throw etagMismatch(`subscription ${derivedId('subscription', scope.workspaceId)}`, current.revision);
    }
    return current;
  }

  /** Bumps the etag (the row is written on the first change) and starts the operation for the change request. */
  async function commit(scope: WorkspaceScope, tx: Executor, current: repo.SubscriptionRow, status: string, type: string, changeRequestId: string): Promise<OperationT> {
    const now = clock.now();
    await repo.ensureSubscription(tx, scope.workspaceId, now);
    if (!(await repo.updateSubscription(tx, scope.workspaceId, status, current.revision, now))) {
      throw etagMismatch(`subscription ${derivedId('subscription', scope.workspaceId)}`, current.revision);
    }
    return operations.start(tx, {
      type, workspaceId: scope.workspaceId, ownerType: 'workspace', ownerId: scope.workspaceId, clusterId: null,
      input: { change_request_id: changeRequestId }, metadata: { change_request_id: changeRequestId }, actor: actorOf(scope),
    });
  }

  /** Records a new pending change request (the one pending before it, if any, is superseded) and starts its operation. */
  async function request(scope: WorkspaceScope, tx: Executor, current: repo.SubscriptionRow, change: { kind: ChangeKind; tier: string; effectiveAt: number; type: string }) {
    const now = clock.now();
    const id = newId('subscriptionChangeRequest');
    if (current.pending) await repo.resolvePending(tx, current.pending.id, 'canceled', `superseded by change request ${id}`, now);
    const op = await commit(scope, tx, current, change.kind === 'cancel' ? 'canceling' : 'active', change.type, id);
    await repo.insertChangeRequest(tx, {
      id, workspace_id: scope.workspaceId, kind: change.kind, previous_tier: current.tier, requested_tier: change.tier, status: 'pending',
      status_reason: null, effective_at: change.effectiveAt, resolved_at: null, operation_id: op.id, requested_by: scope.actorId, created_at: now,
    });
    return op;
  }

  /**
   * An upgrade applies at once (through its operation); a downgrade at the period end, refused
   * now (422 QUOTA_WOULD_BE_EXCEEDED) when the usage is above the lower tier's limits. The current
   * tier withdraws a pending change.
   */
  async function changeTier(scope: WorkspaceScope, revision: number | null, tier: string, tx: Executor): Promise<OperationT> {
    if (!plans.has(tier)) throw fieldInvalid('body.tier', `tier "${tier}" is not in the plan catalog (GET /v1/plans)`, 'UNKNOWN_TIER');
    const current = await begin(scope, revision, tx);
    const now = clock.now();
    if (tier === current.tier) {
      if (!current.pending) {
        throw new ApiError('FAILED_PRECONDITION', `the workspace is already on ${tier}`, { reason: 'SAME_TIER' });
      }
      await repo.resolvePending(tx, current.pending.id, 'canceled', `withdrawn: the subscription stays on ${tier}`, now);
      await paidPlans.schedule(tx, scope.workspaceId, null);
      return commit(scope, tx, current, 'active', CHANGE_TIER, current.pending.id);
    }
    if (plans.rank(tier) > plans.rank(current.tier)) {
      // A raise costs the operator: with SVC_BILLING=operator only they make it (setPlan).
      if (deps.billing === 'operator') {
        throw new ApiError('PERMISSION_DENIED', `plans on this service are raised by its operator (svc admin workspaces set-plan): ask them to move this workspace to ${tier}`, {
          reason: 'PLAN_SET_BY_OPERATOR',
        });
      }
      // SVC_BILLING=payments: a raise is a plan checkout (plan-checkouts.service.ts), which the route
      // chose when the tier was a raise; the plan moved up since, so what the caller read is stale.
      throw etagMismatch(`subscription ${derivedId('subscription', scope.workspaceId)}`, current.revision);
    }
    const over = await quotas.firstOverLimit(tx, scope.workspaceId, tier);
    if (over) throw wouldExceed(tier, over);
    const period = await periodOf(tx, current, now);
    const op = await request(scope, tx, current, { kind: 'downgrade', tier, effectiveAt: period.end, type: CHANGE_TIER });
    await paidPlans.schedule(tx, scope.workspaceId, { tier });
    return op;
  }

  /** Back to free at the period end; refused like a downgrade when the usage is above free's limits. */
  async function cancel(scope: WorkspaceScope, revision: number | null, tx: Executor): Promise<OperationT> {
    const current = await begin(scope, revision, tx);
    if (current.status === 'canceling') {
      throw new ApiError('FAILED_PRECONDITION', 'the subscription is already canceled at the period end; :reactivate undoes that', { reason: 'ALREADY_CANCELING' });
    }
    if (current.tier === DEFAULT_TIER) {
      throw new ApiError('FAILED_PRECONDITION', `the workspace is on ${DEFAULT_TIER}: there is nothing to cancel`, { reason: 'NOTHING_TO_CANCEL' });
    }
    const over = await quotas.firstOverLimit(tx, scope.workspaceId, DEFAULT_TIER);
    if (over) throw wouldExceed(DEFAULT_TIER, over);
    const period = await periodOf(tx, current, clock.now());
    const op = await request(scope, tx, current, { kind: 'cancel', tier: DEFAULT_TIER, effectiveAt: period.end, type: CANCEL });
    await paidPlans.schedule(tx, scope.workspaceId, { tier: DEFAULT_TIER });
    return op;
  }

  /** Undoes a scheduled cancel: its change request is canceled and the subscription is active again. */
  async function reactivate(scope: WorkspaceScope, revision: number | null, tx: Executor): Promise<OperationT> {
    const current = await begin(scope, revision, tx);
    if (current.status !== 'canceling' || current.pending?.kind !== 'cancel') {
      throw new ApiError('FAILED_PRECONDITION', 'the subscription is not canceling: there is nothing to reactivate', { reason: 'NOT_CANCELING' });
    }
    await repo.resolvePending(tx, current.pending.id, 'canceled', 'reactivated', clock.now());
    await paidPlans.schedule(tx, scope.workspaceId, null);
    return commit(scope, tx, current, 'active', REACTIVATE, current.pending.id);
  }

  /**
   * The operator's `svc admin workspaces set-plan`: the plan changes now, up or down, recorded as an
   * applied change request (a pending one is superseded) with the same notification as any applied
   * change. Refused like a downgrade when the usage is above the new plan's limits.
   */
  async function setPlan(workspaceId: string, tier: string): Promise<{ previousTier: string; tier: string; changeRequestId: string }> {
    if (!plans.has(tier)) throw fieldInvalid('tier', `tier "${tier}" is not in the plan catalog (${plans.tiers.join(', ')})`, 'UNKNOWN_TIER');
    return db.transaction().execute(async (tx) => {
      if (!(await lockWorkspace(tx, workspaceId))) throw notFound('workspace');
      await assertWorkspaceActive(tx, workspaceId);
      const current = await repo.findSubscription(tx, workspaceId);
      if (!current) throw notFound('workspace');
      const now = clock.now();
      if (current.tier === tier) {
        if (!current.pending) throw new ApiError('FAILED_PRECONDITION', `the workspace is already on ${tier}`, { reason: 'SAME_TIER' });
        // the operator keeps the plan: the change waiting for the period end is withdrawn
        await repo.resolvePending(tx, current.pending.id, 'canceled', `withdrawn by the operator: the subscription stays on ${tier}`, now);
        await repo.updateSubscription(tx, workspaceId, 'active', null, now);
        await paidPlans.schedule(tx, workspaceId, null);
        return { previousTier: tier, tier, changeRequestId: current.pending.id };
      }
      const upgrade = plans.rank(tier) > plans.rank(current.tier);
      const over = upgrade ? null : await quotas.firstOverLimit(tx, workspaceId, tier);
      if (over) throw wouldExceed(tier, over);
      const id = newId('subscriptionChangeRequest');
      if (current.pending) await repo.resolvePending(tx, current.pending.id, 'canceled', `superseded by the operator's change request ${id}`, now);
      await repo.insertChangeRequest(tx, {
        id, workspace_id: workspaceId, kind: upgrade ? 'upgrade' : 'downgrade', previous_tier: current.tier, requested_tier: tier, status: 'applied',
        status_reason: 'set by the operator', effective_at: now, resolved_at: now, operation_id: null, requested_by: OPERATOR_ACTOR, created_at: now,
      });
      await repo.ensureSubscription(tx, workspaceId, now);
      await repo.setWorkspaceTier(tx, workspaceId, tier, now);
      await repo.updateSubscription(tx, workspaceId, 'active', null, now);
      await subscriptionChangeApplied(tx, { workspaceId, changeRequestId: id, kind: upgrade ? 'upgrade' : 'downgrade', previousTier: current.tier, tier });
      // The operator's plan replaces what was paid: the provider stops charging now.
      await paidPlans.endNow(tx, workspaceId, `the operator set the plan to ${tier}`);
      await recordAuditEvent(tx, { workspaceId, actor: { type: 'system', id: OPERATOR_ACTOR }, requestId: null }, {
        action: 'subscription.set_plan', resourceType: 'workspace', resourceId: workspaceId, metadata: { previous_tier: current.tier, tier, change_request_id: id },
      });
      return { previousTier: current.tier, tier, changeRequestId: id };
    });
  }

  async function listChangeRequests(scope: WorkspaceScope, query: PageQueryT): Promise<Page<ChangeRequestT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await repo.listChangeRequests(db, scope.workspaceId, page);
    return cursors.page(rows, page, scope.workspaceId, {}, toChangeRequest);
  }

  async function getChangeRequest(scope: WorkspaceScope, id: string): Promise<ChangeRequestT> {
    const row = isId('subscriptionChangeRequest', id) ? await repo.findChangeRequest(db, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('change request');
    return toChangeRequest(row);
  }

  /**
   * Applies a pending change request whose effective_at has passed; exactly once, whoever calls
   * (its operation, the sweep on any instance): the move out of pending is one conditional update,
   * made under the workspace lock together with the plan change and the notification. A downgrade
   * or cancel that finds the usage above the requested plan's limits is rejected instead. Returns
   * the request as it stands afterwards (undefined when it is gone with its workspace).
   */
  async function applyChangeRequest(tx: Executor, id: string): Promise<repo.ChangeRequestRow | undefined> {
    const now = clock.now();
    const found = await repo.findChangeRequestById(tx, id);
    if (!found || found.status !== 'pending' || found.effective_at > now) return found;
    const ws = found.workspace_id;
    if (!(await lockWorkspace(tx, ws))) return found;
    const over = found.kind === 'upgrade' ? null : await quotas.firstOverLimit(tx, ws, found.requested_tier);
    if (over) {
      const reason = `${over.metric} usage ${over.usage} is above the ${over.limit} the ${found.requested_tier} plan allows`;
      if (await repo.resolvePending(tx, id, 'rejected', reason, now)) {
        await repo.updateSubscription(tx, ws, 'active', null, now);
        // The plan stays: its subscription at the provider renews again.
        await paidPlans.schedule(tx, ws, null);
        await subscriptionChangeRejected(tx, {
          workspaceId: ws, changeRequestId: id, kind: found.kind, tier: found.previous_tier, requestedTier: found.requested_tier, ...over,
        });
      }
    } else if (await repo.resolvePending(tx, id, 'applied', null, now)) {
      await repo.setWorkspaceTier(tx, ws, found.requested_tier, now);
      await repo.updateSubscription(tx, ws, 'active', null, now);
      await paidPlans.planApplied(tx, ws, found.requested_tier);
      await subscriptionChangeApplied(tx, {
        workspaceId: ws, changeRequestId: id, kind: found.kind, previousTier: found.previous_tier, tier: found.requested_tier,
      });
    }
    return repo.findChangeRequestById(tx, id);
  }

  /** The workers' sweep: applies every change request that is due; returns how many it looked at. */
  async function applyDue(): Promise<number> {
    const ids = await repo.dueChangeRequests(db, clock.now(), 100);
    for (const id of ids) await db.transaction().execute((tx) => applyChangeRequest(tx, id));
    return ids.length;
  }

  return { get, changeTier, cancel, reactivate, setPlan, listChangeRequests, getChangeRequest, applyChangeRequest, applyDue };
}

export type SubscriptionService = ReturnType<typeof createSubscriptionService>;
