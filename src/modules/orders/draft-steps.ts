// The typed values of the order_draft workflows (order-workflows.ts). The job runner hands every
// step its operation's input and the earlier steps' results as JSON; an order_draft step is declared
// over typed values instead: `draftStep` decodes the job's JSON once, where the step begins, into a
// DraftStep, and each step's result has a declared TypeBox type (what the operation records).
import type { Transaction } from 'kysely';
import { Type, type Static } from 'typebox';
import type { Database } from '../../db/schema.js';
import { StringEnum } from '../../platform/http.js';
import { StepError, type Json, type RetryPolicy, type StepContext, type StepDefinition } from '../../jobs/workflows.js';

/** The order_draft workflows are started with no input: the draft (the operation's owner) holds everything they need. */
export const DraftWorkflowInput = Type.Object({}, { additionalProperties: false, description: 'no input: the draft holds it all' });

/** What a step of an order_draft workflow works on. */
export interface DraftStep {
  operationId: string;
  /** the draft, the operation's owner */
  draftId: string;
}

/** wait_cluster: true when the draft had moved on (it ended meanwhile), so there was nothing to wait for. */
export const WaitClusterResult = Type.Object({ moved_on: Type.Boolean() });
export type WaitClusterResultT = Static<typeof WaitClusterResult>;

/** Why release_cluster kept the draft's cluster: it registered none, or something the customer put there keeps it. */
export const CLUSTER_KEPT = ['NOT_ALLOCATED', 'CLUSTER_HAS_INSTALLS', 'CLUSTER_HAS_MACHINES', 'NOT_FOUND'] as const;
export type ClusterKept = (typeof CLUSTER_KEPT)[number];
export const isClusterKept = (reason: string | null): reason is ClusterKept => (CLUSTER_KEPT as readonly (string | null)[]).includes(reason);

/** release_cluster: whether the draft's cluster was released, or what kept it. */
export const ReleaseClusterResult = Type.Object({
  released: Type.Boolean(),
  kept: Type.Union([StringEnum(CLUSTER_KEPT), Type.Null()]),
});
export type ReleaseClusterResultT = Static<typeof ReleaseClusterResult>;

/** A failed operation's recorded error (operations.error, JSON): its message is what a draft's step reports. */
const OperationErrorJson = Type.Object({ message: Type.String() });

/**
 * TypeBox's value checker, imported on first use: it adds some 200 ms of module loading to every
 * process that imports it, and only the workers running an order's steps need it.
 */
let valueModule: Promise<typeof import('typebox/value')> | undefined;
const loadValue = async () => (await (valueModule ??= import('typebox/value'))).Value;

/** The message of an operation's recorded error, or `fallback` when it has none. */
export async function operationErrorMessage(error: string | null, fallback: string): Promise<string> {
  if (error === null) return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(error);
  } catch {
    return fallback;
  }
  return (await loadValue()).Check(OperationErrorJson, parsed) ? parsed.message : fallback;
}

/** The job's JSON decoded once: a step's typed view of its operation. A foreign input fails the step for good. */
export async function decodeDraftStep(ctx: StepContext<unknown>): Promise<DraftStep> {
  if (!(await loadValue()).Check(DraftWorkflowInput, ctx.input)) throw new StepError(`operation ${ctx.operationId} was not started as an order_draft workflow (its input)`, false);
  return { operationId: ctx.operationId, draftId: ctx.ownerId };
}

/** A step of an order_draft workflow over typed values (see StepDefinition for what run and apply promise). */
export interface DraftStepDefinition<R extends Json> {
  name: string;
  retry?: RetryPolicy;
  run?(step: DraftStep): Promise<R>;
  apply?(tx: Transaction<Database>, step: DraftStep): Promise<void>;
}

/** The runner's step for a typed one: the job's JSON decoded once where it begins, the typed result handed back. */
export function draftStep<R extends Json>(def: DraftStepDefinition<R>): StepDefinition<Record<string, Json>> {
  const { run, apply } = def;
  return {
    name: def.name,
    ...(def.retry ? { retry: def.retry } : {}),
    ...(run ? { run: async (ctx: StepContext<Record<string, Json>>) => run(await decodeDraftStep(ctx)) } : {}),
    ...(apply ? { apply: async (tx: Transaction<Database>, ctx: StepContext<Record<string, Json>>) => apply(tx, await decodeDraftStep(ctx)) } : {}),
  };
}
