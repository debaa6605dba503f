// The sessions table: every query of session tokens.
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { SessionsTable } from '../../db/schema.js';

// Every request with a session token runs this lookup: prepared once.
// With the account's disabled_at: a disabled account's sessions stop at once (issue 34).
export const findSessionByHash = preparedQuery((db, p: { hash: string }) =>
  db.selectFrom('sessions').innerJoin('users', 'users.id', 'sessions.user_id')
    .select(['sessions.id', 'sessions.user_id', 'sessions.last_used_at', 'sessions.expires_at', 'users.disabled_at'])
    .where('sessions.token_hash', '=', p.hash));

export async function insertSession(db: Executor, row: SessionsTable): Promise<void> {
  await db.insertInto('sessions').values(row).execute();
}

export function findSessionOwnerByHash(db: Executor, hash: string): Promise<{ id: string; user_id: string } | undefined> {
  return db.selectFrom('sessions').select(['id', 'user_id']).where('token_hash', '=', hash).executeTakeFirst();
}

/** Moves the session's expiry on from `now`, unless another request already renewed it at `now`. */
export async function renewSession(db: Executor, id: string, now: number, expiresAt: number): Promise<void> {
  await db.updateTable('sessions').set({ last_used_at: now, expires_at: expiresAt }).where('id', '=', id).where('last_used_at', '<', now).execute();
}

/** Deletes every session of the user but `keep` (null: all of them); returns how many. */
export async function deleteSessionsOfUser(db: Executor, userId: string, keep: string | null): Promise<number> {
  let q = db.deleteFrom('sessions').where('user_id', '=', userId);
  if (keep !== null) q = q.where('id', '!=', keep);
  return Number((await q.executeTakeFirst()).numDeletedRows);
}

export async function deleteSession(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}
