// Runs one claimed operation job: resumes the workflow at its first unfinished step, records each
// step's outcome under the job's lease (a worker that lost its lease writes nothing), retries a
// failing step with capped exponential backoff, honours cancellation between steps, and ends the
// operation exactly once.
import type { Transaction } from 'kysely';
import type { Db } from '../db/database.js';
import type { Database } from '../db/schema.js';
import { clock } from '../platform/clock.js';
import * as ops from '../modules/operations/operations.repo.js';
import type { Notifier } from './notifier.js';
import { completeJob, holdsLease, rescheduleJob, type ClaimedJob } from './queue.js';
import {
  backoffMs, DEFAULT_RETRY, StepError, type Json, type StepContext, type StepDefinition, type TerminalState, type WorkflowRegistry,
} from './workflows.js';

const DEFAULT_STEP_TIMEOUT_MS = 5 * 60 * 1000;
const MAX_MESSAGE = 2000;

/** The lease moved to another worker: stop, change nothing. */
class LeaseLost extends Error {}

export interface RunnerDeps {
  db: Db;
  notifier: Notifier;
  workflows: WorkflowRegistry;
  leaseMs: number;
  backoffScale: number;
  /** asks the pool to look for due jobs at this time (a retry's backoff ends) */
  wakeAt(ms: number): void;
}

function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}...` : text;
}

/** Runs `fn` until it settles or `signal` aborts, whichever is first. */
function untilAborted<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    fn().then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export async function runOperationJob(deps: RunnerDeps, job: ClaimedJob, jobSignal: AbortSignal): Promise<void> {
  const { db, notifier, workflows } = deps;

  /** One fenced transaction: nothing commits unless this worker still holds the job. */
  async function fenced<T>(fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
    return db.transaction().execute(async (tx) => {
      if (!(await holdsLease(tx, job, deps.leaseMs))) throw new LeaseLost();
      return fn(tx);
    });
  }

  const op = job.operationId ? await ops.findOperation(db, job.operationId) : undefined;
  if (!op || op.state !== 'RUNNING') {
    await completeJob(db, job);
    return;
  }
  const rows = await ops.listSteps(db, op.id);
  const workflow = workflows.get(op.type);
  const ctx: StepContext<Record<string, Json>> = {
    operationId: op.id, workspaceId: op.workspace_id, ownerId: op.owner_id,
    input: JSON.parse(op.input), results: {}, attempt: 0, signal: jobSignal,
  };

  async function finish(tx: Transaction<Database>, outcome: TerminalState, message: string | null): Promise<void> {
    const now = clock.now();
    const metadata = JSON.parse(op!.metadata) as { cluster_id: string | null };
    const response = outcome === 'SUCCEEDED'
      ? JSON.stringify({ ...(workflow?.response?.(ctx) ?? {}), type: op!.type, cluster_id: metadata.cluster_id })
      : null;
    const ended = await ops.updateRunningOperation(tx, op!.id, {
      state: outcome, completed_at: now, updated_at: now, response,
      error: message === null ? null : JSON.stringify({ message }),
    });
    if (ended) await workflow?.onEnd?.(tx, ctx, outcome);
    await completeJob(tx, job);
    await notifier.publish(tx, 'svc_operations', op!.id);
  }

  try {
    if (!workflow) {
      await fenced((tx) => finish(tx, 'FAILED', `no workflow is declared for operation type ${op.type}`));
      return;
    }
    // Non-cancellable workflows ignore the request (a workspace deletion asks every operation).
    if (op.cancel_requested === 1 && workflow.cancellable) {
      await fenced((tx) => finish(tx, 'CANCELLED', 'cancelled on request'));
      return;
    }
    for (const row of rows) {
      if (row.status === 'completed' || row.status === 'skipped') {
        ctx.results[row.name] = row.result === null ? null : JSON.parse(row.result);
        continue;
      }
      const step = workflow.steps[row.position];
      if (!step || step.name !== row.name) {
        await fenced((tx) => finish(tx, 'FAILED', `workflow ${op.type} no longer has step ${row.name}`));
        return;
      }
      const outcome = await runStep(step, row);
      if (outcome === 'stop') return;
    }
    await fenced((tx) => finish(tx, 'SUCCEEDED', null));
  } catch (err) {
    if (err instanceof LeaseLost) return;
    throw err;
  }

  /** Runs one step; 'next' to go on, 'stop' when the job is rescheduled or the operation ended. */
  async function runStep(step: StepDefinition<Record<string, Json>>, row: ops.StepRow): Promise<'next' | 'stop'> {
    const attempt = row.attempts + 1;
    const now = clock.now();
    await fenced((tx) => ops.updateStep(tx, op!.id, row.position, { status: 'running', attempts: attempt, started_at: row.started_at ?? now }));

    const signal = AbortSignal.any([jobSignal, AbortSignal.timeout(step.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS)]);
    const stepCtx = { ...ctx, attempt, signal };
    let result: Json | null = null;
    let failure: unknown = null;
    try {
      if (step.run) result = (await untilAborted(() => step.run!(stepCtx), signal)) ?? null;
    } catch (err) {
      failure = err;
    }
    // Lost lease or shutdown: leave the step to whoever resumes the job.
    if (jobSignal.aborted) throw new LeaseLost();

    if (failure === null) {
      try {
        return await fenced(async (tx) => {
          await step.apply?.(tx, stepCtx, result);
          await ops.updateStep(tx, op!.id, row.position, {
            status: 'completed', completed_at: clock.now(), error_message: null, result: JSON.stringify(result),
          });
          ctx.results[step.name] = result;
          const last = op!.last_error ? (JSON.parse(op!.last_error) as { step_name: string }) : null;
          if (last?.step_name === step.name) {
            await ops.updateRunningOperation(tx, op!.id, { last_error: null, updated_at: clock.now() });
            op!.last_error = null;
          }
          if (workflow!.cancellable && row.position < workflow!.steps.length - 1 && (await ops.isCancelRequested(tx, op!.id))) {
            await finish(tx, 'CANCELLED', `cancelled on request after step ${step.name}`);
            return 'stop' as const;
          }
          return 'next' as const;
        });
      } catch (err) {
        if (err instanceof LeaseLost) throw err;
        // apply() refused: a failure of the step like any other.
        failure = err;
      }
    }

    const message = messageOf(failure);
    const retryable = step.retryable !== false && !(failure instanceof StepError && !failure.retryable);
    const policy = step.retry ?? DEFAULT_RETRY;
    const lastError = JSON.stringify({ message, step_name: step.name });
    op!.last_error = lastError;
    const retryAt = clock.nowMs() + backoffMs(policy, attempt, deps.backoffScale);
    return fenced(async (tx) => {
      if (workflow!.cancellable && (await ops.isCancelRequested(tx, op!.id))) {
        await ops.updateStep(tx, op!.id, row.position, { status: 'failed', error_message: message });
        await ops.updateRunningOperation(tx, op!.id, { last_error: lastError, updated_at: clock.now() });
        await finish(tx, 'CANCELLED', `cancelled on request; step ${step.name} had failed: ${message}`);
        return 'stop' as const;
      }
      if (retryable && attempt < policy.maxAttempts) {
        await ops.updateStep(tx, op!.id, row.position, { status: 'failed', error_message: message });
        await ops.updateRunningOperation(tx, op!.id, { last_error: lastError, updated_at: clock.now() });
        await rescheduleJob(tx, job, retryAt);
        deps.wakeAt(retryAt);
        return 'stop' as const;
      }
      if (step.skippable) {
        await ops.updateStep(tx, op!.id, row.position, { status: 'skipped', error_message: message, completed_at: clock.now() });
        await ops.updateRunningOperation(tx, op!.id, { last_error: lastError, updated_at: clock.now() });
        ctx.results[step.name] = null;
        return 'next' as const;
      }
      await ops.updateStep(tx, op!.id, row.position, { status: 'failed', error_message: message });
      await ops.updateRunningOperation(tx, op!.id, { last_error: lastError, updated_at: clock.now() });
      await finish(tx, 'FAILED', `step ${step.name} failed: ${message}`);
      return 'stop' as const;
    });
  }
}
