// Operations and their steps, the job queue that runs them, clusters, and the local cluster
// driver's simulated state. Workspaces gain a lifecycle state for deletion.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  // `active` or `deleting`: a workspace being deleted refuses new work.
  await db.schema.alterTable('workspaces').addColumn('state', 'text', (c) => c.notNull().defaultTo('active')).execute();

  // No foreign key to workspaces: an operation outlives its workspace (the requester follows a
  // workspace deletion to its end).
  await db.schema
    .createTable('operations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('owner_type', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('parent_operation_id', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('input', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('response', 'text')
    .addColumn('error', 'text')
    .addColumn('last_error', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('requested_by_user', 'text')
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  // Lists newest first per workspace, optionally per owner; and "the running operation of X".
  await db.schema.createIndex('operations_ws_id_idx').on('operations').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('operations_owner_idx').on('operations').columns(['owner_id', 'state']).execute();

  await db.schema
    .createTable('operation_steps')
    .addColumn('operation_id', 'text', (c) => c.notNull().references('operations.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('retryable', 'integer', (c) => c.notNull())
    .addColumn('skippable', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('completed_at', 'bigint')
    .addColumn('error_message', 'text')
    .addColumn('result', 'text')
    .addPrimaryKeyConstraint('operation_steps_pk', ['operation_id', 'position'])
    .execute();

  // The queue (Graphile Worker / pg-boss shape): a job is claimable when due and not leased.
  // Times in milliseconds: backoff and leases are shorter than a second in tests.
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('operation_id', 'text')
    .addColumn('run_at', 'bigint', (c) => c.notNull())
    .addColumn('claims', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_token', 'text')
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('jobs_run_at_idx').on('jobs').columns(['run_at']).execute();
  await db.schema.createIndex('jobs_operation_idx').on('jobs').columns(['operation_id']).execute();

  await db.schema
    .createTable('clusters')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reconciling', 'integer', (c) => c.notNull())
    /** non-secret provider options (JSON), e.g. the local driver's injected faults */
    .addColumn('options', 'text', (c) => c.notNull())
    /** AES-256-GCM sealed kubeconfig (kubernetes provider); never returned */
    .addColumn('kubeconfig_sealed', 'text')
    .addColumn('capabilities', 'text')
    .addColumn('capabilities_observed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addUniqueConstraint('clusters_ws_name_uq', ['workspace_id', 'name'])
    .execute();
  await db.schema.createIndex('clusters_ws_id_idx').on('clusters').columns(['workspace_id', 'id']).execute();

  // The local driver's simulated clusters: what "exists" in the simulated infrastructure.
  await db.schema
    .createTable('local_clusters')
    .addColumn('cluster_id', 'text', (c) => c.primaryKey())
    .addColumn('node_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
