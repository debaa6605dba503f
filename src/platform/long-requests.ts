// Caps on long-lived responses (issue 33 section 5): an agent event stream or a `:wait` holds a
// connection for up to an hour or a minute, so one credential opening hundreds of them could hold
// every connection the process accepts. A route that answers slowly on purpose declares
// `config: { longLived: true }`; each such request takes a slot of its principal and of its
// workspace for as long as its response is open, and past either cap it is 429 before the handler
// runs. In-process counts: the caps hold per process, as the connection caps they protect do.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Principal } from './auth.js';
import { ApiError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * the response stays open on purpose (a stream, a long poll): capped per principal and per
     * workspace; a function decides per request (install logs stay open only with follow=true),
     * from what is known before validation (the query as sent, not yet coerced)
     */
    longLived?: boolean | ((request: FastifyRequest) => boolean);
  }
}

export interface LongRequestLimits {
  perPrincipal: number;
  perWorkspace: number;
}

/**
 * The caps from config.fairness, each also held under a share of the connection cap (an eighth per
 * principal, a quarter per workspace), so that no caller can fill SVC_MAX_CONNECTIONS with them.
 */
export function longRequestLimits(config: Pick<Config, 'http' | 'fairness'>): LongRequestLimits {
  const max = config.http.maxConnections;
  const share = (cap: number, divisor: number) => (max > 0 ? Math.min(cap, Math.max(1, Math.floor(max / divisor))) : cap);
  return { perPrincipal: share(config.fairness.longRequestsPerPrincipal, 8), perWorkspace: share(config.fairness.longRequestsPerWorkspace, 4) };
}

/** Whose slot a request takes: the person across their sessions, else the one credential. */
export function principalKey(principal: Principal): string {
  switch (principal.kind) {
    case 'user': return `user:${principal.userId}`;
    case 'workspace': return `${principal.via}:${principal.credentialId}`;
    case 'machine': return `machine:${principal.machineId}`;
  }
}

function tooMany(scope: 'principal' | 'workspace', limit: number): ApiError {
  const who = scope === 'principal' ? 'this credential (its user, API token or OAuth client)' : 'this workspace';
  const setting = scope === 'principal' ? 'SVC_LONG_REQUESTS_PER_PRINCIPAL' : 'SVC_LONG_REQUESTS_PER_WORKSPACE';
  return new ApiError('RESOURCE_EXHAUSTED',
    `${who} already holds ${limit} long-lived requests open (event streams and :wait calls; ${setting}); end one, or retry when one ends`, {
      reason: 'TOO_MANY_LONG_REQUESTS', metadata: { scope, limit: String(limit) }, headers: { 'retry-after': '5' },
    });
}

export class LongRequestSlots {
  private readonly byPrincipal = new Map<string, number>();
  private readonly byWorkspace = new Map<string, number>();
  constructor(readonly limits: LongRequestLimits) {}

  /** Takes a slot of the principal and of the workspace (if any); returns its release (idempotent), or throws 429. */
  take(principal: string, workspace: string | null): () => void {
    const held = this.byPrincipal.get(principal) ?? 0;
    if (held >= this.limits.perPrincipal) throw tooMany('principal', this.limits.perPrincipal);
    const inWorkspace = workspace === null ? 0 : this.byWorkspace.get(workspace) ?? 0;
    if (workspace !== null && inWorkspace >= this.limits.perWorkspace) throw tooMany('workspace', this.limits.perWorkspace);
    this.byPrincipal.set(principal, held + 1);
    if (workspace !== null) this.byWorkspace.set(workspace, inWorkspace + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.byPrincipal, principal);
      if (workspace !== null) decrement(this.byWorkspace, workspace);
    };
  }

  /** Slots held now, for tests and metrics. */
  held(): { principals: number; workspaces: number } {
    let principals = 0;
    for (const n of this.byPrincipal.values()) principals += n;
    let workspaces = 0;
    for (const n of this.byWorkspace.values()) workspaces += n;
    return { principals, workspaces };
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/**
 * The hook that takes the slots: after authentication (register it after registerAuth), for
 * routes declaring `longLived`; the slot is given back when the response closes, however it ends
 * (answered, hijacked stream ended, client gone).
 */
export function registerLongRequestCaps(app: FastifyInstance, slots: LongRequestSlots): void {
  app.addHook('onRequest', (request, reply, done) => {
    const longLived = request.routeOptions.config?.longLived;
    if (!(typeof longLived === 'function' ? longLived(request) : longLived) || !request.principal) return done();
    let release: () => void;
    try {
      release = slots.take(principalKey(request.principal), request.scope?.workspaceId ?? null);
    } catch (err) {
      return done(err as Error);
    }
    // A client gone during authentication: its response already closed and will not say so again.
    if (reply.raw.destroyed || reply.raw.writableFinished) release();
    reply.raw.once('close', release);
    reply.raw.once('finish', release);
    done();
  });
}

/** What the description of every long-lived route says about the caps. */
export const LONG_REQUEST_CAPS =
  ' At most SVC_LONG_REQUESTS_PER_PRINCIPAL (16) event streams and `:wait` calls of one credential, and SVC_LONG_REQUESTS_PER_WORKSPACE ' +
  '(64) of one workspace, are open at once: past either, 429 RESOURCE_EXHAUSTED (reason TOO_MANY_LONG_REQUESTS).';
