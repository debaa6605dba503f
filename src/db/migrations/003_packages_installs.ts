// Packages and their immutable versions, installs with their renders and reachable URLs, preview
// hostnames, and the local cluster driver's simulated deployments.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('packages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addUniqueConstraint('packages_ws_name_uq', ['workspace_id', 'name'])
    .execute();
  await db.schema.createIndex('packages_ws_id_idx').on('packages').columns(['workspace_id', 'id']).execute();

  // Immutable once written. `sort_key` orders releases by semver precedence as text
  // (zero-padded major.minor.patch), so "latest" is one indexed query.
  await db.schema
    .createTable('package_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('package_id', 'text', (c) => c.notNull().references('packages.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('semver', 'text', (c) => c.notNull())
    .addColumn('sort_key', 'text', (c) => c.notNull())
    .addColumn('prerelease', 'integer', (c) => c.notNull())
    .addColumn('input_schema', 'text', (c) => c.notNull())
    .addColumn('manifest', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('package_versions_semver_uq', ['package_id', 'semver'])
    .execute();
  await db.schema.createIndex('package_versions_pkg_id_idx').on('package_versions').columns(['package_id', 'id']).execute();
  await db.schema.createIndex('package_versions_latest_idx').on('package_versions').columns(['package_id', 'prerelease', 'sort_key']).execute();

  await db.schema
    .createTable('installs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // Cluster deletion is refused while installs remain; the cascade only covers workspace deletion.
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
    .addColumn('package_id', 'text', (c) => c.notNull())
    .addColumn('package_version_id', 'text', (c) => c.notNull())
    /** latest | pinned */
    .addColumn('pin_kind', 'text', (c) => c.notNull())
    .addColumn('pin_version', 'text')
    /** the values the install was configured with (JSON) */
    .addColumn('values', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reconciling', 'integer', (c) => c.notNull())
    .addColumn('current_render_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('installs_ws_id_idx').on('installs').columns(['workspace_id', 'id']).execute();
  await db.schema.createIndex('installs_cluster_idx').on('installs').columns(['cluster_id']).execute();

  // One render per deploy: the manifest rendered with the values, and its content hash.
  await db.schema
    .createTable('install_renders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('install_id', 'text', (c) => c.notNull().references('installs.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('package_version_id', 'text', (c) => c.notNull())
    .addColumn('semver', 'text', (c) => c.notNull())
    .addColumn('content_hash', 'text', (c) => c.notNull())
    /** the rendered manifest (JSON): routes and Kubernetes objects */
    .addColumn('manifest', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    /** when another render became the install's current one; null while current or never deployed */
    .addColumn('replaced_at', 'bigint')
    .execute();
  await db.schema.createIndex('install_renders_install_id_idx').on('install_renders').columns(['install_id', 'id']).execute();

  // The install's reachable URLs, one per route of its current render; the preview router looks
  // them up by hostname.
  await db.schema
    .createTable('install_urls')
    .addColumn('install_id', 'text', (c) => c.notNull().references('installs.id').onDelete('cascade'))
    .addColumn('route_key', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull().unique())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('error', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('last_observed_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('install_urls_pk', ['install_id', 'route_key'])
    .execute();

  await db.schema
    .createTable('preview_hostnames')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('install_id', 'text', (c) => c.notNull().references('installs.id').onDelete('cascade'))
    .addColumn('hostname', 'text', (c) => c.notNull().unique())
    /** floating | pinned */
    .addColumn('binding_kind', 'text', (c) => c.notNull())
    .addColumn('track', 'text', (c) => c.notNull())
    /** the render served; for a floating hostname being rebound, the one served until the rebind completes */
    .addColumn('render_id', 'text', (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    .addColumn('routing_mode', 'text', (c) => c.notNull())
    /** provisioning | active | evicted | releasing */
    .addColumn('state', 'text', (c) => c.notNull())
    /** the latest bind operation asked for this hostname: only it may move the binding */
    .addColumn('pending_operation_id', 'text')
    .addColumn('pending_render_id', 'text')
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('revision', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('preview_hostnames_install_id_idx').on('preview_hostnames').columns(['install_id', 'id']).execute();
  // One floating hostname per track; one pinned hostname per (track, render).
  await db.schema
    .createIndex('preview_hostnames_floating_uq')
    .on('preview_hostnames')
    .columns(['install_id', 'track'])
    .unique()
    .where(sql.ref('binding_kind'), '=', 'floating')
    .execute();
  await db.schema
    .createIndex('preview_hostnames_pinned_uq')
    .on('preview_hostnames')
    .columns(['install_id', 'track', 'render_id'])
    .unique()
    .where(sql.ref('binding_kind'), '=', 'pinned')
    .execute();

  // The local driver's simulated workloads: which render of an install runs on a simulated cluster.
  await db.schema
    .createTable('local_deployments')
    .addColumn('cluster_id', 'text', (c) => c.notNull().references('local_clusters.cluster_id').onDelete('cascade'))
    .addColumn('install_id', 'text', (c) => c.notNull())
    .addColumn('render_id', 'text', (c) => c.notNull())
    .addColumn('resource_count', 'integer', (c) => c.notNull())
    .addColumn('deployed_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('local_deployments_pk', ['cluster_id', 'install_id'])
    .execute();
}
