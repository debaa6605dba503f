// Issue 21. (1) An audit event about a secret or one of its versions names the secret in its own
// column, so `GET /v1/audit_events?resource_id=sec_...` reads the secret's events and its
// versions' events from one index range, newest first, instead of scanning the workspace's log.
// Existing events are filled in: a secret's own events from resource_id, a version's from
// metadata.secret_id (every secret.version.* event has carried it since migration 005).
// (2) Notifications about a resource are indexed, so those a change supersedes are found (a
// secret's purge notice, once it is restored or destroyed).
// (3) The key ids that sealed values are stored under are indexed, so `svc serve` lists the
// distinct ones at start with one index probe per key (modules/secrets/key-census.ts) and
// refuses to run with a key that cannot open them.
import { PostgresAdapter, sql, type Kysely } from 'kysely';

/** Sets secret_id on the events about a secret or a version that have none (exported for its test). */
export async function fillAuditSecretIds(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const versionSecret = postgres ? sql`(metadata::json ->> 'secret_id')` : sql`json_extract(metadata, '$.secret_id')`;
  await sql`update audit_events
    set secret_id = case when resource_type = 'secret' then resource_id else ${versionSecret} end
    where resource_type in ('secret', 'secret_version') and secret_id is null`.execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {

  await db.schema.alterTable('audit_events').addColumn('secret_id', 'text').execute();
  await fillAuditSecretIds(db);
  await db.schema.createIndex('audit_events_secret_idx').on('audit_events').columns(['workspace_id', 'secret_id', 'id'])
    .where(sql.ref('secret_id'), 'is not', null).execute();

  // Superseding a notification (notifications/notify.ts) finds those about a resource.
  await db.schema.createIndex('notifications_resource_idx').on('notifications').columns(['resource_id', 'type']).execute();

  await db.schema.createIndex('secret_versions_key_id_idx').on('secret_versions').column('key_id')
    .where(sql.ref('key_id'), 'is not', null).execute();
  // One-string sealed values are `k1.<16 hex key id>.<...>`: their first 19 characters name the key.
  await db.schema.createIndex('clusters_kubeconfig_key_idx').on('clusters').expression(sql`substr(kubeconfig_sealed, 1, 19)`).execute();
  await db.schema.createIndex('signing_keys_key_idx').on('signing_keys').expression(sql`substr(private_jwk_sealed, 1, 19)`).execute();
}
