// The machine workflows (API.md 8.5), each an operation with owner_type `machine`:
// - machine.create: create the server through the compute provider (found again by its label
//   after a crash, so one request never makes two servers), wait for it to run and for its agent
//   to join; a failure or cancel hands the machine to machine.delete, which releases the server.
// - machine.delete: cordon and drain, destroy a provisioned machine's server, remove the node,
//   revoke the credential, remove the record.
// - machine.suspend / machine.resume: cordon (and power a provisioned server off) / power it on,
//   wait for its agent, uncordon.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db, Executor } from '../../db/database.js';
import { ComputeProviderError, type ComputeProvider, type ComputeCallContext } from '../../drivers/compute/driver.js';
import { StepError, type Json, type RetryPolicy, type StepContext, type WorkflowDefinition, type WorkflowRegistry } from '../../jobs/workflows.js';
import { clock } from '../../platform/clock.js';
import { clusterNamesById, syncClusterNodes } from '../clusters/clusters.service.js';
import { drainOperationsStep, releaseEach } from '../operations/operation-steps.js';
import { SYSTEM_ACTOR, type OperationService } from '../operations/operations.service.js';
import { machineLabel, machineReachable, supersedeMachineNotices } from '../notifications/sources.js';
import { bootstrapToken, cloudInit, type AgentLaunch } from './join-tokens.js';
import * as repo from './machines.repo.js';

export const MACHINE_CREATE = 'machine.create';
export const MACHINE_DELETE = 'machine.delete';
export const MACHINE_SUSPEND = 'machine.suspend';
export const MACHINE_RESUME = 'machine.resume';

export interface MachineWorkflowDeps {
  db: Db;
  /** compute providers by name (the machine's `provider`) */
  compute: ReadonlyMap<string, ComputeProvider>;
  operations: Pick<OperationService, 'cancelOthers' | 'start'>;
  tokenKey: Buffer;
  launch: AgentLaunch;
  heartbeatSeconds: number;
  joinTimeoutSeconds: number;
}

type Ctx = StepContext<Record<string, Json>>;

/** Provider calls: 8 attempts, 1 s doubling to 30 s. */
const PROVIDER_RETRY: RetryPolicy = { maxAttempts: 8, initialDelayMs: 1000, maxDelayMs: 30_000 };

/** Waiting for a server to boot or an agent to report, checked every 5 s at most, for about `seconds`. */
function waitPolicy(seconds: number): RetryPolicy {
  return { maxAttempts: Math.ceil(seconds / 5) + 4, initialDelayMs: 1000, maxDelayMs: 5000 };
}


/** A DNS-safe server name for the machine (underscores are not allowed in host names). */
export const serverNameOf = (machineId: string) => `svc-${machineId.replace('_', '-')}`;

/** The compute provider of a provisioned machine; none configured is final. */
function providerFor(compute: ReadonlyMap<string, ComputeProvider>, row: repo.MachineRow): ComputeProvider {
  const provider = compute.get(row.provider);
  if (!provider) throw new StepError(`no compute provider ${row.provider} is configured in this service`, false);
  return provider;
}

/**
 * Destroys a provisioned machine's server, found by its label when its id was never recorded (a
 * creation interrupted before it); returns the server's id, or null when there was none.
 */
async function destroyServer(provider: ComputeProvider, row: repo.MachineRow, call: ComputeCallContext): Promise<string | null> {
  const serverId = row.provider_server_id ?? (await provider.findServer(row.id, call))?.serverId ?? null;
  if (serverId) await provider.deleteServer(serverId, call);
  return serverId;
}

/** "Creating machine web-1 on dev" and the like: the machine and its cluster by their names now (a notification's wording). */
function describedAs(doing: string) {
  return async (tx: Executor, ctx: { ownerId: string }): Promise<string> => {
    const row = await repo.findMachineById(tx, ctx.ownerId);
    if (!row) return `${doing} a machine`;
    const cluster = (await clusterNamesById(tx, [row.cluster_id])).get(row.cluster_id);
    const label = machineLabel({ name: row.name ?? row.node_name, provider: row.provider, instanceType: row.instance_type });
    return `${doing} ${label}${cluster ? ` on ${cluster}` : ''}`;
  };
}

async function machineOf(db: Executor, ctx: Ctx): Promise<repo.MachineRow> {
  const row = await repo.findMachineById(db, ctx.ownerId);
  if (!row) throw new StepError(`machine ${ctx.ownerId} no longer exists`, false);
  return row;
}

export function machineWorkflows(deps: MachineWorkflowDeps): WorkflowDefinition[] {
  const { db } = deps;

  /** A provider call from a step: a 429's retry-after is waited out inside the step, then it is retried. */
  async function providerStep<T>(ctx: Ctx, fn: (provider: ComputeProvider, call: ComputeCallContext) => Promise<T>, row: repo.MachineRow): Promise<T> {
    try {
      return await fn(providerFor(deps.compute, row), { signal: ctx.signal });
    } catch (err) {
      if (!(err instanceof ComputeProviderError)) throw err;
      if (err.retryable && err.retryAfterMs) await sleep(Math.min(err.retryAfterMs, 60_000), undefined, { signal: ctx.signal }).catch(() => {});
      throw new StepError(err.message, err.retryable);
    }
  }

  const create: WorkflowDefinition = {
    type: MACHINE_CREATE,
    cancellable: true,
    steps: [
      {
        name: 'create_server',
        retry: PROVIDER_RETRY,
        async run(ctx) {
          const row = await machineOf(db, ctx);
          if (row.provider_server_id) return { server_id: row.provider_server_id };
          const bootstrapId = await repo.bootstrapIdOfMachine(db, row.id);
          if (!bootstrapId) throw new StepError(`machine ${row.id} has no bootstrap to join with`, false);
          const userData = cloudInit(deps.launch, bootstrapToken(deps.tokenKey, bootstrapId));
          const server = await providerStep(ctx, (p, call) => p.createServer({
            machineId: row.id, name: serverNameOf(row.id), instanceType: row.instance_type ?? '', userData,
          }, call), row);
          return { server_id: server.serverId };
        },
        async apply(tx, ctx, result) {
          await repo.recordServer(tx, ctx.ownerId, (result as { server_id: string }).server_id, clock.now());
        },
      },
      {
        name: 'wait_running',
        retry: waitPolicy(deps.joinTimeoutSeconds),
        async run(ctx) {
          const row = await machineOf(db, ctx);
          const server = await providerStep(ctx, (p, call) => p.getServer(row.provider_server_id!, call), row);
          if (server.status === 'gone') throw new StepError(`server ${server.serverId} no longer exists at the provider`, false);
          if (server.status !== 'running') throw new StepError(`waiting for server ${server.serverId} to boot (it is ${server.status})`, true);
          return null;
        },
      },
      {
        name: 'wait_joined',
        retry: waitPolicy(deps.joinTimeoutSeconds),
        async run(ctx) {
          const row = await machineOf(db, ctx);
          if (row.state === 'ACTIVE' || row.state === 'SUSPENDED') return null;
          throw new StepError(`waiting for the machine agent on server ${row.provider_server_id} to join and heartbeat (the machine is ${row.state})`, true);
        },
      },
    ],
    async onEnd(tx, ctx, outcome) {
      if (outcome === 'SUCCEEDED') {
        await repo.setMachineState(tx, ctx.ownerId, { reconciling: 0 }, clock.now());
        return;
      }
      // Whatever was made for it is released by the deletion (a server found by its label too).
      const row = await repo.markDeletingIfRevision(tx, ctx.workspaceId, ctx.ownerId, null, clock.now());
      if (row) await startMachineDeletion(deps.operations, tx, row, SYSTEM_ACTOR, `machine.create ${outcome.toLowerCase()}`);
    },
    describe: describedAs('Creating'),
  };

  const remove: WorkflowDefinition = {
    type: MACHINE_DELETE,
    cancellable: false,
    admittedOverQuota: true,
    steps: [
      drainOperationsStep(deps.operations, 'machine'),
      {
        // Cordoned: the node is marked unschedulable. The simulated cluster places no workload on
        // machine nodes, so draining has nothing to move there.
        name: 'cordon_and_drain',
        async apply(tx, ctx) {
          const row = await repo.findMachineById(tx, ctx.ownerId);
          if (row) await syncClusterNodes(tx, row.cluster_id);
        },
      },
      {
        name: 'destroy_server',
        retry: PROVIDER_RETRY,
        async run(ctx) {
          const row = await repo.findMachineById(db, ctx.ownerId);
          if (!row || row.origin !== 'provisioned') return { destroyed: null };
          return { destroyed: await providerStep(ctx, (p, call) => destroyServer(p, row, call), row) };
        },
      },
      {
        name: 'remove_node',
        async apply(tx, ctx) {
          const row = await repo.findMachineById(tx, ctx.ownerId);
          if (!row) return;
          await repo.clearNode(tx, row.id);
          await syncClusterNodes(tx, row.cluster_id);
        },
      },
      {
        name: 'revoke_credential',
        async apply(tx, ctx) {
          await repo.revokeCredentials(tx, ctx.ownerId, 'machine_deleted', clock.now());
        },
      },
      {
        name: 'remove',
        async apply(tx, ctx) {
          await repo.deleteMachine(tx, ctx.ownerId);
          await supersedeMachineNotices(tx, ctx.ownerId, ctx.operationId);
        },
      },
    ],
    async onEnd(tx, ctx, outcome) {
      // The server could not be destroyed: the machine stays, cordoned, for another DELETE.
      if (outcome !== 'SUCCEEDED') await repo.abandonDeletion(tx, ctx.ownerId, clock.now());
    },
    describe: describedAs('Deleting'),
  };

  const isProvisioned = (row: repo.MachineRow) => row.origin === 'provisioned' && row.provider_server_id !== null;

  const suspend: WorkflowDefinition = {
    type: MACHINE_SUSPEND,
    cancellable: false,
    steps: [
      {
        name: 'cordon',
        async apply(tx, ctx) {
          const row = await repo.setMachineState(tx, ctx.ownerId, { state: 'SUSPENDED' }, clock.now());
          if (row) await syncClusterNodes(tx, row.cluster_id);
        },
      },
      {
        name: 'power_off',
        retry: PROVIDER_RETRY,
        async run(ctx) {
          const row = await machineOf(db, ctx);
          if (!isProvisioned(row)) return { powered_off: false };
          await providerStep(ctx, (p, call) => p.powerOff(row.provider_server_id!, call), row);
          return { powered_off: true };
        },
      },
    ],
    async onEnd(tx, ctx) {
      await repo.setMachineState(tx, ctx.ownerId, { reconciling: 0 }, clock.now());
    },
    describe: describedAs('Suspending'),
  };

  const resume: WorkflowDefinition = {
    type: MACHINE_RESUME,
    cancellable: false,
    steps: [
      {
        name: 'power_on',
        retry: PROVIDER_RETRY,
        async run(ctx) {
          const row = await machineOf(db, ctx);
          if (!isProvisioned(row)) return { powered_on_at: null };
          await providerStep(ctx, (p, call) => p.powerOn(row.provider_server_id!, call), row);
          return { powered_on_at: clock.now() };
        },
      },
      {
        name: 'wait_heartbeat',
        retry: waitPolicy(deps.joinTimeoutSeconds),
        async run(ctx) {
          const since = (ctx.results.power_on as { powered_on_at: number | null } | undefined)?.powered_on_at ?? null;
          if (since === null) return null;
          const row = await machineOf(db, ctx);
          if ((row.last_heartbeat_at ?? 0) >= since) return null;
          throw new StepError(`waiting for the agent of machine ${row.id} to heartbeat after its server was powered on`, true);
        },
      },
      {
        name: 'uncordon',
        async apply(tx, ctx) {
          const now = clock.now();
          const row = await machineOf(tx, ctx);
          const alive = (row.last_heartbeat_at ?? 0) >= now - 3 * deps.heartbeatSeconds;
          await repo.setMachineState(tx, ctx.ownerId, { state: alive ? 'ACTIVE' : 'UNREACHABLE' }, now);
          if (alive) await machineReachable(tx, row.id, ctx.operationId);
          await syncClusterNodes(tx, row.cluster_id);
        },
      },
    ],
    async onEnd(tx, ctx) {
      await repo.setMachineState(tx, ctx.ownerId, { reconciling: 0 }, clock.now());
    },
    describe: describedAs('Resuming'),
  };

  return [create, remove, suspend, resume];
}

export function registerMachineWorkflows(registry: WorkflowRegistry, deps: MachineWorkflowDeps): void {
  for (const workflow of machineWorkflows(deps)) registry.register(workflow);
}

/** Starts machine.delete on a machine just marked DELETING, in the caller's transaction. */
export function startMachineDeletion(
  operations: Pick<OperationService, 'start'>, tx: Executor, row: repo.MachineRow,
  actor: { actorId: string; userId: string | null }, reason: string,
) {
  return operations.start(tx, {
    type: MACHINE_DELETE, workspaceId: row.workspace_id, ownerType: 'machine', ownerId: row.id, clusterId: row.cluster_id,
    input: {}, metadata: { machine_name: row.name, provider: row.provider, reason }, actor,
  });
}

/**
 * For workspace deletion: destroys the server of every provisioned machine of the workspace and
 * removes every machine (see releaseEach: retried, then given up from `abandonFrom`).
 */
export async function releaseWorkspaceMachines(
  deps: Pick<MachineWorkflowDeps, 'db' | 'compute'>, workspaceId: string, ctx: { attempt: number; signal: AbortSignal }, abandonFrom = 3,
) {
  const rows = await repo.machinesOfWorkspace(deps.db, workspaceId);
  return releaseEach(rows, ctx, abandonFrom, 'machine',
    async (row) => {
      if (row.origin === 'provisioned') await destroyServer(providerFor(deps.compute, row), row, { signal: ctx.signal });
    },
    async (row) => {
      await repo.revokeCredentials(deps.db, row.id, 'machine_deleted', clock.now());
      await repo.deleteMachine(deps.db, row.id);
    });
}
