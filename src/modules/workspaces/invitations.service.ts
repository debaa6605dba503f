// Invitations (issue 34, people): an owner or admin who adds a member by an e-mail that has no
// account makes an invitation instead (workspaces.service.ts, addMember). Its link, shown once to
// the inviter, carries a one-time token (32 random characters, stored as a SHA-256 hash) and works
// for 7 days. Accepting it makes the account with the password given (whatever SVC_SIGNUP says:
// the invitation is the operator-independent way in), or, when an account with that e-mail exists
// by then, takes that account's password (checked as a sign-in, under its throttle); then the
// account joins with the invited role. Inviting the same e-mail again revokes the older link. An
// owner or admin lists and revokes a workspace's invitations; an invitation whose inviter is no
// longer an owner or admin stops working; every step is in the audit log.
import type { Db, Executor } from '../../db/database.js';
import { requireRole, roleAtLeast, type Role, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { randomString, sha256Hex } from '../../platform/crypto.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import { queueMail } from '../mail/mail.service.js';
import { findUserByEmail, findUserById, type UserService } from '../users/users.service.js';
import * as repo from './invitations.repo.js';
import { findMember, findWorkspace, insertMember } from './workspaces.repo.js';
import type { InvitationT } from './workspaces.schemas.js';

export const INVITATION_TTL_SECONDS = 7 * 24 * 60 * 60;
/** pending invitations one workspace may have at once: a bound on what one admin can make */
export const PENDING_INVITATIONS_MAX = 100;

export interface InvitationServiceDeps {
  db: Db;
  cursors: CursorCodec;
  publicUrl: string;
  users: Pick<UserService, 'createUser'>;
  /** a sign-in's password check (sessions.service.ts): the user id, or 401 / 429 */
  checkPassword(email: string, password: string, clientAddress: string): Promise<string>;
}

function stateOf(row: repo.InvitationRow, now: number): InvitationT['state'] {
  if (row.state === 'pending' && row.expires_at <= now) return 'expired';
  return row.state as InvitationT['state'];
}

export function toInvitation(row: repo.InvitationRow, now = clock.now()): InvitationT {
  return {
    id: row.id, workspace_id: row.workspace_id, email: row.email, role: row.role as Role, state: stateOf(row, now),
    invited_by: row.invited_by, created_at: row.created_at, expires_at: row.expires_at,
  };
}

/** The one answer for a link that does not work (unknown, used, revoked, expired, its workspace going): nothing is told apart. */
const linkGone = () => new ApiError('NOT_FOUND', 'this invitation link does not work: it was used, revoked or has expired; ask for a new one', { reason: 'NOT_FOUND' });

export function createInvitationService(deps: InvitationServiceDeps) {
  const { db, cursors } = deps;

  /** A new invitation of `email` (lowercased, without an account) in the caller's transaction; its accept_url is in this answer only. */
  async function invite(tx: Executor, scope: WorkspaceScope, email: string, role: Role): Promise<InvitationT> {
    const now = clock.now();
    const pending = Number((await repo.countPending(tx, scope.workspaceId, now)).n);
    if (pending >= PENDING_INVITATIONS_MAX) {
      throw new ApiError('FAILED_PRECONDITION', `the workspace has ${pending} pending invitations, the most it may: revoke some first`, { reason: 'TOO_MANY_INVITATIONS' });
    }
    const token = randomString(32);
    const row: repo.InvitationRow = {
      id: newId('invitation'), workspace_id: scope.workspaceId, email, role, token_hash: sha256Hex(token), state: 'pending',
      invited_by: scope.actorId, created_at: now, expires_at: now + INVITATION_TTL_SECONDS, resolved_at: null, accepted_by: null,
    };
    await repo.revokePendingFor(tx, scope.workspaceId, email, now);
    await repo.insertInvitation(tx, row);
    await recordAuditEvent(tx, scope, { action: 'workspace.invitation.create', resourceType: 'workspace_invitation', resourceId: row.id, metadata: { email, role } });
    const acceptUrl = `${deps.publicUrl}/invite#${token}`;
    // The link by e-mail too (through SVC_MAIL's driver), in this transaction: it leaves only if the invitation exists.
    const workspace = await findWorkspace(tx, scope.workspaceId);
    const inviter = await findUserById(tx, scope.actorId);
    const who = inviter ? (inviter.name ? `${inviter.name} (${inviter.email})` : inviter.email) : 'An owner or admin';
    await queueMail(tx, {
      to: email, userId: null, kind: 'invitation', subject: `Join ${workspace?.name ?? 'a workspace'} on svc`,
      body: [
        `${who} invites you to join the workspace ${workspace?.name ?? ''} on svc as ${role === 'admin' ? 'an' : 'a'} ${role}.`,
        '',
        'Accept here (the link works once, for 7 days); you make your account on the way:',
        acceptUrl,
        '',
        'Not expecting this? Ignore this message: nothing happens without the link.',
      ].join('\n'),
    });
    return { ...toInvitation(row, now), accept_url: acceptUrl };
  }

  async function loadInvitation(workspaceId: string, id: string): Promise<InvitationT | null> {
    const row = await repo.findInvitation(db, workspaceId, id);
    return row ? toInvitation(row) : null;
  }

  async function listInvitations(scope: WorkspaceScope, query: PageQueryT): Promise<Page<InvitationT>> {
    requireRole(scope, 'admin');
    const page = cursors.request(query, scope.workspaceId);
    const rows = await repo.listInvitations(db, scope.workspaceId, page);
    const now = clock.now();
    return cursors.page(rows, page, scope.workspaceId, {}, (r) => toInvitation(r, now));
  }

  async function revokeInvitation(scope: WorkspaceScope, id: string): Promise<void> {
    requireRole(scope, 'admin');
    await db.transaction().execute(async (tx) => {
      const row = isId('invitation', id) ? await repo.findInvitation(tx, scope.workspaceId, id) : undefined;
      if (!row) throw notFound('invitation');
      if (!(await repo.resolveInvitation(tx, id, 'revoked', clock.now(), null))) {
        throw new ApiError('FAILED_PRECONDITION', `the invitation is ${row.state} already: only a pending one can be revoked`, { reason: 'INVITATION_NOT_PENDING' });
      }
      await recordAuditEvent(tx, scope, { action: 'workspace.invitation.revoke', resourceType: 'workspace_invitation', resourceId: id, metadata: { email: row.email, role: row.role } });
    });
  }

  /**
   * The invitation behind a link that works now, with its workspace's name; linkGone otherwise. The
   * right to grant its role is decided now, not when it was made: the one who invited must still be
   * an owner or admin of the workspace (an owner, for the owner role).
   */
  async function pendingByToken(executor: Executor, token: string) {
    const row = await repo.findInvitationByHash(executor, sha256Hex(token));
    if (!row || stateOf(row, clock.now()) !== 'pending' || row.workspace_state !== 'active') throw linkGone();
    const inviter = (await findMember(executor, row.workspace_id, row.invited_by))?.role as Role | undefined;
    if (!inviter || !roleAtLeast(inviter, 'admin') || (row.role === 'owner' && inviter !== 'owner')) throw linkGone();
    return row;
  }

  /** What the link shows: needs no credential, tells nothing but the invitation's own facts. */
  async function preview(token: string) {
    const row = await pendingByToken(db, token);
    const account = await findUserByEmail(db, row.email);
    return { workspace_name: row.workspace_name, email: row.email, role: row.role as Role, expires_at: row.expires_at, account_exists: account !== undefined };
  }

  /**
   * Accepts the invitation: with an account of its e-mail, that account's password (checked as a
   * sign-in is); without one, the account is made with the password (and name) given. Then, in one
   * transaction, the invitation moves out of pending (once: a second accept finds it used) and the
   * account joins with the invited role (one that is a member already keeps its role).
   */
  async function accept(token: string, input: { password: string; name?: string | null }, clientAddress: string) {
    const row = await pendingByToken(db, token);
    const existing = await findUserByEmail(db, row.email);
    const userId = existing
      ? await deps.checkPassword(row.email, input.password, clientAddress)
      : (await deps.users.createUser({ email: row.email, password: input.password, name: input.name ?? null })).id;
    const role = row.role as Role;
    await db.transaction().execute(async (tx) => {
      const now = clock.now();
      if (!(await repo.resolveInvitation(tx, row.id, 'accepted', now, userId))) throw linkGone();
      if (!(await findMember(tx, row.workspace_id, userId))) {
        await insertMember(tx, { id: newId('member'), workspace_id: row.workspace_id, user_id: userId, role, joined_at: now, updated_at: now });
      }
      await recordAuditEvent(tx, { workspaceId: row.workspace_id, actor: { type: 'user', id: userId }, requestId: null }, {
        action: 'workspace.invitation.accept', resourceType: 'workspace_invitation', resourceId: row.id, metadata: { email: row.email, role, user_id: userId },
      });
    });
    return { user_id: userId, workspace_id: row.workspace_id, role, account_created: !existing };
  }

  return { invite, loadInvitation, listInvitations, revokeInvitation, preview, accept };
}

export type InvitationService = ReturnType<typeof createInvitationService>;
