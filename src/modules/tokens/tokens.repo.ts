// The api_tokens table: every query of workspace API tokens.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { ApiTokensTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type ApiTokenRow = ApiTokensTable;

// Every authenticated request with an API token runs this lookup: prepared once.
export const findTokenByHash = preparedQuery((db, p: { hash: string }) =>
  db.selectFrom('api_tokens').select(['id', 'workspace_id', 'role', 'expires_at', 'last_used_at']).where('token_hash', '=', p.hash));

export async function insertToken(db: Executor, row: ApiTokenRow): Promise<void> {
  await db.insertInto('api_tokens').values(row).execute();
}

export function listTokensOfWorkspace(db: Executor, workspaceId: string, page: PageRequest): Promise<ApiTokenRow[]> {
  return keysetPage(db.selectFrom('api_tokens').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

/** Deletes the token of the workspace; what it was (for the audit record), or undefined if none. */
export function deleteToken(db: Executor, workspaceId: string, id: string): Promise<{ name: string; role: string } | undefined> {
  return db.deleteFrom('api_tokens').where('id', '=', id).where('workspace_id', '=', workspaceId).returning(['name', 'role']).executeTakeFirst();
}

export async function touchTokenLastUsed(db: Executor, id: string, now: number): Promise<void> {
  await db.updateTable('api_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
}
