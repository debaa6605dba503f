// Issue 33: domain events (API.md 8.11). Each is written in the transaction of the change it
// reports (an outbox: none lost, none for a change that rolled back); subscribers in other modules
// run after commit from the job queue, one job per subscriber and event (jobs.event_id).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    /** past tense, dotted: operation.succeeded, machine.joined, ... (src/events/record.ts) */
    .addColumn('type', 'text', (c) => c.notNull())
    // No foreign key: a workspace's deletion reports its own end (operation.succeeded) in the
    // transaction that removes the workspace row.
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    /** JSON: the resource as its GET returns it (never a secret value) */
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_ws_id_idx').on('events').columns(['workspace_id', 'id']).execute();
  await db.schema.alterTable('jobs').addColumn('event_id', 'text').execute();
}
