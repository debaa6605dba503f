// DELETE /v1/workspaces/{id} (spec endpoint 2) and its `workspace.delete` workflow: stop the
// workspace's running operations, undeploy its installs, release its clusters, revoke its credentials, then remove it.
// The operation row outlives the workspace, so the requester can follow the deletion to its end.
import type { Executor } from '../../db/database.js';
import { StepError, type StepContext, type WorkflowDefinition } from '../../jobs/workflows.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch } from '../../platform/etag.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import * as repo from './workspaces.repo.js';
import { recordAuditEvent } from '../audit/audit.js';

export const WORKSPACE_DELETE = 'workspace.delete';

/**
 * New work in a workspace (a cluster, an install...) is refused once its deletion started. Locks
 * the workspace row, so the check is ordered against the deletion's switch to `deleting`.
 */
export async function assertWorkspaceActive(tx: Executor, workspaceId: string): Promise<void> {
  const locked = await repo.lockWorkspace(tx, workspaceId);
  if (locked?.state !== 'active') {
    throw new ApiError('FAILED_PRECONDITION', `workspace ${workspaceId} is being deleted`, { reason: 'WORKSPACE_DELETING' });
  }
}

type Input = Record<string, never>;

export interface WorkspaceDeletionDeps {
  operations: OperationService;
  /** undeploys every install of the workspace through its cluster's driver and deletes the rows; idempotent */
  releaseInstalls(workspaceId: string, ctx: StepContext<unknown>): Promise<void>;
  /** destroys the servers of the workspace's provisioned machines and deletes every machine; idempotent */
  releaseMachines(workspaceId: string, ctx: StepContext<unknown>): Promise<void>;
  /** destroys every cluster of the workspace through its driver and deletes the rows; idempotent */
  releaseClusters(workspaceId: string, ctx: StepContext<unknown>): Promise<void>;
  /**
   * SVC_BILLING=payments: ends the subscription paying for the workspace's plan at the provider (a
   * job does it after commit), in the transaction that starts the deletion
   */
  endPaidPlan(tx: Executor, workspaceId: string): Promise<void>;
}

export function createWorkspaceDeletion(deps: WorkspaceDeletionDeps) {
  const { operations } = deps;

  /**
   * Starts the deletion, or returns the one already running. The etag check and the switch to
   * `deleting` are one statement, so two concurrent deletions start one operation.
   */
  async function deleteWorkspace(scope: WorkspaceScope, revision: number | null, tx: Executor): Promise<OperationT> {
    if (scope.requesterOnly) throw notFound('workspace');
    requireRole(scope, 'admin');
    const now = clock.now();
    if (!(await repo.markDeleting(tx, scope.workspaceId, revision, now))) {
      const current = await repo.findWorkspaceState(tx, scope.workspaceId);
      if (!current) throw notFound('workspace');
      if (current.state === 'deleting') {
        const running = await operations.findRunning(tx, scope.workspaceId, WORKSPACE_DELETE);
        if (running) return running;
        throw new ApiError('ABORTED', 'the workspace is being deleted; retry shortly', { reason: 'WORKSPACE_DELETING', headers: { 'retry-after': '1' } });
      }
      throw etagMismatch(`workspace ${scope.workspaceId}`, current.revision);
    }
    await deps.endPaidPlan(tx, scope.workspaceId);
    const op = await operations.start(tx, {
      type: WORKSPACE_DELETE,
      workspaceId: scope.workspaceId,
      ownerType: 'workspace',
      ownerId: scope.workspaceId,
      clusterId: null,
      input: {},
      actor: actorOf(scope),
    });
    await recordAuditEvent(tx, scope, { action: 'workspace.delete', resourceType: 'workspace', resourceId: scope.workspaceId, metadata: { operation_id: op.id } });
    return op;
  }

  const workflow: WorkflowDefinition<Input> = {
    type: WORKSPACE_DELETE,
    // Halfway, a workspace has lost some of what it owned: there is nothing sensible to go back to.
    cancellable: false,
    // "Deleting workspace Acme": for notifications (a failed deletion leaves the row in place).
    async describe(tx, ctx) {
      const row = await repo.findWorkspace(tx, ctx.workspaceId);
      return row ? `Deleting workspace ${row.name}` : 'Deleting a workspace';
    },
    steps: [
      {
        name: 'cancel_operations',
        // Waits for cancelled operations to drain: up to ~10 minutes of backoff in all.
        retry: { maxAttempts: 40, initialDelayMs: 250, maxDelayMs: 20_000 },
        async run(ctx) {
          const running = await operations.cancelOthers({ workspace_id: ctx.workspaceId }, ctx.operationId);
          if (running > 0) throw new StepError(`waiting for ${running} running operation(s) of the workspace to end`);
        },
      },
      {
        name: 'delete_installs',
        // Before the clusters they run on. An install that cannot be undeployed (its cluster does
        // not answer) is given up after a few attempts; a failure beyond that skips the step, and
        // the rows go with the workspace.
        skippable: true,
        async run(ctx) {
          await deps.releaseInstalls(ctx.workspaceId, ctx as StepContext<unknown>);
        },
      },
      {
        name: 'delete_machines',
        // Provisioned servers cost money: each is destroyed at its provider. One that keeps failing
        // is given up after a few attempts, as a cluster is; the agents' credentials go with the workspace.
        skippable: true,
        async run(ctx) {
          await deps.releaseMachines(ctx.workspaceId, ctx as StepContext<unknown>);
        },
      },
      {
        name: 'delete_clusters',
        // A cluster that cannot be reached must not keep a workspace alive: skipped after retries.
        skippable: true,
        async run(ctx) {
          await deps.releaseClusters(ctx.workspaceId, ctx as StepContext<unknown>);
        },
      },
      {
        name: 'revoke_credentials',
        async apply(tx, ctx) {
          await repo.deleteApiTokensOf(tx, ctx.workspaceId);
          await repo.deleteOAuthClientsOf(tx, ctx.workspaceId);
        },
      },
      {
        name: 'remove_workspace',
        async apply(tx, ctx) {
          // Idempotency records stay until they expire (24 h): a retried DELETE still replays its operation.
          // Members, and whatever a skipped step left, go by foreign-key cascade.
          await repo.deleteWorkspace(tx, ctx.workspaceId);
        },
      },
    ],
    response: (ctx) => ({ workspace_id: ctx.workspaceId }),
  };

  return { deleteWorkspace, workflow };
}
