// Issue 34, plans paid through the payment provider (SVC_BILLING=payments): a plan checkout (pck_)
// is one raise of a workspace's plan waiting for its payment: the tier asked for, the price it
// charges (from the plan catalog), and the provider's checkout session. It is `creating` while the
// provider is asked for the session, `open` until the provider reports it paid (`paid`: the plan
// moved, change_request_id names the applied change request) or expired (`expired`), `canceled`
// when another raise replaced it or the provider could not make it, and `refunded` when it was paid
// but could no longer be taken (the plan had moved meanwhile). At most one `creating` or `open`
// per workspace, held by a partial unique index: a workspace never has two payable plan checkouts.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plan_checkouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    /** the tier paid for, and the tier the workspace was on when it was asked */
    .addColumn('tier', 'text', (c) => c.notNull())
    .addColumn('previous_tier', 'text', (c) => c.notNull())
    /** creating | open | paid | expired | canceled | refunded */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    /** local | stripe */
    .addColumn('provider', 'text', (c) => c.notNull())
    /** the provider's checkout session id; null while creating */
    .addColumn('provider_session_id', 'text')
    .addColumn('url', 'text')
    /** cents per month, and its currency (the plan's price when it was asked) */
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    /** the usr_ id of the owner or admin who asked for the raise */
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    /** the applied change request (scr_) once paid */
    .addColumn('change_request_id', 'text')
    /** the provider's payment and subscription the session paid with */
    .addColumn('payment_ref', 'text')
    .addColumn('subscription_id', 'text')
    .addColumn('refunded_at', 'bigint')
    .addUniqueConstraint('plan_checkouts_provider_session_uq', ['provider', 'provider_session_id'])
    .execute();
  // A workspace's plan checkouts, newest first, walk this index.
  await db.schema.createIndex('plan_checkouts_ws_id_idx').on('plan_checkouts').columns(['workspace_id', 'id']).execute();
  await db.schema
    .createIndex('plan_checkouts_one_live_uq').on('plan_checkouts').column('workspace_id').unique()
    .where(sql<boolean>`state in ('creating', 'open')`).execute();
}
