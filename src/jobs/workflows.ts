// Workflows declared once: an operation type -> its ordered, idempotent steps, each with its retry
// policy. The worker runs them; modules declare theirs next to the code they drive.
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface RetryPolicy {
  /** attempts in all, the first included */
  maxAttempts: number;
  /** delay before the first retry; doubles after each failure */
  initialDelayMs: number;
  /** the cap of the doubling */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, initialDelayMs: 500, maxDelayMs: 30_000 };

/** Capped exponential backoff with +-20% jitter, so retries of many operations do not align. */
export function backoffMs(policy: RetryPolicy, failedAttempt: number, scale = 1, random = Math.random): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, failedAttempt - 1));
  return Math.round(base * scale * (0.8 + 0.4 * random()));
}

/** What a running step sees. */
export interface StepContext<I> {
  operationId: string;
  workspaceId: string;
  ownerId: string;
  input: I;
  /** results of the steps completed before this one, by step name */
  results: Record<string, Json>;
  /** 1 on the first attempt of this step */
  attempt: number;
  /** aborted when the step must stop: its timeout, a lost lease, or shutdown */
  signal: AbortSignal;
}

/**
 * A step failure. Any other thrown error counts as retryable; `retryable: false` fails the step at
 * once (bad input, rejected credentials), and a skippable step is then skipped.
 */
export class StepError extends Error {
  constructor(message: string, readonly retryable = true) {
    super(message);
    this.name = 'StepError';
  }
}

export interface StepDefinition<I> {
  name: string;
  /** false: a failure is final at once */
  retryable?: boolean;
  retry?: RetryPolicy;
  /** a skippable step that fails for good is marked skipped and the workflow goes on */
  skippable?: boolean;
  /** a run longer than this is aborted and counts as a (retryable) failure */
  timeoutMs?: number;
  /**
   * The step's outside work (drivers, other systems); must be idempotent, because a crash after
   * it and before its completion is recorded runs it again. Returns the step's result.
   */
  run?(ctx: StepContext<I>): Promise<Json | void>;
  /**
   * The step's database effects, in the same transaction that records its completion: applied
   * exactly once, or not at all if the worker lost its lease.
   */
  apply?(tx: Transaction<Database>, ctx: StepContext<I>, result: Json | null): Promise<void>;
}

export type TerminalState = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface WorkflowDefinition<I = Record<string, Json>> {
  /** the operation type, e.g. `cluster.create`; also metadata.type and response.type */
  type: string;
  /** false: `:cancel` is 422 (a half-done run would leave things worse than either end) */
  cancellable: boolean;
  /**
   * true for removals: they start even when their cluster's operations/running quota is full, so
   * a quota never keeps anyone from deleting things (they still count while they run)
   */
  admittedOverQuota?: boolean;
  steps: StepDefinition<I>[];
  /** members of `response` beyond `type` and `cluster_id`, built from the step results */
  response?(ctx: StepContext<I>): Record<string, Json>;
  /** runs in the transaction that ends the operation, e.g. to set the owner's state */
  onEnd?(tx: Transaction<Database>, ctx: StepContext<I>, outcome: TerminalState): Promise<void>;
  /**
   * What the operation does, named as people know its resources ("Deploying wiki 1.2.0 on dev"):
   * a sentence start for notifications ("… failed"). Read in the transaction that ends the
   * operation, by primary key; must not throw for a resource that is gone (name it generically).
   * Without it the operation is named by its type.
   */
  describe?(tx: Transaction<Database>, ctx: StepContext<I>): Promise<string>;
}

/** An operation that just ended, as listeners of every operation's end see it. */
export interface OperationEnd {
  operationId: string;
  type: string;
  workspaceId: string;
  ownerId: string;
  /** the user who started it, when a user did */
  requestedByUser: string | null;
  outcome: TerminalState;
  /** error.message when FAILED or CANCELLED */
  message: string | null;
  /** what the operation did, by names (its workflow's describe, or its type): read only when asked */
  describe(): Promise<string>;
}

export type OperationEndListener = (tx: Transaction<Database>, end: OperationEnd) => Promise<void>;

/** The registry: one definition per operation type. */
export class WorkflowRegistry {
  private readonly byType = new Map<string, WorkflowDefinition<never>>();
  private readonly endListeners: OperationEndListener[] = [];

  /** Cross-cutting records of every operation's end (notifications): run in the transaction that ends it, once. */
  onOperationEnd(listener: OperationEndListener): void {
    this.endListeners.push(listener);
  }

  async operationEnded(tx: Transaction<Database>, end: OperationEnd): Promise<void> {
    for (const listener of this.endListeners) await listener(tx, end);
  }

  register<I>(definition: WorkflowDefinition<I>): void {
    if (this.byType.has(definition.type)) throw new Error(`workflow ${definition.type} is declared twice`);
    const names = new Set(definition.steps.map((s) => s.name));
    if (names.size !== definition.steps.length) throw new Error(`workflow ${definition.type} repeats a step name`);
    this.byType.set(definition.type, definition as unknown as WorkflowDefinition<never>);
  }

  /** Every registered operation type. */
  types(): string[] {
    return [...this.byType.keys()];
  }

  get(type: string): WorkflowDefinition<Record<string, Json>> | undefined {
    return this.byType.get(type) as WorkflowDefinition<Record<string, Json>> | undefined;
  }
}
