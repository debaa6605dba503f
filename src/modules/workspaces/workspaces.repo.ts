import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { WorkspaceMembersTable, WorkspacesTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type WorkspaceRow = WorkspacesTable;
export type MemberRow = Pick<WorkspaceMembersTable, 'id' | 'user_id' | 'role' | 'joined_at'> & { email: string };

export function findWorkspace(db: Executor, id: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findWorkspaceBySlug(db: Executor, slug: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/**
 * Inserts unless the slug is taken; false when it is. `on conflict do nothing` instead of catching
 * the violation: on PostgreSQL a failed statement aborts the whole (possibly the caller's) transaction.
 */
export async function insertWorkspaceIfSlugFree(db: Executor, row: WorkspaceRow): Promise<boolean> {
  const res = await db.insertInto('workspaces').values(row).onConflict((oc) => oc.column('slug').doNothing()).executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** The caller's workspaces with their role, newest first, one page. */
export function listWorkspacesOfUser(db: Executor, userId: string, page: PageRequest) {
  const query = db
    .selectFrom('workspaces')
    .innerJoin('workspace_members as m', 'm.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .select('m.role')
    .where('m.user_id', '=', userId);
  return keysetPage(query, 'workspaces.id', page).execute();
}

/** Compare-and-set write: returns the new row, or undefined when the revision did not match. */
export function updateWorkspaceIfRevision(
  db: Executor,
  id: string,
  revision: number | null,
  set: Partial<Pick<WorkspaceRow, 'name' | 'slug' | 'require_two_factor'>>,
  now: number,
): Promise<WorkspaceRow | undefined> {
  let q = db
    .updateTable('workspaces')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

// Runs on every request a user credential makes to a workspace route: prepared once. The
// workspace's two-factor requirement comes with the role (one indexed join, no second query).
const memberRole = preparedQuery((db, p: { workspaceId: string; userId: string }) =>
  db.selectFrom('workspace_members as m').innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['m.role', 'w.require_two_factor']).where('m.workspace_id', '=', p.workspaceId).where('m.user_id', '=', p.userId));

export async function findMemberRole(db: Executor, workspaceId: string, userId: string): Promise<{ role: string; require_two_factor: number } | undefined> {
  return (await memberRole(db, { workspaceId, userId }))[0];
}

/** The ids of every workspace the user is a member of. */
export async function workspaceIdsOfUser(db: Executor, userId: string): Promise<string[]> {
  return (await db.selectFrom('workspace_members').select('workspace_id').where('user_id', '=', userId).execute()).map((r) => r.workspace_id);
}

const memberColumns = ['m.id', 'm.user_id', 'm.role', 'm.joined_at', 'u.email'] as const;

function membersQuery(db: Executor, workspaceId: unknown, limit: unknown) {
  return db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(memberColumns)
    .where('m.workspace_id', '=', workspaceId as string)
    .orderBy('m.id', 'desc')
    .limit(limit as number);
}

// The members page is a hot read (it is the kernel's benchmark), so both shapes are prepared.
const firstMembersPage = preparedQuery((db, p: { workspaceId: string; limit: number }) => membersQuery(db, p.workspaceId, p.limit));
const nextMembersPage = preparedQuery((db, p: { workspaceId: string; afterId: string; limit: number }) =>
  membersQuery(db, p.workspaceId, p.limit).where('m.id', '<', p.afterId));

export function listMembers(db: Executor, workspaceId: string, page: PageRequest): Promise<MemberRow[]> {
  return page.afterId
    ? nextMembersPage(db, { workspaceId, afterId: page.afterId, limit: page.limit + 1 })
    : firstMembersPage(db, { workspaceId, limit: page.limit + 1 });
}

export function findMember(db: Executor, workspaceId: string, userId: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(memberColumns)
    .where('m.workspace_id', '=', workspaceId)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
}

export function findMemberById(db: Executor, workspaceId: string, memberId: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(memberColumns)
    .where('m.workspace_id', '=', workspaceId)
    .where('m.id', '=', memberId)
    .executeTakeFirst();
}

export async function insertMember(db: Executor, row: WorkspaceMembersTable): Promise<void> {
  await db.insertInto('workspace_members').values(row).execute();
}

/** True when this user requested some operation in the workspace (it may be gone since). */
export async function requestedOperationIn(db: Executor, workspaceId: string, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('operations')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('requested_by_user', '=', userId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Takes the workspace's write lock (a row lock on PostgreSQL; SQLite's transaction already holds
 * the database) and returns its lifecycle state and plan tier, in one statement; undefined when it is gone.
 */
// Prepared: every create that checks a quota takes it (twice with operations/running), and
// building the statement cost more than running it (bench:account).
const lockWorkspaceQuery = preparedQuery((db, p: { id: string }) =>
  db.updateTable('workspaces').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', p.id).returning(['state', 'plan_tier']));

export async function lockWorkspace(tx: Executor, id: string): Promise<{ state: string; plan_tier: string } | undefined> {
  const [row] = await lockWorkspaceQuery(tx, { id });
  return row;
}

/**
 * Switches an active workspace to `deleting` when its revision matches (null: any), in one
 * statement (the etag check and the switch together); false when nothing was switched.
 */
export async function markDeleting(tx: Executor, id: string, revision: number | null, now: number): Promise<boolean> {
  const switched = await tx
    .updateTable('workspaces')
    .set((eb) => ({ state: 'deleting', revision: eb('revision', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .where('state', '=', 'active')
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .executeTakeFirst();
  return Number(switched.numUpdatedRows) !== 0;
}

export function findWorkspaceState(db: Executor, id: string): Promise<{ state: string; revision: number } | undefined> {
  return db.selectFrom('workspaces').select(['state', 'revision']).where('id', '=', id).executeTakeFirst();
}

/** Revokes every API token of the workspace (its deletion). */
export async function deleteApiTokensOf(tx: Executor, workspaceId: string): Promise<void> {
  await tx.deleteFrom('api_tokens').where('workspace_id', '=', workspaceId).execute();
}

/** Deletes every OAuth client of the workspace (its deletion). */
export async function deleteOAuthClientsOf(tx: Executor, workspaceId: string): Promise<void> {
  await tx.deleteFrom('oauth_clients').where('workspace_id', '=', workspaceId).execute();
}

/** Deletes the workspace; members, and whatever else it still owns, go by foreign-key cascade. */
export async function deleteWorkspace(tx: Executor, id: string): Promise<void> {
  await tx.deleteFrom('workspaces').where('id', '=', id).execute();
}

export async function countOwners(db: Executor, workspaceId: string): Promise<number> {
  const r = await db
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function updateMemberRole(tx: Executor, memberId: string, role: string, now: number): Promise<void> {
  await tx.updateTable('workspace_members').set({ role, updated_at: now }).where('id', '=', memberId).execute();
}

export async function deleteMember(tx: Executor, memberId: string): Promise<void> {
  await tx.deleteFrom('workspace_members').where('id', '=', memberId).execute();
}

/** The workspaces each of these users owns (one query for a page of users). */
export function workspacesOwnedBy(db: Executor, userIds: string[]): Promise<{ user_id: string; id: string; name: string; slug: string }[]> {
  if (userIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('workspace_members').innerJoin('workspaces', 'workspaces.id', 'workspace_members.workspace_id')
    .select(['workspace_members.user_id', 'workspaces.id', 'workspaces.name', 'workspaces.slug'])
    .where('workspace_members.user_id', 'in', userIds).where('workspace_members.role', '=', 'owner')
    .orderBy('workspaces.id')
    .execute();
}
