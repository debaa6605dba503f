// Issue 20: an in-flight idempotency key names the instance (process) that runs its request, and
// each instance keeps a heartbeat row while it holds keys, as job leases do; a key whose instance
// is gone is taken over at once instead of after a fixed age. A key also records the role its
// first request was made with: a replay needs at least that role (API.md section 3).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('instances')
    .addColumn('id', 'text', (c) => c.primaryKey())
    /** boot id and pid namespace of the host: processes with the same one can test each other's pid */
    .addColumn('host', 'text')
    .addColumn('pid', 'integer', (c) => c.notNull())
    /** milliseconds */
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('idempotency_keys').addColumn('instance_id', 'text').execute();
  await db.schema.alterTable('idempotency_keys').addColumn('role', 'text').execute();
}
