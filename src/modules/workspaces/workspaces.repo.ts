import type { Executor } from '../../db/database.js';
import type { WorkspaceMembersTable, WorkspacesTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type WorkspaceRow = WorkspacesTable;
export type MemberRow = WorkspaceMembersTable & { email: string };

export function findWorkspace(db: Executor, id: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertWorkspace(db: Executor, row: WorkspaceRow): Promise<void> {
  await db.insertInto('workspaces').values(row).execute();
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
  let q = db
    .selectFrom('workspaces')
    .innerJoin('workspace_members as m', 'm.workspace_id', 'workspaces.id')
    .selectAll('workspaces')
    .select('m.role')
    .where('m.user_id', '=', userId);
  if (page.afterId) q = q.where('workspaces.id', '<', page.afterId);
  return q.orderBy('workspaces.id', 'desc').limit(page.limit + 1).execute();
}

/** Compare-and-set write: returns the new row, or undefined when the revision did not match. */
export function updateWorkspaceIfRevision(
  db: Executor,
  id: string,
  revision: number | null,
  set: Partial<Pick<WorkspaceRow, 'name' | 'slug'>>,
  now: number,
): Promise<WorkspaceRow | undefined> {
  let q = db
    .updateTable('workspaces')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

export function findMemberRole(db: Executor, workspaceId: string, userId: string) {
  return db
    .selectFrom('workspace_members')
    .select('role')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

const memberColumns = ['m.id', 'm.workspace_id', 'm.user_id', 'm.role', 'm.joined_at', 'm.updated_at', 'u.email'] as const;

export function listMembers(db: Executor, workspaceId: string, page: PageRequest): Promise<MemberRow[]> {
  let q = db
    .selectFrom('workspace_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(memberColumns)
    .where('m.workspace_id', '=', workspaceId);
  if (page.afterId) q = q.where('m.id', '<', page.afterId);
  return q.orderBy('m.id', 'desc').limit(page.limit + 1).execute();
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
