// Runs one claimed operation job: resumes the workflow at its first unfinished step, records each
// step's outcome under the job's lease (a worker that lost its lease commits nothing), retries a
// failing step with capped exponential backoff, honours cancellation between steps, and ends the
// operation exactly once. Each step costs one transaction: the completion of a step, the start of
// the next (or the end of the operation) and the cancellation check commit together.
import type { Selectable, Transaction } from 'kysely';
import type { Db, Dialect, Executor } from '../db/database.js';
import type { Database, OperationStepsTable, OperationsTable } from '../db/schema.js';
import { clock } from '../platform/clock.js';
import type { Notifier } from './notifier.js';
import { errorTypeOf, type InSpan, type SpanHandle } from '../platform/tracing.js';
import { completeJob, fenceJob, rescheduleJob, type ClaimedJob } from './queue.js';
import {
  backoffMs, DEFAULT_RETRY, StepError, type Json, type StepContext, type StepDefinition, type TerminalState, type WorkflowDefinition, type WorkflowRegistry,
} from './workflows.js';

const DEFAULT_STEP_TIMEOUT_MS = 5 * 60 * 1000;
const MAX_MESSAGE = 2000;

/** The lease moved to another worker (or the worker is stopping): stop, change nothing. */
class LeaseLost extends Error {}

export type OperationRecord = Selectable<OperationsTable>;
export type StepRecord = Selectable<OperationStepsTable>;

/**
 * The statements the runner needs on operations and their steps: the operations module's (its
 * repo), passed in by the composition root. Every update of an operation is guarded by
 * `state = 'RUNNING'` (terminal operations never change).
 */
export interface OperationStore {
  findOperation(db: Executor, id: string): Promise<OperationRecord | undefined>;
  /** the operation's steps, by position */
  listSteps(db: Executor, operationId: string): Promise<StepRecord[]>;
  /** marks a step running in one statement fenced by the job's lease; false when the lease was lost */
  markStepRunningFenced(db: Executor, job: { id: string; leaseToken: string }, operationId: string, position: number, attempts: number, startedAt: number): Promise<boolean>;
  /**
   * Completes step `position` and starts the next one in one statement; with `fence`, only while the
   * job is this worker's (and, `honourCancel`, no cancellation was asked): false when it changed nothing.
   */
  completeStepAndStartNext(
    db: Executor, operationId: string, position: number, completion: { completedAt: number; result: string },
    next: { attempts: number; startedAt: number }, fence?: { jobId: string; leaseToken: string; honourCancel: boolean },
  ): Promise<boolean>;
  /** updates a running operation; false when it already ended */
  updateRunningOperation(tx: Executor, id: string, set: Partial<OperationRecord>): Promise<boolean>;
  updateStep(tx: Executor, operationId: string, position: number, set: Partial<StepRecord>): Promise<void>;
}

export interface RunnerDeps {
  db: Db;
  dialect: Dialect;
  notifier: Notifier;
  workflows: WorkflowRegistry;
  operations: OperationStore;
  backoffScale: number;
  /** asks the pool to look for due jobs at this time (a retry's backoff ends) */
  wakeAt(ms: number): void;
  /** each step (its run and the transaction recording it) as a span (tracing) */
  inSpan: InSpan;
}

type Ctx = StepContext<Record<string, Json>>;
type Step = StepDefinition<Record<string, Json>>;

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

/**
 * A step's signal: aborted by the job's (lost lease, shutdown) or at the step's deadline. A plain
 * timer cleared by dispose(), not AbortSignal.any([..., AbortSignal.timeout()]): on Node 20 a
 * garbage collection can drop that timeout signal before it fires, and the step would never time
 * out (the kubernetes driver's request deadlines avoid it the same way).
 */
function stepDeadline(jobSignal: AbortSignal, ms: number, stepName: string): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onJobAbort = () => controller.abort(jobSignal.reason);
  if (jobSignal.aborted) onJobAbort();
  else jobSignal.addEventListener('abort', onJobAbort, { once: true });
  const timer = setTimeout(() => controller.abort(new Error(`step ${stepName} timed out after ${ms} ms`)), ms);
  return {
    signal: controller.signal,
    dispose() {
      clearTimeout(timer);
      jobSignal.removeEventListener('abort', onJobAbort);
    },
  };
}

export async function runOperationJob(deps: RunnerDeps, job: ClaimedJob, jobSignal: AbortSignal): Promise<void> {
  const { db, operations: ops } = deps;
  const op = job.operationId ? await ops.findOperation(db, job.operationId) : undefined;
  if (!op || op.state !== 'RUNNING') {
    await completeJob(db, job);
    return;
  }
  try {
    await new OperationRun(deps, job, jobSignal, op, await ops.listSteps(db, op.id)).run();
  } catch (err) {
    if (!(err instanceof LeaseLost)) throw err;
  }
}

class OperationRun {
  private readonly workflow: WorkflowDefinition<Record<string, Json>> | undefined;
  private readonly ctx: Ctx;
  /** step_name of the operation's last_error, to clear it when that step succeeds */
  private lastErrorStep: string | null;
  private readonly ops: OperationStore;

  constructor(
    private readonly deps: RunnerDeps,
    private readonly job: ClaimedJob,
    private readonly jobSignal: AbortSignal,
    private readonly op: OperationRecord,
    private readonly rows: StepRecord[],
  ) {
    this.ops = deps.operations;
    this.workflow = deps.workflows.get(op.type);
    this.ctx = {
      operationId: op.id, workspaceId: op.workspace_id, ownerId: op.owner_id,
      input: JSON.parse(op.input), results: {}, attempt: 0, signal: jobSignal,
    };
    this.lastErrorStep = op.last_error ? (JSON.parse(op.last_error) as { step_name: string }).step_name : null;
  }

  /** set by finish(): the end is announced once the transaction has committed */
  private ended = false;

  /** One transaction that commits only while this worker holds the job. */
  private async fenced<T>(fn: (tx: Transaction<Database>, cancelRequested: boolean) => Promise<T>): Promise<T> {
    const result = await this.deps.db.transaction().execute(async (tx) => {
      const fence = await fenceJob(tx, this.deps.dialect, this.job);
      if (!fence) throw new LeaseLost();
      return fn(tx, fence.cancelRequested && this.workflow?.cancellable === true);
    });
    if (this.ended) this.deps.notifier.announce('svc_operations', this.op.id);
    return result;
  }

  async run(): Promise<void> {
    const { workflow, op, rows } = this;
    if (!workflow) {
      await this.fenced((tx) => this.finish(tx, 'FAILED', `no workflow is declared for operation type ${op.type}`));
      return;
    }
    // Non-cancellable workflows ignore the request (a workspace deletion asks every operation).
    if (op.cancel_requested === 1 && workflow.cancellable) {
      await this.fenced((tx) => this.finish(tx, 'CANCELLED', 'cancelled on request'));
      return;
    }
    const drifted = rows.find((r) => workflow.steps[r.position]?.name !== r.name);
    if (drifted || rows.length !== workflow.steps.length) {
      await this.fenced((tx) => this.finish(tx, 'FAILED', `workflow ${op.type} changed since the operation started (step ${drifted?.name ?? rows.length})`));
      return;
    }
    let index = rows.findIndex((r) => r.status !== 'completed' && r.status !== 'skipped');
    for (const row of rows.slice(0, index === -1 ? rows.length : index)) {
      this.ctx.results[row.name] = row.result === null ? null : JSON.parse(row.result);
    }
    if (index === -1) {
      await this.fenced((tx) => this.finish(tx, 'SUCCEEDED', null));
      return;
    }
    const first = this.startAttempt(index);
    if (!(await this.ops.markStepRunningFenced(this.deps.db, this.job, op.id, index, first.attempts, first.startedAt))) throw new LeaseLost();
    while (index !== -1) index = await this.tracedStep(index);
  }

  /** runStep as the span `step <operation type>.<step name>` (with tracing on); a failed attempt marks it failed */
  private tracedStep(index: number): Promise<number> {
    const step = this.workflow!.steps[index]!;
    return this.deps.inSpan(`step ${this.op.type}.${step.name}`, {
      'svc.operation.id': this.op.id, 'svc.operation.type': this.op.type, 'svc.step.name': step.name, 'svc.step.attempt': this.rows[index]!.attempts,
    }, (span) => this.runStep(index, span));
  }

  /** Counts an attempt of step `index`; the caller writes it with the step's `running` status. */
  private startAttempt(index: number): { attempts: number; startedAt: number } {
    const row = this.rows[index]!;
    row.attempts += 1;
    row.started_at ??= clock.now();
    return { attempts: row.attempts, startedAt: row.started_at };
  }

  /** Runs step `index`; returns the next step to run, or -1 when this job is done with the operation. */
  private async runStep(index: number, span: SpanHandle): Promise<number> {
    const step = this.workflow!.steps[index]!;
    const row = this.rows[index]!;
    const deadline = stepDeadline(this.jobSignal, step.timeoutMs ?? DEFAULT_STEP_TIMEOUT_MS, step.name);
    const stepCtx: Ctx = { ...this.ctx, attempt: row.attempts, signal: deadline.signal };
    let result: Json | null = null;
    let failure: unknown = null;
    try {
      if (step.run) result = (await untilAborted(() => step.run!(stepCtx), deadline.signal)) ?? null;
    } catch (err) {
      failure = err;
    } finally {
      deadline.dispose();
    }
    // Lost lease or shutdown: leave the step to whoever resumes the job.
    if (this.jobSignal.aborted) throw new LeaseLost();
    if (failure === null) {
      try {
        span.set('svc.step.outcome', 'completed');
        if (await this.completeWithoutTransaction(index, step, result)) return index + 1;
        return await this.fenced((tx, cancelRequested) => this.completeStep(tx, cancelRequested, index, step, stepCtx, result));
      } catch (err) {
        if (err instanceof LeaseLost) throw err;
        failure = err; // apply() refused: a failure of the step like any other
      }
    }
    span.set('svc.step.outcome', 'failed');
    span.fail(errorTypeOf(failure));
    return this.fenced((tx, cancelRequested) => this.failStep(tx, cancelRequested, index, step, failure));
  }

  /**
   * A step without database effects, followed by another, completes in one fenced statement when
   * nothing else is pending (no last_error to clear, no cancellation): no transaction needed.
   */
  private async completeWithoutTransaction(index: number, step: Step, result: Json | null): Promise<boolean> {
    if (step.apply || this.lastErrorStep === step.name || index === this.rows.length - 1) return false;
    const attempt = this.rows[index + 1]!;
    const next = { attempts: attempt.attempts + 1, startedAt: attempt.started_at ?? clock.now() };
    const fence = { jobId: this.job.id, leaseToken: this.job.leaseToken, honourCancel: this.workflow!.cancellable };
    const done = await this.ops.completeStepAndStartNext(this.deps.db, this.op.id, index, { completedAt: clock.now(), result: JSON.stringify(result) }, next, fence);
    if (!done) return false;
    this.ctx.results[step.name] = result;
    attempt.attempts = next.attempts;
    attempt.started_at = next.startedAt;
    return true;
  }

  private async completeStep(tx: Transaction<Database>, cancelRequested: boolean, index: number, step: Step, stepCtx: Ctx, result: Json | null): Promise<number> {
    await step.apply?.(tx, stepCtx, result);
    this.ctx.results[step.name] = result;
    if (this.lastErrorStep === step.name) {
      await this.ops.updateRunningOperation(tx, this.op.id, { last_error: null, updated_at: clock.now() });
      this.lastErrorStep = null;
    }
    const completion = { completedAt: clock.now(), result: JSON.stringify(result) };
    if (index < this.rows.length - 1 && !cancelRequested) {
      await this.ops.completeStepAndStartNext(tx, this.op.id, index, completion, this.startAttempt(index + 1));
      return index + 1;
    }
    await this.ops.updateStep(tx, this.op.id, index, { status: 'completed', completed_at: completion.completedAt, error_message: null, result: completion.result });
    return this.advance(tx, cancelRequested, index, `after step ${step.name}`);
  }

  /** After step `index` completed or was skipped: end the operation, or start the next step. */
  private async advance(tx: Transaction<Database>, cancelRequested: boolean, index: number, when: string): Promise<number> {
    if (index === this.rows.length - 1) {
      await this.finish(tx, 'SUCCEEDED', null);
      return -1;
    }
    if (cancelRequested) {
      await this.finish(tx, 'CANCELLED', `cancelled on request ${when}`);
      return -1;
    }
    const next = this.startAttempt(index + 1);
    await this.ops.updateStep(tx, this.op.id, index + 1, { status: 'running', attempts: next.attempts, started_at: next.startedAt });
    return index + 1;
  }

  private async failStep(tx: Transaction<Database>, cancelRequested: boolean, index: number, step: Step, failure: unknown): Promise<number> {
    const message = messageOf(failure);
    const attempt = this.rows[index]!.attempts;
    const retryable = step.retryable !== false && !(failure instanceof StepError && !failure.retryable);
    const policy = step.retry ?? DEFAULT_RETRY;
    const now = clock.now();
    await this.ops.updateRunningOperation(tx, this.op.id, { last_error: JSON.stringify({ message, step_name: step.name }), updated_at: now });
    this.lastErrorStep = step.name;
    if (cancelRequested) {
      await this.ops.updateStep(tx, this.op.id, index, { status: 'failed', error_message: message });
      await this.finish(tx, 'CANCELLED', `cancelled on request; step ${step.name} had failed: ${message}`);
      return -1;
    }
    if (retryable && attempt < policy.maxAttempts) {
      await this.ops.updateStep(tx, this.op.id, index, { status: 'failed', error_message: message });
      const retryAt = clock.nowMs() + backoffMs(policy, attempt, this.deps.backoffScale);
      await rescheduleJob(tx, this.job, retryAt);
      this.deps.wakeAt(retryAt);
      return -1;
    }
    if (step.skippable) {
      await this.ops.updateStep(tx, this.op.id, index, { status: 'skipped', error_message: message, completed_at: now });
      this.ctx.results[step.name] = null;
      return this.advance(tx, cancelRequested, index, `after skipping step ${step.name}`);
    }
    await this.ops.updateStep(tx, this.op.id, index, { status: 'failed', error_message: message });
    await this.finish(tx, 'FAILED', `step ${step.name} failed: ${message}`);
    return -1;
  }

  /** Ends the operation (once: terminal operations never change), releases the job, tells waiters. */
  private async finish(tx: Transaction<Database>, outcome: TerminalState, message: string | null): Promise<void> {
    const { op, workflow, ctx } = this;
    const now = clock.now();
    const metadata = JSON.parse(op.metadata) as { cluster_id: string | null };
    const response = outcome === 'SUCCEEDED'
      ? JSON.stringify({ ...(workflow?.response?.(ctx) ?? {}), type: op.type, cluster_id: metadata.cluster_id })
      : null;
    const ended = await this.ops.updateRunningOperation(tx, op.id, {
      state: outcome, completed_at: now, updated_at: now, response,
      error: message === null ? null : JSON.stringify({ message }),
    });
    if (ended) {
      await workflow?.onEnd?.(tx, ctx, outcome);
      await this.deps.workflows.operationEnded(tx, {
        operationId: op.id, type: op.type, workspaceId: op.workspace_id, ownerId: op.owner_id,
        requestedByUser: op.requested_by_user, outcome, message,
        describe: async () => (workflow?.describe ? workflow.describe(tx, ctx) : `Operation ${op.type}`),
      });
    }
    await completeJob(tx, this.job);
    this.ended = true;
  }
}
