// The worker pool of one process: claims due jobs up to its concurrency, keeps each job's lease
// alive with a heartbeat, and wakes on notifications (a new job, a cancellation), on the timer of
// a retry it scheduled itself, and on a slow poll for everything else (another instance's retry,
// a dead worker's expired lease). Stopping lets running steps drain, then hands their jobs back.
import { AsyncResource } from 'node:async_hooks';
import type { Logger } from 'pino';
import type { Db, Dialect } from '../db/database.js';
import { clock } from '../platform/clock.js';
import type { Notifier } from './notifier.js';
import { claimNextJob, renewLease, rescheduleJob, type ClaimedJob } from './queue.js';
import { runOperationJob, type OperationStore } from './runner.js';
import type { WorkflowRegistry } from './workflows.js';
import type { InSpan } from '../platform/tracing.js';

/** Runs a claimed job of another kind than an operation's (an agent turn); the pool keeps its lease alive. */
export type JobHandler = (job: ClaimedJob, signal: AbortSignal, logger: Logger) => Promise<void>;

export interface WorkerPoolOptions {
  workerId: string;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  backoffScale: number;
}

export class WorkerPool {
  private readonly running = new Map<string, { done: Promise<void>; abort: AbortController }>();
  private stopping = false;
  private started = false;
  private filling = false;
  private refill = false;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly deps: {
      db: Db; dialect: Dialect; notifier: Notifier; workflows: WorkflowRegistry; logger: Logger; handlers: Map<string, JobHandler>;
      /** the operations' statements the runner needs (see runner.ts) */
      operations: OperationStore;
      /** each job run and each workflow step as a span (tracing); `untraced` runs them as they are */
      inSpan: InSpan;
    },
    private readonly options: WorkerPoolOptions,
  ) {
    // Claiming runs in the context the pool was made in, whoever wakes it: a request's notification
    // or a finished job's. Otherwise the claims and the jobs they start would belong to the async
    // context (with tracing: the span) of the request or the job that happened to wake the pool.
    this.fill = AsyncResource.bind(this.fill.bind(this));
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.unsubscribe = this.deps.notifier.subscribe('svc_jobs', () => void this.fill());
    void this.fill();
  }

  /** Sets the next wake-up no later than `ms` (epoch milliseconds). */
  private wakeAt(ms: number): void {
    if (this.stopping || ms >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = ms;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Infinity;
      void this.fill();
    }, Math.max(0, ms - clock.nowMs()));
    this.timer.unref();
  }

  /** Claims due jobs until the pool is full or none is due. Re-entrant calls coalesce. */
  private async fill(): Promise<void> {
    if (this.stopping) return;
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        while (!this.stopping && this.running.size < this.options.concurrency) {
          const job = await claimNextJob(this.deps.db, this.deps.dialect, this.options.workerId, this.options.leaseMs);
          if (!job) break;
          this.launch(job);
        }
      } while (this.refill && !this.stopping);
    } catch (err) {
      this.deps.logger.warn({ err }, 'claiming jobs failed; retrying at the next poll');
    } finally {
      this.filling = false;
      this.wakeAt(clock.nowMs() + this.options.pollMs);
    }
  }

  private launch(job: ClaimedJob): void {
    const abort = new AbortController();
    const { leaseMs } = this.options;
    const heartbeat = setInterval(() => {
      renewLease(this.deps.db, job, leaseMs).then(
        (held) => {
          if (!held) abort.abort(new Error('lease lost'));
        },
        (err) => this.deps.logger.warn({ err, job_id: job.id }, 'lease renewal failed'),
      );
    }, Math.max(100, Math.floor(leaseMs / 3)));
    heartbeat.unref();
    const handler = this.deps.handlers.get(job.kind);
    const { inSpan } = this.deps;
    const attributes = {
      'svc.job.id': job.id, 'svc.job.kind': job.kind, 'svc.job.claims': job.claims,
      ...(job.operationId ? { 'svc.operation.id': job.operationId } : {}), ...(job.agentTurnId ? { 'svc.agent_turn.id': job.agentTurnId } : {}),
    };
    const run = inSpan(`job ${job.kind}`, attributes, () => handler
      ? handler(job, abort.signal, this.deps.logger)
      : runOperationJob(
        {
          db: this.deps.db, dialect: this.deps.dialect, notifier: this.deps.notifier, workflows: this.deps.workflows, operations: this.deps.operations,
          backoffScale: this.options.backoffScale, wakeAt: (ms) => this.wakeAt(ms), inSpan,
        },
        job,
        abort.signal,
      ));
    const done = run
      .then(async () => {
        // Aborted for shutdown: hand the job back now rather than after the lease runs out.
        if (abort.signal.aborted && this.stopping) await rescheduleJob(this.deps.db, job, clock.nowMs());
      })
      .catch(async (err) => {
        // Not a step failure (those are recorded on the operation) but the runner's own, such as
        // the database being unreachable: back off by the job's claim count, 1 s doubling to 1 min.
        const delayMs = Math.min(60_000, 1000 * 2 ** Math.min(6, Math.max(0, job.claims - 1)));
        this.deps.logger.error({ err, job_id: job.id, operation_id: job.operationId, retry_in_ms: delayMs }, 'operation job failed; retrying it');
        await rescheduleJob(this.deps.db, job, clock.nowMs() + delayMs).catch(() => {});
      })
      .finally(() => {
        clearInterval(heartbeat);
        this.running.delete(job.id);
        if (!this.stopping) void this.fill();
      });
    this.running.set(job.id, { done, abort });
  }

  /** Stops claiming; waits up to `graceMs` for running steps, then aborts them and releases their jobs. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.unsubscribe?.();
    if (this.timer) clearTimeout(this.timer);
    const all = () => Promise.all([...this.running.values()].map((r) => r.done));
    let timeout: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace'>((resolve) => {
      timeout = setTimeout(() => resolve('grace'), graceMs);
    });
    const first = await Promise.race([all().then(() => 'drained' as const), graceOver]);
    clearTimeout(timeout);
    if (first === 'grace') {
      const jobs = [...this.running.entries()];
      for (const [, r] of jobs) r.abort.abort(new Error('worker shutting down'));
      await all();
    }
  }
}
