// Reading the audit log: newest first, keyset pages, filtered by resource or action.
import type { Db } from '../../db/database.js';
import type { AuditEventsTable } from '../../db/schema.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { ActorType, AuditAction, AuditResourceType } from './audit.js';
import type { AuditEventT, ListAuditEventsQueryT } from './audit.schemas.js';
import { listAuditEvents } from './audit.repo.js';

function toEvent(row: AuditEventsTable): AuditEventT {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    actor: { type: row.actor_type as ActorType, id: row.actor_id, name: row.actor_name, email: row.actor_email },
    action: row.action as AuditAction,
    resource_type: row.resource_type as AuditResourceType,
    resource_id: row.resource_id,
    resource_name: row.resource_name,
    request_id: row.request_id,
    created_at: row.created_at,
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  };
}

export function createAuditService(deps: { db: Db; cursors: CursorCodec }) {
  const { db, cursors } = deps;

  /** Admins and owners only: the log names every credential and every read of a value. */
  async function listEvents(scope: WorkspaceScope, query: ListAuditEventsQueryT): Promise<Page<AuditEventT>> {
    requireRole(scope, 'admin');
    const filters = { resource_id: query.resource_id ?? null, action: query.action ?? null };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await listAuditEvents(db, scope.workspaceId, filters, page);
    return cursors.page(rows, page, scope.workspaceId, filters, toEvent);
  }

  return { listEvents };
}

export type AuditService = ReturnType<typeof createAuditService>;
