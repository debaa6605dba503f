// The user_totp and user_recovery_codes tables (migration 019): every query of accounts' second
// factors (two-factor.service.ts says what they mean).
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { UserRecoveryCodesTable, UserTotpTable } from '../../db/schema.js';

export type TotpRow = UserTotpTable;

export function findTotp(db: Executor, userId: string): Promise<TotpRow | undefined> {
  return db.selectFrom('user_totp').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

/** A new pending factor, or the pending one replaced (a new id, secret and time); never an active one. */
export async function upsertPendingTotp(db: Executor, row: TotpRow): Promise<boolean> {
  const res = await db.insertInto('user_totp').values(row)
    .onConflict((oc) => oc.column('user_id').doUpdateSet({ id: row.id, secret_sealed: row.secret_sealed, created_at: row.created_at, last_used_step: null })
      .where('user_totp.confirmed_at', 'is', null))
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** Makes the pending factor active with the step of the code that confirmed it; false when it is not pending any more. */
export async function confirmTotp(db: Executor, p: { id: string; step: number; now: number }): Promise<boolean> {
  const res = await db.updateTable('user_totp').set({ confirmed_at: p.now, last_used_step: p.step })
    .where('id', '=', p.id).where('confirmed_at', 'is', null).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Takes the step of an accepted code: only when it is later than every step used before (compare
 * and set, so two requests with the same code cannot both pass). False: the code was used already.
 */
export async function takeTotpStep(db: Executor, id: string, step: number): Promise<boolean> {
  const res = await db.updateTable('user_totp').set({ last_used_step: step })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function deleteTotp(db: Executor, userId: string): Promise<number> {
  return Number((await db.deleteFrom('user_totp').where('user_id', '=', userId).executeTakeFirst()).numDeletedRows);
}

export async function replaceRecoveryCodes(db: Executor, userId: string, rows: UserRecoveryCodesTable[]): Promise<void> {
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
  if (rows.length > 0) await db.insertInto('user_recovery_codes').values(rows).execute();
}

export async function deleteRecoveryCodes(db: Executor, userId: string): Promise<void> {
  await db.deleteFrom('user_recovery_codes').where('user_id', '=', userId).execute();
}

/** Spends an unused recovery code of the user; false when there is none with this hash. */
export async function useRecoveryCode(db: Executor, userId: string, hash: string, now: number): Promise<boolean> {
  const res = await db.updateTable('user_recovery_codes').set({ used_at: now })
    .where('user_id', '=', userId).where('code_hash', '=', hash).where('used_at', 'is', null).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function countUnusedRecoveryCodes(db: Executor, userId: string): Promise<number> {
  const r = await db.selectFrom('user_recovery_codes').select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId).where('used_at', 'is', null).executeTakeFirstOrThrow();
  return Number(r.n);
}

// Asked on every request a user makes to a workspace that requires two factors: prepared once.
const activeTotp = preparedQuery((db, p: { userId: string }) =>
  db.selectFrom('user_totp').select('id').where('user_id', '=', p.userId).where('confirmed_at', 'is not', null));

export async function hasActiveTotp(db: Executor, userId: string): Promise<boolean> {
  return (await activeTotp(db, { userId })).length > 0;
}

/** Which of these users have an active factor (a members page). */
export async function usersWithActiveTotp(db: Executor, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await db.selectFrom('user_totp').select('user_id').where('user_id', 'in', userIds).where('confirmed_at', 'is not', null).execute();
  return new Set(rows.map((r) => r.user_id));
}
