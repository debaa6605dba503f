// SQL of snippets and their runs. Writes to a snippet check its revision in the same statement
// (`where revision = ?`), so concurrent writers never lose an update; a run row is written once.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { SnippetRunsTable, SnippetsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { RunState } from './snippets.schemas.js';

export type SnippetRow = SnippetsTable;
export type SnippetRunRow = SnippetRunsTable;

export function findSnippet(db: Executor, workspaceId: string, id: string): Promise<SnippetRow | undefined> {
  return db.selectFrom('snippets').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export async function insertSnippet(db: Executor, row: SnippetRow): Promise<void> {
  await db.insertInto('snippets').values(row).execute();
}

export interface SnippetFilters {
  purpose?: string;
  visibility?: string;
  includeArchived: boolean;
}

export function listSnippets(db: Executor, workspaceId: string, filters: SnippetFilters, page: PageRequest): Promise<SnippetRow[]> {
  let q = db.selectFrom('snippets').selectAll().where('workspace_id', '=', workspaceId);
  if (filters.purpose) q = q.where('purpose', '=', filters.purpose);
  if (filters.visibility) q = q.where('visibility', '=', filters.visibility);
  if (!filters.includeArchived) q = q.where('archived_at', 'is', null);
  return keysetPage(q, 'id', page).execute();
}

/**
 * Applies `changes` when the revision matches (any, for null) and the snippet's archived state is
 * `archived` (null: either); returns the new row, or undefined when nothing matched.
 */
export function updateSnippetIf(
  db: Executor, workspaceId: string, id: string, revision: number | null, archived: boolean | null,
  changes: Partial<Omit<SnippetRow, 'id' | 'workspace_id' | 'revision'>>,
): Promise<SnippetRow | undefined> {
  let q = db
    .updateTable('snippets')
    .set((eb) => ({ ...changes, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId);
  if (revision !== null) q = q.where('revision', '=', revision);
  if (archived === true) q = q.where('archived_at', 'is not', null);
  if (archived === false) q = q.where('archived_at', 'is', null);
  return q.returningAll().executeTakeFirst();
}

export async function insertRun(db: Executor, row: SnippetRunRow): Promise<void> {
  await db.insertInto('snippet_runs').values(row).execute();
}

export function findRun(db: Executor, workspaceId: string, snippetId: string, id: string): Promise<SnippetRunRow | undefined> {
  return db
    .selectFrom('snippet_runs')
    .selectAll()
    .where('id', '=', id)
    .where('snippet_id', '=', snippetId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
}

const BASIC_COLUMNS = [
  'id', 'workspace_id', 'snippet_id', 'agent_session_id', 'agent_turn_id', 'state', 'source', 'run_by', 'snippet_revision',
  'inputs', 'overrides', 'cpu_time_ms', 'wall_time_ms', 'heap_used_bytes', 'request_count', 'secret_derived', 'created_at',
] as const;

export type BasicRunRow = Pick<SnippetRunRow, (typeof BASIC_COLUMNS)[number]>;

/** Runs newest first; the basic view does not read output, error and logs (they may be large). */
export function listRuns(db: Executor, snippetId: string, state: RunState | undefined, full: boolean, page: PageRequest): Promise<(BasicRunRow & Partial<SnippetRunRow>)[]> {
  let q = full
    ? db.selectFrom('snippet_runs').selectAll().where('snippet_id', '=', snippetId)
    : db.selectFrom('snippet_runs').select(BASIC_COLUMNS).where('snippet_id', '=', snippetId);
  if (state) q = q.where('state', '=', state);
  return keysetPage(q, 'id', page).execute();
}

// ---- a writer's credential (snippet-writer.ts) ----

/** Who created an API token (the user behind a write made with it). */
export function apiTokenCreator(db: Executor, id: string): Promise<{ created_by: string } | undefined> {
  return db.selectFrom('api_tokens').select('created_by').where('id', '=', id).executeTakeFirst();
}

/** Who created an OAuth client (the user behind a write made with it). */
export function oauthClientCreator(db: Executor, id: string): Promise<{ created_by: string } | undefined> {
  return db.selectFrom('oauth_clients').select('created_by').where('id', '=', id).executeTakeFirst();
}

/** The role and expiry of an API token of the workspace; undefined when it was revoked. */
export function apiTokenRole(db: Executor, workspaceId: string, id: string): Promise<{ role: string; expires_at: number | null } | undefined> {
  return db.selectFrom('api_tokens').select(['role', 'expires_at']).where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The role of an OAuth client of the workspace; undefined when it was deleted. */
export function oauthClientRole(db: Executor, workspaceId: string, id: string): Promise<{ role: string } | undefined> {
  return db.selectFrom('oauth_clients').select('role').where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}
