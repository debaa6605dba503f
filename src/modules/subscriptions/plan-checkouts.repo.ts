// SQL of plan checkouts (SVC_BILLING=payments): a raise of a workspace's plan waiting for its
// payment at the provider. A checkout leaves a state through one conditional update, so each move
// happens once whichever instance (webhook, return page, a new raise) gets there first; at most one
// `creating` or `open` per workspace (a partial unique index, migration 021).
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { PlanCheckoutsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type PlanCheckoutRow = PlanCheckoutsTable;
export type PlanCheckoutState = 'creating' | 'open' | 'paid' | 'expired' | 'canceled' | 'refunded';

export async function insertPlanCheckout(tx: Executor, row: PlanCheckoutRow): Promise<void> {
  await tx.insertInto('plan_checkouts').values(row).execute();
}

/** The workspace's checkout that is being made or can be paid, if any. */
export function livePlanCheckout(db: Executor, workspaceId: string): Promise<PlanCheckoutRow | undefined> {
  return db.selectFrom('plan_checkouts').selectAll().where('workspace_id', '=', workspaceId).where('state', 'in', ['creating', 'open']).executeTakeFirst();
}

export function findPlanCheckout(db: Executor, workspaceId: string, id: string): Promise<PlanCheckoutRow | undefined> {
  return db.selectFrom('plan_checkouts').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export function findPlanCheckoutById(db: Executor, id: string): Promise<PlanCheckoutRow | undefined> {
  return db.selectFrom('plan_checkouts').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findPlanCheckoutBySession(db: Executor, provider: string, providerSessionId: string): Promise<PlanCheckoutRow | undefined> {
  return db.selectFrom('plan_checkouts').selectAll().where('provider', '=', provider).where('provider_session_id', '=', providerSessionId).executeTakeFirst();
}

export function listPlanCheckouts(db: Executor, workspaceId: string, page: PageRequest): Promise<PlanCheckoutRow[]> {
  return keysetPage(db.selectFrom('plan_checkouts').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

/** creating -> open with the provider's session, once: false when it was not creating any more. */
export async function settlePlanCheckout(tx: Executor, id: string, made: { provider_session_id: string; url: string; expires_at: number }): Promise<boolean> {
  const res = await tx.updateTable('plan_checkouts').set(made).where('id', '=', id).where('state', '=', 'creating').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Moves a checkout from one of `from` to `to` (with the columns in `set`), once: false when it was in none of them. */
export async function movePlanCheckout(
  tx: Executor, id: string, from: PlanCheckoutState[], to: PlanCheckoutState,
  set: Partial<Pick<PlanCheckoutRow, 'status_reason' | 'completed_at' | 'payment_ref' | 'subscription_id' | 'change_request_id'>> = {},
): Promise<boolean> {
  const res = await tx.updateTable('plan_checkouts').set({ ...set, state: to }).where('id', '=', id).where('state', 'in', from).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Records the change request a paid checkout applied. */
export async function setPlanCheckoutChange(tx: Executor, id: string, changeRequestId: string): Promise<void> {
  await tx.updateTable('plan_checkouts').set({ change_request_id: changeRequestId }).where('id', '=', id).execute();
}

export async function markPlanCheckoutRefunded(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('plan_checkouts').set({ refunded_at: now }).where('id', '=', id).where('refunded_at', 'is', null).execute();
}

/** Paid checkouts that could not be taken and whose refund has not gone through yet (the sweep retries them). */
export function unrefundedPlanCheckouts(db: Executor, limit: number): Promise<PlanCheckoutRow[]> {
  return db.selectFrom('plan_checkouts').selectAll().where('state', '=', 'refunded').where('refunded_at', 'is', null).orderBy('id').limit(limit).execute();
}
