// Reading the audit log: newest first, keyset pages, filtered by resource or action.
import type { Db } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { AuditEventsTable } from '../../db/schema.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { ActorType, AuditAction, AuditResourceType } from './audit.js';
import type { AuditEventT, ListAuditEventsQueryT } from './audit.schemas.js';

function toEvent(row: AuditEventsTable): AuditEventT {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    actor: { type: row.actor_type as ActorType, id: row.actor_id },
    action: row.action as AuditAction,
    resource_type: row.resource_type as AuditResourceType,
    resource_id: row.resource_id,
    request_id: row.request_id,
    created_at: row.created_at,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  };
}

/**
 * The workspace's events matching the filters. A secret's id selects the secret's events and its
 * versions' events through the secret_id column (index audit_events_secret_idx, newest first);
 * any other id, a version's included, selects the events about that resource alone.
 */
export function eventsQuery(db: Db, workspaceId: string, filters: { resource_id: string | null; action: string | null }) {
  const { resource_id: resourceId, action } = filters;
  return db.selectFrom('audit_events').selectAll()
    .where('workspace_id', '=', workspaceId)
    .$if(resourceId !== null, (q) => (isId('secret', resourceId!) ? q.where('secret_id', '=', resourceId!) : q.where('resource_id', '=', resourceId!)))
    .$if(action !== null, (q) => q.where('action', '=', action!));
}

export function createAuditService(deps: { db: Db; cursors: CursorCodec }) {
  const { db, cursors } = deps;

  /** Admins and owners only: the log names every credential and every read of a value. */
  async function listEvents(scope: WorkspaceScope, query: ListAuditEventsQueryT): Promise<Page<AuditEventT>> {
    requireRole(scope, 'admin');
    const filters = { resource_id: query.resource_id ?? null, action: query.action ?? null };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await keysetPage(eventsQuery(db, scope.workspaceId, filters), 'id', page).execute();
    return cursors.page(rows, page, scope.workspaceId, filters, toEvent);
  }

  return { listEvents };
}

export type AuditService = ReturnType<typeof createAuditService>;
