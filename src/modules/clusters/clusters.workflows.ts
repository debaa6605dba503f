// The cluster workflows: cluster.create, cluster.capabilities.refresh and cluster.delete, and the
// release of a whole workspace's clusters used by workspace deletion. The driver is chosen by the
// cluster's provider; a kubernetes cluster's kubeconfig is decrypted inside the step that needs it
// and never put in an operation's input or result.
import type { Db, Executor } from '../../db/database.js';
import {
  ClusterDriverError, type ClusterDriver, type ClusterProvider, type ClusterTarget, type DriverCallContext, type LocalFault,
} from '../../drivers/cluster/driver.js';
import { DEFAULT_RETRY, StepError, type Json, type RetryPolicy, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import { clock } from '../../platform/clock.js';
import type { Keyring } from '../../platform/keyring.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import type { OperationService } from '../operations/operations.service.js';
import { drainOperationsStep, releaseEach } from '../operations/operation-steps.js';
import * as repo from './clusters.repo.js';

export const CLUSTER_CREATE = 'cluster.create';
export const CLUSTER_REFRESH = 'cluster.capabilities.refresh';
export const CLUSTER_DELETE = 'cluster.delete';

/** Driver calls: 5 attempts, 0.5 s doubling to at most 30 s (about 7.5 s of backoff in all). */
const DRIVER_RETRY: RetryPolicy = DEFAULT_RETRY;

export interface ClusterWorkflowDeps {
  db: Db;
  drivers: ReadonlyMap<ClusterProvider, ClusterDriver>;
  operations: Pick<OperationService, 'cancelOthers'>;
  /** opens kubeconfigs */
  keyring: Keyring;
  quotas: Pick<QuotaService, 'enforce'>;
}

type Ctx = { ownerId: string; attempt: number; signal: AbortSignal };

/** What the driver needs to reach this cluster; decrypts the kubeconfig (never logged, never returned). */
export function targetOf(row: repo.ClusterRow, keyring: Keyring): ClusterTarget {
  const options = JSON.parse(row.options) as { faults?: LocalFault[] };
  let kubeconfig: string | null = null;
  if (row.kubeconfig_sealed !== null) {
    try {
      kubeconfig = keyring.open(row.kubeconfig_sealed, repo.KUBECONFIG_SEAL.context(row.id), repo.KUBECONFIG_SEAL.legacyPurpose);
    } catch {
      // No retry helps: the key it was sealed with is neither SVC_SECRET_KEY nor a previous key.
      throw new ClusterDriverError('the stored kubeconfig cannot be decrypted with the service keys (SVC_SECRET_KEY, SVC_PREVIOUS_SECRET_KEYS); register the cluster again', false);
    }
  }
  return { clusterId: row.id, provider: row.provider as ClusterProvider, faults: options.faults ?? [], kubeconfig };
}

/** The driver of the cluster's provider. */
export function driverFor(deps: Pick<ClusterWorkflowDeps, 'drivers'>, row: repo.ClusterRow): ClusterDriver {
  const driver = deps.drivers.get(row.provider as ClusterProvider);
  if (!driver) throw new ClusterDriverError(`no driver for provider ${row.provider}`, false);
  return driver;
}

/** Runs a driver call for a step: a driver's non-retryable failure fails the step at once. */
export async function driverStep<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ClusterDriverError) throw new StepError(err.message, err.retryable);
    throw err;
  }
}

/** "Creating cluster dev" and the like: the cluster by its name now (a notification's wording). */
function describedAs(doing: (name: string) => string) {
  return async (tx: Executor, ctx: { ownerId: string }): Promise<string> => {
    const row = await repo.findClusterById(tx, ctx.ownerId);
    return doing(row ? `cluster ${row.name}` : 'a cluster');
  };
}

async function clusterOf(db: Executor, ctx: Ctx): Promise<repo.ClusterRow> {
  const row = await repo.findClusterById(db, ctx.ownerId);
  if (!row) throw new StepError(`cluster ${ctx.ownerId} no longer exists`, false);
  return row;
}

export function clusterWorkflows(deps: ClusterWorkflowDeps): WorkflowDefinition[] {
  const { db } = deps;

  const readCapabilities = {
    name: 'read_capabilities',
    retry: DRIVER_RETRY,
    async run(ctx: Ctx): Promise<Json> {
      const row = await clusterOf(db, ctx);
      const caps = await driverStep(async () => driverFor(deps, row).capabilities(targetOf(row, deps.keyring), ctx));
      return caps as unknown as Json;
    },
    async apply(tx: Executor, ctx: Ctx, result: Json | null): Promise<void> {
      const nodes = (result as { nodes?: unknown[] } | null)?.nodes?.length ?? 0;
      await repo.storeCapabilities(tx, ctx.ownerId, JSON.stringify(result), nodes, clock.now());
    },
  };
  // A cluster being deleted stays `deleting`: releaseFromOperation leaves it alone.
  const activate = {
    name: 'activate',
    async apply(tx: Executor, ctx: Ctx): Promise<void> {
      await repo.releaseFromOperation(tx, ctx.ownerId, 'active', clock.now());
    },
  };

  const create: WorkflowDefinition = {
    type: CLUSTER_CREATE,
    cancellable: true,
    steps: [
      {
        name: 'provision',
        retry: DRIVER_RETRY,
        async run(ctx) {
          // The worker has picked the operation up. Written outside the step's transaction so it
          // shows while the driver works; conditional, so a repeated run changes nothing.
          const row = (await repo.markProvisioning(db, ctx.ownerId, clock.now())) ?? (await clusterOf(db, ctx));
          await driverStep(async () => driverFor(deps, row).provision(targetOf(row, deps.keyring), ctx));
          return null;
        },
      },
      readCapabilities,
      activate,
    ],
    async onEnd(tx, ctx, outcome) {
      if (outcome !== 'SUCCEEDED') await repo.releaseFromOperation(tx, ctx.ownerId, 'suspended', clock.now());
    },
    describe: describedAs((c) => `Creating ${c}`),
  };

  const refresh: WorkflowDefinition = {
    type: CLUSTER_REFRESH,
    cancellable: true,
    steps: [readCapabilities, activate],
    async onEnd(tx, ctx, outcome) {
      // A cluster that does not answer is suspended; a cancelled refresh says nothing about it.
      if (outcome === 'FAILED') await repo.releaseFromOperation(tx, ctx.ownerId, 'suspended', clock.now());
      if (outcome === 'CANCELLED') await repo.releaseFromOperation(tx, ctx.ownerId, null, clock.now());
    },
    describe: describedAs((c) => `Refreshing the capabilities of ${c}`),
  };

  const remove: WorkflowDefinition = {
    type: CLUSTER_DELETE,
    // Halfway through, the cluster may be released but still listed: finishing is the only way out.
    cancellable: false,
    admittedOverQuota: true,
    steps: [
      drainOperationsStep(deps.operations, 'cluster'),
      {
        name: 'release',
        retry: DRIVER_RETRY,
        // An unreachable cluster must not keep its registration alive forever.
        skippable: true,
        async run(ctx) {
          const row = await repo.findClusterById(db, ctx.ownerId);
          if (!row) return null;
          await driverStep(async () => driverFor(deps, row).destroy(targetOf(row, deps.keyring), ctx));
          return null;
        },
      },
      {
        name: 'remove',
        async apply(tx, ctx) {
          await repo.deleteCluster(tx, ctx.ownerId);
        },
      },
    ],
    async onEnd(tx, ctx, outcome) {
      if (outcome !== 'SUCCEEDED') await repo.abandonDeletion(tx, ctx.ownerId, clock.now());
    },
    describe: describedAs((c) => `Deleting ${c}`),
  };

  return [create, refresh, remove];
}

export function registerClusterWorkflows(registry: WorkflowRegistry, deps: ClusterWorkflowDeps): void {
  for (const workflow of clusterWorkflows(deps)) registry.register(workflow);
}

export interface ReleaseWorkspaceClustersOptions {
  /**
   * From this attempt of the calling step on, a cluster whose driver keeps failing is given up
   * (its row deleted anyway), as cluster.delete skips its release step: an unreachable cluster
   * must not block a workspace deletion. Default 3.
   */
  abandonFromAttempt?: number;
}

/**
 * For workspace deletion: releases every cluster of the workspace through its driver and deletes
 * its row. Idempotent: run it again after a crash or a failure and it picks up what is left.
 * Throws a retryable StepError while some driver fails and `abandonFromAttempt` is not reached.
 * Returns how many clusters were released and how many were given up.
 */
export async function releaseWorkspaceClusters(
  deps: ClusterWorkflowDeps,
  workspaceId: string,
  ctx: DriverCallContext,
  options: ReleaseWorkspaceClustersOptions = {},
): Promise<{ released: number; abandoned: number }> {
  const rows = await repo.listClustersOfWorkspace(deps.db, workspaceId);
  return releaseEach(rows, ctx, options.abandonFromAttempt ?? 3, 'cluster',
    (row) => driverFor(deps, row).destroy(targetOf(row, deps.keyring), ctx),
    (row) => repo.deleteCluster(deps.db, row.id));
}
