// The audit_events table: appending events (one, or a batch in one statement) and reading them.
import { PostgresAdapter, sql, type RawBuilder } from 'kysely';
import type { Db, Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import { isId } from '../../platform/ids.js';
import type { PageRequest } from '../../platform/pagination.js';

/**
 * The actor's display name and e-mail as they are now, read by the insert itself (no statement of
 * its own, so the hot :access path pays one primary-key lookup): a user's name and e-mail, an API
 * token's, OAuth client's or machine's name; null for `system`. The event keeps them as they were
 * (migration 020), so it reads the same after the actor is renamed or deleted.
 */
const actorNameOf = (type: unknown, id: unknown) => sql<string | null>`(case ${type}
  when 'user' then (select name from users where users.id = ${id})
  when 'api_token' then (select name from api_tokens where api_tokens.id = ${id})
  when 'oauth_client' then (select name from oauth_clients where oauth_clients.id = ${id})
  when 'machine' then (select name from machines where machines.id = ${id}) end)`;
const actorEmailOf = (type: unknown, id: unknown) => sql<string | null>`(case ${type}
  when 'user' then (select email from users where users.id = ${id}) end)`;

// Prepared: every :access writes one, so building the insert anew each time would show.
export const insertAuditEvent = preparedQuery((db, p: {
  id: string; workspaceId: string; actorType: string; actorId: string; action: string; resourceType: string;
  resourceId: string; requestId: string | null; metadata: string; createdAt: number; secretId: string | null; resourceName: string | null;
}) => db.insertInto('audit_events').values({
  id: p.id, workspace_id: p.workspaceId, actor_type: p.actorType, actor_id: p.actorId, action: p.action,
  resource_type: p.resourceType, resource_id: p.resourceId, request_id: p.requestId, metadata: p.metadata, created_at: p.createdAt,
  secret_id: p.secretId, resource_name: p.resourceName,
  actor_name: actorNameOf(p.actorType, p.actorId), actor_email: actorEmailOf(p.actorType, p.actorId),
}));

export type AuditEventRow = Parameters<typeof insertAuditEvent>[1];

// The multi-row inserts below, prepared like the single one: with a group commit per turn of the
// event loop, building and compiling the statement for each batch cost about 3 % of an :access
// request's CPU.
/** A raw statement, compiled against `db`'s dialect when preparedQuery compiles it. */
const compilable = <R>(db: Executor, query: RawBuilder<R>) => ({ compile: () => query.compile(db) });
type AuditColumns = { [K in keyof AuditEventRow]: Array<AuditEventRow[K]> };
const COLUMNS = sql.raw('id, workspace_id, actor_type, actor_id, action, resource_type, resource_id, request_id, metadata, created_at, secret_id, resource_name');
const ACTOR_DISPLAY = sql`${actorNameOf(sql.ref('v.actor_type'), sql.ref('v.actor_id'))}, ${actorEmailOf(sql.ref('v.actor_type'), sql.ref('v.actor_id'))}`;
const insertAuditEventColumns = preparedQuery((db, c: AuditColumns) => compilable(db, sql`
  insert into audit_events (${COLUMNS}, actor_name, actor_email)
  select v.*, ${ACTOR_DISPLAY} from unnest(${c.id}::text[], ${c.workspaceId}::text[], ${c.actorType}::text[], ${c.actorId}::text[],
    ${c.action}::text[], ${c.resourceType}::text[], ${c.resourceId}::text[], ${c.requestId}::text[],
    ${c.metadata}::text[], ${c.createdAt}::bigint[], ${c.secretId}::text[], ${c.resourceName}::text[]) as v(${COLUMNS})`));
const insertAuditEventJson = preparedQuery((db, p: { rows: string }) => compilable(db, sql`
  insert into audit_events (${COLUMNS}, actor_name, actor_email)
  select v.*, ${ACTOR_DISPLAY} from (
    select value ->> 0 as id, value ->> 1 as workspace_id, value ->> 2 as actor_type, value ->> 3 as actor_id, value ->> 4 as action,
      value ->> 5 as resource_type, value ->> 6 as resource_id, value ->> 7 as request_id, value ->> 8 as metadata,
      value ->> 9 as created_at, value ->> 10 as secret_id, value ->> 11 as resource_name
    from json_each(${p.rows})) as v`));

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
      metadata: column('metadata'), createdAt: column('createdAt'), secretId: column('secretId'), resourceName: column('resourceName'),
    });
  }
  return insertAuditEventJson(db, {
    rows: JSON.stringify(rows.map((r) => [
      r.id, r.workspaceId, r.actorType, r.actorId, r.action, r.resourceType, r.resourceId, r.requestId, r.metadata, r.createdAt, r.secretId, r.resourceName,
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
