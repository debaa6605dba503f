// Secrets and their versions (values sealed by the keyring), the audit log, and the digest of the
// secret values a local-driver deployment received.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    /** JSON object of string labels */
    .addColumn('labels', 'text', (c) => c.notNull())
    /** JSON object alias -> version number */
    .addColumn('version_aliases', 'text', (c) => c.notNull())
    /** active | soft_deleted */
    .addColumn('state', 'text', (c) => c.notNull())
    /** the highest version number handed out: the counter of new versions, never decreasing */
    .addColumn('version_count', 'integer', (c) => c.notNull())
    .addColumn('enabled_version_count', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('deleted_at', 'bigint')
    .addColumn('purge_at', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    // A soft-deleted secret keeps its name: undelete must never collide.
    .addUniqueConstraint('secrets_ws_name_uq', ['workspace_id', 'name'])
    .execute();
  await db.schema.createIndex('secrets_ws_id_idx').on('secrets').columns(['workspace_id', 'id']).execute();
  // The purge sweep: soft-deleted secrets by purge time (null while active).
  await db.schema.createIndex('secrets_purge_idx').on('secrets').columns(['purge_at']).where(sql.ref('purge_at'), 'is not', null).execute();

  await db.schema
    .createTable('secret_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('secret_id', 'text', (c) => c.notNull().references('secrets.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('version_number', 'integer', (c) => c.notNull())
    /** enabled | disabled | destroyed */
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('comment', 'text')
    // The envelope (platform/keyring.ts); all three are null once the version is destroyed.
    .addColumn('key_id', 'text')
    .addColumn('wrapped_key', 'text')
    .addColumn('ciphertext', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('destroyed_at', 'bigint')
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addUniqueConstraint('secret_versions_number_uq', ['secret_id', 'version_number'])
    .execute();
  await db.schema.createIndex('secret_versions_secret_id_idx').on('secret_versions').columns(['secret_id', 'id']).execute();

  // Append-only. No foreign key to workspaces: the record of a workspace's deletion outlives it.
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    /** user | api_token | oauth_client | system */
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('resource_type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text', (c) => c.notNull())
    /** the x-request-id of the request; null for what the service does on its own (purge, deploys) */
    .addColumn('request_id', 'text')
    /** JSON object of strings; never a secret value */
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_events_ws_id_idx').on('audit_events').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('audit_events_resource_idx').on('audit_events').columns(['workspace_id', 'resource_id', 'id']).execute();
  await db.schema.createIndex('audit_events_action_idx').on('audit_events').columns(['workspace_id', 'action', 'id']).execute();

  // HMAC of the secret data a deploy applied on the simulated cluster (never the values).
  await db.schema.alterTable('local_deployments').addColumn('secret_digest', 'text').execute();
}
