// SQL of preview hostnames, and the few reads of installs and renders a bind needs. Every change
// of a binding or state bumps `revision` (the etag); last_seen_at, written by the router, does not.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { PreviewHostnamesTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type HostnameRow = PreviewHostnamesTable;

export function installExists(db: Executor, workspaceId: string, id: string): Promise<{ id: string } | undefined> {
  return db.selectFrom('installs').select('id').where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The install's state, whatever its workspace (a bind's workflow checks its install is not deleted). */
export function findInstallState(db: Executor, id: string): Promise<{ state: string } | undefined> {
  return db.selectFrom('installs').select('state').where('id', '=', id).executeTakeFirst();
}

export function findRender(db: Executor, installId: string, renderId: string): Promise<{ id: string; replaced_at: number | null } | undefined> {
  return db
    .selectFrom('install_renders')
    .select(['id', 'replaced_at'])
    .where('id', '=', renderId)
    .where('install_id', '=', installId)
    .executeTakeFirst();
}

export function findHostname(db: Executor, workspaceId: string, installId: string, id: string): Promise<HostnameRow | undefined> {
  return db
    .selectFrom('preview_hostnames')
    .selectAll()
    .where('id', '=', id)
    .where('install_id', '=', installId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
}

/** The install's hostnames the router serves (active), ordered by hostname: what its route objects on a cluster hold. */
export function listServedHostnames(db: Executor, installId: string): Promise<{ hostname: string; protocol: string }[]> {
  return db
    .selectFrom('preview_hostnames')
    .select(['hostname', 'protocol'])
    .where('install_id', '=', installId)
    .where('state', '=', 'active')
    .orderBy('hostname')
    .execute();
}

export function findHostnameById(db: Executor, id: string): Promise<HostnameRow | undefined> {
  return db.selectFrom('preview_hostnames').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The floating hostname of a track, or the pinned hostname of (track, render). */
export function findBinding(
  db: Executor,
  installId: string,
  binding: { kind: 'floating'; track: string } | { kind: 'pinned'; track: string; renderId: string },
): Promise<HostnameRow | undefined> {
  let q = db
    .selectFrom('preview_hostnames')
    .selectAll()
    .where('install_id', '=', installId)
    .where('binding_kind', '=', binding.kind)
    .where('track', '=', binding.track);
  if (binding.kind === 'pinned') q = q.where('render_id', '=', binding.renderId);
  return q.executeTakeFirst();
}

/**
 * Inserts unless a unique value is taken (a hostname can collide with another binding's only if
 * a track was chosen to look like a pinned label); false then. `on conflict do nothing`, because
 * on PostgreSQL a failed statement aborts the transaction.
 */
export async function insertHostname(tx: Executor, row: HostnameRow): Promise<boolean> {
  const res = await tx.insertInto('preview_hostnames').values(row).onConflict((oc) => oc.doNothing()).executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** Records the latest bind request; only its operation may move the binding. */
export function setPendingBind(tx: Executor, id: string, operationId: string, renderId: string, now: number): Promise<HostnameRow | undefined> {
  return tx
    .updateTable('preview_hostnames')
    .set((eb) => ({ pending_operation_id: operationId, pending_render_id: renderId, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '!=', 'releasing')
    .returningAll()
    .executeTakeFirst();
}

/**
 * The bind operation's effect: moves the binding and makes the hostname active, if this operation
 * is still the latest request and the hostname is not releasing (an evicted pinned hostname bound
 * again is served again: the request checked that its render is within the retention). False otherwise.
 */
export async function applyBind(
  tx: Executor,
  id: string,
  operationId: string,
  binding: { render_id: string; protocol: string; routing_mode: string },
  now: number,
): Promise<boolean> {
  const res = await tx
    .updateTable('preview_hostnames')
    .set((eb) => ({
      ...binding, state: 'active', pending_operation_id: null, pending_render_id: null, updated_at: now, revision: eb('revision', '+', 1),
    }))
    .where('id', '=', id)
    .where('pending_operation_id', '=', operationId)
    .where('state', '!=', 'releasing')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * A bind operation superseded by a later request, on a hostname not served yet: it may serve this
 * operation's render until the latest request takes effect (which stays pending). False when the
 * hostname is already active, evicted, releasing or gone.
 */
export async function activateProvisioning(
  tx: Executor,
  id: string,
  binding: { render_id: string; protocol: string; routing_mode: string },
  now: number,
): Promise<boolean> {
  const res = await tx
    .updateTable('preview_hostnames')
    .set((eb) => ({ ...binding, state: 'active', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('state', '=', 'provisioning')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** True when another bind operation for the hostname still runs (it may yet make it active). */
export async function otherBindRunning(tx: Executor, installId: string, hostnameId: string, exceptOperationId: string, types: string[]): Promise<boolean> {
  // The install's running binds are few; their input names the hostname.
  const rows = await tx
    .selectFrom('operations')
    .select('input')
    .where('owner_id', '=', installId)
    .where('state', '=', 'RUNNING')
    .where('type', 'in', types)
    .where('id', '!=', exceptOperationId)
    .execute();
  return rows.some((r) => (JSON.parse(r.input) as { preview_hostname_id?: string }).preview_hostname_id === hostnameId);
}

/**
 * The latest bind request failed or was cancelled: a hostname never served goes away (unless an
 * earlier bind still runs and will serve it: `keepProvisioning`); a served one keeps its binding
 * and forgets the request.
 */
export async function abandonBind(tx: Executor, id: string, operationId: string, now: number, keepProvisioning: boolean): Promise<void> {
  if (!keepProvisioning) {
    await tx
      .deleteFrom('preview_hostnames')
      .where('id', '=', id)
      .where('pending_operation_id', '=', operationId)
      .where('state', '=', 'provisioning')
      .execute();
  }
  await tx
    .updateTable('preview_hostnames')
    .set((eb) => ({ pending_operation_id: null, pending_render_id: null, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('pending_operation_id', '=', operationId)
    .where('state', '!=', 'releasing')
    .execute();
}

/** Compare-and-set (revision null: `*`): the hostname becomes releasing under `operationId`. */
export function markReleasingIfRevision(tx: Executor, id: string, revision: number | null, operationId: string, now: number) {
  let q = tx
    .updateTable('preview_hostnames')
    .set((eb) => ({
      state: 'releasing', pending_operation_id: operationId, pending_render_id: null, updated_at: now, revision: eb('revision', '+', 1),
    }))
    .where('id', '=', id)
    .where('state', '!=', 'releasing');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

export async function deleteReleased(tx: Executor, id: string): Promise<void> {
  await tx.deleteFrom('preview_hostnames').where('id', '=', id).where('state', '=', 'releasing').execute();
}

export interface HostnameFilters {
  binding_kind?: string;
  track?: string;
  state?: string;
}

export function listHostnames(db: Executor, workspaceId: string, installId: string, filters: HostnameFilters, page: PageRequest): Promise<HostnameRow[]> {
  let q = db.selectFrom('preview_hostnames').selectAll().where('install_id', '=', installId).where('workspace_id', '=', workspaceId);
  if (filters.binding_kind !== undefined) q = q.where('binding_kind', '=', filters.binding_kind);
  if (filters.track !== undefined) q = q.where('track', '=', filters.track);
  if (filters.state !== undefined) q = q.where('state', '=', filters.state);
  return keysetPage(q, 'id', page).execute();
}

/** What the router needs to answer for a hostname. */
export interface ServedTarget {
  install_id: string;
  render_id: string;
  semver: string;
  package_version_id: string;
}

/** An active preview hostname of an install that is not deleted, with the render it serves. */
export function findServedPreview(db: Executor, hostname: string) {
  return db
    .selectFrom('preview_hostnames as h')
    .innerJoin('installs as i', 'i.id', 'h.install_id')
    .innerJoin('install_renders as r', 'r.id', 'h.render_id')
    .select(['h.id', 'h.install_id', 'h.render_id', 'h.binding_kind', 'h.track', 'h.last_seen_at', 'r.semver', 'r.package_version_id', 'i.cluster_id', 'h.protocol'])
    .where('h.hostname', '=', hostname)
    .where('h.state', '=', 'active')
    .where('i.state', '!=', 'deleted')
    .executeTakeFirst();
}

/** An install URL of an install that is not deleted, with the install's current render. */
export function findServedInstallUrl(db: Executor, hostname: string) {
  return db
    .selectFrom('install_urls as u')
    .innerJoin('installs as i', 'i.id', 'u.install_id')
    .innerJoin('install_renders as r', 'r.id', 'i.current_render_id')
    .select(['u.install_id', 'u.route_key', 'u.protocol', 'r.id as render_id', 'r.semver', 'r.package_version_id', 'i.cluster_id'])
    .where('u.hostname', '=', hostname)
    .where('i.state', '!=', 'deleted')
    .executeTakeFirst();
}

/** last_seen_at, at most once a minute per hostname (the condition makes concurrent writes one). */
export async function touchLastSeen(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('preview_hostnames').set({ last_seen_at: now }).where('id', '=', id).where('last_seen_at', '<=', now - 60).execute();
}

/**
 * Evicts the active pinned hostnames whose render was replaced at or before `replacedBefore`
 * (Unix seconds), for one install or (installId null) every install; returns how many.
 */
export async function evictAgedPinned(db: Executor, installId: string | null, replacedBefore: number, now: number): Promise<number> {
  const res = await db
    .updateTable('preview_hostnames')
    .set((eb) => ({ state: 'evicted', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('binding_kind', '=', 'pinned')
    .where('state', '=', 'active')
    .$if(installId !== null, (q) => q.where('install_id', '=', installId!))
    .where('render_id', 'in', (eb) =>
      eb
        .selectFrom('install_renders')
        .select('install_renders.id')
        .where('install_renders.replaced_at', 'is not', null)
        .where('install_renders.replaced_at', '<=', replacedBefore)
        .$if(installId !== null, (q) => q.where('install_renders.install_id', '=', installId!)),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Every hostname of the install stops being served (`releasing`); the rows go with the install. */
export async function releaseInstallHostnames(db: Executor, installId: string, now: number): Promise<void> {
  await db
    .updateTable('preview_hostnames')
    .set((eb) => ({ state: 'releasing', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('install_id', '=', installId)
    .where('state', '!=', 'releasing')
    .execute();
}
