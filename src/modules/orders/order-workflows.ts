// The service-driven phases of an order draft (API.md 8.7), each an operation with owner_type
// `order_draft` in the customer's workspace, whose steps resume after a crash at the first
// unfinished one and are never done twice: what a step creates is written in the transaction that
// records the step (the cluster, the install), and a step finding it already recorded does nothing.
// - order_draft.compute: register a local cluster in the customer's workspace, wait for it; then
//   `configure` (platform, cluster_ready) or `compute_bootstrap` (bring your own server). A quota
//   refusal ends the draft `quota_exceeded`; a cluster that fails, `cluster_allocation_failed`.
// - order_draft.deliver: install.create of the seller's version in the customer's workspace with
//   the draft's values, wait for it; then `done` (the order delivered). A failure ends the draft
//   `install_failed` (the order delivery_failed, the seller told); a quota refusal `quota_exceeded`.
// - order_draft.cleanup: expire open checkout sessions (a payment that raced in is refunded),
//   release the draft's cluster unless an install or a machine is on it, revoke its worker
//   bootstrap, give the offer's use back, then `terminated`.
// Steps are declared over typed values (draft-steps.ts): the job's JSON is decoded once where a
// step begins, and each step's result has a declared type.
import type { Db, Executor } from '../../db/database.js';
import { StepError, type RetryPolicy, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import { findClusterById } from '../clusters/clusters.service.js';
import type { ClusterService } from '../clusters/clusters.service.js';
import type { InstallService } from '../installs/installs.service.js';
import { revokeActiveBootstrap } from '../machines/worker-bootstraps.service.js';
import { orderDelivered, orderDeliveryFailed } from '../notifications/sources.js';
import type { OperationService } from '../operations/operations.service.js';
import { findVersion } from '../packages/packages.service.js';
import { findOperation, latestOperationOf } from '../operations/operations.service.js';
import { endDraft, finishTermination, ORDER_DRAFT_CLEANUP, ORDER_DRAFT_COMPUTE, ORDER_DRAFT_DELIVER } from './draft-endings.js';
import { recordOrderEvent } from './draft-events.js';
import { allows } from './draft-moves.js';
import { decodeDraftStep, draftStep, isClusterKept, operationErrorMessage, type DraftStep, type ReleaseClusterResultT, type WaitClusterResultT } from './draft-steps.js';
import { findOfferById } from './offer-uses.js';
import * as repo from './order-drafts.repo.js';
import { customerScope } from './order-drafts.service.js';
import { configuredValuesOf } from './order-drafts.view.js';
import type { TerminationReason } from './orders.schemas.js';

export interface OrderWorkflowDeps {
  db: Db;
  operations: Pick<OperationService, 'start'>;
  /** the views the drafts' and orders' events carry name it */
  publicUrl: string;
  clusters: Pick<ClusterService, 'createCluster' | 'deleteCluster'>;
  installs: Pick<InstallService, 'createDeliveredInstall'>;
  /** expires a draft's open checkout session at its provider (checkout.service.ts) */
  expireCheckout: (session: repo.CheckoutRow) => Promise<void>;
}

/** Waiting for another operation (a cluster, an install): checked soon, then every 2 s, for about `seconds`. */
function waitFor(seconds: number): RetryPolicy {
  return { maxAttempts: Math.ceil(seconds / 2) + 6, initialDelayMs: 100, maxDelayMs: 2000 };
}

const isQuota = (err: unknown) => err instanceof ApiError && err.options.reason === 'QUOTA_EXCEEDED';

async function draftOf(db: Executor, step: DraftStep): Promise<repo.DraftRow> {
  const row = await repo.findDraft(db, step.draftId);
  if (!row) throw new StepError(`order draft ${step.draftId} no longer exists`, false);
  return row;
}

/** "Delivering the order of "Wiki hosting"": the draft's offer by its title (a notification's wording). */
function describedAs(doing: string) {
  return async (tx: Executor, ctx: { ownerId: string }): Promise<string> => {
    const draft = await repo.findDraft(tx, ctx.ownerId);
    const offer = draft ? await findOfferById(tx, draft.offer_id) : undefined;
    return `${doing} ${offer ? `the order of "${offer.title}"` : 'an order'}`;
  };
}

export function orderWorkflows(deps: OrderWorkflowDeps): WorkflowDefinition[] {
  const { db } = deps;
  const end = (tx: Executor, draft: repo.DraftRow, reason: TerminationReason, move?: 'end' | 'deliveryFailed') =>
    endDraft(tx, deps, draft, reason, undefined, move);

  const compute: WorkflowDefinition = {
    type: ORDER_DRAFT_COMPUTE,
    cancellable: false,
    steps: [
      draftStep({
        name: 'register_cluster',
        async apply(tx, step) {
          const draft = await repo.lockDraft(tx, step.draftId);
          if (!draft || !allows('clusterRegistered', draft.status) || draft.cluster_id !== null) return;
          const scope = await customerScope(tx, draft);
          if (!scope) {
            await end(tx, draft, 'cluster_allocation_failed');
            return;
          }
          try {
            const op = await deps.clusters.createCluster(scope, { name: `order-${draft.id.replace('_', '-')}`, provider: 'local' }, tx);
            await repo.moveDraft(tx, draft.id, 'clusterRegistered', null, { cluster_id: op.owner_id, cluster_allocated: 1 }, clock.now());
          } catch (err) {
            if (!(err instanceof ApiError)) throw err;
            await end(tx, draft, isQuota(err) ? 'quota_exceeded' : 'cluster_allocation_failed');
          }
        },
      }),
      draftStep({
        name: 'wait_cluster',
        retry: waitFor(900),
        async run(step): Promise<WaitClusterResultT> {
          const draft = await draftOf(db, step);
          if (!allows('clusterReady', draft.status) || draft.cluster_id === null) return { moved_on: true };
          // The operation before the cluster: a cluster.create that succeeds between the two reads
          // then shows an active cluster, never a "finished but not active" one read the other way round.
          const op = await latestOperationOf(db, draft.cluster_id, 'cluster.create');
          const cluster = await findClusterById(db, draft.cluster_id);
          if (!cluster || cluster.state === 'deleting') throw new StepError(`cluster ${draft.cluster_id} is gone`, false);
          if (cluster.state === 'active') return { moved_on: false };
          if (op && (op.state === 'FAILED' || op.state === 'CANCELLED')) throw new StepError(`cluster ${cluster.id} could not be created (its cluster.create ${op.state})`, false);
          throw new StepError(`waiting for cluster ${cluster.id} (${cluster.state})`, true);
        },
        async apply(tx, step) {
          const draft = await repo.lockDraft(tx, step.draftId);
          if (!draft || !allows('clusterReady', draft.status)) return;
          const offer = (await findOfferById(tx, draft.offer_id))!;
          const next = offer.compute_mode === 'bring_your_own' ? 'compute_bootstrap' : 'configure';
          await repo.moveDraft(tx, draft.id, 'clusterReady', null, { status: next, cluster_ready: 1 }, clock.now());
        },
      }),
    ],
    async onEnd(tx, ctx, outcome) {
      if (outcome === 'SUCCEEDED') return;
      const draft = await repo.lockDraft(tx, (await decodeDraftStep(ctx)).draftId);
      if (draft && allows('clusterReady', draft.status)) await end(tx, draft, 'cluster_allocation_failed');
    },
    describe: describedAs('Preparing the compute of'),
  };

  const deliver: WorkflowDefinition = {
    type: ORDER_DRAFT_DELIVER,
    cancellable: false,
    describe: describedAs('Delivering'),
    steps: [
      draftStep({
        name: 'start_install',
        async apply(tx, step) {
          const draft = await repo.lockDraft(tx, step.draftId);
          if (!draft || !allows('installStarted', draft.status) || draft.install_operation_id !== null) return;
          const order = (await repo.findOrderOfDraft(tx, draft.id))!;
          const scope: WorkspaceScope | null = await customerScope(tx, draft);
          const version = await findVersion(tx, draft.seller_workspace_id, draft.package_version_id!);
          const failed = (message: string) => deliveryFailed(tx, draft, order, message);
          if (!scope) return failed(`the customer is no longer a member of workspace ${draft.workspace_id}`);
          if (!version) return failed('the package version sold no longer exists');
          try {
            const { operation, installId } = await deps.installs.createDeliveredInstall(scope, {
              version, values: configuredValuesOf(draft) ?? {}, clusterId: draft.cluster_id!,
            }, tx);
            const now = clock.now();
            await repo.moveDraft(tx, draft.id, 'installStarted', null, { install_operation_id: operation.id }, now);
            await repo.updateOrder(tx, order.id, { install_id: installId, install_operation_id: operation.id, delivery_started_at: now, status: 'delivery_running' }, now);
          } catch (err) {
            if (!(err instanceof ApiError)) throw err;
            if (isQuota(err)) {
              await markOrderFailed(tx, draft, order, err.message);
              await end(tx, draft, 'quota_exceeded', 'deliveryFailed');
              return;
            }
            await failed(err.message);
          }
        },
      }),
      draftStep({
        name: 'wait_install',
        retry: waitFor(3600),
        async run(step): Promise<null> {
          const draft = await draftOf(db, step);
          if (!allows('delivered', draft.status) || draft.install_operation_id === null) return null;
          const op = await findOperation(db, draft.install_operation_id);
          if (!op) throw new StepError(`install operation ${draft.install_operation_id} is gone`, false);
          if (op.state === 'RUNNING') throw new StepError('waiting for the install to become healthy', true);
          if (op.state !== 'SUCCEEDED') {
            throw new StepError(`the install failed: ${await operationErrorMessage(op.error, op.state)}`, false);
          }
          return null;
        },
        async apply(tx, step) {
          const draft = await repo.lockDraft(tx, step.draftId);
          if (!draft || !allows('delivered', draft.status)) return;
          const order = (await repo.findOrderOfDraft(tx, draft.id))!;
          const now = clock.now();
          await repo.moveDraft(tx, draft.id, 'delivered', null, {}, now);
          const delivered = (await repo.updateOrder(tx, order.id, { status: 'delivered', delivery_completed_at: now }, now))!;
          await recordOrderEvent(tx, 'order.delivered', delivered, deps.publicUrl);
          const offer = (await findOfferById(tx, draft.offer_id))!;
          const url = order.install_id ? (await repo.urlsOfInstalls(tx, [order.install_id]))[0]?.url ?? null : null;
          await orderDelivered(tx, {
            customerUserId: order.customer_user_id, customerWorkspaceId: order.customer_workspace_id, orderId: order.id,
            installId: order.install_id ?? '', offerTitle: offer.title, url,
          });
        },
      }),
    ],
    async onEnd(tx, ctx, outcome) {
      if (outcome === 'SUCCEEDED') return;
      const draft = await repo.lockDraft(tx, (await decodeDraftStep(ctx)).draftId);
      if (!draft || !allows('deliveryFailed', draft.status)) return;
      const order = (await repo.findOrderOfDraft(tx, draft.id))!;
      await deliveryFailed(tx, draft, order, 'the install failed; read its operation');
    },
  };

  async function markOrderFailed(tx: Executor, draft: repo.DraftRow, order: repo.OrderRow, message: string): Promise<void> {
    const now = clock.now();
    const failed = (await repo.updateOrder(tx, order.id, { status: 'delivery_failed', delivery_completed_at: now }, now))!;
    await recordOrderEvent(tx, 'order.delivery_failed', failed, deps.publicUrl);
    const offer = (await findOfferById(tx, draft.offer_id))!;
    await orderDeliveryFailed(tx, { sellerWorkspaceId: draft.seller_workspace_id, orderId: order.id, offerTitle: offer.title, customerEmail: draft.customer_email, message });
  }

  async function deliveryFailed(tx: Executor, draft: repo.DraftRow, order: repo.OrderRow, message: string): Promise<void> {
    await markOrderFailed(tx, draft, order, message);
    await end(tx, draft, 'install_failed', 'deliveryFailed');
  }

  const cleanup: WorkflowDefinition = {
    type: ORDER_DRAFT_CLEANUP,
    cancellable: false,
    describe: describedAs('Ending'),
    steps: [
      draftStep({
        name: 'expire_checkout',
        async run(step): Promise<null> {
          for (const session of await repo.openCheckoutsOf(db, step.draftId)) await deps.expireCheckout(session);
          return null;
        },
      }),
      draftStep({
        name: 'release_cluster',
        retry: waitFor(900),
        async run(step): Promise<ReleaseClusterResultT> {
          const draft = await draftOf(db, step);
          if (draft.cluster_allocated !== 1 || draft.cluster_id === null) return { released: false, kept: 'NOT_ALLOCATED' };
          const cluster = await findClusterById(db, draft.cluster_id);
          if (!cluster || cluster.state === 'deleting') return { released: true, kept: null };
          // A cluster still being created is deleted once its creation ends.
          if ((await latestOperationOf(db, cluster.id, 'cluster.create'))?.state === 'RUNNING') throw new StepError(`waiting for cluster ${cluster.id} to be created before releasing it`, true);
          const scope: WorkspaceScope = { workspaceId: cluster.workspace_id, role: 'owner', actorId: 'system' };
          try {
            await deps.clusters.deleteCluster(scope, cluster.id, null);
            return { released: true, kept: null };
          } catch (err) {
            // Something the customer put there keeps it (an install delivered, their own server): never undone.
            const reason = err instanceof ApiError ? err.options.reason ?? err.code : null;
            if (isClusterKept(reason)) return { released: false, kept: reason };
            throw err;
          }
        },
      }),
      draftStep({
        name: 'finish',
        async apply(tx, step) {
          const draft = await repo.lockDraft(tx, step.draftId);
          if (!draft) return;
          if (draft.bootstrap_id !== null) await revokeActiveBootstrap(tx, draft.bootstrap_id, clock.now());
          await finishTermination(tx, draft.id, deps.publicUrl);
        },
      }),
    ],
  };

  return [compute, deliver, cleanup];
}

export function registerOrderWorkflows(registry: WorkflowRegistry, deps: OrderWorkflowDeps): void {
  for (const workflow of orderWorkflows(deps)) registry.register(workflow);
}
