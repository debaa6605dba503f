// The instance's administration (issue 34): the operator on the host (`svc admin users …`, no
// credential: whoever runs it holds the database) and instance admins through the API and the web
// app's Users page (an account granted the role with `svc admin users grant-admin`, or named in
// SVC_ADMIN_EMAILS; decided on every request, never copied into a credential). Disabling an account
// signs it out everywhere and stops the API tokens it created until it is enabled again; deleting
// one is refused while it owns a workspace.
import type { Logger } from 'pino';
import type { Db, Executor } from '../../db/database.js';
import { ApiError, notFound, permissionDenied } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import type { PasswordResetService } from '../sessions/password-resets.service.js';
import type { ApiTokenService } from '../tokens/tokens.service.js';
import type { UserRow, UserService } from '../users/users.service.js';
import type { WorkspaceService } from '../workspaces/workspaces.service.js';

export interface AdminUser {
  id: string;
  email: string;
  name: string | null;
  created_at: number;
  disabled_at: number | null;
  admin_source: 'granted' | 'config' | null;
  owned_workspaces: { id: string; name: string; slug: string }[];
}

/** Who acts: an instance admin through the API, or the operator on the host. */
export type AdminActor = { userId: string } | 'operator';

export interface AdminServiceDeps {
  db: Db;
  cursors: CursorCodec;
  users: UserService;
  workspaces: Pick<WorkspaceService, 'ownedBy'>;
  tokens: Pick<ApiTokenService, 'deleteCreatedBy'>;
  passwordResets: Pick<PasswordResetService, 'issueForOperator'>;
  /** signs every session of the user out, in the caller's transaction; returns how many */
  signOutEverywhere(tx: Executor, userId: string): Promise<number>;
  logger: Pick<Logger, 'info'>;
}

const notYourself = (what: string) =>
  new ApiError('FAILED_PRECONDITION', `you cannot ${what} your own account: ask another instance admin, or the operator (svc admin users)`, { reason: 'NOT_YOURSELF' });

export function createAdminService(deps: AdminServiceDeps) {
  const { db, users } = deps;

  /** Throws 403 INSTANCE_ADMIN_REQUIRED unless the account is an instance admin now. */
  async function requireAdmin(userId: string): Promise<void> {
    const user = await users.findByRef(userId);
    if (!user || users.adminSource(user) === null) {
      throw permissionDenied('this needs an instance admin (an account given the role with `svc admin users grant-admin`, or named in SVC_ADMIN_EMAILS)', 'INSTANCE_ADMIN_REQUIRED');
    }
  }

  async function isAdmin(userId: string): Promise<boolean> {
    const user = await users.findByRef(userId);
    return !!user && users.adminSource(user) !== null;
  }

  async function toAdminUsers(rows: UserRow[]): Promise<AdminUser[]> {
    const owned = await deps.workspaces.ownedBy(rows.map((r) => r.id));
    return rows.map((r) => ({
      id: r.id, email: r.email, name: r.name, created_at: r.created_at, disabled_at: r.disabled_at, admin_source: users.adminSource(r),
      owned_workspaces: owned.get(r.id) ?? [],
    }));
  }

  async function find(ref: string): Promise<UserRow> {
    // The API names accounts by usr_ id; the operator's commands also by e-mail.
    const user = ref.includes('@') || isId('user', ref) ? await users.findByRef(ref) : undefined;
    if (!user) throw notFound(`user ${ref}`);
    return user;
  }

  async function listUsers(query: PageQueryT): Promise<Page<AdminUser>> {
    const page = deps.cursors.request(query, 'admin-users');
    const rows = await users.list(page);
    const adminUsers = new Map((await toAdminUsers(rows.slice(0, page.limit))).map((u) => [u.id, u]));
    return deps.cursors.page(rows, page, 'admin-users', {}, (r) => adminUsers.get(r.id)!);
  }

  async function getUser(ref: string): Promise<AdminUser> {
    return (await toAdminUsers([await find(ref)]))[0]!;
  }

  const who = (actor: AdminActor) => (actor === 'operator' ? 'operator' : actor.userId);
  const isSelf = (actor: AdminActor, user: UserRow) => actor !== 'operator' && actor.userId === user.id;

  async function disable(ref: string, actor: AdminActor): Promise<{ user: AdminUser; signedOut: number }> {
    const user = await find(ref);
    if (isSelf(actor, user)) throw notYourself('disable');
    const signedOut = await db.transaction().execute(async (tx) => {
      await users.setDisabled(tx, user.id, true);
      return deps.signOutEverywhere(tx, user.id);
    });
    deps.logger.info({ user_id: user.id, by: who(actor), signed_out: signedOut }, 'account disabled');
    return { user: await getUser(user.id), signedOut };
  }

  async function enable(ref: string, actor: AdminActor): Promise<AdminUser> {
    const user = await find(ref);
    await db.transaction().execute((tx) => users.setDisabled(tx, user.id, false));
    deps.logger.info({ user_id: user.id, by: who(actor) }, 'account enabled');
    return getUser(user.id);
  }

  async function setAdmin(ref: string, admin: boolean, actor: AdminActor): Promise<AdminUser> {
    const user = await find(ref);
    if (!admin && isSelf(actor, user)) throw notYourself('take the admin role from');
    if (!admin && deps.users.adminEmails.includes(user.email)) {
      throw new ApiError('FAILED_PRECONDITION', `${user.email} is an admin by SVC_ADMIN_EMAILS: remove it there and restart`, { reason: 'ADMIN_FROM_CONFIG' });
    }
    await db.transaction().execute((tx) => users.setAdmin(tx, user.id, admin));
    deps.logger.info({ user_id: user.id, by: who(actor) }, admin ? 'instance admin granted' : 'instance admin revoked');
    return getUser(user.id);
  }

  /** Deletes the account, its sessions, memberships and notifications, and the API tokens it created; refused while it owns a workspace. */
  async function remove(ref: string, actor: AdminActor): Promise<{ deletedTokens: number }> {
    const user = await find(ref);
    if (isSelf(actor, user)) throw notYourself('delete');
    const deletedTokens = await db.transaction().execute(async (tx) => {
      const owned = (await deps.workspaces.ownedBy([user.id], tx)).get(user.id) ?? [];
      if (owned.length) {
        throw new ApiError('FAILED_PRECONDITION',
          `${user.email} owns ${owned.length === 1 ? 'a workspace' : `${owned.length} workspaces`} (${owned.slice(0, 5).map((w) => w.slug).join(', ')}${owned.length > 5 ? ', …' : ''}): ` +
          'make someone else its owner, or delete it, first', { reason: 'OWNS_WORKSPACES' });
      }
      const tokens = await deps.tokens.deleteCreatedBy(tx, user.id);
      await users.deleteUser(tx, user.id);
      return tokens;
    });
    deps.logger.info({ user_id: user.id, by: who(actor), deleted_tokens: deletedTokens }, 'account deleted');
    return { deletedTokens };
  }

  async function resetLink(ref: string, actor: AdminActor): Promise<{ email: string; url: string; expiresAt: number }> {
    const user = await find(ref);
    const link = await deps.passwordResets.issueForOperator(user.id);
    deps.logger.info({ user_id: user.id, by: who(actor) }, 'password reset link made');
    return { email: user.email, ...link };
  }

  return { requireAdmin, isAdmin, listUsers, getUser, disable, enable, setAdmin, remove, resetLink };
}

export type AdminService = ReturnType<typeof createAdminService>;
