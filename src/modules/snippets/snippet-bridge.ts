// The host side of `platform.request`: each call of a run is served in-process (Fastify inject)
// through the whole API (routing, validation, auth, roles, quotas), authenticated by a credential
// minted for that run alone. The credential is a workspace principal of the run's workspace with
// the run's role and actor, lives in this process's memory only while the run lasts, and is never
// sent to the worker: the sandboxed code cannot read it, and the headers that would carry another
// identity (authorization, svc-context, cookies) are set by the host here and refused from the
// snippet by the engine (src/sandbox/request.ts).
import type { FastifyRequest, InjectOptions, LightMyRequestResponse } from 'fastify';
import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import type { JsonValue, PlatformRequest, PlatformResponse, SandboxBridge } from '../../sandbox/index.js';
import type { Role, TokenVerifier, WorkspacePrincipal } from '../../platform/auth.js';
import type { SecretMask } from './snippet-masking.js';

/** Serves one HTTP request in-process: `app.inject` of the app the run was started from. */
export type Dispatch = (options: InjectOptions) => Promise<LightMyRequestResponse>;

/** Who a run acts as: the workspace, the role (never above the runner's) and the actor for created_by fields. */
export interface RunPrincipal {
  workspaceId: string;
  role: Role;
  actorId: string;
}

/** The form of a run credential: told apart from sessions (32 alphanumerics), API tokens (sk_svc_) and JWTs (dots). */
const PREFIX = 'svcrun_';

/**
 * True for a request made in-process by a running snippet (its credential's form, and not from a
 * socket: inject requests have a mock one). Only used to let such calls finish while draining;
 * authentication itself is the verifier's.
 */
export function isRunCredentialRequest(request: FastifyRequest): boolean {
  return (request.headers.authorization ?? '').startsWith(`Bearer ${PREFIX}`) && !(request.raw.socket instanceof Socket);
}

export function createRunCredentials() {
  const live = new Map<string, WorkspacePrincipal>();
  const verifier: TokenVerifier = {
    async verify(token) {
      if (!token.startsWith(PREFIX)) return null;
      // An unknown or ended run's credential is no credential: 401 like any unknown token.
      return live.get(token) ?? null;
    },
  };
  return {
    verifier,
    /** A credential for one run; `revoke` it when the run ends. */
    mint(principal: RunPrincipal): { token: string; revoke(): void } {
      const token = PREFIX + randomBytes(32).toString('base64url');
      live.set(token, { kind: 'workspace', via: 'snippet_run', workspaceId: principal.workspaceId, role: principal.role, credentialId: principal.actorId });
      return { token, revoke: () => void live.delete(token) };
    },
    /** runs whose credentials are live (for tests: none once every run ended) */
    liveCount: () => live.size,
  };
}

export type RunCredentials = ReturnType<typeof createRunCredentials>;

function searchOf(query: PlatformRequest['query']): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    for (const item of Array.isArray(value) ? value : [value]) params.append(key, item);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

function responseOf(res: LightMyRequestResponse): PlatformResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined || name === 'set-cookie') continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  let body: JsonValue = null;
  if (res.body.length) {
    const json = /^application\/(.+\+)?json/i.test(headers['content-type'] ?? '');
    try {
      body = json ? (JSON.parse(res.body) as JsonValue) : res.body;
    } catch {
      body = res.body;
    }
  }
  return { status: res.statusCode, headers, body };
}

/**
 * The bridge of one run: every request goes through `dispatch` with the run's credential and
 * workspace, and an x-request-id derived from the request that started the run (logs tie them).
 * Secret values in the answers are noted in `mask`, which masks them in what the run leaves behind.
 */
export function runBridge(dispatch: Dispatch, token: string, workspaceId: string, parentRequestId: string, mask: SecretMask): SandboxBridge {
  let n = 0;
  const parent = parentRequestId.slice(0, 100);
  return {
    async request(request) {
      const headers: Record<string, string> = { ...request.headers };
      delete headers['content-type'];
      headers.authorization = `Bearer ${token}`;
      headers['svc-context'] = workspaceId;
      headers['x-request-id'] = `${parent}.snippet.${++n}`;
      let payload: string | undefined;
      if (request.body !== undefined) {
        payload = JSON.stringify(request.body);
        headers['content-type'] = 'application/json';
      }
      const res = await dispatch({
        method: request.method,
        url: request.path + searchOf(request.query),
        headers,
        ...(payload !== undefined ? { payload } : {}),
      });
      const response = responseOf(res);
      if (response.status === 200) mask.noteResponse(response.body);
      return response;
    },
  };
}
