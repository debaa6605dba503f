// The audit log's one entry point: every module that changes or reads something worth a record
// calls recordAuditEvent inside the transaction of that change, so the record and the change
// commit together or not at all. A read that changes nothing (`:access`) calls commitAuditEvent,
// which waits for its event to be committed (group commit, below). Events are append-only and
// never hold a secret value.
import type { Db, Executor } from '../../db/database.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { isId, newId } from '../../platform/ids.js';
import { insertAuditEvent, insertAuditEventBatch, type AuditEventRow } from './audit.repo.js';

export const ACTOR_TYPES = ['user', 'api_token', 'oauth_client', 'machine', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export interface AuditActor {
  type: ActorType;
  id: string;
}

/** Who acted and in answer to which request: a request's scope, or the service itself. */
export interface AuditContext {
  workspaceId: string;
  actor: AuditActor;
  /** the request's x-request-id; null for work the service does on its own */
  requestId: string | null;
}

/** Every action the log records; what each means is in AuditEvent's schema (audit.schemas.ts). */
export const AUDIT_ACTIONS = [
  'secret.create', 'secret.update', 'secret.delete', 'secret.undelete', 'secret.purge',
  'secret.version.create', 'secret.version.enable', 'secret.version.disable', 'secret.version.destroy', 'secret.version.access',
  'api_token.create', 'api_token.revoke', 'oauth_client.create', 'oauth_client.delete',
  'workspace.member.add', 'workspace.member.update', 'workspace.member.remove', 'workspace.delete',
  'workspace.invitation.create', 'workspace.invitation.revoke', 'workspace.invitation.accept',
  'worker_bootstrap.create', 'worker_bootstrap.use', 'worker_bootstrap.revoke', 'machine.create', 'machine.delete',
  'agent.create', 'agent.update', 'agent.delete', 'agent.undelete', 'approval_request.approve', 'approval_request.reject',
  'offer.create', 'offer.update', 'offer.delete', 'offer.undelete', 'order.commit', 'subscription.set_plan',
  'cluster.create', 'cluster.update', 'cluster.delete', 'cluster.capabilities.refresh',
  'package.create', 'package.version.create', 'install.create', 'install.update', 'install.delete',
  'subscription.checkout.create', 'subscription.plan_paid', 'subscription.plan_renewed', 'subscription.plan_ended',
  'user.two_factor.enable', 'user.two_factor.disable', 'workspace.two_factor_requirement.enable', 'workspace.two_factor_requirement.disable',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_RESOURCE_TYPES = [
  'secret', 'secret_version', 'api_token', 'oauth_client', 'workspace_member', 'workspace_invitation', 'workspace', 'worker_bootstrap', 'machine', 'agent', 'approval_request', 'offer', 'order',
  'cluster', 'package', 'package_version', 'install', 'plan_checkout', 'user',
] as const;
export type AuditResourceType = (typeof AUDIT_RESOURCE_TYPES)[number];

export interface AuditEventInput {
  action: AuditAction;
  resourceType: AuditResourceType;
  resourceId: string;
  /** identifying details (names, numbers, roles); never a secret value. A version's events carry `secret_id` */
  metadata?: Record<string, string>;
  /**
   * The resource's name as people know it now (a cluster's name; "wiki on dev" for an install),
   * kept with the event so it reads the same once the resource is renamed or gone. Defaults to
   * `metadata.name`, else `metadata.title`, else none.
   */
  resourceName?: string | null;
}

/**
 * The secret an event concerns, stored in its own column so the secret's id finds its versions'
 * events too (audit.service.ts): the secret itself, or for a version the secret_id its metadata names.
 */
function secretOf(event: AuditEventInput): string | null {
  if (event.resourceType === 'secret') return event.resourceId;
  if (event.resourceType === 'secret_version') return event.metadata?.secret_id ?? null;
  return null;
}

/**
 * The actor behind an actor id (usr_, tok_ or oac_, as WorkspaceScope.actorId and operations'
 * requested_by hold; `system` for the service's own work, e.g. an order's cleanup releasing its cluster).
 */
export function actorOfId(id: string): AuditActor {
  if (id === 'system') return { type: 'system', id };
  if (isId('apiToken', id)) return { type: 'api_token', id };
  if (isId('oauthClient', id)) return { type: 'oauth_client', id };
  return { type: 'user', id };
}

/** The audit context of a request: its workspace, its caller and its request id. */
export function auditContextOf(scope: WorkspaceScope): AuditContext {
  return { workspaceId: scope.workspaceId, actor: actorOfId(scope.actorId), requestId: scope.requestId ?? null };
}

type EventRow = AuditEventRow;

function eventRow(ctx: AuditContext | WorkspaceScope, event: AuditEventInput): EventRow {
  const c = 'actor' in ctx ? ctx : auditContextOf(ctx);
  return {
    id: newId('auditEvent'),
    workspaceId: c.workspaceId,
    actorType: c.actor.type,
    actorId: c.actor.id,
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    requestId: c.requestId,
    metadata: JSON.stringify(event.metadata ?? {}),
    createdAt: clock.now(),
    secretId: secretOf(event),
    resourceName: event.resourceName ?? event.metadata?.name ?? event.metadata?.title ?? null,
  };
}

/** Appends one event, in the caller's transaction. */
export async function recordAuditEvent(tx: Executor, ctx: AuditContext | WorkspaceScope, event: AuditEventInput): Promise<void> {
  await insertAuditEvent(tx, eventRow(ctx, event));
}

// Group commit. On SQLite a commit of one :access event wrote its pages to the WAL (12 writes, 6
// lock calls) and every ~100 commits a checkpoint stopped the event loop for two fsyncs: 340 µs of
// wall time (68 µs of CPU) per single-row commit, against 43 µs (10 µs of CPU) per row when 64
// rows share one. Events that arrive together are therefore written as one multi-row insert: one
// statement, so one implicit transaction on both dialects, committed once (and one round trip on
// PostgreSQL). The batch commits or fails as a whole, like any transaction: every caller in it is
// told, and none proceeds as if its event were recorded. Its rows are all ours and well formed, so
// what refuses one (a full disk, a lost connection, a read-only database) refuses them all anyway.
interface Pending {
  row: EventRow;
  done: (err?: unknown) => void;
}
interface Queue {
  rows: Pending[];
  /** a flush is scheduled or running; it takes rows until none are left */
  busy: boolean;
}
const queues = new WeakMap<Db, Queue>();
/** rows per statement: bounds the statement's size (about 300 bytes a row) */
const MAX_BATCH = 500;

async function flush(db: Db, queue: Queue): Promise<void> {
  while (queue.rows.length > 0) {
    const batch = queue.rows.splice(0, MAX_BATCH);
    let failure: unknown;
    try {
      await insertAuditEventBatch(db, batch.map((p) => p.row));
    } catch (err) {
      failure = err ?? new Error('audit insert failed');
    }
    for (const p of batch) p.done(failure);
  }
  queue.busy = false;
}

/**
 * Appends one event in its own commit, shared with the events that arrive in the same turn of the
 * event loop (and, on PostgreSQL, while the previous batch is on the wire): resolves once the
 * event is committed, rejects when it was not written. For reads that must be on record before
 * their answer leaves; a change records its event with recordAuditEvent in its own transaction.
 */
export function commitAuditEvent(db: Db, ctx: AuditContext | WorkspaceScope, event: AuditEventInput): Promise<void> {
  let queue = queues.get(db);
  if (!queue) queues.set(db, (queue = { rows: [], busy: false }));
  const q = queue;
  return new Promise((resolve, reject) => {
    q.rows.push({ row: eventRow(ctx, event), done: (err) => (err === undefined ? resolve() : reject(err)) });
    if (q.busy) return;
    q.busy = true;
    // After the I/O callbacks of this turn: every request read in it reaches this point first.
    setImmediate(() => void flush(db, q));
  });
}
