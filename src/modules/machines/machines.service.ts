// Machines (API.md 8.5): read, rename or set the expiry (if-match), delete, suspend and resume
// (202 operations), provision one through the compute provider, and the agent's heartbeat. Each
// state change and the operation that acts on it are one transaction; a machine is claimed for an
// operation with one conditional statement, so two never act on it at once (deletion drains the others).
import type { Db, Executor } from '../../db/database.js';
import type { ComputeProvider } from '../../drivers/compute/driver.js';
import { requireRole, type MachinePrincipal, type TokenVerifier, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import { findCluster, syncClusterNodes } from '../clusters/clusters.service.js';
import { machineReachable } from '../notifications/sources.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { runningOperations } from '../operations/operations.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { hashToken } from './join-tokens.js';
import * as repo from './machines.repo.js';
import { machineView } from './machines.view.js';
import {
  MACHINE_CREDENTIAL_PREFIX, type CreateMachineBodyT, type MachineFactsT, type MachineHeartbeatT, type MachineState, type MachineT,
  type PatchMachineBodyT,
} from './machines.schemas.js';
import { MACHINE_CREATE, MACHINE_DELETE, MACHINE_RESUME, MACHINE_SUSPEND, startMachineDeletion } from './machines.workflows.js';
import { assertClusterTakesMachines, type WorkerBootstrapService } from './worker-bootstraps.service.js';

export interface MachineServiceDeps {
  db: Db;
  cursors: CursorCodec;
  operations: OperationService;
  quotas: Pick<QuotaService, 'enforce'>;
  bootstraps: Pick<WorkerBootstrapService, 'insertBootstrap'>;
  /** the provider POST /v1/machines provisions through */
  compute: () => ComputeProvider;
  publicUrl: string;
  heartbeatSeconds: number;
  joinTimeoutSeconds: number;
}

const machineDeleting = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `machine ${id} is being deleted`, { reason: 'MACHINE_DELETING' });

export function createMachineService(deps: MachineServiceDeps) {
  const { db, cursors, operations } = deps;

  const toMachine = (row: repo.MachineRow): MachineT => machineView(row, deps.publicUrl);

  async function findOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.MachineRow> {
    const row = isId('machine', id) ? await repo.findMachine(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('machine');
    return row;
  }

  function assertFuture(expiresAt: number | null | undefined, field: string): void {
    if (expiresAt !== undefined && expiresAt !== null && expiresAt <= clock.now()) throw fieldInvalid(field, 'must be in the future (Unix seconds)');
  }

  async function getMachine(scope: WorkspaceScope, id: string): Promise<MachineT> {
    return toMachine(await findOr404(db, scope, id));
  }

  async function listMachines(scope: WorkspaceScope, query: PageQueryT & repo.MachineFilters): Promise<Page<MachineT>> {
    const filters: repo.MachineFilters = { cluster_id: query.cluster_id, state: query.state };
    const page = cursors.request(query, scope.workspaceId, filters as Record<string, unknown>);
    const rows = await repo.listMachines(db, scope.workspaceId, filters, page);
    return cursors.page(rows, page, scope.workspaceId, filters as Record<string, unknown>, toMachine);
  }

  async function patchMachine(scope: WorkspaceScope, id: string, revision: number | null, body: PatchMachineBodyT): Promise<MachineT> {
    requireRole(scope, 'admin');
    assertFuture(body.expires_at, 'body.expires_at');
    if (!isId('machine', id)) throw notFound('machine');
    const row = await repo.patchMachineIfRevision(db, scope.workspaceId, id, revision, body, clock.now());
    if (row) return toMachine(row);
    const current = await findOr404(db, scope, id);
    if (current.state === 'DELETING') throw machineDeleting(id);
    throw etagMismatch(`machine ${id}`, current.revision);
  }

  /** POST /v1/machines: the record (PROVISIONING), its server's bootstrap and machine.create, in the caller's transaction. */
  async function createMachine(scope: WorkspaceScope, body: CreateMachineBodyT, tx: Executor): Promise<OperationT> {
    requireRole(scope, 'admin');
    const compute = deps.compute();
    if (!compute.instanceTypes.includes(body.instance_type)) {
      throw fieldInvalid('body.instance_type', `the ${compute.name} compute provider offers ${compute.instanceTypes.join(', ')}`);
    }
    assertFuture(body.expires_at, 'body.expires_at');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const cluster = isId('cluster', body.cluster_id) ? await findCluster(tx, scope.workspaceId, body.cluster_id) : undefined;
    if (!cluster) throw notFound('cluster');
    assertClusterTakesMachines(cluster);
    await deps.quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'compute/machines');
    const now = clock.now();
    const row: repo.MachineRow = {
      id: newId('machine'), workspace_id: scope.workspaceId, cluster_id: cluster.id, name: body.name ?? null, origin: 'provisioned',
      provider: compute.name, instance_type: body.instance_type, state: 'PROVISIONING', node_name: null, facts: null,
      last_heartbeat_at: null, expires_at: body.expires_at ?? null, reconciling: 1, provider_server_id: null,
      created_by: scope.actorId, created_at: now, updated_at: now, revision: 1,
    };
    await repo.insertMachine(tx, row);
    // The server's one-time token: lives as long as machine.create may wait for it, and a while more.
    await deps.bootstraps.insertBootstrap(tx, {
      workspaceId: scope.workspaceId, clusterId: cluster.id, ttlSeconds: deps.joinTimeoutSeconds + 3600, createdBy: scope.actorId, forMachineId: row.id,
    });
    await recordAuditEvent(tx, scope, {
      action: 'machine.create', resourceType: 'machine', resourceId: row.id,
      metadata: { cluster_id: cluster.id, provider: row.provider, instance_type: body.instance_type },
    });
    return operations.start(tx, {
      type: MACHINE_CREATE, workspaceId: scope.workspaceId, ownerType: 'machine', ownerId: row.id, clusterId: cluster.id,
      input: {}, metadata: { machine_name: row.name, provider: row.provider, instance_type: body.instance_type }, actor: actorOf(scope),
    });
  }

  /** DELETE: marks it DELETING and starts machine.delete; while one runs, any DELETE returns it. */
  async function deleteMachine(scope: WorkspaceScope, id: string, revision: number | null): Promise<OperationT> {
    requireRole(scope, 'admin');
    if (!isId('machine', id)) throw notFound('machine');
    return db.transaction().execute(async (tx) => {
      const running = await operations.findRunning(tx, id, MACHINE_DELETE);
      if (running && running.workspace_id === scope.workspaceId) return running;
      const row = await repo.markDeletingIfRevision(tx, scope.workspaceId, id, revision, clock.now());
      if (!row) {
        const current = await findOr404(tx, scope, id);
        if (current.state === 'DELETING') {
          const winner = await operations.findRunning(tx, id, MACHINE_DELETE);
          if (winner) return winner;
          throw machineDeleting(id);
        }
        throw etagMismatch(`machine ${id}`, current.revision);
      }
      await recordAuditEvent(tx, scope, {
        action: 'machine.delete', resourceType: 'machine', resourceId: id, metadata: { cluster_id: row.cluster_id, provider: row.provider },
      });
      return startMachineDeletion(operations, tx, row, actorOf(scope), 'requested');
    });
  }

  /** :suspend and :resume: claim the machine from the states the verb applies to, then start its operation. */
  async function startVerb(scope: WorkspaceScope, id: string, revision: number | null, verb: 'suspend' | 'resume', tx: Executor): Promise<OperationT> {
    requireRole(scope, 'admin');
    if (!isId('machine', id)) throw notFound('machine');
    const from: MachineState[] = verb === 'suspend' ? ['ACTIVE', 'UNREACHABLE'] : ['SUSPENDED'];
    const row = await repo.claimMachine(tx, scope.workspaceId, id, revision, from, null, clock.now());
    if (!row) {
      const current = await findOr404(tx, scope, id);
      if (current.state === 'DELETING') throw machineDeleting(id);
      if (!from.includes(current.state as MachineState)) {
        throw new ApiError('FAILED_PRECONDITION', `machine ${id} is ${current.state}; :${verb} applies to ${from.join(' or ')} machines`, { reason: 'MACHINE_STATE' });
      }
      if (current.reconciling === 1) {
        const [op] = await runningOperations(tx, { owner_id: id }, '');
        throw new ApiError('ABORTED', `another operation is running on machine ${id}; wait for it, then retry`, {
          reason: 'OPERATION_IN_PROGRESS', ...(op ? { metadata: { operation_id: op.id } } : {}),
        });
      }
      throw etagMismatch(`machine ${id}`, current.revision);
    }
    return operations.start(tx, {
      type: verb === 'suspend' ? MACHINE_SUSPEND : MACHINE_RESUME, workspaceId: scope.workspaceId, ownerType: 'machine', ownerId: id,
      clusterId: row.cluster_id, input: {}, metadata: { machine_name: row.name }, actor: actorOf(scope),
    });
  }

  /** Machine credentials (`svcm_...`) -> the machine principal; a revoked one is 401 with the reason its agent acts on. */
  const verifier: TokenVerifier = {
    async verify(token) {
      if (!token.startsWith(MACHINE_CREDENTIAL_PREFIX)) return null;
      const [row] = await repo.findCredentialByHash(db, { hash: hashToken(token) });
      if (!row) return null;
      if (row.revoked_at !== null) {
        if (row.revoked_reason === 'machine_deleted') {
          throw new ApiError('UNAUTHENTICATED', `machine ${row.machine_id} was deleted; its agent should stop`, { reason: 'MACHINE_DELETED' });
        }
        throw new ApiError('UNAUTHENTICATED', `the credential of machine ${row.machine_id} was revoked`, { reason: 'MACHINE_CREDENTIAL_REVOKED' });
      }
      const principal: MachinePrincipal = { kind: 'machine', machineId: row.machine_id, workspaceId: row.workspace_id, credentialId: row.id };
      return principal;
    },
  };

  /** One heartbeat: one statement, plus a transaction only when the machine's node changes (joined, back from UNREACHABLE). */
  async function heartbeat(principal: MachinePrincipal, facts: MachineFactsT | undefined): Promise<MachineHeartbeatT> {
    const now = clock.now();
    const [row] = await repo.recordHeartbeat(db, { id: principal.machineId, now, facts: facts ? JSON.stringify(facts) : null });
    if (!row) throw new ApiError('UNAUTHENTICATED', `machine ${principal.machineId} was deleted; its agent should stop`, { reason: 'MACHINE_DELETED' });
    if (row.state === 'ACTIVE' && Number(row.updated_at) === now) {
      await db.transaction().execute(async (tx) => {
        await syncClusterNodes(tx, row.cluster_id);
        await machineReachable(tx, row.id, 'heartbeat');
      });
    }
    return {
      machine_id: row.id, state: row.state as MachineState, schedulable: row.state !== 'SUSPENDED' && row.state !== 'DELETING',
      heartbeat_interval_seconds: deps.heartbeatSeconds,
    };
  }

  return {
    toMachine, getMachine, listMachines, patchMachine, createMachine, deleteMachine,
    suspendMachine: (scope: WorkspaceScope, id: string, revision: number | null, tx: Executor) => startVerb(scope, id, revision, 'suspend', tx),
    resumeMachine: (scope: WorkspaceScope, id: string, revision: number | null, tx: Executor) => startVerb(scope, id, revision, 'resume', tx),
    verifier, heartbeat,
  };
}

export type MachineService = ReturnType<typeof createMachineService>;
