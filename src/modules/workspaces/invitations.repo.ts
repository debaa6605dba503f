// The workspace_invitations table: every query of invitations (invitations.service.ts).
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { WorkspaceInvitationsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type InvitationRow = WorkspaceInvitationsTable;

export async function insertInvitation(tx: Executor, row: InvitationRow): Promise<void> {
  await tx.insertInto('workspace_invitations').values(row).execute();
}

/** Revokes the pending invitation of this e-mail to this workspace, if any (inviting again replaces it). */
export async function revokePendingFor(tx: Executor, workspaceId: string, email: string, now: number): Promise<void> {
  await tx.updateTable('workspace_invitations').set({ state: 'revoked', resolved_at: now })
    .where('workspace_id', '=', workspaceId).where('email', '=', email).where('state', '=', 'pending').execute();
}

export function countPending(tx: Executor, workspaceId: string, now: number): Promise<{ n: number | string | bigint }> {
  return tx.selectFrom('workspace_invitations').select((eb) => eb.fn.countAll().as('n'))
    .where('workspace_id', '=', workspaceId).where('state', '=', 'pending').where('expires_at', '>', now)
    .executeTakeFirstOrThrow() as Promise<{ n: number | string | bigint }>;
}

export function listInvitations(db: Executor, workspaceId: string, page: PageRequest): Promise<InvitationRow[]> {
  return keysetPage(db.selectFrom('workspace_invitations').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

export function findInvitation(db: Executor, workspaceId: string, id: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('workspace_invitations').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
}

export function findInvitationByHash(db: Executor, tokenHash: string): Promise<(InvitationRow & { workspace_name: string; workspace_state: string }) | undefined> {
  return db.selectFrom('workspace_invitations as i').innerJoin('workspaces as w', 'w.id', 'i.workspace_id')
    .selectAll('i').select(['w.name as workspace_name', 'w.state as workspace_state'])
    .where('i.token_hash', '=', tokenHash).executeTakeFirst();
}

/** Moves a pending invitation to `state`; false when it was no longer pending (accepted or revoked meanwhile). */
export async function resolveInvitation(tx: Executor, id: string, state: 'accepted' | 'revoked', now: number, acceptedBy: string | null): Promise<boolean> {
  const res = await tx.updateTable('workspace_invitations').set({ state, resolved_at: now, accepted_by: acceptedBy })
    .where('id', '=', id).where('state', '=', 'pending').executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
