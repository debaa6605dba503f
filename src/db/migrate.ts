// Numbered, forward-only migrations. Kysely's migrator takes a lock (a PostgreSQL advisory lock;
// on SQLite the write transaction itself), so several instances starting at once are safe: one
// applies, the others wait and then find nothing left to do.
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './database.js';
import * as m001 from './migrations/001_kernel.js';
import * as m002 from './migrations/002_operations_clusters.js';
import * as m003 from './migrations/003_packages_installs.js';
import * as m004 from './migrations/004_hardening.js';
import * as m005 from './migrations/005_secrets_audit.js';
import * as m006 from './migrations/006_account.js';
import * as m007 from './migrations/007_snippets.js';
import * as m008 from './migrations/008_snippet_writers.js';
import * as m009 from './migrations/009_idempotency_owners.js';
import * as m010 from './migrations/010_secret_lookups.js';
import * as m011 from './migrations/011_list_filters.js';
import * as m012 from './migrations/012_machines.js';
import * as m013 from './migrations/013_agents.js';
import * as m014 from './migrations/014_commerce.js';
import * as m015 from './migrations/015_events.js';
import * as m016 from './migrations/016_spend_reservations_secret_derived.js';
import * as m017 from './migrations/017_invitations.js';
import * as m018 from './migrations/018_people.js';
import * as m019 from './migrations/019_two_factor.js';
import * as m020 from './migrations/020_audit_names.js';
import * as m021 from './migrations/021_plan_checkouts.js';
import * as m022 from './migrations/022_oidc_identities.js';
import * as m023 from './migrations/023_plan_subscriptions.js';
import * as m024 from './migrations/024_local_log_lines.js';
import * as m025 from './migrations/025_cluster_gateway_url.js';

const MIGRATIONS: Record<string, Migration> = {
  '001_kernel': m001,
  '002_operations_clusters': m002,
  '003_packages_installs': m003,
  '004_hardening': m004,
  '005_secrets_audit': m005,
  '006_account': m006,
  '007_snippets': m007,
  '008_snippet_writers': m008,
  '009_idempotency_owners': m009,
  '010_secret_lookups': m010,
  '011_list_filters': m011,
  '012_machines': m012,
  '013_agents': m013,
  '014_commerce': m014,
  '015_events': m015,
  '016_spend_reservations_secret_derived': m016,
  '017_invitations': m017,
  '018_people': m018,
  '019_two_factor': m019,
  '020_audit_names': m020,
  '021_plan_checkouts': m021,
  '022_oidc_identities': m022,
  '023_plan_subscriptions': m023,
  '024_local_log_lines': m024,
  '025_cluster_gateway_url': m025,
};

/** The migrations this build knows, in the order they apply: a database (or a backup) with another one is newer than this build. */
export const MIGRATION_NAMES: readonly string[] = Object.keys(MIGRATIONS);

class StaticProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    return MIGRATIONS;
  }
}

export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: new StaticProvider(),
    migrationTableName: 'svc_migrations',
    migrationLockTableName: 'svc_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
