// Operations (spec 2.1, API.md section 5): start one in the caller's transaction together with
// its first job; read, list, wait (pushed through the notifier) and cancel.
import type { Db, Executor } from '../../db/database.js';
import { enqueueJob, expediteOperationJob } from '../../jobs/queue.js';
import type { Notifier } from '../../jobs/notifier.js';
import { OperationWaiters } from './operation-waiters.js';
import type { Json, WorkflowDefinition, WorkflowRegistry } from '../../jobs/workflows.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import * as repo from './operations.repo.js';
import { isTerminal, type OperationState, type OperationStepT, type OperationT, type OwnerType, type StepStatus } from './operations.schemas.js';
import { recordEvent } from '../../events/record.js';
import type { OperationStore } from '../../jobs/runner.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findOperation, findRunningOperation, findVisibleOperation, latestOperationOf, listSteps, runningOperations } from './operations.repo.js';

/** The statements the job runner needs (src/jobs/runner.ts); the composition root hands them to the worker pool. */
export const operationStore: OperationStore = {
  findOperation: repo.findOperation,
  listSteps: repo.listSteps,
  markStepRunningFenced: repo.markStepRunningFenced,
  completeStepAndStartNext: repo.completeStepAndStartNext,
  updateRunningOperation: repo.updateRunningOperation,
  updateStep: repo.updateStep,
};

export const OPERATION_JOB = 'operation';

export interface StartOperation {
  type: string;
  workspaceId: string;
  ownerType: OwnerType;
  ownerId: string;
  clusterId: string | null;
  input: Record<string, Json>;
  /** metadata members beyond type and cluster_id */
  metadata?: Record<string, Json>;
  actor: { actorId: string; userId: string | null };
  parentOperationId?: string | null;
}

function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

export function toStep(row: repo.StepRow): OperationStepT {
  return {
    name: row.name,
    status: row.status as StepStatus,
    attempts: row.attempts,
    ...(row.started_at !== null ? { started_at: row.started_at } : {}),
    ...(row.completed_at !== null ? { completed_at: row.completed_at } : {}),
    ...(row.error_message !== null ? { error_message: row.error_message } : {}),
    retryable: row.retryable === 1,
    skippable: row.skippable === 1,
  };
}

/** Who starts an operation: the acting credential, and the user behind it when a user acts. */
/** Who starts what the service does on its own (a failed create's cleanup, an expiry, a sweep). */
export const SYSTEM_ACTOR = { actorId: 'system', userId: null } as const;

export function actorOf(scope: WorkspaceScope): StartOperation['actor'] {
  return { actorId: scope.actorId, userId: isId('user', scope.actorId) ? scope.actorId : null };
}

/** The user a scope acts for, when it may only see operations it requested (its workspace is gone). */
function requesterOf(scope: WorkspaceScope): string | null {
  return scope.requesterOnly ? scope.actorId : null;
}

/** Decides whether an operation may start (the operations/running quota); throws to refuse. */
export type OperationAdmission = (tx: Executor, spec: StartOperation, workflow: WorkflowDefinition) => Promise<void>;

export function createOperationService(deps: {
  db: Db; cursors: CursorCodec; notifier: Notifier; workflows: WorkflowRegistry; publicUrl: string; admit?: OperationAdmission;
}) {
  const { db, cursors, notifier, workflows, publicUrl } = deps;
  const waiters = new OperationWaiters(notifier);

  function toOperation(row: repo.OperationItemRow, steps?: repo.StepRow[]): OperationT {
    const state = row.state as OperationState;
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      organization_id: null,
      owner_type: row.owner_type as OwnerType,
      owner_id: row.owner_id,
      parent_operation_id: row.parent_operation_id,
      state,
      done: isTerminal(state),
      html_url: `${publicUrl}/operations/${row.id}`,
      metadata: JSON.parse(row.metadata),
      response: state === 'SUCCEEDED' ? parseJson(row.response) : null,
      error: state === 'FAILED' || state === 'CANCELLED' ? (parseJson<{ message: string }>(row.error) ?? { message: state.toLowerCase() }) : null,
      last_error: parseJson(row.last_error),
      created_by: row.requested_by,
      created_by_name: row.created_by_name,
      created_by_email: row.created_by_email,
      started_at: row.started_at,
      completed_at: row.completed_at,
      ...(steps ? { steps: steps.map(toStep) } : {}),
    };
  }

  /** Writes the operation, its pending steps and its job in the caller's transaction. */
  // Every operation's end is reported (operation.succeeded|failed|cancelled, API.md 8.11) in the
  // transaction that ends it, with the operation as GET /v1/operations/{id} returns it.
  deps.workflows.onOperationEnd(async (tx, end) => {
    const row = await repo.findVisibleOperation(tx, end.workspaceId, end.operationId, null);
    if (!row) return;
    const type = ({ SUCCEEDED: 'operation.succeeded', FAILED: 'operation.failed', CANCELLED: 'operation.cancelled' } as const)[end.outcome];
    await recordEvent(tx, { type, workspace_id: end.workspaceId, data: toOperation(row, await repo.listSteps(tx, end.operationId)) });
  });

  async function start(tx: Executor, spec: StartOperation): Promise<OperationT> {
    const workflow = workflows.get(spec.type);
    if (!workflow) throw new Error(`no workflow is declared for ${spec.type}`);
    await deps.admit?.(tx, spec, workflow);
    const now = clock.now();
    const id = newId('operation');
    const row: repo.OperationRow = {
      id,
      workspace_id: spec.workspaceId,
      type: spec.type,
      owner_type: spec.ownerType,
      owner_id: spec.ownerId,
      parent_operation_id: spec.parentOperationId ?? null,
      state: 'RUNNING',
      cancel_requested: 0,
      input: JSON.stringify(spec.input),
      metadata: JSON.stringify({ ...spec.metadata, type: spec.type, cluster_id: spec.clusterId }),
      response: null,
      error: null,
      last_error: null,
      requested_by: spec.actor.actorId,
      requested_by_user: spec.actor.userId,
      started_at: now,
      completed_at: null,
      updated_at: now,
      cluster_id: spec.clusterId,
    };
    const steps: repo.StepRow[] = workflow.steps.map((s, position) => ({
      operation_id: id, position, name: s.name, status: 'pending', attempts: 0,
      retryable: s.retryable === false ? 0 : 1, skippable: s.skippable ? 1 : 0,
      started_at: null, completed_at: null, error_message: null, result: null,
    }));
    await repo.insertOperation(tx, row, steps);
    await enqueueJob(tx, { kind: OPERATION_JOB, operationId: id });
    await notifier.publish(tx, 'svc_jobs', id);
    // Read back: the creator's names come with the operation, as every read shows them.
    return toOperation((await repo.findVisibleOperation(tx, spec.workspaceId, id, null))!, steps);
  }

  async function read(scope: WorkspaceScope, id: string, withSteps: boolean): Promise<OperationT> {
    const row = isId('operation', id) ? await repo.findVisibleOperation(db, scope.workspaceId, id, requesterOf(scope)) : undefined;
    if (!row) throw notFound('operation');
    return toOperation(row, withSteps ? await repo.listSteps(db, id) : undefined);
  }

  /** An operation by id within a workspace, with steps (idempotent replays, internal reads). */
  async function load(workspaceId: string, id: string): Promise<OperationT | null> {
    const row = await repo.findVisibleOperation(db, workspaceId, id, null);
    return row ? toOperation(row, await repo.listSteps(db, id)) : null;
  }

  async function list(scope: WorkspaceScope, query: { owner_type?: string; owner_id?: string; state?: string; cursor?: string; limit?: number }): Promise<Page<OperationT>> {
    // `state` joins the cursor's filters only when given, so cursors issued before it existed stay valid.
    const filters = { owner_type: query.owner_type, owner_id: query.owner_id, ...(query.state !== undefined ? { state: query.state } : {}) };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listOperations(db, scope.workspaceId, { ...filters, requester: requesterOf(scope) }, page);
    return cursors.page(rows, page, scope.workspaceId, filters, (r) => toOperation(r));
  }

  /**
   * Answers as soon as the operation is terminal (woken by the notifier, also when another
   * instance ran it), or with its current state at the timeout. A slow safety poll covers a
   * notification lost while the listening connection reconnected.
   */
  async function wait(scope: WorkspaceScope, id: string, timeoutMs: number, safetyPollMs: number): Promise<OperationT> {
    // Watch before the first read, so an end between the read and the sleep is not missed.
    const watch = waiters.watch(id);
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        watch.takeNotified();
        const op = await read(scope, id, true);
        const left = deadline - Date.now();
        if (op.done || left <= 0 || waiters.closing) return op;
        if (!watch.takeNotified()) await watch.sleep(Math.min(left, safetyPollMs));
      }
    } finally {
      watch.close();
    }
  }

  /** Notifications received for pending waits, waits they woke, waits pending now (OperationWaiters). */
  function waitCounts(): { received: number; woken: number; pending: number; sleeping: number } {
    return { ...waiters.counts, pending: waiters.pending, sleeping: waiters.sleeping };
  }

  /** Ends every pending wait with the current state (shutdown must not hang on them). */
  function releaseWaiters(): void {
    waiters.releaseAll();
  }

  async function cancel(scope: WorkspaceScope, id: string): Promise<OperationT> {
    const current = await read(scope, id, false);
    if (current.done) {
      throw new ApiError('FAILED_PRECONDITION', `operation ${id} is already ${current.state}`, { reason: 'OPERATION_DONE' });
    }
    const workflow = workflows.get(current.metadata.type);
    if (workflow && !workflow.cancellable) {
      throw new ApiError('FAILED_PRECONDITION', `a ${current.metadata.type} operation cannot be cancelled`, { reason: 'NOT_CANCELLABLE' });
    }
    const asked = await db.transaction().execute((tx) => requestCancel(tx, id));
    if (!asked) throw new ApiError('FAILED_PRECONDITION', `operation ${id} is already done`, { reason: 'OPERATION_DONE' });
    return read(scope, id, true);
  }

  /** Asks a running operation to stop; false when it had already ended. */
  async function requestCancel(tx: Executor, id: string): Promise<boolean> {
    if (!(await repo.requestCancel(tx, id, clock.now()))) return false;
    // A job waiting out a retry backoff is made due, so the cancellation lands now.
    await expediteOperationJob(tx, id);
    await notifier.publish(tx, 'svc_jobs', id);
    return true;
  }

  /**
   * Asks the other running operations of a workspace or on one owner to stop; returns how many
   * still run. Steps that must wait for them (deletions) throw a retryable error while any does.
   */
  async function cancelOthers(of: { workspace_id: string } | { owner_id: string }, except: string): Promise<number> {
    const running = await repo.runningOperations(db, of, except);
    const unasked = running.filter((op) => op.cancel_requested === 0);
    if (unasked.length) {
      await db.transaction().execute(async (tx) => {
        for (const op of unasked) await requestCancel(tx, op.id);
      });
    }
    return running.length;
  }

  async function findRunning(executor: Executor, ownerId: string, type: string): Promise<OperationT | null> {
    const row = await repo.findRunningOperation(executor, ownerId, type);
    return row ? toOperation(row, await repo.listSteps(executor, row.id)) : null;
  }

  return {
    start, get: (scope: WorkspaceScope, id: string) => read(scope, id, true), load, list, wait, cancel, cancelOthers,
    findRunning, releaseWaiters, waitCounts, toOperation,
  };
}

export type OperationService = ReturnType<typeof createOperationService>;
