// Stored code acts with the rights its last writer has now (issue 20). Whoever last changed what a
// run does (code, declared inputs) is recorded with the write; every run reads that writer's
// rights again when it starts: a user's membership role, an API token's or OAuth client's role if
// the credential still exists (and has not expired). A demoted writer gives the lower role; a
// writer removed from the workspace, or a revoked or expired credential, gives no rights at all.
import type { FastifyRequest } from 'fastify';
import type { Executor } from '../../db/database.js';
import { roleAtLeast, type Role, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { isId } from '../../platform/ids.js';
import { findMemberRole } from '../workspaces/workspaces.service.js';
import * as repo from './snippets.repo.js';
import type { SnippetRow } from './snippets.repo.js';

/** The columns a write that changes behaviour sets (migration 008). */
export type WriterColumns = Pick<SnippetRow, 'writer_id' | 'writer_user_id' | 'writer_role_cap'>;

/** Who makes a write: the acting credential, and whether it is a snippet run's (platform.request). */
export interface Writer {
  scope: WorkspaceScope;
  viaRun: boolean;
}

export const lowerRole = (a: Role, b: Role): Role => (roleAtLeast(a, b) ? b : a);

export function writerOfRequest(request: FastifyRequest, scope: WorkspaceScope): Writer {
  const principal = request.principal;
  return { scope, viaRun: principal?.kind === 'workspace' && principal.via === 'snippet_run' };
}

/** The writer columns of a write by `writer`: the user behind a token or client is looked up for the record. */
export async function writerColumns(db: Executor, writer: Writer): Promise<WriterColumns> {
  const { scope } = writer;
  const id = scope.actorId;
  let userId: string | null = isId('user', id) ? id : null;
  if (isId('apiToken', id)) {
    userId = (await repo.apiTokenCreator(db, id))?.created_by ?? null;
  } else if (isId('oauthClient', id)) {
    userId = (await repo.oauthClientCreator(db, id))?.created_by ?? null;
  }
  // A snippet run acts as its runner, but with the lower of the runner's and its own writer's role:
  // what it writes never gets more than that role.
  return { writer_id: id, writer_user_id: userId, writer_role_cap: writer.viaRun ? scope.role : null };
}

export type WriterRights = { ok: true; role: Role } | { ok: false; message: string; details: { writer_id: string; cause: string } };

function refused(writerId: string, cause: string, what: string): WriterRights {
  return {
    ok: false,
    message: `the snippet's last writer ${writerId} ${what}, so the run has no rights; someone with the rights it needs must save its code or inputs again`,
    details: { writer_id: writerId, cause },
  };
}

/**
 * The rights the snippet's last writer has now in its workspace (read in the run's admission
 * transaction); also an agent turn's creator's at each tool call (its row has no writer_id).
 */
export async function writerRights(tx: Executor, row: Pick<SnippetRow, 'writer_id' | 'created_by' | 'workspace_id' | 'writer_role_cap'>): Promise<WriterRights> {
  const id = row.writer_id ?? row.created_by;
  const ws = row.workspace_id;
  let role: Role;
  if (isId('user', id)) {
    const member = await findMemberRole(tx, ws, id);
    if (!member) return refused(id, 'removed', 'is no longer a member of the workspace');
    role = member.role as Role;
  } else if (isId('apiToken', id)) {
    const token = await repo.apiTokenRole(tx, ws, id);
    if (!token) return refused(id, 'revoked', 'is an API token that was revoked');
    if (token.expires_at !== null && token.expires_at <= clock.now()) return refused(id, 'expired', 'is an API token that has expired');
    role = token.role as Role;
  } else if (isId('oauthClient', id)) {
    const client = await repo.oauthClientRole(tx, ws, id);
    if (!client) return refused(id, 'revoked', 'is an OAuth client that was deleted');
    role = client.role as Role;
  } else {
    return refused(id, 'unknown', 'is not a credential of the workspace');
  }
  return { ok: true, role: row.writer_role_cap ? lowerRole(role, row.writer_role_cap as Role) : role };
}
