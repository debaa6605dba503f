// Issue 34, two factors: a TOTP factor (RFC 6238) per account, its one-time recovery codes, and a
// workspace setting that requires a factor of every member who acts in the workspace.
// - user_totp: one row per account that started or finished setting up TOTP. The shared secret is
//   sealed by the keyring (bound to the row, `k1.<key id>.` like every one-string sealed value, so
//   `svc admin rotate-keys` re-seals it and the start check counts it through the expression index
//   below). confirmed_at null: set up but not confirmed with a code yet (pending, asks nothing).
//   last_used_step: the 30-second step of the last code accepted, so a code is used at most once.
// - user_recovery_codes: SHA-256 hashes (salted with the user id) of the codes shown once at
//   confirmation or regeneration; used_at set when one is spent.
// - workspaces.require_two_factor: 0 or 1.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('user_totp')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().unique().references('users.id').onDelete('cascade'))
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('confirmed_at', 'bigint')
    .addColumn('last_used_step', 'bigint')
    .execute();
  await db.schema.createIndex('user_totp_secret_key_idx').on('user_totp').expression(sql`substr(secret_sealed, 1, 19)`).execute();

  await db.schema
    .createTable('user_recovery_codes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('user_recovery_codes_user_hash_uq').on('user_recovery_codes').columns(['user_id', 'code_hash']).unique().execute();

  await db.schema.alterTable('workspaces').addColumn('require_two_factor', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
