// OAuth clients of a workspace and the client-credentials grant (RFC 6749 section 4.4, API.md
// section 4). A client secret is `svc_cs_` + 43 base62 characters (256 bits), stored as SHA-256
// only; tokens issued for a client act on its workspace with its role until the client is deleted.
import type { Config } from '../../config.js';
import type { Db, Executor } from '../../db/database.js';
import type { OAuthClientsTable } from '../../db/schema.js';
import { roleAtLeast, type Role, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { randomString, safeEqual, sha256Hex } from '../../platform/crypto.js';
import { notFound, permissionDenied } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { ACCESS_TOKEN_TTL_SECONDS, issueAccessToken } from './access-tokens.js';
import type { CreatedOAuthClientT, OAuthClientItemT } from './clients.schemas.js';
import { createJwtVerifier } from './jwt.verifier.js';
import { OAuthError, type GrantHandler } from './oauth.errors.js';
import { createSigningKeys } from './signing-keys.js';
import { recordAuditEvent } from '../audit/audit.js';
import {
  deleteClientOfWorkspace, findClientCredential, findClientOfWorkspace, insertClient, listClientsOfWorkspace, touchClientLastUsed,
} from './oauth.repo.js';

export const CLIENT_SECRET_PREFIX = 'svc_cs_';
const CLIENT_SECRET_BODY_LENGTH = 43;
const LAST_USED_RESOLUTION_SECONDS = 60;
/** Compared against when the client is unknown, so the response time does not tell. */
const DUMMY_SECRET_HASH = sha256Hex('');

function toItem(row: OAuthClientsTable): OAuthClientItemT {
  return {
    id: row.id,
    client_id: row.id,
    name: row.name,
    role: row.role as 'admin' | 'member',
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    ...(row.last_used_at !== null ? { last_used_at: row.last_used_at } : {}),
  };
}

export interface OAuthServiceDeps {
  db: Db;
  config: Config;
  cursors: CursorCodec;
  /**
   * Throws FAILED_PRECONDITION (reason WORKSPACE_DELETING) once the workspace's deletion
   * started, under the workspace's row lock, which the caller's transaction then holds: a
   * credential is never created after the deletion that revokes the workspace's credentials.
   * The workspaces module's guard, passed in by the composition root (identity sits below tenancy).
   */
  assertWorkspaceActive(tx: Executor, workspaceId: string): Promise<void>;
}

export function createOAuthService(deps: OAuthServiceDeps) {
  const { db, config, cursors, assertWorkspaceActive } = deps;
  const keys = createSigningKeys({ db, config });

  function assertMayManage(scope: WorkspaceScope): void {
    if (!roleAtLeast(scope.role, 'admin')) {
      throw permissionDenied('creating and deleting OAuth clients needs the owner or admin role', 'ROLE_TOO_LOW');
    }
  }

  async function createClient(scope: WorkspaceScope, input: { name: string; role?: 'admin' | 'member' }): Promise<CreatedOAuthClientT> {
    assertMayManage(scope);
    const role: Role = input.role ?? 'member';
    if (!roleAtLeast(scope.role, role)) throw permissionDenied('a client cannot carry a role above its creator\'s', 'ROLE_TOO_LOW');
    const secret = CLIENT_SECRET_PREFIX + randomString(CLIENT_SECRET_BODY_LENGTH);
    const row: OAuthClientsTable = {
      id: newId('oauthClient'),
      workspace_id: scope.workspaceId,
      name: input.name,
      secret_hash: sha256Hex(secret),
      role,
      created_by: scope.actorId,
      created_at: clock.now(),
      last_used_at: null,
    };
    // Ordered against a workspace deletion, which deletes the workspace's clients: none may appear after.
    await db.transaction().execute(async (tx) => {
      await assertWorkspaceActive(tx, scope.workspaceId);
      await insertClient(tx, row);
      await recordAuditEvent(tx, scope, { action: 'oauth_client.create', resourceType: 'oauth_client', resourceId: row.id, metadata: { name: row.name, role } });
    });
    return {
      id: row.id, client_id: row.id, name: row.name, role: input.role ?? 'member', workspace_id: row.workspace_id, created_at: row.created_at,
      client_secret: secret,
    };
  }

  async function listClients(scope: WorkspaceScope, query: PageQueryT): Promise<Page<OAuthClientItemT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await listClientsOfWorkspace(db, scope.workspaceId, page);
    return cursors.page(rows, page, scope.workspaceId, {}, toItem);
  }

  async function getClient(scope: WorkspaceScope, id: string): Promise<OAuthClientItemT> {
    if (!isId('oauthClient', id)) throw notFound('OAuth client');
    const row = await findClientOfWorkspace(db, scope.workspaceId, id);
    if (!row) throw notFound('OAuth client');
    return toItem(row);
  }

  /** Its tokens stop working at once on every instance: verification looks the client up per request. */
  async function deleteClient(scope: WorkspaceScope, id: string): Promise<void> {
    assertMayManage(scope);
    if (!isId('oauthClient', id)) throw notFound('OAuth client');
    await db.transaction().execute(async (tx) => {
      const deleted = await deleteClientOfWorkspace(tx, scope.workspaceId, id);
      if (!deleted) throw notFound('OAuth client');
      await recordAuditEvent(tx, scope, { action: 'oauth_client.delete', resourceType: 'oauth_client', resourceId: id, metadata: { name: deleted.name, role: deleted.role } });
    });
  }

  /** client_secret_post or client_secret_basic, but not both at once (RFC 6749 section 2.3). */
  function clientCredentialsOf(form: Record<string, string | undefined>, basic: { clientId?: string; clientSecret?: string }) {
    if (basic.clientId !== undefined) {
      if (form.client_secret !== undefined) throw new OAuthError('invalid_request', 'use one client authentication method: HTTP Basic or client_secret in the form, not both');
      if (form.client_id !== undefined && form.client_id !== basic.clientId) throw new OAuthError('invalid_client', 'client_id in the form differs from HTTP Basic');
      return { clientId: basic.clientId, secret: basic.clientSecret ?? '' };
    }
    if (!form.client_id || !form.client_secret) {
      throw new OAuthError('invalid_client', 'client authentication required: client_id and client_secret in the form, or HTTP Basic');
    }
    return { clientId: form.client_id, secret: form.client_secret };
  }

  const clientCredentialsGrant: GrantHandler = async (form, basic) => {
    const { clientId, secret } = clientCredentialsOf(form, basic);
    const row = isId('oauthClient', clientId)
      ? await findClientCredential(db, clientId)
      : undefined;
    const matches = safeEqual(sha256Hex(secret), row?.secret_hash ?? DUMMY_SECRET_HASH);
    if (!row || !matches) throw new OAuthError('invalid_client', 'unknown client or wrong client secret');
    const now = clock.now();
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_SECONDS) {
      await touchClientLastUsed(db, row.id, now);
    }
    const accessToken = await issueAccessToken(keys, config.publicUrl, { clientId: row.id, workspaceId: row.workspace_id, role: row.role as Role });
    return { access_token: accessToken, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_SECONDS };
  };

  return {
    createClient,
    listClients,
    getClient,
    deleteClient,
    clientCredentialsGrant,
    publishedKeys: keys.publishedKeys,
    verifier: createJwtVerifier({ db, config, keys }),
  };
}

export type OAuthService = ReturnType<typeof createOAuthService>;
