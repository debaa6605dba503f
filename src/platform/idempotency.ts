// Idempotency keys (spec 4.1, API.md section 3), Stripe's rules: scope = the principal (the user,
// the API token or the OAuth client; a user's sessions share it) + method + route; the target
// workspace is part of the fingerprint. First request records the key and a fingerprint, runs,
// and stores the status and the created resource's id; a replay returns that status with the
// resource's current representation and `idempotent-replayed: true`; another body under the same
// key is 422; a key still in flight is 409. Failures (4xx/5xx) are not recorded, so the client may
// retry. A replay is authorized like a first request: membership and token are checked by the
// auth hook before any handler, and the stored answer needs at least the role the first request
// had (every role rule is "this role or higher", so a role that passed then passes now; a caller
// demoted since is refused rather than handed what a higher role obtained).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clock } from './clock.js';
import { hmacBase64Url, randomString } from './crypto.js';
import { ApiError, permissionDenied } from './errors.js';
import { roleAtLeast, type Role } from './auth.js';
import { InstanceHeartbeat } from './instance.js';
import type { Transaction } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';

export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 64,
  description:
    'Retrying with the same key returns the first outcome (with `idempotent-replayed: true`) instead of creating a duplicate. ' +
    'Keys live 24 hours and are scoped to the caller (the user, whichever session they use; the API token; the OAuth client) and ' +
    'route: another caller\'s key is a different key. Another body or another workspace under the same key is 422, a key still in ' +
    'flight 409 (a key whose request died with its process is taken over at once). A replay is authorized like a first request: a ' +
    'caller who may no longer call the route, or whose role is lower than at the first request, gets 403 (ROLE_TOO_LOW), never the stored answer.',
});

const TTL_SECONDS = 24 * 60 * 60;
/** an in-flight key written before migration 009 (no instance) older than this is presumed abandoned */
const LEGACY_STALE_CLAIM_SECONDS = 60;

export interface IdempotentOutcome<T> {
  status: number;
  body: T;
  /** id of the created resource, used to load its current representation on replay */
  resourceId: string;
}

/** Deeper bodies are refused before fingerprinting: the recursion below would overflow the stack (a 500). */
const MAX_BODY_DEPTH = 256;

function canonical(value: unknown, depth = 0): string {
  if (depth > MAX_BODY_DEPTH) {
    throw new ApiError('INVALID_ARGUMENT', `request body nests deeper than ${MAX_BODY_DEPTH} levels`, { reason: 'BODY_TOO_DEEP' });
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, depth + 1)).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k], depth + 1)}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** usr_ id of a user (all their sessions), tok_ id of an API token, oac_ id of an OAuth client */
function principalId(request: FastifyRequest): string {
  const p = request.principal;
  if (!p) return 'anonymous';
  return p.kind === 'user' ? p.userId : p.credentialId;
}

function inUse(message = 'a request with this idempotency key is still in progress'): ApiError {
  return new ApiError('ABORTED', message, { reason: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'retry-after': '1' } });
}

export class IdempotencyStore {
  /** this process as the holder of in-flight keys */
  readonly instance: InstanceHeartbeat;

  /**
   * `fingerprintKey` keys the HMAC of request bodies: a plain hash of a body that carries a secret
   * value (POST /v1/secrets) would let whoever reads the table test guesses of that value.
   */
  constructor(private readonly db: Db, private readonly fingerprintKey: Buffer) {
    this.instance = new InstanceHeartbeat(db);
  }

  /**
   * Runs `create` at most once per key, inside a transaction that also marks the key done, so a
   * crash can never leave a created resource behind an unfinished key. Without a key it simply
   * runs in a transaction. `load` returns the current representation of a previously created
   * resource (null if it is gone: the replay is then 404).
   *
   * `prepare`, when given, runs once the key is claimed and before the transaction, with no
   * transaction open: long work whose result `create` records (a snippet run). The instance's
   * heartbeat stays fresh meanwhile, so a retry finds the key in flight rather than abandoned.
   */
  async run<T, P = undefined>(
    request: FastifyRequest,
    reply: FastifyReply,
    key: string | undefined,
    load: (resourceId: string) => Promise<T | null>,
    create: (tx: Transaction<Database>, prepared: P) => Promise<IdempotentOutcome<T>>,
    prepare?: () => Promise<P>,
  ): Promise<T> {
    if (key === undefined) {
      const prepared = (prepare ? await prepare() : undefined) as P;
      const outcome = await this.db.transaction().execute((tx) => create(tx, prepared));
      reply.code(outcome.status);
      return outcome.body;
    }
    const scope = `${principalId(request)}|${request.method} ${request.routeOptions.url ?? request.url}`;
    // The workspace is part of the request: the same key sent to another workspace is another request (422).
    const fingerprint = hmacBase64Url(
      this.fingerprintKey,
      `${request.method}\n${request.url.split('?')[0]}\n${request.scope?.workspaceId ?? ''}\n${canonical(request.body)}`,
    );
    await this.instance.hold();
    try {
      return await this.claimAndRun(request, reply, scope, key, fingerprint, load, create, prepare);
    } finally {
      this.instance.release();
    }
  }

  private async claimAndRun<T, P>(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: string,
    key: string,
    fingerprint: string,
    load: (resourceId: string) => Promise<T | null>,
    create: (tx: Transaction<Database>, prepared: P) => Promise<IdempotentOutcome<T>>,
    prepare?: () => Promise<P>,
  ): Promise<T> {
    const claim = randomString(24);
    const instanceId = this.instance.id;
    const now = clock.now();

    // Drop an expired record first so the key can start over.
    await this.db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('expires_at', '<=', now).execute();
    const inserted = await this.db
      .insertInto('idempotency_keys')
      .values({
        scope, key, fingerprint, state: 'in_flight', claim, status_code: null, resource_id: null, created_at: now,
        expires_at: now + TTL_SECONDS, instance_id: instanceId, role: request.scope?.role ?? null,
      })
      .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
      .executeTakeFirst();

    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
      const existing = await this.db.selectFrom('idempotency_keys').selectAll().where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
      if (!existing) throw inUse('idempotency key was released concurrently; retry the request');
      if (existing.fingerprint !== fingerprint) {
        throw new ApiError('FAILED_PRECONDITION', 'idempotency key was already used with a different request', {
          reason: 'IDEMPOTENCY_KEY_REUSED',
        });
      }
      if (existing.state === 'done' && existing.resource_id !== null) {
        authorizeReplay(request, existing.role as Role | null);
        const current = await load(existing.resource_id);
        if (current === null) {
          throw new ApiError('NOT_FOUND', 'the resource created under this idempotency key no longer exists', { reason: 'NOT_FOUND' });
        }
        reply.header('idempotent-replayed', 'true');
        reply.code(existing.status_code ?? 200);
        return current;
      }
      // In flight. Its transaction has not committed (done and the resource commit together); if
      // the instance running it is gone, nothing ever will: take the key over.
      const ownerGone = existing.instance_id === null
        ? now - existing.created_at >= LEGACY_STALE_CLAIM_SECONDS
        : await this.instance.isGone(existing.instance_id);
      const takenOver =
        ownerGone &&
        Number(
          (
            await this.db
              .updateTable('idempotency_keys')
              .set({ claim, created_at: now, instance_id: instanceId, role: request.scope?.role ?? null })
              .where('scope', '=', scope)
              .where('key', '=', key)
              .where('state', '=', 'in_flight')
              .where('claim', '=', existing.claim)
              .executeTakeFirst()
          ).numUpdatedRows,
        ) === 1;
      if (!takenOver) throw inUse();
    }

    let outcome: IdempotentOutcome<T>;
    try {
      const prepared = (prepare ? await prepare() : undefined) as P;
      outcome = await this.db.transaction().execute(async (tx) => {
        const result = await create(tx, prepared);
        const marked = await tx
          .updateTable('idempotency_keys')
          .set({ state: 'done', status_code: result.status, resource_id: result.resourceId })
          .where('scope', '=', scope)
          .where('key', '=', key)
          .where('claim', '=', claim)
          .where('state', '=', 'in_flight')
          .executeTakeFirst();
        // Another request took the key over (we were presumed dead): roll our work back.
        if (Number(marked.numUpdatedRows) !== 1) throw inUse();
        return result;
      });
    } catch (err) {
      // Not recorded: the client may retry with the same key.
      await this.db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('claim', '=', claim).execute();
      throw err;
    }
    reply.code(outcome.status);
    return outcome.body;
  }

  /** Removes expired keys, and instances silent for a day; called periodically. */
  async purgeExpired(): Promise<number> {
    const res = await this.db.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now()).executeTakeFirst();
    await this.instance.purgeSilent();
    return Number(res.numDeletedRows);
  }
}

/**
 * The stored answer goes only to a caller whose role is at least the first request's. A requester
 * of a deleted workspace (`requesterOnly`) holds no role there but may read what they requested.
 */
function authorizeReplay(request: FastifyRequest, firstRole: Role | null): void {
  const scope = request.scope;
  if (firstRole === null || !scope || scope.requesterOnly || roleAtLeast(scope.role, firstRole)) return;
  throw permissionDenied(
    `this idempotency key's request was made with the ${firstRole} role; you are ${scope.role} now: send the request with a new key`,
    'ROLE_TOO_LOW',
  );
}
