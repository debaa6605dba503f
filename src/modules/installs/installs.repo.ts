// SQL of installs, their renders and URLs. Every write to an install bumps `revision` (the etag),
// also the state changes workflows make. The list page is the hot read (spec endpoint 7, with a
// budget): two prepared statements per page, the installs and then the URLs of exactly those.
import type { ExpressionBuilder } from 'kysely';
import type { Dialect, Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { Database, InstallRendersTable, InstallsTable, InstallUrlsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { UsageCounter } from '../quotas/usage.js';
import { INSTALL_DELETE } from './installs.schemas.js';

export type InstallRow = InstallsTable;
export type RenderRow = InstallRendersTable;
export type InstallUrlRow = InstallUrlsTable;

/** An install as lists and gets show it: its row without the values, with its version's semver. */
export type InstallItemRow = Omit<InstallRow, 'values'> & { semver: string | null };
export type InstallDetailRow = InstallItemRow & { values: string };
export type UrlItemRow = Pick<InstallUrlRow, 'install_id' | 'route_key' | 'hostname' | 'url' | 'error' | 'updated_at' | 'last_observed_at'>;
export type RenderItemRow = Omit<RenderRow, 'manifest'>;

/** Written in one place so a list item and a get read the same columns. */
const ITEM_COLUMNS = [
  'i.id', 'i.workspace_id', 'i.cluster_id', 'i.package_id', 'i.package_version_id', 'i.pin_kind', 'i.pin_version', 'i.state',
  'i.reconciling', 'i.current_render_id', 'i.created_at', 'i.updated_at', 'i.revision', 'v.semver',
] as const;
const URL_COLUMNS = ['u.install_id', 'u.route_key', 'u.hostname', 'u.url', 'u.error', 'u.updated_at', 'u.last_observed_at'] as const;
const RENDER_ITEM_COLUMNS = ['id', 'install_id', 'workspace_id', 'package_version_id', 'semver', 'content_hash', 'created_at', 'replaced_at'] as const;

function itemsQuery(db: Executor, workspaceId: unknown) {
  return db
    .selectFrom('installs as i')
    // Versions are immutable and go only with their workspace; left join all the same, so an
    // install never drops out of its list.
    .leftJoin('package_versions as v', 'v.id', 'i.package_version_id')
    .select(ITEM_COLUMNS)
    .where('i.workspace_id', '=', workspaceId as string);
}

// Both page shapes and the URL query are prepared: built and compiled once, not per request.
const firstInstallsPage = preparedQuery((db, p: { workspaceId: string; limit: number }) =>
  itemsQuery(db, p.workspaceId).orderBy('i.id', 'desc').limit(p.limit));
const nextInstallsPage = preparedQuery((db, p: { workspaceId: string; afterId: string; limit: number }) =>
  itemsQuery(db, p.workspaceId).where('i.id', '<', p.afterId).orderBy('i.id', 'desc').limit(p.limit));
/**
 * The URLs of a page of installs: the page's installs are exactly the workspace's installs with
 * ids from the page's last to its first (keyset order), so one fixed statement covers any page
 * size, with no `in (...)` list whose length varies. The join keeps other workspaces' installs,
 * whose ids may fall in the range, out.
 */
const urlsOfRange = preparedQuery((db, p: { workspaceId: string; oldestId: string; newestId: string }) =>
  db
    .selectFrom('install_urls as u')
    .innerJoin('installs as i', 'i.id', 'u.install_id')
    .select(URL_COLUMNS)
    .where('i.workspace_id', '=', p.workspaceId)
    .where('i.id', '>=', p.oldestId)
    .where('i.id', '<=', p.newestId)
    .orderBy('u.install_id')
    .orderBy('u.route_key'));

/** The list's filters (GET /v1/installs): each narrows the page; none is the prepared hot path. */
export type InstallFilters = {
  cluster_id?: string;
  package_id?: string;
  state?: string;
};

export const hasFilters = (f: InstallFilters): boolean => f.cluster_id !== undefined || f.package_id !== undefined || f.state !== undefined;

/**
 * One page of the workspace's installs, newest first (limit + 1 rows, see CursorCodec.page). A
 * filtered page is built per call (eight filter combinations are not worth preparing); each
 * filter has its own (workspace_id, column, id) index (migration 013), so it reads only matches.
 */
export function listInstalls(db: Executor, workspaceId: string, filters: InstallFilters, page: PageRequest): Promise<InstallItemRow[]> {
  if (hasFilters(filters)) {
    let q = itemsQuery(db, workspaceId);
    if (filters.cluster_id !== undefined) q = q.where('i.cluster_id', '=', filters.cluster_id);
    if (filters.package_id !== undefined) q = q.where('i.package_id', '=', filters.package_id);
    if (filters.state !== undefined) q = q.where('i.state', '=', filters.state);
    return keysetPage(q, 'i.id', page).execute();
  }
  return page.afterId
    ? nextInstallsPage(db, { workspaceId, afterId: page.afterId, limit: page.limit + 1 })
    : firstInstallsPage(db, { workspaceId, limit: page.limit + 1 });
}

/** The URLs of these installs (a filtered page, whose id range also holds installs it left out). */
export function listUrlsOfInstalls(db: Executor, installIds: string[]): Promise<UrlItemRow[]> {
  return db.selectFrom('install_urls as u').select(URL_COLUMNS).where('u.install_id', 'in', installIds).orderBy('u.install_id').orderBy('u.route_key').execute();
}

/** The URLs of the workspace's installs with ids in [oldestId, newestId], by install id then route key. */
export function listUrlsOfInstallRange(db: Executor, workspaceId: string, oldestId: string, newestId: string): Promise<UrlItemRow[]> {
  return urlsOfRange(db, { workspaceId, oldestId, newestId });
}

// An install read (GET /v1/installs/{id}) is a hot read too: both of its statements are prepared.
const urlsOfInstall = preparedQuery((db, p: { installId: string }) =>
  db.selectFrom('install_urls as u').select(URL_COLUMNS).where('u.install_id', '=', p.installId).orderBy('u.route_key'));
const installDetail = preparedQuery((db, p: { workspaceId: string; id: string }) =>
  itemsQuery(db, p.workspaceId).select('i.values').where('i.id', '=', p.id));

export function listUrlsOfInstall(db: Executor, installId: string): Promise<UrlItemRow[]> {
  return urlsOfInstall(db, { installId });
}

/** The install in its workspace, with its values and version's semver. */
export async function findInstallDetail(db: Executor, workspaceId: string, id: string): Promise<InstallDetailRow | undefined> {
  return (await installDetail(db, { workspaceId, id }))[0];
}

/** The install row in its workspace. */
export function findInstall(db: Executor, workspaceId: string, id: string): Promise<InstallRow | undefined> {
  return db.selectFrom('installs').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/**
 * What people call an install: its package's name (the package may be another workspace's, for an
 * install an order delivered) and its cluster's name. For the audit log, which keeps them.
 */
export function installNames(db: Executor, id: string): Promise<{ package_name: string; cluster_name: string } | undefined> {
  return db.selectFrom('installs as i')
    .innerJoin('packages as p', 'p.id', 'i.package_id')
    .innerJoin('clusters as c', 'c.id', 'i.cluster_id')
    .select(['p.name as package_name', 'c.name as cluster_name'])
    .where('i.id', '=', id)
    .executeTakeFirst();
}

/** By id alone: for workflow steps, which act on the operation's owner. */
export function findInstallById(db: Executor, id: string): Promise<InstallRow | undefined> {
  return db.selectFrom('installs').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listInstallsOfWorkspace(db: Executor, workspaceId: string): Promise<InstallRow[]> {
  return db.selectFrom('installs').selectAll().where('workspace_id', '=', workspaceId).orderBy('id').execute();
}

/** True while any install (in any state) remains on the cluster: cluster deletion waits for none. */
export async function clusterHasInstalls(db: Executor, clusterId: string): Promise<boolean> {
  const row = await db.selectFrom('installs').select('id').where('cluster_id', '=', clusterId).limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function insertInstall(db: Executor, row: InstallRow): Promise<void> {
  await db.insertInto('installs').values(row).execute();
}

/**
 * The install, locked for the rest of the caller's transaction on PostgreSQL (SQLite transactions
 * begin immediate: the writer lock already serializes them): deletions of one install, binds of
 * its preview hostnames and a bind against the install's deletion are ordered.
 */
export function lockInstall(tx: Executor, dialect: Dialect, workspaceId: string, id: string): Promise<InstallRow | undefined> {
  let q = tx.selectFrom('installs').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId);
  // NO KEY: rows that reference the install (renders, urls) can still be inserted meanwhile.
  if (dialect === 'postgres') q = q.forNoKeyUpdate();
  return q.executeTakeFirst();
}

/**
 * Claims the install for an update: one compare-and-set statement (revision null: `*`), so two
 * requests never both start an operation. Undefined when another operation holds it, the revision
 * did not match, or it is deleted.
 */
export function claimForUpdate(
  db: Executor,
  workspaceId: string,
  id: string,
  revision: number | null,
  set: Pick<InstallRow, 'package_version_id' | 'pin_kind' | 'pin_version' | 'values'>,
  now: number,
): Promise<InstallRow | undefined> {
  let q = db
    .updateTable('installs')
    .set((eb) => ({ ...set, reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('reconciling', '=', 0)
    .where('state', '!=', 'deleted');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Marks the install held by its deletion. */
export async function markReconciling(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('installs').set((eb) => ({ reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) })).where('id', '=', id).execute();
}

/**
 * A state change made by a create or update operation: never on a deleted install, and never
 * while a deletion runs (the deletion holds `reconciling` until the install is gone).
 */
export async function setStateUnlessDeleting(db: Executor, id: string, set: Partial<Pick<InstallRow, 'state' | 'reconciling' | 'current_render_id'>>, now: number): Promise<boolean> {
  const res = await db
    .updateTable('installs')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '!=', 'deleted')
    .where((eb) => eb.not(eb.exists(deletionOf(eb, id))))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Sets the state only when it differs, so a repeated step does not bump the etag again. */
export async function moveStateUnlessDeleting(db: Executor, id: string, state: string, now: number): Promise<void> {
  await db
    .updateTable('installs')
    .set((eb) => ({ state, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', 'not in', [state, 'deleted'])
    .where((eb) => eb.not(eb.exists(deletionOf(eb, id))))
    .execute();
}

/** The running deletion of the install, as a subquery. */
function deletionOf(eb: ExpressionBuilder<Database, 'installs'>, installId: string) {
  return eb
    .selectFrom('operations')
    .select('operations.id')
    .where('operations.owner_id', '=', installId)
    .where('operations.type', '=', INSTALL_DELETE)
    .where('operations.state', '=', 'RUNNING');
}

/** True while an install.delete operation runs on the install. */
export async function isBeingDeleted(db: Executor, installId: string): Promise<boolean> {
  const running = await db.selectFrom('operations').select('id')
    .where('owner_id', '=', installId).where('type', '=', INSTALL_DELETE).where('state', '=', 'RUNNING').executeTakeFirst();
  return running !== undefined;
}

/** Writes the end of a deletion (undeploy done: `deleted`), or hands the install back when it failed. */
export async function setDeletionState(db: Executor, id: string, set: Partial<Pick<InstallRow, 'state' | 'reconciling'>>, now: number): Promise<void> {
  await db.updateTable('installs').set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) })).where('id', '=', id).execute();
}

export async function deleteInstall(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('installs').where('id', '=', id).execute();
}

// Renders.

export async function insertRender(db: Executor, row: RenderRow): Promise<void> {
  await db.insertInto('install_renders').values(row).onConflict((oc) => oc.column('id').doNothing()).execute();
}

/** The render of this install in this workspace, with its manifest. */
export function findRender(db: Executor, workspaceId: string, installId: string, renderId: string): Promise<RenderRow | undefined> {
  return db
    .selectFrom('install_renders')
    .selectAll()
    .where('id', '=', renderId)
    .where('install_id', '=', installId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
}

/** A render's manifest (JSON text: routes, resources) by id alone, for the preview router; renders never change. */
export async function findRenderManifest(db: Executor, renderId: string): Promise<string | undefined> {
  const row = await db.selectFrom('install_renders').select('manifest').where('id', '=', renderId).executeTakeFirst();
  return row?.manifest;
}

/** A page of the install's renders, newest first, without their manifests. */
export function listRenders(db: Executor, workspaceId: string, installId: string, page: PageRequest): Promise<RenderItemRow[]> {
  const q = db.selectFrom('install_renders').select(RENDER_ITEM_COLUMNS).where('install_id', '=', installId).where('workspace_id', '=', workspaceId);
  return keysetPage(q, 'id', page).execute();
}

/** The render stops being current (another one replaced it). */
export async function markRenderReplaced(db: Executor, renderId: string, now: number): Promise<void> {
  await db.updateTable('install_renders').set({ replaced_at: now }).where('id', '=', renderId).where('replaced_at', 'is', null).execute();
}

// URLs.

/** Makes the install's URLs exactly `urls`: upserts each route's, deletes those of routes gone. */
export async function replaceUrls(db: Executor, installId: string, urls: Omit<InstallUrlRow, 'install_id'>[]): Promise<void> {
  const keys = urls.map((u) => u.route_key);
  await db
    .deleteFrom('install_urls')
    .where('install_id', '=', installId)
    .$if(keys.length > 0, (q) => q.where('route_key', 'not in', keys))
    .execute();
  if (!urls.length) return;
  await db
    .insertInto('install_urls')
    .values(urls.map((u) => ({ ...u, install_id: installId })))
    .onConflict((oc) =>
      oc.columns(['install_id', 'route_key']).doUpdateSet((eb) => ({
        hostname: eb.ref('excluded.hostname'),
        url: eb.ref('excluded.url'),
        protocol: eb.ref('excluded.protocol'),
        error: eb.ref('excluded.error'),
        updated_at: eb.ref('excluded.updated_at'),
        last_observed_at: eb.ref('excluded.last_observed_at'),
      })))
    .execute();
}

/** Reads the cluster row for an install's creation, ordered against the cluster's deletion. */
export function lockClusterShared(db: Executor, dialect: Dialect, workspaceId: string, clusterId: string) {
  let q = db.selectFrom('clusters').select(['id', 'name', 'state', 'provider']).where('id', '=', clusterId).where('workspace_id', '=', workspaceId);
  // PostgreSQL: a share lock makes a concurrent DELETE /v1/clusters/{id} (which updates the row
  // first, then counts installs) wait for this transaction. SQLite serializes writers already.
  if (dialect === 'postgres') q = q.forShare();
  return q.executeTakeFirst();
}

/** installs/installs: the installs of the workspaces in question, in any state (installs_ws_id_idx counts them). */
export const installUsage: UsageCounter = (db, inWorkspaces) =>
  db.selectFrom('installs').select((eb) => eb.fn.countAll().as('n')).where(inWorkspaces('installs.workspace_id')).$asScalar();
