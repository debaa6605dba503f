// Issue 34, people: the operator's hold on accounts (disabled, instance admin), e-mail (the mail
// outbox every driver sends from) and password resets by an e-mailed link.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('disabled_at', 'bigint').execute();
  /** set by `svc admin users grant-admin`; SVC_ADMIN_EMAILS makes admins too, without a row change */
  await db.schema.alterTable('users').addColumn('admin_granted_at', 'bigint').execute();
  /** which notifications are also e-mailed: none (the default) | important | all */
  await db.schema.alterTable('users').addColumn('notification_email', 'text', (c) => c.notNull().defaultTo('none')).execute();

  // Every message sent, whatever the driver: queued in the transaction of the change that sends it,
  // delivered by a job (jobs.id = job_id) after commit. The smtp driver drops the body once sent;
  // the local driver keeps it (it is the outbox a laptop reads with `svc admin mail list`).
  await db.schema
    .createTable('mail_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('job_id', 'text', (c) => c.notNull().unique())
    .addColumn('to_address', 'text', (c) => c.notNull())
    /** the usr_ id it was sent to, when it was sent to an account */
    .addColumn('user_id', 'text')
    /** password_reset | notification | invitation */
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    /** null once dropped (sent by smtp) */
    .addColumn('body', 'text')
    /** queued | sent | failed */
    .addColumn('state', 'text', (c) => c.notNull())
    /** the driver that sent it: local | smtp */
    .addColumn('driver', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  await db.schema.createIndex('mail_messages_to_id_idx').on('mail_messages').columns(['to_address', 'id']).execute();

  // One-time links to choose a new password: the token's SHA-256, 30 minutes, used at most once;
  // asking again supersedes the older link.
  await db.schema
    .createTable('password_resets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    /** email (asked for by the person) | operator (`svc admin users reset-password`) */
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    /** set when used or superseded: the link works only while null */
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema.createIndex('password_resets_user_idx').on('password_resets').columns(['user_id', 'created_at']).execute();
}
