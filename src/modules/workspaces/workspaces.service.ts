// Workspaces and their members. The creator becomes the owner in the same transaction.
import { inTransaction, isUniqueViolation, type Db, type Executor } from '../../db/database.js';
import { roleAtLeast, type MembershipLookup, type Role, type WorkspaceScope } from '../../platform/auth.js';
import { clock, isoFromSeconds } from '../../platform/clock.js';
import { randomString } from '../../platform/crypto.js';
import { ApiError, invalidArgument, notFound, permissionDenied } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { DEFAULT_TIER } from '../plans/plans.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { EMAIL, findUserByEmail, findUserById, normalizeEmail } from '../users/users.service.js';
import * as repo from './workspaces.repo.js';
import type { InvitationT, MemberT, WorkspaceT } from './workspaces.schemas.js';
import type { InvitationService } from './invitations.service.js';
import { recordAuditEvent } from '../audit/audit.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findMemberRole, lockWorkspace } from './workspaces.repo.js';

/** A workspace's name by id (one read by primary key), for wording; null once it is gone. */
export async function workspaceName(db: Executor, id: string): Promise<string | null> {
  return (await repo.findWorkspace(db, id))?.name ?? null;
}

export function toWorkspace(row: repo.WorkspaceRow, role?: string): WorkspaceT {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    plan: { tier: row.plan_tier, billed_by: row.billed_by },
    ...(role ? { role: role as Role } : {}),
    state: row.state as 'active' | 'deleting',
    require_two_factor: row.require_two_factor === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    etag: etagOf(row.revision),
  };
}

export function toMember(row: repo.MemberRow, twoFactor?: boolean): MemberT {
  return {
    id: row.id, user_id: row.user_id, email: row.email, role: row.role as Role, joined_at: isoFromSeconds(row.joined_at),
    ...(twoFactor !== undefined ? { two_factor: twoFactor } : {}),
  };
}

/** What a workspace asks of the accounts' second factors (the sessions' two-factor service, passed in by the composition root). */
export interface TwoFactorLookup {
  hasActiveFactor(userId: string): Promise<boolean>;
  usersWithActiveFactor(userIds: string[]): Promise<Set<string>>;
}

const twoFactorRequired = () =>
  permissionDenied(
    'this workspace requires two-factor sign-in of its members: turn it on for your account on your account page (the web app\'s "Your account", or POST /v1/me/two_factor:enroll), then try again',
    'TWO_FACTOR_REQUIRED',
  );

function slugFromName(name: string): string {
  const base = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 32);
  return base.length >= 3 ? base : `ws-${base || randomString(4, '0123456789abcdefghijklmnopqrstuvwxyz')}`.replace(/-+$/, '');
}

export function createWorkspaceService(deps: {
  db: Db; cursors: CursorCodec; quotas: Pick<QuotaService, 'enforce'>; invitations: Pick<InvitationService, 'invite'>; twoFactor: TwoFactorLookup;
}) {
  const { db, cursors } = deps;

  const memberships: MembershipLookup = {
    /**
     * The member's role; null when not a member. A workspace that requires two factors refuses a
     * member without an active factor here, at each request (403 TWO_FACTOR_REQUIRED): turning it
     * on or a member removing their factor takes effect at once, and setting one up lets them in.
     */
    async roleOf(workspaceId, userId) {
      if (!isId('workspace', workspaceId)) return null;
      const row = await repo.findMemberRole(db, workspaceId, userId);
      if (!row) return null;
      if (row.require_two_factor === 1 && !(await deps.twoFactor.hasActiveFactor(userId))) throw twoFactorRequired();
      return row.role as Role;
    },
    async requestedInDeletedWorkspace(workspaceId, userId) {
      if (!isId('workspace', workspaceId) || (await repo.findWorkspace(db, workspaceId))) return false;
      return repo.requestedOperationIn(db, workspaceId, userId);
    },
  };

  /** Creates the workspace and its owner membership in one transaction (the caller's, if given). */
  async function createWorkspace(userId: string, input: { name: string; slug?: string }, executor: Executor = db): Promise<WorkspaceT> {
    const now = clock.now();
    return inTransaction(executor, async (tx) => {
      await deps.quotas.enforce(tx, { userId }, 'workspaces/owned');
      const derived = slugFromName(input.name);
      // A derived slug that is taken (also by a concurrent request) gets a random suffix; a chosen one is 409.
      for (let attempt = 0; attempt < 5; attempt++) {
        const slug = input.slug ?? (attempt === 0 ? derived : `${derived.slice(0, 32)}-${randomString(6, '0123456789abcdefghijklmnopqrstuvwxyz')}`);
        const row: repo.WorkspaceRow = {
          id: newId('workspace'), name: input.name, slug, plan_tier: DEFAULT_TIER, billed_by: 'platform', state: 'active', require_two_factor: 0, created_at: now, updated_at: now, revision: 1,
        };
        if (await repo.insertWorkspaceIfSlugFree(tx, row)) {
          await repo.insertMember(tx, { id: newId('member'), workspace_id: row.id, user_id: userId, role: 'owner', joined_at: now, updated_at: now });
          return toWorkspace(row, 'owner');
        }
        if (input.slug !== undefined) throw new ApiError('ALREADY_EXISTS', `slug "${input.slug}" is taken`, { reason: 'SLUG_TAKEN' });
      }
      throw new ApiError('ALREADY_EXISTS', 'could not find a free slug; choose one', { reason: 'SLUG_TAKEN' });
    });
  }

  async function getWorkspace(scope: WorkspaceScope): Promise<WorkspaceT> {
    const row = await repo.findWorkspace(db, scope.workspaceId);
    if (!row) throw notFound('workspace');
    return toWorkspace(row, scope.role);
  }

  async function listWorkspaces(userId: string, query: PageQueryT): Promise<Page<WorkspaceT>> {
    const page = cursors.request(query, userId);
    const rows = await repo.listWorkspacesOfUser(db, userId, page);
    return cursors.page(rows, page, userId, {}, (r) => toWorkspace(r, r.role));
  }

  async function patchWorkspace(scope: WorkspaceScope, revision: number | null, input: { name?: string; slug?: string; require_two_factor?: boolean }): Promise<WorkspaceT> {
    if (!roleAtLeast(scope.role, 'admin')) throw permissionDenied('changing a workspace needs the admin role or higher', 'ROLE_TOO_LOW');
    const { require_two_factor: requireTwoFactor, ...names } = input;
    if (requireTwoFactor !== undefined) {
      if (scope.role !== 'owner') throw permissionDenied('requiring two factors of the members is an owner\'s choice', 'ROLE_TOO_LOW');
      // An owner acts with a user credential (API tokens are never owners): theirs must have a factor first.
      if (requireTwoFactor && !(await deps.twoFactor.hasActiveFactor(scope.actorId))) {
        throw new ApiError('FAILED_PRECONDITION', 'turn on two-factor sign-in for your own account first (your account page), so that the requirement does not shut you out', { reason: 'OWN_TWO_FACTOR_REQUIRED' });
      }
    }
    const set = { ...names, ...(requireTwoFactor !== undefined ? { require_two_factor: requireTwoFactor ? 1 : 0 } : {}) };
    let row: repo.WorkspaceRow | undefined;
    try {
      row = await db.transaction().execute(async (tx) => {
        // The value before, under the workspace's lock, so that only a real change is audited.
        let before: repo.WorkspaceRow | undefined;
        if (requireTwoFactor !== undefined) {
          await repo.lockWorkspace(tx, scope.workspaceId);
          before = await repo.findWorkspace(tx, scope.workspaceId);
        }
        const after = await repo.updateWorkspaceIfRevision(tx, scope.workspaceId, revision, set, clock.now());
        if (after && before && before.require_two_factor !== after.require_two_factor) {
          await recordAuditEvent(tx, scope, {
            action: after.require_two_factor === 1 ? 'workspace.two_factor_requirement.enable' : 'workspace.two_factor_requirement.disable',
            resourceType: 'workspace', resourceId: scope.workspaceId,
          });
        }
        return after;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new ApiError('ALREADY_EXISTS', `slug "${input.slug}" is taken`, { reason: 'SLUG_TAKEN' });
      throw err;
    }
    if (row) return toWorkspace(row, scope.role);
    const current = await repo.findWorkspace(db, scope.workspaceId);
    if (!current) throw notFound('workspace');
    throw etagMismatch(`workspace ${scope.workspaceId}`, current.revision);
  }

  /** Owners and admins see who has two-factor sign-in on; members do not (GitHub shows it to organization owners). */
  async function twoFactorOf(scope: WorkspaceScope, rows: repo.MemberRow[]): Promise<(row: repo.MemberRow) => boolean | undefined> {
    if (!roleAtLeast(scope.role, 'admin')) return () => undefined;
    const on = await deps.twoFactor.usersWithActiveFactor(rows.map((r) => r.user_id));
    return (row) => on.has(row.user_id);
  }

  async function listMembers(scope: WorkspaceScope, query: PageQueryT): Promise<Page<MemberT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await repo.listMembers(db, scope.workspaceId, page);
    const twoFactor = await twoFactorOf(scope, rows);
    return cursors.page(rows, page, scope.workspaceId, {}, (r) => toMember(r, twoFactor(r)));
  }

  /**
   * An account turned its second factor on or off: recorded in the audit log of every workspace it
   * belongs to (the owners see who fell out of a requirement), in the change's transaction.
   */
  async function recordTwoFactorChange(tx: Executor, e: { userId: string; enabled: boolean; requestId: string | null }): Promise<void> {
    for (const workspaceId of await repo.workspaceIdsOfUser(tx, e.userId)) {
      await recordAuditEvent(tx, { workspaceId, actor: { type: 'user', id: e.userId }, requestId: e.requestId }, {
        action: e.enabled ? 'user.two_factor.enable' : 'user.two_factor.disable', resourceType: 'user', resourceId: e.userId, metadata: { method: 'totp' },
      });
    }
  }

  function assertMayManage(scope: WorkspaceScope, targetRole: Role | null, newRole: Role | null): void {
    if (!roleAtLeast(scope.role, 'admin')) throw permissionDenied('managing members needs the admin role or higher', 'ROLE_TOO_LOW');
    if (scope.role !== 'owner' && (targetRole === 'owner' || newRole === 'owner')) {
      throw permissionDenied('only an owner may grant, change or remove the owner role', 'OWNER_PROTECTED');
    }
  }

  /**
   * Adds an existing user as a member; an e-mail that has no account gets an invitation instead
   * (invitations.service.ts), in the same transaction.
   */
  async function addMember(scope: WorkspaceScope, input: { email?: string; user_id?: string; role: Role }, executor: Executor = db): Promise<{ member: MemberT } | { invitation: InvitationT }> {
    if ((input.email === undefined) === (input.user_id === undefined)) {
      throw invalidArgument('send exactly one of email or user_id', 'ONE_OF_EMAIL_USER_ID', [{ field: 'body.email', description: 'exactly one of email, user_id' }]);
    }
    assertMayManage(scope, null, input.role);
    const email = input.email !== undefined ? normalizeEmail(input.email) : null;
    if (email !== null && (!EMAIL.test(email) || email.length > 254)) {
      throw invalidArgument('email is not a valid address', 'INVALID_EMAIL', [{ field: 'body.email', description: 'an e-mail address' }]);
    }
    const user = email !== null ? await findUserByEmail(executor, email) : await findUserById(executor, input.user_id!);
    if (!user && email !== null) return { invitation: await inTransaction(executor, (tx) => deps.invitations.invite(tx, scope, email, input.role)) };
    if (!user) throw notFound('user');
    if (await repo.findMember(executor, scope.workspaceId, user.id)) {
      throw new ApiError('ALREADY_EXISTS', 'the user is already a member', { reason: 'ALREADY_MEMBER' });
    }
    const now = clock.now();
    // The member and its audit event commit together (in the caller's transaction when given one).
    return inTransaction(executor, async (tx) => {
      try {
        await repo.insertMember(tx, { id: newId('member'), workspace_id: scope.workspaceId, user_id: user.id, role: input.role, joined_at: now, updated_at: now });
      } catch (err) {
        if (isUniqueViolation(err)) throw new ApiError('ALREADY_EXISTS', 'the user is already a member', { reason: 'ALREADY_MEMBER' });
        throw err;
      }
      const row = (await repo.findMember(tx, scope.workspaceId, user.id))!;
      await recordAuditEvent(tx, scope, { action: 'workspace.member.add', resourceType: 'workspace_member', resourceId: row.id, metadata: { user_id: user.id, role: input.role } });
      return { member: toMember(row) };
    });
  }

  async function getMember(scope: WorkspaceScope, userId: string): Promise<MemberT> {
    const row = isId('user', userId) ? await repo.findMember(db, scope.workspaceId, userId) : undefined;
    if (!row) throw notFound('member');
    return toMember(row, (await twoFactorOf(scope, [row]))(row));
  }

  async function loadMemberById(workspaceId: string, memberId: string): Promise<MemberT | null> {
    const row = await repo.findMemberById(db, workspaceId, memberId);
    return row ? toMember(row) : null;
  }

  async function changeMemberRole(scope: WorkspaceScope, userId: string, role: Role): Promise<MemberT> {
    if (!isId('user', userId)) throw notFound('member');
    return db.transaction().execute(async (tx) => {
      await repo.lockWorkspace(tx, scope.workspaceId);
      const target = await repo.findMember(tx, scope.workspaceId, userId);
      if (!target) throw notFound('member');
      assertMayManage(scope, target.role as Role, role);
      if (target.role === 'owner' && role !== 'owner' && (await repo.countOwners(tx, scope.workspaceId)) <= 1) {
        throw new ApiError('FAILED_PRECONDITION', 'a workspace keeps at least one owner', { reason: 'LAST_OWNER' });
      }
      await repo.updateMemberRole(tx, target.id, role, clock.now());
      await recordAuditEvent(tx, scope, {
        action: 'workspace.member.update', resourceType: 'workspace_member', resourceId: target.id, metadata: { user_id: userId, from: target.role, role },
      });
      return toMember({ ...target, role });
    });
  }

  async function removeMember(scope: WorkspaceScope, userId: string): Promise<void> {
    if (!isId('user', userId)) throw notFound('member');
    await db.transaction().execute(async (tx) => {
      await repo.lockWorkspace(tx, scope.workspaceId);
      const target = await repo.findMember(tx, scope.workspaceId, userId);
      if (!target) throw notFound('member');
      assertMayManage(scope, target.role as Role, null);
      if (target.role === 'owner' && (await repo.countOwners(tx, scope.workspaceId)) <= 1) {
        throw new ApiError('FAILED_PRECONDITION', 'a workspace keeps at least one owner', { reason: 'LAST_OWNER' });
      }
      await repo.deleteMember(tx, target.id);
      await recordAuditEvent(tx, scope, { action: 'workspace.member.remove', resourceType: 'workspace_member', resourceId: target.id, metadata: { user_id: userId, role: target.role } });
    });
  }

  /** The operator's commands name a workspace by its ws_ id or its slug: the workspace, as an operator sees it. */
  async function findForOperator(ref: string): Promise<WorkspaceT> {
    const row = isId('workspace', ref) ? await repo.findWorkspace(db, ref) : await repo.findWorkspaceBySlug(db, ref.toLowerCase());
    if (!row) throw notFound(`workspace ${ref}`);
    return toWorkspace(row);
  }

  /** The workspaces each user owns, by user id (the operator's user list and account deletion). */
  async function ownedBy(userIds: string[], executor: Executor = db): Promise<Map<string, { id: string; name: string; slug: string }[]>> {
    const out = new Map<string, { id: string; name: string; slug: string }[]>();
    for (const r of await repo.workspacesOwnedBy(executor, userIds)) out.set(r.user_id, [...(out.get(r.user_id) ?? []), { id: r.id, name: r.name, slug: r.slug }]);
    return out;
  }

  return {
    memberships, createWorkspace, getWorkspace, listWorkspaces, patchWorkspace, findForOperator, ownedBy,
    listMembers, addMember, getMember, loadMemberById, changeMemberRole, removeMember, recordTwoFactorChange,
  };
}

export type WorkspaceService = ReturnType<typeof createWorkspaceService>;
