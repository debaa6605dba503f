// Issue 22 (the web app's lists). GET /v1/installs filters by cluster, package and state, and
// GET /v1/operations by state (the home page asks for the RUNNING and FAILED ones): each filter
// reads one (workspace_id, column, id) index range newest first, so a filtered page costs its
// matches, not a scan of the workspace's rows.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('installs_ws_cluster_idx').on('installs').columns(['workspace_id', 'cluster_id', 'id']).execute();
  await db.schema.createIndex('installs_ws_package_idx').on('installs').columns(['workspace_id', 'package_id', 'id']).execute();
  await db.schema.createIndex('installs_ws_state_idx').on('installs').columns(['workspace_id', 'state', 'id']).execute();
  await db.schema.createIndex('operations_ws_state_idx').on('operations').columns(['workspace_id', 'state', 'id']).execute();
}
