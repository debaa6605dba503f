// SQL of operations and their steps. Terminal operations never change: every update that ends or
// edits an operation is guarded by `state = 'RUNNING'`.
import { sql, type Selectable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { OperationStepsTable, OperationsTable } from '../../db/schema.js';
import { keysetPage } from '../../db/keyset.js';
import type { PageRequest } from '../../platform/pagination.js';

export type OperationRow = Selectable<OperationsTable>;
export type StepRow = Selectable<OperationStepsTable>;

/** Columns of a list item: everything but the workflow input. */
const ITEM_COLUMNS = [
  'id', 'workspace_id', 'type', 'owner_type', 'owner_id', 'parent_operation_id', 'state', 'cancel_requested', 'metadata',
  'response', 'error', 'last_error', 'requested_by', 'requested_by_user', 'started_at', 'completed_at', 'updated_at',
] as const;
/**
 * Who started it, as people know them, read with the operation (no statement per row): the user's
 * name and e-mail, or the API token's or OAuth client's name. Null for `system`, or once the
 * actor is deleted.
 */
const CREATOR_NAME = sql<string | null>`coalesce(
  (select name from users where users.id = operations.requested_by),
  (select name from api_tokens where api_tokens.id = operations.requested_by),
  (select name from oauth_clients where oauth_clients.id = operations.requested_by))`.as('created_by_name');
const CREATOR_EMAIL = sql<string | null>`(select email from users where users.id = operations.requested_by)`.as('created_by_email');
const ITEM = [...ITEM_COLUMNS, CREATOR_NAME, CREATOR_EMAIL] as const;
export type OperationItemRow = Pick<OperationRow, (typeof ITEM_COLUMNS)[number]> & { created_by_name: string | null; created_by_email: string | null };

export async function insertOperation(tx: Executor, row: OperationRow, steps: StepRow[]): Promise<void> {
  await tx.insertInto('operations').values(row).execute();
  if (steps.length) await tx.insertInto('operation_steps').values(steps).execute();
}

export async function findOperation(db: Executor, id: string): Promise<OperationRow | undefined> {
  return db.selectFrom('operations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The operation as a caller in `workspaceId` may see it (`requester`: only if that user asked for it). */
export async function findVisibleOperation(db: Executor, workspaceId: string, id: string, requester: string | null): Promise<OperationItemRow | undefined> {
  let q = db.selectFrom('operations').select(ITEM).where('id', '=', id).where('workspace_id', '=', workspaceId);
  if (requester !== null) q = q.where('requested_by_user', '=', requester);
  return q.executeTakeFirst();
}

export async function listSteps(db: Executor, operationId: string): Promise<StepRow[]> {
  return db.selectFrom('operation_steps').selectAll().where('operation_id', '=', operationId).orderBy('position').execute();
}

export async function listOperations(
  db: Executor,
  workspaceId: string,
  filters: { owner_type?: string; owner_id?: string; state?: string; requester: string | null },
  page: PageRequest,
): Promise<OperationItemRow[]> {
  let q = db.selectFrom('operations').select(ITEM).where('workspace_id', '=', workspaceId);
  if (filters.owner_type !== undefined) q = q.where('owner_type', '=', filters.owner_type);
  if (filters.owner_id !== undefined) q = q.where('owner_id', '=', filters.owner_id);
  if (filters.state !== undefined) q = q.where('state', '=', filters.state);
  if (filters.requester !== null) q = q.where('requested_by_user', '=', filters.requester);
  return keysetPage(q, 'id', page).execute();
}

/** The running operation of this type on this owner, if any. */
export async function findRunningOperation(db: Executor, ownerId: string, type: string): Promise<OperationItemRow | undefined> {
  return db
    .selectFrom('operations')
    .select(ITEM)
    .where('owner_id', '=', ownerId)
    .where('state', '=', 'RUNNING')
    .where('type', '=', type)
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** The newest operation of this type on this owner, whatever its state (its state tells a failure from a wait). */
export function latestOperationOf(db: Executor, ownerId: string, type: string): Promise<Pick<OperationRow, 'id' | 'state' | 'error'> | undefined> {
  return db.selectFrom('operations').select(['id', 'state', 'error']).where('owner_id', '=', ownerId).where('type', '=', type)
    .orderBy('id', 'desc').limit(1).executeTakeFirst();
}

/** Marks cancellation requested on a running operation; false when it is already done. */
export async function requestCancel(tx: Executor, id: string, now: number): Promise<boolean> {
  const res = await tx
    .updateTable('operations')
    .set({ cancel_requested: 1, updated_at: now })
    .where('id', '=', id)
    .where('state', '=', 'RUNNING')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Running operations of a workspace, or on one owner (a cluster), other than `except`; oldest first. */
export async function runningOperations(
  db: Executor,
  of: { workspace_id: string } | { owner_id: string },
  except: string,
): Promise<{ id: string; cancel_requested: number }[]> {
  const q = db.selectFrom('operations').select(['id', 'cancel_requested']).where('state', '=', 'RUNNING').where('id', '!=', except);
  return ('workspace_id' in of ? q.where('workspace_id', '=', of.workspace_id) : q.where('owner_id', '=', of.owner_id)).orderBy('id').execute();
}

export async function updateStep(tx: Executor, operationId: string, position: number, set: Partial<StepRow>): Promise<void> {
  await tx.updateTable('operation_steps').set(set).where('operation_id', '=', operationId).where('position', '=', position).execute();
}

/** Updates a running operation; false when it already ended. */
export async function updateRunningOperation(tx: Executor, id: string, set: Partial<OperationRow>): Promise<boolean> {
  const res = await tx.updateTable('operations').set(set).where('id', '=', id).where('state', '=', 'RUNNING').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Marks a step running in one statement, fenced by the job's lease (no transaction needed: the
 * write is harmless if the lease is lost right after). False when the lease was lost.
 */
export async function markStepRunningFenced(
  db: Executor,
  job: { id: string; leaseToken: string },
  operationId: string,
  position: number,
  attempts: number,
  startedAt: number,
): Promise<boolean> {
  const res = await db
    .updateTable('operation_steps')
    .set({ status: 'running', attempts, started_at: startedAt })
    .where('operation_id', '=', operationId)
    .where('position', '=', position)
    .where((eb) => eb.exists(eb.selectFrom('jobs').select('jobs.id').where('jobs.id', '=', job.id).where('jobs.lease_token', '=', job.leaseToken)))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Completes step `position` and starts the next one, in one statement. With `fence`, the
 * statement also checks that the job is still this worker's and (for cancellable workflows) that
 * no cancellation was asked, and changes nothing otherwise: then it returns false and the caller
 * takes the transactional path. That saves a transaction for steps without database effects.
 */
export async function completeStepAndStartNext(
  db: Executor,
  operationId: string,
  position: number,
  completion: { completedAt: number; result: string },
  next: { attempts: number; startedAt: number },
  fence?: { jobId: string; leaseToken: string; honourCancel: boolean },
): Promise<boolean> {
  const isDone = sql<boolean>`position = ${position}`;
  const fenced = fence
    ? sql`and exists (select 1 from jobs where jobs.id = ${fence.jobId} and jobs.lease_token = ${fence.leaseToken})
          ${fence.honourCancel ? sql`and not exists (select 1 from operations where operations.id = ${operationId} and operations.cancel_requested = 1)` : sql``}`
    : sql``;
  const res = await sql`
    update operation_steps set
      status = case when ${isDone} then 'completed' else 'running' end,
      completed_at = case when ${isDone} then ${completion.completedAt} else completed_at end,
      error_message = case when ${isDone} then null else error_message end,
      result = case when ${isDone} then ${completion.result} else result end,
      attempts = case when ${isDone} then attempts else ${next.attempts} end,
      started_at = case when ${isDone} then started_at else ${next.startedAt} end
    where operation_id = ${operationId} and position in (${position}, ${position + 1}) ${fenced}`.execute(db);
  return Number(res.numAffectedRows ?? 0n) === 2;
}
