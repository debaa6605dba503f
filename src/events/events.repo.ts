// The events table (src/db/migrations/015_events.ts): written in the caller's transaction, read by
// the jobs that hand an event to its subscribers.
import type { Executor } from '../db/database.js';
import type { EventsTable } from '../db/schema.js';

export type EventRow = EventsTable;

export async function insertEvent(tx: Executor, row: EventRow): Promise<void> {
  await tx.insertInto('events').values(row).execute();
}

export function findEvent(db: Executor, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
}
