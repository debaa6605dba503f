// Idempotency keys (spec 4.1, API.md section 3), Stripe's rules: scope = principal's workspace or
// user + method + route; first request records the key and a fingerprint, runs, and stores the
// status and the created resource's id; a replay returns that status with the resource's current
// representation and `idempotent-replayed: true`; another body under the same key is 422; a key
// still in flight is 409. Failures (4xx/5xx) are not recorded, so the client may retry.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { clock } from './clock.js';
import { hmacBase64Url, randomString } from './crypto.js';
import { ApiError } from './errors.js';
import type { Transaction } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';

export const IdempotencyKeyHeader = Type.String({
  minLength: 1,
  maxLength: 64,
  description:
    'Retrying with the same key returns the first outcome (with `idempotent-replayed: true`) instead of creating a duplicate. ' +
    'Keys live 24 hours, are scoped to the caller and route; another body under the same key is 422, a key still in flight 409.',
});

const TTL_SECONDS = 24 * 60 * 60;
/** an in-flight key older than this is presumed abandoned by a crashed process */
const STALE_CLAIM_SECONDS = 60;

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

function principalScope(request: FastifyRequest): string {
  if (request.scope) return request.scope.workspaceId;
  const p = request.principal;
  if (!p) return 'anonymous';
  return p.kind === 'user' ? p.userId : p.workspaceId;
}

export class IdempotencyStore {
  /**
   * `fingerprintKey` keys the HMAC of request bodies: a plain hash of a body that carries a secret
   * value (POST /v1/secrets) would let whoever reads the table test guesses of that value.
   */
  constructor(private readonly db: Db, private readonly fingerprintKey: Buffer) {}

  /**
   * Runs `create` at most once per key, inside a transaction that also marks the key done, so a
   * crash can never leave a created resource behind an unfinished key. Without a key it simply
   * runs in a transaction. `load` returns the current representation of a previously created
   * resource (null if it is gone: the replay is then 404).
   *
   * `prepare`, when given, runs once the key is claimed and before the transaction, with no
   * transaction open: long work whose result `create` records (a snippet run). The claim is
   * renewed meanwhile, so a retry finds the key in flight rather than presumed abandoned.
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
    const scope = `${principalScope(request)}|${request.method} ${request.routeOptions.url ?? request.url}`;
    const fingerprint = hmacBase64Url(this.fingerprintKey, `${request.method}\n${request.url.split('?')[0]}\n${canonical(request.body)}`);
    const claim = randomString(24);
    const now = clock.now();

    // Drop an expired record first so the key can start over.
    await this.db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('expires_at', '<=', now).execute();
    const inserted = await this.db
      .insertInto('idempotency_keys')
      .values({ scope, key, fingerprint, state: 'in_flight', claim, status_code: null, resource_id: null, created_at: now, expires_at: now + TTL_SECONDS })
      .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
      .executeTakeFirst();

    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
      const existing = await this.db.selectFrom('idempotency_keys').selectAll().where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
      if (!existing) {
        throw new ApiError('ABORTED', 'idempotency key was released concurrently; retry the request', {
          reason: 'IDEMPOTENCY_KEY_IN_USE',
          headers: { 'retry-after': '1' },
        });
      }
      if (existing.fingerprint !== fingerprint) {
        throw new ApiError('FAILED_PRECONDITION', 'idempotency key was already used with a different request', {
          reason: 'IDEMPOTENCY_KEY_REUSED',
        });
      }
      if (existing.state === 'done' && existing.resource_id !== null) {
        const current = await load(existing.resource_id);
        if (current === null) {
          throw new ApiError('NOT_FOUND', 'the resource created under this idempotency key no longer exists', { reason: 'NOT_FOUND' });
        }
        reply.header('idempotent-replayed', 'true');
        reply.code(existing.status_code ?? 200);
        return current;
      }
      // In flight. A claim older than STALE_CLAIM_SECONDS belongs to a process that died: its
      // transaction never committed (done and the resource commit together), so take it over.
      const takenOver =
        now - existing.created_at >= STALE_CLAIM_SECONDS &&
        Number(
          (
            await this.db
              .updateTable('idempotency_keys')
              .set({ claim, created_at: now })
              .where('scope', '=', scope)
              .where('key', '=', key)
              .where('state', '=', 'in_flight')
              .where('claim', '=', existing.claim)
              .executeTakeFirst()
          ).numUpdatedRows,
        ) === 1;
      if (!takenOver) {
        throw new ApiError('ABORTED', 'a request with this idempotency key is still in progress', {
          reason: 'IDEMPOTENCY_KEY_IN_USE',
          headers: { 'retry-after': '1' },
        });
      }
    }

    let outcome: IdempotentOutcome<T>;
    let renew: NodeJS.Timeout | null = null;
    try {
      let prepared = undefined as P;
      if (prepare) {
        renew = setInterval(() => {
          this.db.updateTable('idempotency_keys').set({ created_at: clock.now() }).where('scope', '=', scope).where('key', '=', key)
            .where('claim', '=', claim).execute().catch(() => undefined);
        }, (STALE_CLAIM_SECONDS * 1000) / 3);
        prepared = await prepare();
        clearInterval(renew);
      }
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
        if (Number(marked.numUpdatedRows) !== 1) {
          throw new ApiError('ABORTED', 'a request with this idempotency key is still in progress', { reason: 'IDEMPOTENCY_KEY_IN_USE' });
        }
        return result;
      });
    } catch (err) {
      if (renew) clearInterval(renew);
      // Not recorded: the client may retry with the same key.
      await this.db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('claim', '=', claim).execute();
      throw err;
    }
    reply.code(outcome.status);
    return outcome.body;
  }

  /** Removes expired keys; called periodically. */
  async purgeExpired(): Promise<number> {
    const res = await this.db.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now()).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
