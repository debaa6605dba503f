// SQL of a session's events (agent-events.ts): the session's event counter, the events, and a
// page of them. One statement per function; the event log composes them in the caller's transaction.
import type { Executor } from '../../db/database.js';

/** An event as stored (sequences may come back as strings). */
export interface EventRow {
  id: string;
  workspace_id: string;
  agent_id: string;
  session_id: string;
  turn_id: string;
  sequence: number | string;
  type: string;
  data: string;
  created_at: number;
}

/**
 * Adds `count` to the session's event counter and returns the new value. The update takes the
 * session's row lock, which the caller's transaction holds to its commit.
 */
export async function bumpEventSeq(tx: Executor, sessionId: string, count: number): Promise<number> {
  const bumped = await tx
    .updateTable('agent_sessions')
    .set((eb) => ({ event_seq: eb('event_seq', '+', count) }))
    .where('id', '=', sessionId)
    .returning('event_seq')
    .executeTakeFirstOrThrow();
  return Number(bumped.event_seq);
}

export async function insertEvents(tx: Executor, rows: EventRow[]): Promise<void> {
  await tx.insertInto('agent_events').values(rows as never).execute();
}

/** A session's events after sequence `after` (only `turnId`'s when given), in sequence order, at most `limit`. */
export async function listEvents(db: Executor, sessionId: string, turnId: string | undefined, after: number, limit: number): Promise<EventRow[]> {
  let query = db.selectFrom('agent_events').selectAll().where('session_id', '=', sessionId).where('sequence', '>', after);
  if (turnId) query = query.where('turn_id', '=', turnId);
  return (await query.orderBy('sequence').limit(limit).execute()) as EventRow[];
}
