// Issue 23 (machines, API.md 8.5). Worker bootstraps (one-time join tokens, stored hashed),
// machines (servers that are nodes of a cluster), the credentials their agents hold (hashed; a
// revoked one stays as a tombstone so its agent can be told why it was refused), and the
// simulated servers of the `local` compute provider. compute/machines now counts machine records.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('machines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
    .addColumn('name', 'text')
    /** joined | provisioned */
    .addColumn('origin', 'text', (c) => c.notNull())
    /** byo | local | hcloud */
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('instance_type', 'text')
    /** PROVISIONING | JOINING | ACTIVE | UNREACHABLE | SUSPENDED | DELETING */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('node_name', 'text')
    /** JSON: what the agent reported */
    .addColumn('facts', 'text')
    .addColumn('last_heartbeat_at', 'bigint')
    .addColumn('expires_at', 'bigint')
    .addColumn('reconciling', 'integer', (c) => c.notNull())
    /** the compute provider's id of the server (provisioned machines) */
    .addColumn('provider_server_id', 'text')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('machines_ws_id_idx').on('machines').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('machines_ws_cluster_idx').on('machines').columns(['workspace_id', 'cluster_id', 'id']).execute();
  await db.schema.createIndex('machines_ws_state_idx').on('machines').columns(['workspace_id', 'state', 'id']).execute();
  // The sweeps: machines whose heartbeats stopped, machines nearing their expiry.
  await db.schema.createIndex('machines_heartbeat_idx').on('machines').columns(['state', 'last_heartbeat_at']).execute();
  await db.schema.createIndex('machines_expiry_idx').on('machines').column('expires_at').execute();

  await db.schema
    .createTable('worker_bootstraps')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    /** active | used | revoked (expired is an active one past expires_at) */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    /** set for the bootstrap a provisioned machine's server joins with; such bootstraps are not listed */
    .addColumn('for_machine_id', 'text')
    .addColumn('used_by_machine_id', 'text')
    .addColumn('used_at', 'bigint')
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('worker_bootstraps_cluster_idx').on('worker_bootstraps').columns(['cluster_id', 'id']).execute();

  await db.schema
    .createTable('machine_credentials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    /** no foreign key: the tombstone outlives its machine */
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    /** machine_deleted | workspace_deleted | replaced */
    .addColumn('revoked_reason', 'text')
    .execute();
  await db.schema.createIndex('machine_credentials_machine_idx').on('machine_credentials').column('machine_id').execute();

  // The `local` compute provider's simulated servers: what a real server keeps on its disk (its
  // cloud-init user data, then the credential its agent was given), sealed, and which instance
  // runs its agent (a lease, so a server's agent runs in exactly one process).
  await db.schema
    .createTable('local_servers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('machine_id', 'text', (c) => c.notNull().unique())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('instance_type', 'text', (c) => c.notNull())
    /** on | off */
    .addColumn('power', 'text', (c) => c.notNull())
    .addColumn('user_data_sealed', 'text', (c) => c.notNull())
    .addColumn('credential_sealed', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_expires_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}
