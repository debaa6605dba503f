// The job queue, in the same database as the rows it acts on (Graphile Worker / pg-boss): work is
// enqueued in the transaction of the state change that asks for it; a worker claims a due job by
// writing a lease (PostgreSQL: FOR UPDATE SKIP LOCKED, so claimers never wait on each other;
// SQLite: the same statement, serialized by its single writer); a lease that is not renewed
// expires and another worker claims the job. Every write after the claim is fenced by the lease
// token, so a worker that lost its lease can change nothing. One SQL statement per function.
import type { Db, Dialect, Executor } from '../db/database.js';
import { clock } from '../platform/clock.js';
import { randomString } from '../platform/crypto.js';
import { newId } from '../platform/ids.js';

export interface ClaimedJob {
  id: string;
  kind: string;
  operationId: string | null;
  /** the agent turn a job of kind `agent_turn` runs */
  agentTurnId: string | null;
  /** the event a job of kind `event:<subscriber>` hands to its subscriber */
  eventId: string | null;
  leaseToken: string;
  claims: number;
}

export async function enqueueJob(tx: Executor, job: { kind: string; operationId: string | null; agentTurnId?: string; eventId?: string; runAtMs?: number }): Promise<string> {
  const id = newId('job');
  await tx
    .insertInto('jobs')
    .values({
      id, kind: job.kind, operation_id: job.operationId, run_at: job.runAtMs ?? clock.nowMs(), claims: 0,
      lease_token: null, locked_by: null, locked_until: null, created_at: clock.now(), agent_turn_id: job.agentTurnId ?? null,
      event_id: job.eventId ?? null,
    })
    .execute();
  return id;
}

/** Claims the oldest due, unleased job for `leaseMs`; null when none is due. */
export async function claimNextJob(db: Db, dialect: Dialect, workerId: string, leaseMs: number): Promise<ClaimedJob | null> {
  const now = clock.nowMs();
  const token = randomString(24);
  let due = db
    .selectFrom('jobs')
    .select('id')
    .where('run_at', '<=', now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .orderBy('run_at')
    .orderBy('id')
    .limit(1);
  if (dialect === 'postgres') due = due.forUpdate().skipLocked();
  const row = await db
    .updateTable('jobs')
    .set((eb) => ({ lease_token: token, locked_by: workerId, locked_until: now + leaseMs, claims: eb('claims', '+', 1) }))
    .where('id', '=', (eb) => eb.selectFrom(due.as('due')).select('due.id'))
    .returning(['id', 'kind', 'operation_id', 'agent_turn_id', 'event_id', 'claims'])
    .executeTakeFirst();
  return row ? { id: row.id, kind: row.kind, operationId: row.operation_id, agentTurnId: row.agent_turn_id, eventId: row.event_id, leaseToken: token, claims: row.claims } : null;
}

/** Extends the lease; false when it was lost (expired and claimed by another worker). */
export async function renewLease(db: Executor, job: ClaimedJob, leaseMs: number): Promise<boolean> {
  const res = await db
    .updateTable('jobs')
    .set({ locked_until: clock.nowMs() + leaseMs })
    .where('id', '=', job.id)
    .where('lease_token', '=', job.leaseToken)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Removes a finished job; false when the lease was lost. */
export async function completeJob(tx: Executor, job: ClaimedJob): Promise<boolean> {
  const res = await tx.deleteFrom('jobs').where('id', '=', job.id).where('lease_token', '=', job.leaseToken).executeTakeFirst();
  return Number(res.numDeletedRows) === 1;
}

/** Releases the lease and makes the job due again at `runAtMs` (a retry, or now on shutdown). */
export async function rescheduleJob(tx: Executor, job: ClaimedJob, runAtMs: number): Promise<boolean> {
  const res = await tx
    .updateTable('jobs')
    .set({ run_at: runAtMs, lease_token: null, locked_by: null, locked_until: null })
    .where('id', '=', job.id)
    .where('lease_token', '=', job.leaseToken)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * The fence of every transaction a worker commits: locks the job's row (PostgreSQL; SQLite's
 * transaction holds the whole database) and returns the operation's cancel flag; undefined when
 * another worker has taken the job over, and the transaction must then roll back.
 */
export async function fenceJob(tx: Executor, dialect: Dialect, job: ClaimedJob): Promise<{ cancelRequested: boolean } | undefined> {
  let q = tx
    .selectFrom('jobs')
    .innerJoin('operations', 'operations.id', 'jobs.operation_id')
    .select('operations.cancel_requested')
    .where('jobs.id', '=', job.id)
    .where('jobs.lease_token', '=', job.leaseToken);
  if (dialect === 'postgres') q = q.forUpdate(['jobs']);
  const row = await q.executeTakeFirst();
  return row ? { cancelRequested: row.cancel_requested === 1 } : undefined;
}

/** Makes an operation's waiting job due now (cancel during a retry backoff). */
export async function expediteOperationJob(tx: Executor, operationId: string): Promise<void> {
  await tx.updateTable('jobs').set({ run_at: clock.nowMs() }).where('operation_id', '=', operationId).where('lease_token', 'is', null).execute();
}

/** The fence of a job that is not an operation's (an agent turn): locks the job's row; false when another worker holds it now. */
export async function holdsJob(tx: Executor, dialect: Dialect, job: ClaimedJob): Promise<boolean> {
  let q = tx.selectFrom('jobs').select('id').where('id', '=', job.id).where('lease_token', '=', job.leaseToken);
  if (dialect === 'postgres') q = q.forUpdate();
  return (await q.executeTakeFirst()) !== undefined;
}
