// The audit_events table: appending events (one, or a batch in one statement) and reading them.
import { PostgresAdapter, sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import { isId } from '../../platform/ids.js';
import type { PageRequest } from '../../platform/pagination.js';

// Prepared: every :access writes one, so building the insert anew each time would show.
export const insertAuditEvent = preparedQuery((db, p: {
  id: string; workspaceId: string; actorType: string; actorId: string; action: string; resourceType: string;
  resourceId: string; requestId: string | null; metadata: string; createdAt: number; secretId: string | null;
}) => db.insertInto('audit_events').values({
  id: p.id, workspace_id: p.workspaceId, actor_type: p.actorType, actor_id: p.actorId, action: p.action,
  resource_type: p.resourceType, resource_id: p.resourceId, request_id: p.requestId, metadata: p.metadata, created_at: p.createdAt,
  secret_id: p.secretId,
}));

export type AuditEventRow = Parameters<typeof insertAuditEvent>[1];

// The multi-row inserts below, prepared like the single one: with a group commit per turn of the
// event loop, building and compiling the statement for each batch cost about 3 % of an :access
// request's CPU.
/** A raw statement, compiled against `db`'s dialect when preparedQuery compiles it. */
const compilable = <R>(db: Executor, query: RawBuilder<R>) => ({ compile: () => query.compile(db) });
type AuditColumns = { [K in keyof AuditEventRow]: Array<AuditEventRow[K]> };
const insertAuditEventColumns = preparedQuery((db, c: AuditColumns) => compilable(db, sql`
  insert into audit_events (id, workspace_id, actor_type, actor_id, action, resource_type, resource_id, request_id, metadata, created_at, secret_id)
  select * from unnest(${c.id}::text[], ${c.workspaceId}::text[], ${c.actorType}::text[], ${c.actorId}::text[],
    ${c.action}::text[], ${c.resourceType}::text[], ${c.resourceId}::text[], ${c.requestId}::text[],
    ${c.metadata}::text[], ${c.createdAt}::bigint[], ${c.secretId}::text[])`));
const insertAuditEventJson = preparedQuery((db, p: { rows: string }) => compilable(db, sql`
  insert into audit_events (id, workspace_id, actor_type, actor_id, action, resource_type, resource_id, request_id, metadata, created_at, secret_id)
  select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7, value ->> 8, value ->> 9, value ->> 10
  from json_each(${p.rows})`));

/**
 * One multi-row insert of one shape whatever the batch size: the rows travel as one array per
 * column (PostgreSQL, unnest) or as one JSON array (SQLite, json_each). A statement per batch
 * size would take a slot of the statement caches for each size (PostgreSQL's named statements
 * are never evicted, see db/database.ts); this one is prepared once per connection.
 */
export function insertAuditEventBatch(db: Db, rows: AuditEventRow[]): Promise<unknown> {
  const column = <K extends keyof AuditEventRow>(key: K) => rows.map((r) => r[key]);
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    return insertAuditEventColumns(db, {
      id: column('id'), workspaceId: column('workspaceId'), actorType: column('actorType'), actorId: column('actorId'),
      action: column('action'), resourceType: column('resourceType'), resourceId: column('resourceId'), requestId: column('requestId'),
      metadata: column('metadata'), createdAt: column('createdAt'), secretId: column('secretId'),
    });
  }
  return insertAuditEventJson(db, {
    rows: JSON.stringify(rows.map((r) => [
      r.id, r.workspaceId, r.actorType, r.actorId, r.action, r.resourceType, r.resourceId, r.requestId, r.metadata, r.createdAt, r.secretId,
    ])),
  });
}

/**
 * The workspace's events matching the filters. A secret's id selects the secret's events and its
 * versions' events through the secret_id column (index audit_events_secret_idx, newest first);
 * any other id, a version's included, selects the events about that resource alone.
 */
export function eventsQuery(db: Executor, workspaceId: string, filters: { resource_id: string | null; action: string | null }) {
  const { resource_id: resourceId, action } = filters;
  return db.selectFrom('audit_events').selectAll()
    .where('workspace_id', '=', workspaceId)
    .$if(resourceId !== null, (q) => (isId('secret', resourceId!) ? q.where('secret_id', '=', resourceId!) : q.where('resource_id', '=', resourceId!)))
    .$if(action !== null, (q) => q.where('action', '=', action!));
}

/** One keyset page of eventsQuery, newest first. */
export function listAuditEvents(db: Executor, workspaceId: string, filters: { resource_id: string | null; action: string | null }, page: PageRequest) {
  return keysetPage(eventsQuery(db, workspaceId, filters), 'id', page).execute();
}
