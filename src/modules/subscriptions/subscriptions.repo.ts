// SQL of subscriptions and their change requests. The tier is the workspace's plan_tier; the
// subscriptions row (status, revision) is written with the first change. Every write happens under
// the workspace's row lock, and a change request leaves `pending` through one conditional update,
// so each is applied, canceled or rejected exactly once, whichever instance gets there.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { SubscriptionChangeRequestsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type ChangeRequestRow = SubscriptionChangeRequestsTable;

export interface SubscriptionRow {
  workspace_id: string;
  tier: string;
  billed_by: string;
  workspace_created_at: number;
  status: string;
  revision: number;
  pending: ChangeRequestRow | null;
}

/** The subscription of a workspace (its defaults before the first change), with its pending change. */
export async function findSubscription(db: Executor, workspaceId: string): Promise<SubscriptionRow | undefined> {
  const row = await db
    .selectFrom('workspaces as w')
    .leftJoin('subscriptions as s', 's.workspace_id', 'w.id')
    .select(['w.id', 'w.plan_tier', 'w.billed_by', 'w.created_at', 's.status', 's.revision'])
    .where('w.id', '=', workspaceId)
    .executeTakeFirst();
  if (!row) return undefined;
  const pending = await db
    .selectFrom('subscription_change_requests')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return {
    workspace_id: row.id, tier: row.plan_tier, billed_by: row.billed_by, workspace_created_at: row.created_at,
    status: row.status ?? 'active', revision: row.revision ?? 1, pending: pending ?? null,
  };
}

/** Writes the subscription's row at its defaults unless it exists. */
export async function ensureSubscription(tx: Executor, workspaceId: string, now: number): Promise<void> {
  await tx
    .insertInto('subscriptions')
    .values({ workspace_id: workspaceId, status: 'active', created_at: now, updated_at: now, revision: 1 })
    .onConflict((oc) => oc.column('workspace_id').doNothing())
    .execute();
}

/** Sets the status and bumps the revision (the etag); with `revision`, only from that revision. False when it did not match. */
export async function updateSubscription(tx: Executor, workspaceId: string, status: string, revision: number | null, now: number): Promise<boolean> {
  let q = tx
    .updateTable('subscriptions')
    .set((eb) => ({ status, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('workspace_id', '=', workspaceId);
  if (revision !== null) q = q.where('revision', '=', revision);
  return Number((await q.executeTakeFirst()).numUpdatedRows) === 1;
}

export async function insertChangeRequest(tx: Executor, row: ChangeRequestRow): Promise<void> {
  await tx.insertInto('subscription_change_requests').values(row).execute();
}

export function findChangeRequest(db: Executor, workspaceId: string, id: string): Promise<ChangeRequestRow | undefined> {
  return db.selectFrom('subscription_change_requests').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export function findChangeRequestById(db: Executor, id: string): Promise<ChangeRequestRow | undefined> {
  return db.selectFrom('subscription_change_requests').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listChangeRequests(db: Executor, workspaceId: string, page: PageRequest): Promise<ChangeRequestRow[]> {
  return keysetPage(db.selectFrom('subscription_change_requests').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

/** pending -> applied | canceled | rejected, once: false when it was not pending any more. */
export async function resolvePending(tx: Executor, id: string, status: 'applied' | 'canceled' | 'rejected', reason: string | null, now: number): Promise<boolean> {
  const res = await tx
    .updateTable('subscription_change_requests')
    .set({ status, status_reason: reason, resolved_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Pending changes whose time has come, oldest first. */
export async function dueChangeRequests(db: Executor, now: number, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('subscription_change_requests')
    .select('id')
    .where('status', '=', 'pending')
    .where('effective_at', '<=', now)
    .orderBy('effective_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** The workspace's plan moves to `tier`; its etag changes, as its `plan` did. */
export async function setWorkspaceTier(tx: Executor, workspaceId: string, tier: string, now: number): Promise<void> {
  await tx
    .updateTable('workspaces')
    .set((eb) => ({ plan_tier: tier, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', workspaceId)
    .execute();
}
