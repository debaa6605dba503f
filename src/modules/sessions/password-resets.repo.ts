// One-time links to choose a new password: every query of password_resets.
import type { Executor } from '../../db/database.js';
import type { PasswordResetsTable } from '../../db/schema.js';

export async function insertPasswordReset(tx: Executor, row: PasswordResetsTable): Promise<void> {
  await tx.insertInto('password_resets').values(row).execute();
}

/** Ends the user's links that still work (a newer one supersedes them). */
export async function endOpenResets(tx: Executor, userId: string, now: number): Promise<void> {
  await tx.updateTable('password_resets').set({ ended_at: now }).where('user_id', '=', userId).where('ended_at', 'is', null).execute();
}

/** The link of this token while it works: not ended, not expired. */
export function findWorkingReset(db: Executor, tokenHash: string, now: number): Promise<PasswordResetsTable | undefined> {
  return db.selectFrom('password_resets').selectAll()
    .where('token_hash', '=', tokenHash).where('ended_at', 'is', null).where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Uses the link: true for exactly one of concurrent uses. */
export async function useReset(tx: Executor, id: string, now: number): Promise<boolean> {
  const res = await tx.updateTable('password_resets').set({ ended_at: now })
    .where('id', '=', id).where('ended_at', 'is', null).where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
