// Workspace API tokens (spec 2.10, endpoints 11-12, rules 3-6; API.md section 4):
// `sk_svc_` + 40 base62 characters + a 6-character base62 CRC32 of those 40 (GitHub's scheme, so
// scanners can reject fakes offline). Stored as SHA-256 only and looked up by that hash.
import type { Db, Executor } from '../../db/database.js';
import { roleAtLeast, type Principal, type Role, type TokenVerifier, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { base62, crc32, randomString, sha256Hex } from '../../platform/crypto.js';
import { accountDisabled, invalidArgument, notFound, permissionDenied, unauthenticated } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import type { ApiTokensTable } from '../../db/schema.js';
import type { ApiTokenItemT, CreatedApiTokenT } from './tokens.schemas.js';
import { recordAuditEvent } from '../audit/audit.js';
import { deleteToken, deleteTokensCreatedBy, findTokenByHash, insertToken, listTokensOfWorkspace, touchTokenLastUsed } from './tokens.repo.js';

export const API_TOKEN_PREFIX = 'sk_svc_';
const BODY_LENGTH = 40;
const MAX_LIFETIME_SECONDS = 10 * 365 * 24 * 60 * 60;
const LAST_USED_RESOLUTION_SECONDS = 60;

export function mintApiToken(): string {
  const body = randomString(BODY_LENGTH);
  return `${API_TOKEN_PREFIX}${body}${base62(crc32(body), 6)}`;
}

/** Offline check of form and checksum; a token failing it is never looked up. */
export function hasValidChecksum(token: string): boolean {
  if (!token.startsWith(API_TOKEN_PREFIX) || token.length !== API_TOKEN_PREFIX.length + BODY_LENGTH + 6) return false;
  const body = token.slice(API_TOKEN_PREFIX.length, API_TOKEN_PREFIX.length + BODY_LENGTH);
  return /^[0-9A-Za-z]+$/.test(body) && token.endsWith(base62(crc32(body), 6));
}

function toItem(row: ApiTokensTable): ApiTokenItemT {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    prefix: row.prefix,
    role: row.role as 'admin' | 'member',
    created_at: row.created_at,
    ...(row.last_used_at !== null ? { last_used_at: row.last_used_at } : {}),
    ...(row.expires_at !== null ? { expires_at: row.expires_at } : {}),
  };
}

export interface ApiTokenServiceDeps {
  db: Db;
  cursors: CursorCodec;
  /**
   * Throws FAILED_PRECONDITION (reason WORKSPACE_DELETING) once the workspace's deletion
   * started, under the workspace's row lock, which the caller's transaction then holds: a
   * credential is never created after the deletion that revokes the workspace's credentials.
   * The workspaces module's guard, passed in by the composition root (identity sits below tenancy).
   */
  assertWorkspaceActive(tx: Executor, workspaceId: string): Promise<void>;
}

export function createApiTokenService(deps: ApiTokenServiceDeps) {
  const { db, cursors, assertWorkspaceActive } = deps;

  function assertMayManage(scope: WorkspaceScope): void {
    if (!roleAtLeast(scope.role, 'admin')) {
      throw permissionDenied('creating and revoking API tokens needs the owner or admin role', 'ROLE_TOO_LOW');
    }
  }

  async function createToken(scope: WorkspaceScope, input: { name: string; expires_at?: number; role?: 'admin' | 'member' }): Promise<CreatedApiTokenT> {
    assertMayManage(scope);
    const now = clock.now();
    if (input.expires_at !== undefined && (input.expires_at <= now || input.expires_at > now + MAX_LIFETIME_SECONDS)) {
      throw invalidArgument('expires_at must be in the future and at most 10 years ahead (Unix seconds)', 'INVALID_EXPIRY', [
        { field: 'body.expires_at', description: 'Unix seconds in the future' },
      ]);
    }
    const role: Role = input.role ?? 'member';
    if (!roleAtLeast(scope.role, role)) throw permissionDenied('a token cannot carry a role above its creator\'s', 'ROLE_TOO_LOW');
    const token = mintApiToken();
    const row: ApiTokensTable = {
      id: newId('apiToken'),
      workspace_id: scope.workspaceId,
      name: input.name,
      prefix: token.slice(0, 12),
      token_hash: sha256Hex(token),
      role,
      created_by: scope.actorId,
      created_at: now,
      expires_at: input.expires_at ?? null,
      last_used_at: null,
    };
    // Ordered against a workspace deletion, which revokes the workspace's tokens: none may appear after.
    await db.transaction().execute(async (tx) => {
      await assertWorkspaceActive(tx, scope.workspaceId);
      await insertToken(tx, row);
      await recordAuditEvent(tx, scope, { action: 'api_token.create', resourceType: 'api_token', resourceId: row.id, metadata: { name: row.name, role } });
    });
    return {
      id: row.id, name: row.name, token, prefix: row.prefix, role: input.role ?? 'member', workspace_id: row.workspace_id, created_at: now,
      expires_at: row.expires_at,
    };
  }

  async function listTokens(scope: WorkspaceScope, query: PageQueryT): Promise<Page<ApiTokenItemT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await listTokensOfWorkspace(db, scope.workspaceId, page);
    return cursors.page(rows, page, scope.workspaceId, {}, toItem);
  }

  /** Rule 4: a revoked token is deleted at once; every instance looks tokens up per request, so it stops everywhere. */
  async function revokeToken(scope: WorkspaceScope, id: string): Promise<void> {
    assertMayManage(scope);
    if (!isId('apiToken', id)) throw notFound('API token');
    await db.transaction().execute(async (tx) => {
      const revoked = await deleteToken(tx, scope.workspaceId, id);
      if (!revoked) throw notFound('API token');
      await recordAuditEvent(tx, scope, { action: 'api_token.revoke', resourceType: 'api_token', resourceId: id, metadata: { name: revoked.name, role: revoked.role } });
    });
  }

  const verifier: TokenVerifier = {
    async verify(token: string): Promise<Principal | null> {
      if (!token.startsWith(API_TOKEN_PREFIX)) return null;
      if (!hasValidChecksum(token)) throw unauthenticated();
      const [row] = await findTokenByHash(db, { hash: sha256Hex(token) });
      const now = clock.now();
      if (!row || (row.expires_at !== null && row.expires_at <= now)) throw unauthenticated();
      if (row.creator_disabled_at !== null) throw accountDisabled('the account that created this API token is disabled by the operator of this service');
      if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_SECONDS) {
        await touchTokenLastUsed(db, row.id, now);
      }
      return { kind: 'workspace', via: 'api_token', workspaceId: row.workspace_id, role: row.role as Role, credentialId: row.id };
    },
  };

  /** Deletes every API token the account created (the account is being deleted), in the caller's transaction. */
  const deleteCreatedBy = (tx: Executor, userId: string) => deleteTokensCreatedBy(tx, userId);

  return { createToken, listTokens, revokeToken, verifier, deleteCreatedBy };
}

export type ApiTokenService = ReturnType<typeof createApiTokenService>;
