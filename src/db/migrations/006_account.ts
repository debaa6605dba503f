// The workspace account (issue 12): subscriptions and their change requests, per-user
// notifications, rate counters for quotas; and what quota counting needs from existing tables: a
// node count per cluster (compute/machines) and the cluster of each operation (operations/running).
import { PostgresAdapter, sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  // The subscription of a workspace: its tier is the workspace's plan_tier (one truth); this row
  // holds the rest, and exists once the subscription first changes (before, it is active at
  // revision 1). Its id derives from the workspace's.
  await db.schema
    .createTable('subscriptions')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
    /** active | canceling */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('subscription_change_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    /** upgrade | downgrade | cancel */
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('previous_tier', 'text', (c) => c.notNull())
    .addColumn('requested_tier', 'text', (c) => c.notNull())
    /** pending | applied | canceled | rejected */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_reason', 'text')
    .addColumn('effective_at', 'bigint', (c) => c.notNull())
    .addColumn('resolved_at', 'bigint')
    .addColumn('operation_id', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scr_ws_id_idx').on('subscription_change_requests').columns(['workspace_id', 'id']).execute();
  // At most one pending change per workspace; the sweep finds due ones by effective_at.
  await db.schema
    .createIndex('scr_one_pending_uq').on('subscription_change_requests').column('workspace_id').unique()
    .where(sql.ref('status'), '=', 'pending').execute();
  await db.schema
    .createIndex('scr_pending_due_idx').on('subscription_change_requests').column('effective_at')
    .where(sql.ref('status'), '=', 'pending').execute();

  // Per user. No foreign key to workspaces: a notification outlives the workspace it speaks of.
  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('severity', 'text', (c) => c.notNull())
    /** string map (JSON) */
    .addColumn('context', 'text', (c) => c.notNull())
    /** names the event: a user gets one notification per event, whatever retries or instances do */
    .addColumn('dedup_key', 'text', (c) => c.notNull())
    .addColumn('read_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('notifications_dedup_uq', ['dedup_key', 'user_id'])
    .execute();
  await db.schema.createIndex('notifications_user_id_idx').on('notifications').columns(['user_id', 'id']).execute();
  await db.schema
    .createIndex('notifications_unread_idx').on('notifications').columns(['user_id', 'id'])
    .where(sql.ref('read_at'), 'is', null).execute();
  await db.schema.createIndex('notifications_created_idx').on('notifications').column('created_at').execute();

  // Rate quotas: uses per (workspace, metric, window), incremented with one atomic upsert.
  await db.schema
    .createTable('usage_counters')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('metric', 'text', (c) => c.notNull())
    .addColumn('window_start', 'bigint', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_counters_pk', ['workspace_id', 'metric', 'window_start'])
    .execute();
  await db.schema.createIndex('usage_counters_window_idx').on('usage_counters').column('window_start').execute();

  // compute/machines sums this; written with the capabilities it is read from.
  await db.schema.alterTable('clusters').addColumn('node_count', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  const observed = await sql<{ id: string; capabilities: string }>`select id, capabilities from clusters where capabilities is not null`.execute(db);
  for (const row of observed.rows) {
    const nodes = (JSON.parse(row.capabilities) as { nodes?: unknown[] }).nodes?.length ?? 0;
    await sql`update clusters set node_count = ${nodes} where id = ${row.id}`.execute(db);
  }

  // operations/running counts the running operations of a cluster through this index.
  await db.schema.alterTable('operations').addColumn('cluster_id', 'text').execute();
  await (postgres
    ? sql`update operations set cluster_id = metadata::json ->> 'cluster_id'`
    : sql`update operations set cluster_id = json_extract(metadata, '$.cluster_id')`
  ).execute(db);
  await db.schema
    .createIndex('operations_running_cluster_idx').on('operations').column('cluster_id')
    .where(sql.ref('state'), '=', 'RUNNING').execute();

  // The token-expiry sweep reads tokens expiring within a week.
  await db.schema.createIndex('api_tokens_expiry_idx').on('api_tokens').column('expires_at').execute();

  // A subscription is billed by the platform (this service's operator) or by a seller; `self`
  // said the former before subscriptions existed.
  await sql`update workspaces set billed_by = 'platform' where billed_by = 'self'`.execute(db);
}
