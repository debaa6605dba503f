// SQL of machines, worker bootstraps and machine credentials. Every write a person can see bumps
// `revision` (the etag); a heartbeat that changes nothing but last_heartbeat_at does not.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { MachineCredentialsTable, MachinesTable, WorkerBootstrapsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { UsageCounter } from '../quotas/usage.js';
import type { MachineState } from './machines.schemas.js';

export type MachineRow = MachinesTable;
export type BootstrapRow = WorkerBootstrapsTable;
export type CredentialRow = MachineCredentialsTable;

// ---- machines ----

export async function insertMachine(db: Executor, row: MachineRow): Promise<void> {
  await db.insertInto('machines').values(row).execute();
}

export function findMachine(db: Executor, workspaceId: string, id: string): Promise<MachineRow | undefined> {
  return db.selectFrom('machines').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** By id alone: for workflow steps and agent routes, which know the machine already. */
export function findMachineById(db: Executor, id: string): Promise<MachineRow | undefined> {
  return db.selectFrom('machines').selectAll().where('id', '=', id).executeTakeFirst();
}

export interface MachineFilters {
  cluster_id?: string;
  state?: MachineState;
}

export function listMachines(db: Executor, workspaceId: string, filters: MachineFilters, page: PageRequest): Promise<MachineRow[]> {
  let q = db.selectFrom('machines').selectAll().where('workspace_id', '=', workspaceId);
  if (filters.cluster_id !== undefined) q = q.where('cluster_id', '=', filters.cluster_id);
  if (filters.state !== undefined) q = q.where('state', '=', filters.state);
  return keysetPage(q, 'id', page).execute();
}

export function machinesOfWorkspace(db: Executor, workspaceId: string): Promise<MachineRow[]> {
  return db.selectFrom('machines').selectAll().where('workspace_id', '=', workspaceId).orderBy('id').execute();
}

/** The machines that are (or were) nodes of a cluster, for its capabilities. */
export function nodeMachinesOfCluster(db: Executor, clusterId: string): Promise<MachineRow[]> {
  return db.selectFrom('machines').selectAll().where('cluster_id', '=', clusterId).where('node_name', 'is not', null).orderBy('id').execute();
}

export async function clusterHasMachines(db: Executor, clusterId: string): Promise<boolean> {
  return (await db.selectFrom('machines').select('id').where('cluster_id', '=', clusterId).limit(1).executeTakeFirst()) !== undefined;
}

/** Compare-and-set of the fields a person changes (revision null: `*`); undefined when it did not match or the machine is being deleted. */
export function patchMachineIfRevision(
  db: Executor, workspaceId: string, id: string, revision: number | null,
  set: { name?: string | null; expires_at?: number | null }, now: number,
) {
  let q = db
    .updateTable('machines')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('state', '!=', 'DELETING');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/**
 * Claims the machine for an operation (`reconciling`), moving it to `state` when given: one
 * conditional statement, so two operations never act on a machine at once. Only from the states
 * in `from`; undefined when the revision, the state or a running operation says no.
 */
export function claimMachine(
  db: Executor, workspaceId: string, id: string, revision: number | null,
  from: readonly MachineState[], state: MachineState | null, now: number,
) {
  let q = db
    .updateTable('machines')
    .set((eb) => ({ ...(state ? { state } : {}), reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('state', 'in', from as MachineState[])
    .where('reconciling', '=', 0);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Marks the machine DELETING for machine.delete, whatever else runs on it (the deletion drains it). */
export function markDeletingIfRevision(db: Executor, workspaceId: string, id: string, revision: number | null, now: number) {
  let q = db
    .updateTable('machines')
    .set((eb) => ({ state: 'DELETING', reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('state', '!=', 'DELETING');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Sets the state as a workflow step decides (and ends `reconciling` when asked); a DELETING machine stays DELETING. */
export async function setMachineState(
  db: Executor, id: string, set: { state?: MachineState; reconciling?: 0 | 1; provider_server_id?: string }, now: number,
): Promise<MachineRow | undefined> {
  let q = db
    .updateTable('machines')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id);
  if (set.state !== 'DELETING') q = q.where('state', '!=', 'DELETING');
  return q.returningAll().executeTakeFirst();
}

/** machine.create's server exists: recorded, and the machine waits for its agent (PROVISIONING -> JOINING). */
export async function recordServer(db: Executor, id: string, serverId: string, now: number): Promise<void> {
  await db.updateTable('machines')
    .set((eb) => ({ provider_server_id: serverId, state: 'JOINING', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('state', '=', 'PROVISIONING').execute();
}

/** A provisioned machine's server joined: its node name (kept if it had one) and the facts it reported. */
export async function recordJoin(db: Executor, id: string, nodeName: string, facts: string, now: number): Promise<void> {
  await db.updateTable('machines').set((eb) => ({ node_name: nodeName, facts, updated_at: now, revision: eb('revision', '+', 1) })).where('id', '=', id).execute();
}

/** machine.delete removed the node: the machine is no longer one of its cluster's nodes. */
export async function clearNode(db: Executor, id: string): Promise<void> {
  await db.updateTable('machines').set({ node_name: null }).where('id', '=', id).execute();
}

/** A deletion that ended without removing the machine hands it back, SUSPENDED (still cordoned). */
export async function abandonDeletion(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('machines')
    .set((eb) => ({ state: 'SUSPENDED', reconciling: 0, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('state', '=', 'DELETING').execute();
}

/** The expiry sweep's DELETING mark, conditional on the expiry it read: a PATCH that moved it wins. */
export function markExpiredDeleting(db: Executor, id: string, expiresAt: number, now: number) {
  return db.updateTable('machines')
    .set((eb) => ({ state: 'DELETING', reconciling: 1, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('expires_at', '=', expiresAt).where('state', '!=', 'DELETING')
    .returningAll().executeTakeFirst();
}

export async function deleteMachine(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('machines').where('id', '=', id).execute();
}

/**
 * A heartbeat: one statement on the hot path. Records it and the reported facts; JOINING and
 * UNREACHABLE become ACTIVE (the revision moves only then, and updated_at becomes `now`, which
 * tells the caller that the state may have changed). `facts` null keeps the stored facts.
 */
export const recordHeartbeat = preparedQuery((db, p: { id: string; now: number; facts: string | null }) =>
  db
    .updateTable('machines')
    .set((eb) => ({
      last_heartbeat_at: p.now,
      facts: eb.fn.coalesce(eb.val(p.facts), eb.ref('facts')),
      state: eb.case().when('state', 'in', ['JOINING', 'UNREACHABLE']).then('ACTIVE').else(eb.ref('state')).end(),
      revision: eb.case().when('state', 'in', ['JOINING', 'UNREACHABLE']).then(eb('revision', '+', 1)).else(eb.ref('revision')).end(),
      updated_at: eb.case().when('state', 'in', ['JOINING', 'UNREACHABLE']).then(p.now).else(eb.ref('updated_at')).end(),
    }))
    .where('id', '=', p.id)
    .returning(['id', 'workspace_id', 'cluster_id', 'state', 'updated_at']));

/** ACTIVE machines whose last heartbeat is older than `before`: UNREACHABLE now; returns them. */
export function markUnreachable(db: Executor, before: number, now: number): Promise<MachineRow[]> {
  return db
    .updateTable('machines')
    .set((eb) => ({ state: 'UNREACHABLE', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('state', '=', 'ACTIVE')
    .where('last_heartbeat_at', '<', before)
    .returningAll()
    .execute();
}

/** Machines that expire before `until` and are not being deleted. */
export function expiringMachines(db: Executor, until: number, limit: number): Promise<MachineRow[]> {
  return db
    .selectFrom('machines').selectAll()
    .where('expires_at', 'is not', null).where('expires_at', '<=', until).where('state', '!=', 'DELETING')
    .orderBy('expires_at').limit(limit).execute();
}

/** compute/machines: machine records in any state (a server being provisioned is already paid for). */
export const machineUsage: UsageCounter = (db, inWorkspaces) =>
  db.selectFrom('machines').select((eb) => eb.fn.countAll().as('n')).where(inWorkspaces('machines.workspace_id')).$asScalar();

// ---- worker bootstraps ----

export async function insertBootstrap(db: Executor, row: BootstrapRow): Promise<void> {
  await db.insertInto('worker_bootstraps').values(row).execute();
}

export function findBootstrap(db: Executor, workspaceId: string, clusterId: string, id: string): Promise<BootstrapRow | undefined> {
  return db.selectFrom('worker_bootstraps').selectAll()
    .where('id', '=', id).where('workspace_id', '=', workspaceId).where('cluster_id', '=', clusterId).executeTakeFirst();
}

export function findBootstrapByHash(db: Executor, tokenHash: string): Promise<BootstrapRow | undefined> {
  return db.selectFrom('worker_bootstraps').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** The bootstrap a provisioned machine's server joins with. */
export async function bootstrapIdOfMachine(db: Executor, machineId: string): Promise<string | undefined> {
  return (await db.selectFrom('worker_bootstraps').select('id').where('for_machine_id', '=', machineId).executeTakeFirst())?.id;
}

/** The bootstraps people made for a cluster (not those of provisioned machines). */
export function listBootstraps(db: Executor, workspaceId: string, clusterId: string, page: PageRequest): Promise<BootstrapRow[]> {
  return keysetPage(
    db.selectFrom('worker_bootstraps').selectAll()
      .where('workspace_id', '=', workspaceId).where('cluster_id', '=', clusterId).where('for_machine_id', 'is', null),
    'id', page,
  ).execute();
}

/** Compare-and-set revoke of an active bootstrap. */
export function revokeBootstrapIfRevision(db: Executor, id: string, revision: number | null, now: number) {
  let q = db
    .updateTable('worker_bootstraps')
    .set((eb) => ({ status: 'revoked', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'active');
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/** Uses the token: active and unexpired -> used, in one statement, so of two racing joins one wins. */
export function consumeBootstrap(db: Executor, id: string, machineId: string, now: number) {
  return db
    .updateTable('worker_bootstraps')
    .set((eb) => ({ status: 'used', used_by_machine_id: machineId, used_at: now, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'active')
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

// ---- machine credentials ----

export async function insertCredential(db: Executor, row: CredentialRow): Promise<void> {
  await db.insertInto('machine_credentials').values(row).execute();
}

export const findCredentialByHash = preparedQuery((db, p: { hash: string }) =>
  db.selectFrom('machine_credentials').selectAll().where('token_hash', '=', p.hash));

/** Revokes the machine's live credentials; the rows stay so its agent learns why it was refused. */
export async function revokeCredentials(db: Executor, machineId: string, reason: 'machine_deleted' | 'replaced', now: number): Promise<void> {
  await db.updateTable('machine_credentials').set({ revoked_at: now, revoked_reason: reason })
    .where('machine_id', '=', machineId).where('revoked_at', 'is', null).execute();
}
