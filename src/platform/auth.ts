// Bearer token -> principal; svc-context -> workspace; roles (spec section 5, API.md section 4).
// Routes declare how they are scoped with `config: { auth: ... }`; one onRequest hook enforces it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { credentialsRequired, notFound, permissionDenied, unauthenticated, ApiError } from './errors.js';
import { isId } from './ids.js';

export type Role = 'owner' | 'admin' | 'member';
const RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export function roleAtLeast(role: Role, needed: Role): boolean {
  return RANK[role] >= RANK[needed];
}

/** A user credential (session token, browser cookie, trusted external JWT): broad, may span workspaces. */
export interface UserPrincipal {
  kind: 'user';
  via: 'session' | 'cookie' | 'external_jwt';
  userId: string;
  sessionId: string | null;
}

/**
 * A workspace credential (API token, OAuth client JWT, or the credential of one snippet run, which
 * acts as whoever started the run): acts on its own workspace only.
 */
export interface WorkspacePrincipal {
  kind: 'workspace';
  via: 'api_token' | 'client_jwt' | 'snippet_run';
  workspaceId: string;
  role: Role;
  credentialId: string;
}

/**
 * A machine agent's credential (API.md 8.5): it may call only the routes declared `auth: 'machine'`
 * (the agent's heartbeats); every other route refuses it with 403.
 */
export interface MachinePrincipal {
  kind: 'machine';
  machineId: string;
  workspaceId: string;
  credentialId: string;
}

export type Principal = UserPrincipal | WorkspacePrincipal | MachinePrincipal;

/** The resolved workspace of a workspace-scoped request and the caller's role in it. */
export interface WorkspaceScope {
  workspaceId: string;
  role: Role;
  /** usr_ id, tok_ id or oac_ id of whoever acts, for created_by fields */
  actorId: string;
  /**
   * The workspace is gone and the caller may only follow what they requested there (a workspace
   * deletion they started): routes that allow it (`requesterOfDeletedWorkspace`) filter by it.
   */
  requesterOnly?: boolean;
  /** the x-request-id of the request the scope was resolved for (audit events carry it) */
  requestId?: string;
}

/**
 * - `none`: public.
 * - `user`: a user credential (broad), e.g. `/v1/me`, `/v1/workspaces`.
 * - `any`: any valid credential.
 * - `workspace`: the workspace comes from the credential or the svc-context header.
 * - `workspace-path`: the workspace is the `:id` path parameter; the caller must belong to it.
 * - `workspace-or-user`: as `workspace` when the credential is a workspace's or svc-context is
 *   sent; a user credential without svc-context acts as the user (no scope), e.g. `/v1/quotas`.
 * - `machine`: a machine agent's credential and nothing else (the agent's routes); no other mode
 *   accepts one.
 */
export type AuthMode = 'none' | 'user' | 'any' | 'workspace' | 'workspace-path' | 'workspace-or-user' | 'machine';

export interface TokenVerifier {
  /** Returns the principal for a token of the form this verifier owns, or null when the form is not its. */
  verify(token: string): Promise<Principal | null>;
}

export interface MembershipLookup {
  roleOf(workspaceId: string, userId: string): Promise<Role | null>;
  /** true when the workspace no longer exists and this user requested an operation in it */
  requestedInDeletedWorkspace(workspaceId: string, userId: string): Promise<boolean>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /** `workspace` routes that let a user read what they requested in a workspace since deleted */
    requesterOfDeletedWorkspace?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
    scope: WorkspaceScope | null;
    /**
     * Decides the request's rights again, as at its start: the same credential still verifies (not
     * revoked, expired or signed out) and, for a workspace-scoped request, still has a role there
     * at least the one it had. A response that stays open (a stream) asks this as it goes, so a
     * right taken away ends it rather than one copied at its start keeping it alive.
     */
    stillAllowed: () => Promise<boolean>;
  }
}

export const SvcContextHeader = Type.String({
  minLength: 1,
  maxLength: 53,
  description:
    'Workspace scope (a ws_ id). Required with a broad credential (session token, external JWT) on workspace-scoped routes; ' +
    'redundant but accepted with a workspace credential when it names the same workspace; any other workspace is 403.',
});

/** The scope of a request known to be workspace-scoped; handlers call this instead of reading `request.scope`. */
export function scopeOf(request: FastifyRequest): WorkspaceScope {
  if (!request.scope) throw new ApiError('INTERNAL', 'route is not workspace-scoped');
  return request.scope;
}

/** The machine behind a request to an agent route (`auth: 'machine'`). */
export function machineOf(request: FastifyRequest): MachinePrincipal {
  const p = request.principal;
  if (!p || p.kind !== 'machine') throw new ApiError('INTERNAL', 'route is not a machine route');
  return p;
}

export function userOf(request: FastifyRequest): UserPrincipal {
  const p = request.principal;
  if (!p || p.kind !== 'user') throw permissionDenied('this route needs a user credential (session token), not a workspace token', 'USER_CREDENTIAL_REQUIRED');
  return p;
}

export function requireRole(scope: WorkspaceScope, needed: Role): void {
  if (!roleAtLeast(scope.role, needed)) {
    throw permissionDenied(`this action needs the ${needed} role or higher; you are ${scope.role}`, 'ROLE_TOO_LOW');
  }
}

function bearerOf(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(header);
  if (!match) throw /^Bearer(\s|$)/i.test(header) ? unauthenticated('Authorization header must be "Bearer <token>"') : credentialsRequired('Authorization header must be "Bearer <token>"');
  return match[1]!;
}

function headerValue(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export interface AuthDeps {
  verifiers: TokenVerifier[];
  memberships: MembershipLookup;
  /** Verifies the web app's session cookie (a session token); without it no cookie is accepted. */
  cookieSessions?: TokenVerifier;
}

/** The web app's session cookie (HttpOnly, SameSite=Lax), shared with the /device pages. */
export const SESSION_COOKIE = 'svc_session';
/** The header the web app adds to every call but GET and HEAD: a cross-site form cannot send it. */
export const CSRF_HEADER = 'x-svc-csrf';

/** The value of one cookie in the Cookie header, read without parsing the others. */
export function cookieValue(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

export function registerAuth(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('scope', null);
  app.decorateRequest('stillAllowed', async () => false);

  async function authenticate(request: FastifyRequest): Promise<Principal> {
    const token = bearerOf(request);
    if (token === null) {
      // The web app's cookie, only when no Authorization header is sent. A browser sends it on
      // requests other sites start too, so every method that can change something must carry the
      // CSRF header, which a cross-site form cannot set and a cross-site fetch cannot send without
      // a CORS preflight this service never grants. GET and HEAD change nothing.
      const cookie = deps.cookieSessions ? cookieValue(request, SESSION_COOKIE) : null;
      if (cookie === null) throw credentialsRequired('missing Authorization: Bearer <token> header');
      if (request.method !== 'GET' && request.method !== 'HEAD' && headerValue(request, CSRF_HEADER) === undefined) {
        throw permissionDenied(`a call with the session cookie must send the ${CSRF_HEADER} header (the web app adds it)`, 'CSRF_HEADER_REQUIRED');
      }
      const principal = await deps.cookieSessions!.verify(cookie);
      if (principal?.kind !== 'user') throw unauthenticated();
      return { ...principal, via: 'cookie' };
    }
    for (const verifier of deps.verifiers) {
      const principal = await verifier.verify(token);
      if (principal) return principal;
    }
    throw unauthenticated();
  }

  async function resolveWorkspace(request: FastifyRequest, principal: UserPrincipal | WorkspacePrincipal, pathWorkspace: string | null): Promise<WorkspaceScope> {
    // A path id that is not even a ws_ id names nothing (API.md: wrong prefix is 404); that tells
    // nothing about other tenants. A well-formed one stays 403 whether or not it exists.
    if (pathWorkspace !== null && !isId('workspace', pathWorkspace)) throw notFound('workspace');
    const context = headerValue(request, 'svc-context');
    if (context !== undefined && (context.length < 1 || context.length > 53)) {
      throw new ApiError('INVALID_ARGUMENT', 'svc-context must be 1-53 characters', {
        reason: 'INVALID_SVC_CONTEXT',
        fieldViolations: [{ field: 'header.svc-context', description: 'a single ws_ id' }],
      });
    }
    if (pathWorkspace !== null && context !== undefined && context !== pathWorkspace) {
      throw permissionDenied('svc-context names a different workspace than the path', 'SVC_CONTEXT_MISMATCH');
    }
    if (principal.kind === 'workspace') {
      const wanted = pathWorkspace ?? context;
      if (wanted !== undefined && wanted !== principal.workspaceId) {
        throw permissionDenied('this token belongs to a different workspace', 'SVC_CONTEXT_MISMATCH');
      }
      return { workspaceId: principal.workspaceId, role: principal.role, actorId: principal.credentialId, requestId: request.id };
    }
    const wanted = pathWorkspace ?? context;
    if (wanted === undefined) {
      throw permissionDenied(
        'request is ambiguous: a session or user credential must name the workspace in the svc-context header',
        'SVC_CONTEXT_REQUIRED',
      );
    }
    const role = await deps.memberships.roleOf(wanted, principal.userId);
    if (!role && request.routeOptions.config?.requesterOfDeletedWorkspace && (await deps.memberships.requestedInDeletedWorkspace(wanted, principal.userId))) {
      return { workspaceId: wanted, role: 'member', actorId: principal.userId, requesterOnly: true, requestId: request.id };
    }
    // 403 whether or not the workspace exists, so ids of other tenants cannot be probed.
    if (!role) throw permissionDenied('you are not a member of this workspace', 'NOT_A_MEMBER');
    return { workspaceId: wanted, role, actorId: principal.userId, requestId: request.id };
  }

  /** Who a principal is, whatever the way it came: the same credential (or the same user's same session). */
  const identityOf = (p: Principal): string =>
    p.kind === 'user' ? `user ${p.userId} ${p.sessionId ?? ''}` : `${p.kind} ${p.credentialId}`;

  async function stillAllowed(request: FastifyRequest, first: Principal, firstScope: WorkspaceScope | null): Promise<boolean> {
    try {
      const now = await authenticate(request);
      if (identityOf(now) !== identityOf(first)) return false;
      if (firstScope === null || now.kind === 'machine') return true;
      const scope = await resolveWorkspace(request, now, firstScope.workspaceId);
      return scope.workspaceId === firstScope.workspaceId && roleAtLeast(scope.role, firstScope.role);
    } catch (err) {
      if (err instanceof ApiError) return false;
      throw err;
    }
  }

  app.addHook('onRequest', async (request: FastifyRequest, _reply: FastifyReply) => {
    const mode = request.routeOptions.config?.auth ?? 'none';
    if (mode === 'none') return;
    const principal = await authenticate(request);
    request.principal = principal;
    request.stillAllowed = () => stillAllowed(request, principal, request.scope);
    if (mode === 'machine' || principal.kind === 'machine') {
      if (mode !== 'machine') {
        throw permissionDenied('a machine credential can call only the machine agent\'s routes', 'MACHINE_CREDENTIAL_NOT_ALLOWED');
      }
      if (principal.kind !== 'machine') throw permissionDenied('this route is for machine agents: it needs a machine credential', 'MACHINE_CREDENTIAL_REQUIRED');
      return;
    }
    if (mode === 'user') {
      userOf(request);
    } else if (mode === 'workspace') {
      request.scope = await resolveWorkspace(request, principal, null);
    } else if (mode === 'workspace-or-user') {
      if (principal.kind === 'workspace' || headerValue(request, 'svc-context') !== undefined) request.scope = await resolveWorkspace(request, principal, null);
    } else if (mode === 'workspace-path') {
      const id = (request.params as { id?: string } | undefined)?.id ?? '';
      request.scope = await resolveWorkspace(request, principal, id);
    }
  });
}
