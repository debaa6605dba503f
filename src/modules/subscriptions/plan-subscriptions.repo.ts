// SQL of plan subscriptions (SVC_BILLING=payments; migration 023): a workspace's paid plan
// subscription at the payment provider, what the provider must hold (desired_revision) and how far
// the provider was told (synced_revision). Each state move is one conditional update, so the
// webhook, the sweep and the sync job never do one twice; at most one `active` per workspace.
import type { Executor } from '../../db/database.js';
import type { PlanSubscriptionsTable } from '../../db/schema.js';

export type PlanSubscriptionRow = PlanSubscriptionsTable;
export type PlanSubscriptionState = 'active' | 'ending' | 'ended';

export async function insertPlanSubscription(tx: Executor, row: PlanSubscriptionRow): Promise<void> {
  await tx.insertInto('plan_subscriptions').values(row).execute();
}

/** The workspace's renewing plan subscription, if any. */
export function activePlanSubscription(db: Executor, workspaceId: string): Promise<PlanSubscriptionRow | undefined> {
  return db.selectFrom('plan_subscriptions').selectAll().where('workspace_id', '=', workspaceId).where('state', '=', 'active').executeTakeFirst();
}

export function findPlanSubscriptionByProviderId(db: Executor, provider: string, providerSubscriptionId: string): Promise<PlanSubscriptionRow | undefined> {
  return db.selectFrom('plan_subscriptions').selectAll().where('provider', '=', provider).where('provider_subscription_id', '=', providerSubscriptionId).executeTakeFirst();
}

export function findPlanSubscriptionById(db: Executor, id: string): Promise<PlanSubscriptionRow | undefined> {
  return db.selectFrom('plan_subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Names the job that carries the subscription's wishes to the provider. */
export async function setSyncJob(tx: Executor, id: string, jobId: string): Promise<void> {
  await tx.updateTable('plan_subscriptions').set({ sync_job_id: jobId }).where('id', '=', id).execute();
}

export function findPlanSubscriptionByJob(db: Executor, jobId: string): Promise<PlanSubscriptionRow | undefined> {
  return db.selectFrom('plan_subscriptions').selectAll().where('sync_job_id', '=', jobId).executeTakeFirst();
}

/** The workspace's plan subscriptions, newest first (the subscription view and tests read them). */
export function listPlanSubscriptions(db: Executor, workspaceId: string, limit: number): Promise<PlanSubscriptionRow[]> {
  return db.selectFrom('plan_subscriptions').selectAll().where('workspace_id', '=', workspaceId).orderBy('id', 'desc').limit(limit).execute();
}

/**
 * Changes what the provider must hold (and bumps desired_revision) while the subscription is in
 * one of `from`: false when it was not. `sync_job_id` is set when the caller enqueued a job.
 */
export async function changeDesired(
  tx: Executor, id: string, from: PlanSubscriptionState[],
  set: Partial<Pick<PlanSubscriptionRow, 'state' | 'cancel_at_period_end' | 'next_tier' | 'end_reason' | 'sync_job_id' | 'ended_at'>>,
): Promise<boolean> {
  const res = await tx.updateTable('plan_subscriptions')
    .set((eb) => ({ ...set, desired_revision: eb('desired_revision', '+', 1) }))
    .where('id', '=', id).where('state', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Moves a subscription from one of `from` to `to` without asking anything of the provider (its own end, a plan applied). */
export async function movePlanSubscription(
  tx: Executor, id: string, from: PlanSubscriptionState[], to: PlanSubscriptionState,
  set: Partial<Pick<PlanSubscriptionRow, 'end_reason' | 'ended_at' | 'tier' | 'next_tier'>> = {},
): Promise<boolean> {
  const res = await tx.updateTable('plan_subscriptions').set({ ...set, state: to }).where('id', '=', id).where('state', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** The plan a downgrade applied is the plan it pays for now. */
export async function setPlanSubscriptionTier(tx: Executor, id: string, tier: string): Promise<void> {
  await tx.updateTable('plan_subscriptions').set({ tier, next_tier: null }).where('id', '=', id).execute();
}

/** A renewal: the period moves forward (only forward: a replayed or older renewal changes nothing). False when it did not move. */
export async function renewPlanSubscription(tx: Executor, id: string, periodEnd: number): Promise<boolean> {
  const res = await tx.updateTable('plan_subscriptions')
    .set((eb) => ({ current_period_start: eb.ref('current_period_end'), current_period_end: periodEnd, renewals: eb('renewals', '+', 1) }))
    .where('id', '=', id).where('current_period_end', '<', periodEnd).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** The sync job's outcome: the provider holds `revision` now (never moves backwards); the job is let go when nothing newer waits. */
export async function markSynced(tx: Executor, id: string, revision: number, release: boolean): Promise<void> {
  await tx.updateTable('plan_subscriptions').set({ synced_revision: revision }).where('id', '=', id).where('synced_revision', '<', revision).execute();
  await tx.updateTable('plan_subscriptions')
    .set({ sync_attempts: 0, last_error: null, failure_notified: 0, ...(release ? { sync_job_id: null } : {}) })
    .where('id', '=', id).execute();
}

/** A failed attempt: counted, with its error; answers the attempts so far. */
export async function markSyncFailed(tx: Executor, id: string, error: string): Promise<number> {
  await tx.updateTable('plan_subscriptions').set((eb) => ({ sync_attempts: eb('sync_attempts', '+', 1), last_error: error.slice(0, 500) })).where('id', '=', id).execute();
  const row = await tx.selectFrom('plan_subscriptions').select('sync_attempts').where('id', '=', id).executeTakeFirstOrThrow();
  return row.sync_attempts;
}

/** The owners were told once that the provider keeps refusing: false when they already were. */
export async function markFailureNotified(tx: Executor, id: string): Promise<boolean> {
  const res = await tx.updateTable('plan_subscriptions').set({ failure_notified: 1 }).where('id', '=', id).where('failure_notified', '=', 0).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function releaseSyncJob(tx: Executor, id: string): Promise<void> {
  await tx.updateTable('plan_subscriptions').set({ sync_job_id: null }).where('id', '=', id).execute();
}
