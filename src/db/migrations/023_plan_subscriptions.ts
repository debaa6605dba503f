// Plans paid through the payment provider, their life after the first payment (issue 34): a paid
// plan checkout starts a monthly subscription at the provider, recorded here as the workspace's plan
// subscription (psub_) with the period it paid for. `active` while it renews; `ending` once the
// service decided it must stop now (a newer paid raise replaced it, the operator set the plan, the
// workspace is being deleted, the plan went to free) and the provider has not confirmed yet;
// `ended` when the provider ended it (its own end, `customer.subscription.deleted`, or ours).
// What the provider must hold while active is `cancel_at_period_end` (a cancel or a downgrade to
// free is scheduled) and `next_tier` (the plan whose price the next period charges: a downgrade to
// a lower paid plan); the service changes these under the workspace lock and bumps
// `desired_revision`, and a job (sync_job_id) carries them to the provider outside any transaction,
// retried with growing delays, until `synced_revision` catches up. At most one `active` per
// workspace. No foreign key on the workspace: the row outlives a deleted workspace until the
// provider confirmed the end.
// The local provider learns `cancel_at_period_end` too: its renewal sweep then ends the
// subscription at the period end instead of charging another one, as Stripe does.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('plan_subscriptions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    /** local | stripe, and the provider's subscription id (lsub_ or sub_) */
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('provider_subscription_id', 'text', (c) => c.notNull())
    /** the paid plan checkout (pck_) that started it */
    .addColumn('plan_checkout_id', 'text', (c) => c.notNull())
    /** the plan it pays for now */
    .addColumn('tier', 'text', (c) => c.notNull())
    /** active | ending | ended */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('cancel_at_period_end', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_tier', 'text')
    /** the paid period, Unix seconds (each renewal moves it) */
    .addColumn('current_period_start', 'bigint', (c) => c.notNull())
    .addColumn('current_period_end', 'bigint', (c) => c.notNull())
    .addColumn('renewals', 'integer', (c) => c.notNull().defaultTo(0))
    /** why it is ending or ended */
    .addColumn('end_reason', 'text')
    .addColumn('desired_revision', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('synced_revision', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('sync_job_id', 'text')
    .addColumn('sync_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    /** 1 once the owners were told that the provider keeps refusing */
    .addColumn('failure_notified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .addUniqueConstraint('plan_subscriptions_provider_sub_uq', ['provider', 'provider_subscription_id'])
    .execute();
  await db.schema.createIndex('plan_subscriptions_ws_idx').on('plan_subscriptions').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('plan_subscriptions_job_idx').on('plan_subscriptions').column('sync_job_id').execute();
  await db.schema
    .createIndex('plan_subscriptions_one_active_uq').on('plan_subscriptions').column('workspace_id').unique()
    .where(sql<boolean>`state = 'active'`).execute();
  await db.schema.alterTable('local_checkouts').addColumn('cancel_at_period_end', 'integer', (c) => c.notNull().defaultTo(0)).execute();
}
