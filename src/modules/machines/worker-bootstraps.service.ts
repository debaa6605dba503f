// Worker bootstraps (API.md 8.5): one-time tokens that let one server join a cluster, and the join
// itself (POST /v1/machine_joins), which trades a token for a machine and its credential.
// The token is used with one conditional statement in the transaction that creates the machine,
// after the quota check that locks the workspace row: of two agents racing with one token one
// machine is made, and concurrent joins never pass compute/machines.
import type { Db, Executor } from '../../db/database.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import { findCluster, findClusterById, type ClusterRow } from '../clusters/clusters.service.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { bootstrapToken, cloudInit, hashToken, joinCommand, newMachineCredential, type AgentLaunch } from './join-tokens.js';
import * as repo from './machines.repo.js';
import type {
  BootstrapStatus, CreatedWorkerBootstrapT, MachineJoinBodyT, MachineJoinT, WorkerBootstrapT,
} from './machines.schemas.js';
import { nodeNameOf } from './machine-nodes.js';
import { machineView } from './machines.view.js';
import { recordEvent } from '../../events/record.js';

export interface WorkerBootstrapDeps {
  db: Db;
  cursors: CursorCodec;
  quotas: Pick<QuotaService, 'enforce'>;
  tokenKey: Buffer;
  launch: AgentLaunch;
  heartbeatSeconds: number;
  publicUrl: string;
}

const clusterDeleting = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `cluster ${id} is being deleted`, { reason: 'CLUSTER_DELETING' });

/** Machines are nodes of the service's local clusters; a kubernetes cluster takes nodes through its own tools (kubeadm join). */
export function assertClusterTakesMachines(cluster: ClusterRow): void {
  if (cluster.state === 'deleting') throw clusterDeleting(cluster.id);
  if (cluster.provider !== 'local') {
    throw new ApiError('FAILED_PRECONDITION',
      `cluster ${cluster.id} is a ${cluster.provider} cluster; machines join local clusters (join a node to a kubernetes cluster with its own tools, e.g. kubeadm join)`,
      { reason: 'CLUSTER_PROVIDER_UNSUPPORTED' });
  }
}

/**
 * Revokes the bootstrap if it is still active, in the caller's transaction (an order draft replacing
 * or ending the one it issued: the system's own cleanup, not audited as a person's revoke).
 */
export async function revokeActiveBootstrap(tx: Executor, id: string, now: number): Promise<void> {
  await repo.revokeBootstrapIfRevision(tx, id, null, now);
}

/** What a second use of a token hears, whether it lost a race or came later. */
const USED = 'it was used already (a token joins one server once)';

function rejected(why: string): ApiError {
  return new ApiError('UNAUTHENTICATED', `the join token was rejected: ${why}`, { reason: 'JOIN_TOKEN_REJECTED' });
}

export function createWorkerBootstrapService(deps: WorkerBootstrapDeps) {
  const { db, cursors } = deps;

  function statusOf(row: repo.BootstrapRow, now = clock.now()): BootstrapStatus {
    if (row.status === 'active' && row.expires_at <= now) return 'expired';
    return row.status as BootstrapStatus;
  }

  function toBootstrap(row: repo.BootstrapRow): WorkerBootstrapT {
    return {
      id: row.id, cluster_id: row.cluster_id, status: statusOf(row), expires_at: row.expires_at,
      used_by_machine_id: row.used_by_machine_id, created_by: row.created_by, created_at: row.created_at, etag: etagOf(row.revision),
    };
  }

  function withToken(row: repo.BootstrapRow): CreatedWorkerBootstrapT {
    const token = bootstrapToken(deps.tokenKey, row.id);
    return { ...toBootstrap(row), token, command: joinCommand(deps.launch, token), cloud_init: cloudInit(deps.launch, token) };
  }

  async function clusterOr404(executor: Executor, scope: WorkspaceScope, clusterId: string): Promise<ClusterRow> {
    const cluster = isId('cluster', clusterId) ? await findCluster(executor, scope.workspaceId, clusterId) : undefined;
    if (!cluster) throw notFound('cluster');
    return cluster;
  }

  /**
   * A bootstrap row for `clusterId`, in the caller's transaction: one made by a person, or
   * (`forMachineId`) the one a provisioned machine's server joins with.
   */
  async function insertBootstrap(tx: Executor, p: {
    workspaceId: string; clusterId: string; ttlSeconds: number; createdBy: string; forMachineId: string | null;
  }): Promise<repo.BootstrapRow> {
    const now = clock.now();
    const id = newId('workerBootstrap');
    const row: repo.BootstrapRow = {
      id, workspace_id: p.workspaceId, cluster_id: p.clusterId, token_hash: hashToken(bootstrapToken(deps.tokenKey, id)),
      status: 'active', expires_at: now + p.ttlSeconds, for_machine_id: p.forMachineId, used_by_machine_id: null, used_at: null,
      created_by: p.createdBy, created_at: now, updated_at: now, revision: 1,
    };
    await repo.insertBootstrap(tx, row);
    return row;
  }

  async function createBootstrap(scope: WorkspaceScope, clusterId: string, ttlSeconds: number, tx: Executor): Promise<CreatedWorkerBootstrapT> {
    requireRole(scope, 'admin');
    await assertWorkspaceActive(tx, scope.workspaceId);
    assertClusterTakesMachines(await clusterOr404(tx, scope, clusterId));
    const row = await insertBootstrap(tx, { workspaceId: scope.workspaceId, clusterId, ttlSeconds, createdBy: scope.actorId, forMachineId: null });
    await recordAuditEvent(tx, scope, {
      action: 'worker_bootstrap.create', resourceType: 'worker_bootstrap', resourceId: row.id,
      metadata: { cluster_id: clusterId, expires_at: String(row.expires_at) },
    });
    return withToken(row);
  }

  async function bootstrapOr404(executor: Executor, scope: WorkspaceScope, clusterId: string, id: string): Promise<repo.BootstrapRow> {
    const row = isId('cluster', clusterId) && isId('workerBootstrap', id) ? await repo.findBootstrap(executor, scope.workspaceId, clusterId, id) : undefined;
    if (!row || row.for_machine_id !== null) throw notFound('worker bootstrap');
    return row;
  }

  /** An idempotent replay of a creation: the same answer, token included. */
  async function loadCreated(scope: WorkspaceScope, clusterId: string, id: string): Promise<CreatedWorkerBootstrapT> {
    return withToken(await bootstrapOr404(db, scope, clusterId, id));
  }

  async function getBootstrap(scope: WorkspaceScope, clusterId: string, id: string): Promise<WorkerBootstrapT> {
    return toBootstrap(await bootstrapOr404(db, scope, clusterId, id));
  }

  async function listBootstraps(scope: WorkspaceScope, clusterId: string, query: PageQueryT): Promise<Page<WorkerBootstrapT>> {
    await clusterOr404(db, scope, clusterId);
    const page = cursors.request(query, scope.workspaceId, { cluster_id: clusterId });
    const rows = await repo.listBootstraps(db, scope.workspaceId, clusterId, page);
    return cursors.page(rows, page, scope.workspaceId, { cluster_id: clusterId }, toBootstrap);
  }

  async function revokeBootstrap(scope: WorkspaceScope, clusterId: string, id: string, revision: number | null): Promise<WorkerBootstrapT> {
    requireRole(scope, 'admin');
    return db.transaction().execute(async (tx) => {
      const current = await bootstrapOr404(tx, scope, clusterId, id);
      const status = statusOf(current);
      if (status !== 'active') {
        throw new ApiError('FAILED_PRECONDITION', `worker bootstrap ${id} is ${status}; only an active one can be revoked`, { reason: 'BOOTSTRAP_NOT_ACTIVE' });
      }
      const row = await repo.revokeBootstrapIfRevision(tx, id, revision, clock.now());
      if (!row) throw etagMismatch(`worker bootstrap ${id}`, current.revision);
      await recordAuditEvent(tx, scope, { action: 'worker_bootstrap.revoke', resourceType: 'worker_bootstrap', resourceId: id, metadata: { cluster_id: clusterId } });
      return toBootstrap(row);
    });
  }

  /**
   * POST /v1/machine_joins. A person's bootstrap makes a new machine (JOINING); a provisioned
   * machine's bootstrap hands its server the machine made for it. Either way the machine gets one
   * live credential, and its first heartbeat makes it ACTIVE.
   */
  async function join(body: MachineJoinBodyT, requestId: string | null): Promise<MachineJoinT> {
    const found = await repo.findBootstrapByHash(db, hashToken(body.token));
    if (!found) throw rejected('no such token');
    return db.transaction().execute(async (tx) => {
      const now = clock.now();
      const status = statusOf(found, now);
      if (status === 'used') throw rejected(USED);
      if (status === 'revoked') throw rejected('it was revoked');
      if (status === 'expired') throw rejected('it expired; create a new worker bootstrap');
      const cluster = await findClusterById(tx, found.cluster_id);
      if (!cluster) throw rejected('its cluster no longer exists');
      assertClusterTakesMachines(cluster);
      await assertWorkspaceActive(tx, found.workspace_id);
      const facts = JSON.stringify(body.facts);
      let machine: repo.MachineRow;
      if (found.for_machine_id !== null) {
        const existing = await repo.findMachineById(tx, found.for_machine_id);
        if (!existing || existing.state === 'DELETING') throw rejected('the machine it was made for is being deleted');
        if (!(await repo.consumeBootstrap(tx, found.id, existing.id, now))) throw rejected(USED);
        machine = { ...existing, node_name: existing.node_name ?? nodeNameOf(body.facts.hostname, existing.id), facts };
        await repo.recordJoin(tx, existing.id, machine.node_name!, facts, now);
        await repo.revokeCredentials(tx, existing.id, 'replaced', now);
      } else {
        // Counted under the workspace's row lock, before the token is spent: refused, it stays usable.
        await deps.quotas.enforce(tx, { workspaceId: found.workspace_id }, 'compute/machines');
        const id = newId('machine');
        if (!(await repo.consumeBootstrap(tx, found.id, id, now))) throw rejected(USED);
        machine = {
          id, workspace_id: found.workspace_id, cluster_id: found.cluster_id, name: null, origin: 'joined', provider: 'byo',
          instance_type: null, state: 'JOINING', node_name: nodeNameOf(body.facts.hostname, id), facts, last_heartbeat_at: null,
          expires_at: null, reconciling: 0, provider_server_id: null, created_by: found.created_by, created_at: now, updated_at: now, revision: 1,
        };
        await repo.insertMachine(tx, machine);
      }
      const credential = newMachineCredential();
      await repo.insertCredential(tx, {
        id: newId('machineCredential'), workspace_id: found.workspace_id, machine_id: machine.id, token_hash: hashToken(credential),
        created_at: now, revoked_at: null, revoked_reason: null,
      });
      // Reported in this transaction: a customer's own server joining the cluster of their order
      // draft moves the draft on (API.md 8.7), through the orders module's subscriber.
      const joined = machineView((await repo.findMachineById(tx, machine.id))!, deps.publicUrl);
      if (found.for_machine_id === null) await recordEvent(tx, { type: 'machine.created', workspace_id: machine.workspace_id, data: joined });
      await recordEvent(tx, { type: 'machine.joined', workspace_id: machine.workspace_id, data: joined });
      await recordAuditEvent(tx, { workspaceId: found.workspace_id, actor: { type: 'machine', id: machine.id }, requestId }, {
        action: 'worker_bootstrap.use', resourceType: 'worker_bootstrap', resourceId: found.id,
        metadata: { cluster_id: found.cluster_id, machine_id: machine.id, hostname: body.facts.hostname.slice(0, 253) },
      });
      return {
        machine_id: machine.id, workspace_id: machine.workspace_id, cluster_id: machine.cluster_id, node_name: machine.node_name!,
        credential, heartbeat_interval_seconds: deps.heartbeatSeconds,
      };
    });
  }

  return { toBootstrap, withToken, insertBootstrap, createBootstrap, loadCreated, getBootstrap, listBootstraps, revokeBootstrap, join };
}

export type WorkerBootstrapService = ReturnType<typeof createWorkerBootstrapService>;
