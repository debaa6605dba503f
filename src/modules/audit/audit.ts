// The audit log's one entry point: every module that changes or reads something worth a record
// calls recordAuditEvent inside the transaction of that change, so the record and the change
// commit together or not at all. Events are append-only and never hold a secret value.
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { isId, newId } from '../../platform/ids.js';

export const ACTOR_TYPES = ['user', 'api_token', 'oauth_client', 'system'] as const;
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
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_RESOURCE_TYPES = ['secret', 'secret_version', 'api_token', 'oauth_client', 'workspace_member', 'workspace'] as const;
export type AuditResourceType = (typeof AUDIT_RESOURCE_TYPES)[number];

export interface AuditEventInput {
  action: AuditAction;
  resourceType: AuditResourceType;
  resourceId: string;
  /** identifying details (names, numbers, roles); never a secret value */
  metadata?: Record<string, string>;
}

/** The actor behind an actor id (usr_, tok_ or oac_, as WorkspaceScope.actorId and operations' requested_by hold). */
export function actorOfId(id: string): AuditActor {
  if (isId('apiToken', id)) return { type: 'api_token', id };
  if (isId('oauthClient', id)) return { type: 'oauth_client', id };
  return { type: 'user', id };
}

/** The audit context of a request: its workspace, its caller and its request id. */
export function auditContextOf(scope: WorkspaceScope): AuditContext {
  return { workspaceId: scope.workspaceId, actor: actorOfId(scope.actorId), requestId: scope.requestId ?? null };
}

// Prepared: every :access writes one, so building the insert anew each time would show.
const insertEvent = preparedQuery((db, p: {
  id: string; workspaceId: string; actorType: string; actorId: string; action: string; resourceType: string;
  resourceId: string; requestId: string | null; metadata: string; createdAt: number;
}) => db.insertInto('audit_events').values({
  id: p.id, workspace_id: p.workspaceId, actor_type: p.actorType, actor_id: p.actorId, action: p.action,
  resource_type: p.resourceType, resource_id: p.resourceId, request_id: p.requestId, metadata: p.metadata, created_at: p.createdAt,
}));

/** Appends one event, in the caller's transaction. */
export async function recordAuditEvent(tx: Executor, ctx: AuditContext | WorkspaceScope, event: AuditEventInput): Promise<void> {
  const c = 'actor' in ctx ? ctx : auditContextOf(ctx);
  await insertEvent(tx, {
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
  });
}
