// Steps and request handling that several modules' operations share: draining the other
// operations of an owner before a deletion, and starting an operation from a request under its
// idempotency key.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { StepError, type RetryPolicy, type StepDefinition } from '../../jobs/workflows.js';
import { headerOf } from '../../platform/http.js';
import type { IdempotencyStore } from '../../platform/idempotency.js';
import type { OperationService } from './operations.service.js';
import type { OperationT } from './operations.schemas.js';

/** Waiting for other operations to drain: short first waits, then every 5 s, about 3 minutes in all. */
export const DRAIN_RETRY: RetryPolicy = { maxAttempts: 40, initialDelayMs: 250, maxDelayMs: 5_000 };

/**
 * The first step of a deletion: asks every other running operation on the same owner to stop,
 * and retries until none runs (`noun` names the owner in the message: "cluster", "install").
 */
export function drainOperationsStep<I>(operations: Pick<OperationService, 'cancelOthers'>, noun: string): StepDefinition<I> {
  return {
    name: 'drain_operations',
    retry: DRAIN_RETRY,
    async run(ctx) {
      const running = await operations.cancelOthers({ owner_id: ctx.ownerId }, ctx.operationId);
      if (running === 0) return null;
      throw new StepError(`waiting for ${running} operation${running === 1 ? '' : 's'} on the ${noun} to finish`, true);
    },
  };
}

/**
 * Runs `start` (which starts an operation in the transaction it is given) under the request's
 * optional idempotency-key: 202 with the operation; a replay answers with its current state.
 */
export function acceptOperation(
  s: { idempotency: IdempotencyStore; operations: Pick<OperationService, 'load'> },
  request: FastifyRequest,
  reply: FastifyReply,
  workspaceId: string,
  start: (tx: Transaction<Database>) => Promise<OperationT>,
): Promise<OperationT> {
  return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
    (operationId) => s.operations.load(workspaceId, operationId),
    async (tx) => {
      const op = await start(tx);
      return { status: 202, body: op, resourceId: op.id };
    });
}

/**
 * For workspace deletion: releases every row through `release` (outside work, e.g. a driver
 * call) and then removes it. Idempotent: run again after a crash or a failure, it picks up what
 * is left. A retryable failure keeps the row and, once all were tried, throws one retryable
 * StepError naming them, until the calling step's attempt reaches `abandonFrom`: from then on,
 * as for a non-retryable failure, the row is given up (removed anyway), since an unreachable
 * cluster must not keep a workspace alive. Returns how many were released and given up.
 */
export async function releaseEach<R extends { id: string }>(
  rows: R[],
  ctx: { attempt: number },
  abandonFrom: number,
  noun: string,
  release: (row: R) => Promise<void>,
  remove: (row: R) => Promise<void>,
): Promise<{ released: number; abandoned: number }> {
  const failures: string[] = [];
  let abandoned = 0;
  for (const row of rows) {
    try {
      await release(row);
    } catch (err) {
      const retryable = (err as { retryable?: unknown }).retryable !== false;
      if (retryable && ctx.attempt < abandonFrom) {
        failures.push(`${row.id}: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      abandoned++;
    }
    await remove(row);
  }
  if (failures.length) {
    throw new StepError(`releasing ${failures.length} ${noun}${failures.length === 1 ? '' : 's'} failed: ${failures.join('; ')}`, true);
  }
  return { released: rows.length - abandoned, abandoned };
}
