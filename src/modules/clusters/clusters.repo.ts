// SQL of clusters. Every write bumps `revision` (the etag), also the state changes workflows make.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { ClustersTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { UsageCounter } from '../quotas/usage.js';

export type ClusterRow = ClustersTable;

/**
 * How a kubeconfig is sealed (platform/keyring.ts): bound to its cluster, so a sealed kubeconfig
 * copied onto another cluster's row does not open. `legacyPurpose`: the key of kubeconfigs stored
 * before the keyring, `encrypt(deriveKey(secretKey, 'kubeconfig'))`, which still open.
 */
export const KUBECONFIG_SEAL = { context: (clusterId: string) => `cluster:${clusterId}:kubeconfig`, legacyPurpose: 'kubeconfig' } as const;

export function findCluster(db: Executor, workspaceId: string, id: string): Promise<ClusterRow | undefined> {
  return db.selectFrom('clusters').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** By id alone: for workflow steps, which act on the operation's owner. */
export function findClusterById(db: Executor, id: string): Promise<ClusterRow | undefined> {
  return db.selectFrom('clusters').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Clusters' names by id, in one statement: the wording of notices about many machines at once. */
export async function clusterNamesById(db: Executor, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('clusters').select(['id', 'name']).where('id', 'in', [...new Set(ids)]).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

export function listClusters(db: Executor, workspaceId: string, page: PageRequest): Promise<ClusterRow[]> {
  return keysetPage(db.selectFrom('clusters').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

export function listClustersOfWorkspace(db: Executor, workspaceId: string): Promise<ClusterRow[]> {
  return db.selectFrom('clusters').selectAll().where('workspace_id', '=', workspaceId).orderBy('id').execute();
}

/**
 * Inserts unless the name is taken in the workspace; false when it is. `on conflict do nothing`
 * rather than catching the violation: on PostgreSQL a failed statement aborts the transaction.
 */
export async function insertClusterIfNameFree(db: Executor, row: ClusterRow): Promise<boolean> {
  const res = await db
    .insertInto('clusters')
    .values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'name']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** Compare-and-set update of the name and gateway address (revision null: `*`); undefined when the revision did not match or the cluster is being deleted. */
export function updateClusterIfRevision(
  db: Executor, workspaceId: string, id: string, revision: number | null, set: Partial<Pick<ClusterRow, 'name' | 'gateway_url'>>, now: number,
) {
  let q = db
    .updateTable('clusters')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('state', '!=', 'deleting');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Compare-and-set: marks the cluster deleting; undefined when the revision did not match or it already is. */
export function markDeletingIfRevision(db: Executor, workspaceId: string, id: string, revision: number | null, now: number) {
  let q = db
    .updateTable('clusters')
    .set((eb) => ({ state: 'deleting', reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('state', '!=', 'deleting');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/**
 * Claims the cluster for an operation: one statement, so two concurrent requests cannot both
 * start one. Undefined when another operation runs on it or it is being deleted.
 */
export function claimForOperation(db: Executor, workspaceId: string, id: string, now: number) {
  return db
    .updateTable('clusters')
    .set((eb) => ({ reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('reconciling', '=', 0)
    .where('state', '!=', 'deleting')
    .returningAll()
    .executeTakeFirst();
}

/** pending -> provisioning, once (a repeated call changes nothing). */
/** pending -> provisioning; returns the row when it changed it (undefined on a repeated run). */
export async function markProvisioning(db: Executor, id: string, now: number): Promise<ClusterRow | undefined> {
  return db
    .updateTable('clusters')
    .set((eb) => ({ state: 'provisioning', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

export async function storeCapabilities(db: Executor, id: string, capabilities: string, nodeCount: number, now: number): Promise<void> {
  await db
    .updateTable('clusters')
    .set((eb) => ({ capabilities, node_count: nodeCount, capabilities_observed_at: now, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

/**
 * Ends an operation's hold on the cluster: sets `state` (null: unchanged) and clears reconciling,
 * unless the cluster is being deleted (the deletion holds it then).
 */
export async function releaseFromOperation(db: Executor, id: string, state: string | null, now: number): Promise<void> {
  await db
    .updateTable('clusters')
    .set((eb) => ({ ...(state !== null ? { state } : {}), reconciling: 0, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '!=', 'deleting')
    .execute();
}

/** A deletion that ended without removing the cluster hands it back, suspended. */
export async function abandonDeletion(db: Executor, id: string, now: number): Promise<void> {
  await db
    .updateTable('clusters')
    .set((eb) => ({ state: 'suspended', reconciling: 0, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '=', 'deleting')
    .execute();
}

export async function deleteCluster(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('clusters').where('id', '=', id).execute();
}

/** compute/clusters: the clusters of the workspaces in question (the ws+name unique index counts them). */
export const clusterUsage: UsageCounter = (db, inWorkspaces) =>
  db.selectFrom('clusters').select((eb) => eb.fn.countAll().as('n')).where(inWorkspaces('clusters.workspace_id')).$asScalar();
