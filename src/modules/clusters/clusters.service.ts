// Clusters: register one (202, cluster.create), read, rename, delete (202, cluster.delete), and
// read or refresh its capabilities. Each state change and the operation that acts on it are
// written in one transaction; `reconciling` is claimed with one conditional statement, so two
// operations never act on a cluster at once (deletion excepted: it drains the others first).
import type { Db, Executor } from '../../db/database.js';
import { isUniqueViolation } from '../../db/database.js';
import { ClusterDriverError, type ClusterProvider, type DriverCallContext } from '../../drivers/cluster/driver.js';
import { assertValidKubeconfig, parseKubeconfig, type ParsedKubeconfig } from '../../drivers/cluster/kubeconfig.js';
import { localClusterCapabilities } from '../../drivers/cluster/local.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { runningOperations } from '../operations/operations.service.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import * as repo from './clusters.repo.js';
import { recordAuditEvent } from '../audit/audit.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import type { ClusterCapabilitiesViewT, ClusterT, CreateClusterBodyT, PatchClusterBodyT } from './clusters.schemas.js';
import {
  CLUSTER_CREATE, CLUSTER_DELETE, CLUSTER_REFRESH, releaseWorkspaceClusters, targetOf, type ClusterWorkflowDeps, type ReleaseWorkspaceClustersOptions,
} from './clusters.workflows.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { clusterNamesById, findCluster, findClusterById, KUBECONFIG_SEAL, type ClusterRow } from './clusters.repo.js';

/**
 * Rewrites the stored capabilities of a local cluster with its machines' nodes as they are now, in
 * the caller's transaction. The machines module calls it in the transaction of every change of a
 * machine's node (joined, ready, unreachable, cordoned, removed), so GET /v1/clusters/{id}/capabilities
 * shows an ACTIVE machine as a ready node at once. Other clusters keep what their driver reported.
 */
export async function syncClusterNodes(tx: Executor, clusterId: string): Promise<void> {
  const cluster = await repo.findClusterById(tx, clusterId);
  if (!cluster || cluster.provider !== 'local' || cluster.capabilities === null) return;
  const caps = await localClusterCapabilities(tx, clusterId);
  if (!caps) return;
  await repo.storeCapabilities(tx, clusterId, JSON.stringify(caps), caps.nodes.length, clock.now());
}

/**
 * Whether something still runs on a cluster, asked in the deletion's transaction after the cluster
 * row is marked deleting (and locked). The modules that put things on clusters are in this
 * module's group or a higher one; the composition root passes their checks in.
 */
export interface ClusterInUse {
  /** any install (in any state) on the cluster */
  installs(tx: Executor, clusterId: string): Promise<boolean>;
  /** any machine (in any state) in the cluster */
  machines(tx: Executor, clusterId: string): Promise<boolean>;
}

export interface ClusterServiceDeps extends ClusterWorkflowDeps {
  cursors: CursorCodec;
  operations: OperationService;
  publicUrl: string;
  /** SVC_TEST_HOOKS: whether a body may inject faults (`local.faults`) */
  testHooks: boolean;
  inUse: ClusterInUse;
}

const clusterDeleting = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `cluster ${id} is being deleted`, { reason: 'CLUSTER_DELETING' });


/**
 * How the preview router reaches a cluster's workloads (issue 36). Holds credentials: never
 * logged, never answered; the router only builds requests from it.
 */
export interface ClusterConnection {
  clusterId: string;
  provider: ClusterProvider;
  /** the operator's gateway address (origin, no trailing slash), else null */
  gatewayUrl: string | null;
  /** kubernetes: the current context of the decrypted kubeconfig, validated; null for local */
  kubeconfig: ParsedKubeconfig | null;
}

/** How long the preview router reuses a cluster's connection details (a PATCH in this process forgets them at once). */
const CONNECTION_TTL_MS = 5_000;
const CONNECTION_CACHE_MAX = 1_000;

/** A gateway address as stored: an http(s) origin without credentials, path, query or fragment. */
export function gatewayUrlOf(value: string, field: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fieldInvalid(field, 'gateway_url is not a URL; give the gateway\'s address, such as http://203.0.113.7 or https://gateway.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fieldInvalid(field, 'gateway_url must be an http or https URL');
  if (url.username || url.password) throw fieldInvalid(field, 'gateway_url must not carry credentials');
  if (url.pathname !== '/' || url.search || url.hash || /[?#]/.test(value)) throw fieldInvalid(field, 'gateway_url must have no path, query or fragment: requests keep their own path');
  return url.origin;
}

/** The provider options the body must and must not carry (the schema cannot say "iff"); faults only with the test hooks on. */
function checkProviderOptions(body: CreateClusterBodyT, provider: ClusterProvider, testHooks: boolean): void {
  if (provider === 'kubernetes') {
    if (body.kubeconfig === undefined) throw fieldInvalid('body.kubeconfig', 'kubeconfig is required with provider kubernetes');
    if (body.local !== undefined) throw fieldInvalid('body.local', 'local options are only accepted with provider local');
    assertValidKubeconfig(body.kubeconfig);
    return;
  }
  if (body.gateway_url !== undefined) throw fieldInvalid('body.gateway_url', 'gateway_url is only accepted with provider kubernetes');
  if (body.kubeconfig !== undefined) throw fieldInvalid('body.kubeconfig', 'kubeconfig is only accepted with provider kubernetes');
  const actions = (body.local?.faults ?? []).map((f) => f.action);
  if (actions.length > 0 && !testHooks) {
    throw fieldInvalid('body.local.faults', 'fault injection is a test hook, off on this service: the operator starts it with SVC_TEST_HOOKS=1 to allow local.faults (tests and demos only)');
  }
  if (new Set(actions).size !== actions.length) throw fieldInvalid('body.local.faults', 'at most one fault per action');
}

export function createClusterService(deps: ClusterServiceDeps) {
  const { db, cursors, operations, publicUrl } = deps;

  function toCluster(row: repo.ClusterRow): ClusterT {
    return {
      id: row.id,
      html_url: `${publicUrl}/clusters/${row.id}`,
      name: row.name,
      workspace_id: row.workspace_id,
      state: row.state as ClusterT['state'],
      provider: row.provider as ClusterProvider,
      reconciling: row.reconciling === 1,
      gateway_url: row.gateway_url,
      created_at: row.created_at,
      updated_at: row.updated_at,
      etag: etagOf(row.revision),
    };
  }

  async function findOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.ClusterRow> {
    const row = isId('cluster', id) ? await repo.findCluster(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('cluster');
    return row;
  }

  /** Registers the cluster (pending, reconciling) and starts cluster.create, in the caller's transaction. */
  async function createCluster(scope: WorkspaceScope, body: CreateClusterBodyT, tx: Executor): Promise<OperationT> {
    requireRole(scope, 'admin');
    const provider: ClusterProvider = body.provider ?? 'local';
    checkProviderOptions(body, provider, deps.testHooks);
    await assertWorkspaceActive(tx, scope.workspaceId);
    const now = clock.now();
    const faults = (body.local?.faults ?? []).map((f) => ({ action: f.action, fail_times: f.fail_times ?? 0, latency_ms: f.latency_ms ?? 0 }));
    const row: repo.ClusterRow = {
      id: newId('cluster'),
      workspace_id: scope.workspaceId,
      name: body.name,
      state: 'pending',
      provider,
      reconciling: 1,
      options: JSON.stringify(provider === 'local' ? { faults } : {}),
      kubeconfig_sealed: null,
      capabilities: null,
      capabilities_observed_at: null,
      gateway_url: body.gateway_url === undefined ? null : gatewayUrlOf(body.gateway_url, 'body.gateway_url'),
      node_count: 0,
      created_at: now,
      updated_at: now,
      revision: 1,
    };
    if (provider === 'kubernetes') row.kubeconfig_sealed = deps.keyring.seal(body.kubeconfig!, repo.KUBECONFIG_SEAL.context(row.id));
    await deps.quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'compute/clusters');
    if (!(await repo.insertClusterIfNameFree(tx, row))) {
      throw new ApiError('ALREADY_EXISTS', `a cluster named "${body.name}" already exists in the workspace`, { reason: 'CLUSTER_NAME_TAKEN' });
    }
    const op = await operations.start(tx, {
      type: CLUSTER_CREATE, workspaceId: scope.workspaceId, ownerType: 'cluster', ownerId: row.id, clusterId: row.id,
      input: {}, metadata: { cluster_name: row.name, provider }, actor: actorOf(scope),
    });
    await recordAuditEvent(tx, scope, {
      action: 'cluster.create', resourceType: 'cluster', resourceId: row.id, resourceName: row.name, metadata: { provider, operation_id: op.id },
    });
    return op;
  }

  async function getCluster(scope: WorkspaceScope, id: string): Promise<ClusterT> {
    return toCluster(await findOr404(db, scope, id));
  }

  async function listClusters(scope: WorkspaceScope, query: PageQueryT): Promise<Page<ClusterT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await repo.listClusters(db, scope.workspaceId, page);
    return cursors.page(rows, page, scope.workspaceId, {}, toCluster);
  }

  /**
   * Renames the cluster or sets its gateway address (if-match) and records cluster.update with
   * what it had, in one transaction. The preview router's copy of the connection is forgotten.
   */
  async function updateCluster(scope: WorkspaceScope, id: string, revision: number | null, body: PatchClusterBodyT): Promise<ClusterT> {
    requireRole(scope, 'admin');
    if (!isId('cluster', id)) throw notFound('cluster');
    const set: Partial<Pick<repo.ClusterRow, 'name' | 'gateway_url'>> = {};
    if (body.name !== undefined) set.name = body.name;
    if (body.gateway_url !== undefined) set.gateway_url = body.gateway_url === null ? null : gatewayUrlOf(body.gateway_url, 'body.gateway_url');
    const updated = await db.transaction().execute(async (tx) => {
      const before = await findOr404(tx, scope, id);
      if (set.gateway_url !== undefined && before.provider !== 'kubernetes') {
        throw fieldInvalid('body.gateway_url', 'gateway_url is only accepted on kubernetes clusters: a local cluster runs no workload to reach');
      }
      let row: repo.ClusterRow | undefined;
      try {
        row = await repo.updateClusterIfRevision(tx, scope.workspaceId, id, revision, set, clock.now());
      } catch (err) {
        if (isUniqueViolation(err)) throw new ApiError('ALREADY_EXISTS', `a cluster named "${body.name}" already exists in the workspace`, { reason: 'CLUSTER_NAME_TAKEN' });
        throw err;
      }
      if (!row) {
        const current = await findOr404(tx, scope, id);
        if (current.state === 'deleting') throw clusterDeleting(id);
        throw etagMismatch(`cluster ${id}`, current.revision);
      }
      const metadata: Record<string, string> = {};
      if (set.name !== undefined) metadata.previous_name = before.name;
      if (set.gateway_url !== undefined) metadata.previous_gateway_url = before.gateway_url ?? '';
      await recordAuditEvent(tx, scope, { action: 'cluster.update', resourceType: 'cluster', resourceId: id, resourceName: row.name, metadata });
      return toCluster(row);
    });
    connections.delete(id);
    return updated;
  }

  /**
   * The preview router's connection details of a cluster: its decrypted, validated kubeconfig and
   * gateway address, kept a few seconds (CONNECTION_TTL_MS) so a busy hostname does not decrypt
   * and parse per request; a change through this process forgets them at once, another process's
   * within the TTL. Null when the cluster is gone or being deleted. Throws ClusterDriverError when
   * the stored kubeconfig cannot be opened or no longer validates (its message names no secret).
   */
  const connections = new Map<string, { at: number; value: ClusterConnection | null }>();
  async function connectionOf(clusterId: string): Promise<ClusterConnection | null> {
    const now = Date.now();
    const cached = connections.get(clusterId);
    if (cached && now - cached.at < CONNECTION_TTL_MS) return cached.value;
    const row = await repo.findClusterById(db, clusterId);
    let value: ClusterConnection | null = null;
    if (row && row.state !== 'deleting') {
      const target = targetOf(row, deps.keyring);
      let kubeconfig: ParsedKubeconfig | null = null;
      if (target.kubeconfig !== null) {
        try {
          kubeconfig = parseKubeconfig(target.kubeconfig);
        } catch {
          throw new ClusterDriverError('the stored kubeconfig of the cluster is not valid any more; register the cluster again', false);
        }
      }
      value = { clusterId, provider: target.provider, gatewayUrl: row.gateway_url, kubeconfig };
    }
    if (connections.size >= CONNECTION_CACHE_MAX) connections.clear();
    connections.set(clusterId, { at: now, value });
    return value;
  }

  /**
   * Marks the cluster deleting and starts cluster.delete; while one runs, any DELETE returns it
   * (whatever its if-match: the caller asks for what is already happening).
   */
  async function deleteCluster(scope: WorkspaceScope, id: string, revision: number | null): Promise<OperationT> {
    requireRole(scope, 'admin');
    if (!isId('cluster', id)) throw notFound('cluster');
    return db.transaction().execute(async (tx) => {
      const running = await operations.findRunning(tx, id, CLUSTER_DELETE);
      if (running && running.workspace_id === scope.workspaceId) return running;
      const row = await repo.markDeletingIfRevision(tx, scope.workspaceId, id, revision, clock.now());
      if (!row) {
        const current = await findOr404(tx, scope, id);
        if (current.state === 'deleting') {
          // A concurrent DELETE won the race: its operation is committed by now.
          const winner = await operations.findRunning(tx, id, CLUSTER_DELETE);
          if (winner) return winner;
          throw clusterDeleting(id);
        }
        throw etagMismatch(`cluster ${id}`, current.revision);
      }
      // After the row is marked (and locked): an install created concurrently has either
      // committed by now (and is counted) or will find the cluster deleting (see createInstall).
      if (await deps.inUse.installs(tx, id)) {
        throw new ApiError('FAILED_PRECONDITION', `cluster ${id} still has installs; delete them first`, { reason: 'CLUSTER_HAS_INSTALLS' });
      }
      if (await deps.inUse.machines(tx, id)) {
        throw new ApiError('FAILED_PRECONDITION', `cluster ${id} still has machines; delete them first`, { reason: 'CLUSTER_HAS_MACHINES' });
      }
      const op = await operations.start(tx, {
        type: CLUSTER_DELETE, workspaceId: scope.workspaceId, ownerType: 'cluster', ownerId: id, clusterId: id,
        input: {}, metadata: { cluster_name: row.name, provider: row.provider }, actor: actorOf(scope),
      });
      await recordAuditEvent(tx, scope, { action: 'cluster.delete', resourceType: 'cluster', resourceId: id, resourceName: row.name, metadata: { operation_id: op.id } });
      return op;
    });
  }

  async function getCapabilities(scope: WorkspaceScope, id: string): Promise<ClusterCapabilitiesViewT> {
    const row = await findOr404(db, scope, id);
    if (row.capabilities === null || row.capabilities_observed_at === null) {
      throw new ApiError('FAILED_PRECONDITION', `the capabilities of cluster ${id} have not been observed yet; wait for its cluster.create operation`, {
        reason: 'CAPABILITIES_NOT_OBSERVED',
      });
    }
    return { ...JSON.parse(row.capabilities), observed_at: row.capabilities_observed_at };
  }

  /** Claims the cluster and starts cluster.capabilities.refresh, in the caller's transaction. */
  async function refreshCapabilities(scope: WorkspaceScope, id: string, tx: Executor): Promise<OperationT> {
    if (!isId('cluster', id)) throw notFound('cluster');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const row = await repo.claimForOperation(tx, scope.workspaceId, id, clock.now());
    if (!row) {
      const current = await findOr404(tx, scope, id);
      if (current.state === 'deleting') throw clusterDeleting(id);
      const [running] = await runningOperations(tx, { owner_id: id }, '');
      throw new ApiError('ABORTED', `another operation is running on cluster ${id}; wait for it, then retry`, {
        reason: 'OPERATION_IN_PROGRESS',
        ...(running ? { metadata: { operation_id: running.id } } : {}),
      });
    }
    const op = await operations.start(tx, {
      type: CLUSTER_REFRESH, workspaceId: scope.workspaceId, ownerType: 'cluster', ownerId: id, clusterId: id,
      input: {}, actor: actorOf(scope),
    });
    await recordAuditEvent(tx, scope, { action: 'cluster.capabilities.refresh', resourceType: 'cluster', resourceId: id, resourceName: row.name, metadata: { operation_id: op.id } });
    return op;
  }

  return {
    toCluster,
    createCluster,
    getCluster,
    listClusters,
    updateCluster,
    connectionOf,
    deleteCluster,
    getCapabilities,
    refreshCapabilities,
    /** For workspace deletion: see releaseWorkspaceClusters in clusters.workflows.ts. */
    releaseWorkspaceClusters: (workspaceId: string, ctx: DriverCallContext, options?: ReleaseWorkspaceClustersOptions) =>
      releaseWorkspaceClusters(deps, workspaceId, ctx, options),
  };
}

export type ClusterService = ReturnType<typeof createClusterService>;
