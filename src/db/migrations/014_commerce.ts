// Issue 25 (offers, order drafts, checkout, orders; API.md 8.7). A seller's offers; the customer's
// order drafts (the wizard, whose service-driven phases run as operations); the checkout sessions
// a draft opened at the payment provider; the orders committed once a draft is paid; the payment
// providers' events taken in exactly once (by event id); and the local payment provider's own
// records (its checkout sessions and the events it delivers to the webhook route). An install
// delivered by an order is made from the seller's package: `installs.package_workspace_id` names
// the workspace that owns its package when that is not the install's own.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('offers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('package_id', 'text', (c) => c.notNull())
    /** null: the package's latest release, resolved when a draft is claimed and fixed on the draft */
    .addColumn('package_version_id', 'text')
    .addColumn('title', 'text', (c) => c.notNull())
    /** eur | usd */
    .addColumn('currency', 'text', (c) => c.notNull())
    /** cents */
    .addColumn('unit_amount', 'bigint', (c) => c.notNull())
    /** one_time | month | year */
    .addColumn('interval', 'text', (c) => c.notNull())
    /** paid | non_billable_test */
    .addColumn('commercial_mode', 'text', (c) => c.notNull())
    /** platform | bring_your_own */
    .addColumn('compute_mode', 'text', (c) => c.notNull())
    /** JSON {key: {value, locked}} */
    .addColumn('field_values', 'text', (c) => c.notNull())
    /** JSON array of lowercased emails, or null (anyone) */
    .addColumn('allowed_emails', 'text')
    .addColumn('expires_at', 'bigint')
    /** null: unlimited */
    .addColumn('max_uses', 'integer')
    /** drafts holding a use now plus orders committed: a draft takes one when claimed and gives it back if it ends unpaid */
    .addColumn('uses_held', 'integer', (c) => c.notNull())
    /** orders committed */
    .addColumn('orders_count', 'integer', (c) => c.notNull())
    /** drafts ever claimed: a used offer can no longer be changed */
    .addColumn('drafts_count', 'integer', (c) => c.notNull())
    .addColumn('order_ttl_minutes', 'integer', (c) => c.notNull())
    .addColumn('customer_display_name', 'text')
    .addColumn('customer_external_id', 'text')
    .addColumn('notes', 'text')
    .addColumn('internal_note', 'text')
    .addColumn('short_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('archived_at', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('offers_ws_id_idx').on('offers').columns(['workspace_id', 'id']).execute();

  await db.schema
    .createTable('order_drafts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('offer_id', 'text', (c) => c.notNull().references('offers.id').onDelete('cascade'))
    .addColumn('seller_workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    /** auth | workspace | compute | compute_bootstrap | configure | payment | install | done | cleaning_up | terminated */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('termination_reason', 'text')
    .addColumn('cluster_ready', 'integer', (c) => c.notNull())
    .addColumn('server_joined', 'integer', (c) => c.notNull())
    .addColumn('payment_completed', 'integer', (c) => c.notNull())
    /** the customer; null while the draft is in `auth` */
    .addColumn('user_id', 'text')
    .addColumn('customer_email', 'text')
    /** SHA-256 of the one-time token that claims a draft begun signed out */
    .addColumn('claim_token_hash', 'text')
    /** the customer's workspace, chosen or created in the workspace phase */
    .addColumn('workspace_id', 'text')
    .addColumn('workspace_created', 'integer', (c) => c.notNull())
    .addColumn('cluster_id', 'text')
    /** 1: the draft registered its cluster (cleaning_up deletes it unless an install was delivered to it) */
    .addColumn('cluster_allocated', 'integer', (c) => c.notNull())
    .addColumn('bootstrap_id', 'text')
    /** the version bought, fixed when the draft is claimed */
    .addColumn('package_id', 'text')
    .addColumn('package_version_id', 'text')
    /** JSON: the customer's values merged with the offer's (locked ones win); null until configured */
    .addColumn('field_values', 'text')
    /** counts the changes to what is bought (workspace, configuration): checkout sessions and the order record it */
    .addColumn('content_revision', 'integer', (c) => c.notNull())
    /** 1 while the draft holds one of its offer's uses */
    .addColumn('holds_use', 'integer', (c) => c.notNull())
    .addColumn('compute_operation_id', 'text')
    .addColumn('install_operation_id', 'text')
    .addColumn('cleanup_operation_id', 'text')
    /** when the customer was told the draft is about to expire */
    .addColumn('expiry_notified_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('ttl_expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('order_drafts_offer_idx').on('order_drafts').columns(['offer_id', 'id']).execute();
  await db.schema.createIndex('order_drafts_seller_idx').on('order_drafts').columns(['seller_workspace_id', 'id']).execute();
  await db.schema.createIndex('order_drafts_user_idx').on('order_drafts').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('order_drafts_ttl_idx').on('order_drafts').columns(['status', 'ttl_expires_at']).execute();
  await db.schema.createIndex('order_drafts_cluster_idx').on('order_drafts').column('cluster_id').execute();

  await db.schema
    .createTable('checkout_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('draft_id', 'text', (c) => c.notNull().references('order_drafts.id').onDelete('cascade'))
    /** local | stripe */
    .addColumn('provider', 'text', (c) => c.notNull())
    /** the provider's checkout session id (spec 2.6 `id`) */
    .addColumn('provider_session_id', 'text', (c) => c.notNull())
    .addColumn('draft_revision', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    /** open | complete | expired */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('interval', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    /** the provider's payment (payment intent) or subscription the session paid with */
    .addColumn('payment_ref', 'text')
    .addColumn('subscription_id', 'text')
    /** set when a payment arrived that no order could take (the draft had ended, or the session was stale) and was refunded */
    .addColumn('refunded_at', 'bigint')
    .addUniqueConstraint('checkout_sessions_provider_uq', ['provider', 'provider_session_id'])
    .execute();
  await db.schema.createIndex('checkout_sessions_draft_idx').on('checkout_sessions').columns(['draft_id', 'id']).execute();

  await db.schema
    .createTable('orders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('offer_id', 'text', (c) => c.notNull().references('offers.id').onDelete('cascade'))
    // One order per draft, whatever the order in which webhooks and return pages arrive.
    .addColumn('order_draft_id', 'text', (c) => c.notNull().unique().references('order_drafts.id').onDelete('cascade'))
    .addColumn('seller_workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('customer_user_id', 'text', (c) => c.notNull())
    .addColumn('customer_workspace_id', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('interval', 'text', (c) => c.notNull())
    /** delivery_pending | delivery_running | delivered | delivery_failed */
    .addColumn('status', 'text', (c) => c.notNull())
    /** local | stripe | none (nothing was paid) */
    .addColumn('payment_provider', 'text', (c) => c.notNull())
    .addColumn('payment_provider_checkout_id', 'text')
    .addColumn('draft_revision', 'integer', (c) => c.notNull())
    .addColumn('committed_at', 'bigint', (c) => c.notNull())
    .addColumn('subscription_id', 'text')
    /** recurring orders: the end of the paid period, when the subscription renews */
    .addColumn('next_renewal_at', 'bigint')
    .addColumn('renewals', 'integer', (c) => c.notNull())
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('install_id', 'text')
    .addColumn('install_operation_id', 'text')
    .addColumn('delivery_started_at', 'bigint')
    .addColumn('delivery_completed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('orders_seller_idx').on('orders').columns(['seller_workspace_id', 'id']).execute();
  await db.schema.createIndex('orders_customer_idx').on('orders').columns(['customer_user_id', 'id']).execute();
  await db.schema.createIndex('orders_subscription_idx').on('orders').column('subscription_id').execute();

  // Every provider event taken in, by its id: a repeated delivery finds its row and changes nothing.
  await db.schema
    .createTable('payment_events')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('provider_session_id', 'text')
    /** what the event did: applied, or why it changed nothing (duplicate states, stale, late...) */
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('payment_events_pk', ['provider', 'event_id'])
    .execute();

  // The local payment provider's own records: what a real provider would hold on its side.
  await db.schema
    .createTable('local_checkouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    /** the caller's idempotency key: a repeated create answers the same session */
    .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('client_reference_id', 'text', (c) => c.notNull())
    /** JSON string map */
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('interval', 'text', (c) => c.notNull())
    .addColumn('customer_email', 'text')
    /** open | complete | expired */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('success_url', 'text', (c) => c.notNull())
    .addColumn('cancel_url', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('card_last4', 'text')
    .addColumn('declines', 'integer', (c) => c.notNull())
    .addColumn('payment_ref', 'text')
    .addColumn('refunded_at', 'bigint')
    .addColumn('subscription_id', 'text')
    .addColumn('current_period_end', 'bigint')
    .addColumn('subscription_canceled_at', 'bigint')
    .execute();
  await db.schema.createIndex('local_checkouts_subscription_idx').on('local_checkouts').columns(['subscription_id']).execute();
  await db.schema.createIndex('local_checkouts_period_idx').on('local_checkouts').columns(['current_period_end']).execute();

  // Events the local provider sends to the service's webhook route, kept until delivered (and retried).
  await db.schema
    .createTable('local_payment_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    /** the JSON body as signed and sent */
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('local_payment_events_due_idx').on('local_payment_events').columns(['delivered_at', 'next_attempt_at']).execute();

  await db.schema.alterTable('installs').addColumn('package_workspace_id', 'text').execute();
}
