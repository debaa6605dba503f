// The api_tokens table: every query of workspace API tokens.
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { ApiTokensTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type ApiTokenRow = ApiTokensTable;

// Every authenticated request with an API token runs this lookup: prepared once.
// `creator_disabled_at`: a token stops while the account that created it is disabled (issue 34).
export const findTokenByHash = preparedQuery((db, p: { hash: string }) =>
  db.selectFrom('api_tokens')
    .leftJoin('users', 'users.id', 'api_tokens.created_by')
    .select(['api_tokens.id', 'api_tokens.workspace_id', 'api_tokens.role', 'api_tokens.expires_at', 'api_tokens.last_used_at', 'users.disabled_at as creator_disabled_at'])
    .where('api_tokens.token_hash', '=', p.hash));

/** Deletes every token the user created, in every workspace (the account is being deleted); returns how many. */
export async function deleteTokensCreatedBy(db: Executor, userId: string): Promise<number> {
  return Number((await db.deleteFrom('api_tokens').where('created_by', '=', userId).executeTakeFirst()).numDeletedRows);
}

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
