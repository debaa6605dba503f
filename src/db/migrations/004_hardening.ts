// Sign-in throttling by client address and by account, with growing delays instead of a lock
// (issue 9): one row per throttle key replaces the per-e-mail window of login_attempts.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sign_in_throttles')
    // `addr:<ip>`, `acct:<email>` or `pair:<ip> <email>`
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('last_failure_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.dropTable('login_attempts').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations are forward-only');
}
