// The sign_in_throttles table: the counters of failed sign-ins and wrong device codes
// (sign-in-throttle.ts says what they count and why).
import { sql, type Expression, type SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';

/** The delay rule of a counter: the same as delayAfter in sign-in-throttle.ts. */
export interface ThrottleRule {
  resetAfterSeconds: number;
  maxDelaySeconds: number;
}

export interface ThrottleRow {
  key: string;
  failures: number;
  last_failure_at: number;
}

/** true when the counter allows an attempt at `now`: the same rule as delayAfter, in SQL. */
function allowed(now: number, free: number, rule: ThrottleRule): Expression<SqlBool> {
  const branches = [sql<SqlBool>`sign_in_throttles.failures < ${free}`, sql<SqlBool>`sign_in_throttles.last_failure_at <= ${now - rule.resetAfterSeconds}`];
  for (let extra = 0; 2 ** extra < rule.maxDelaySeconds; extra++) {
    branches.push(sql<SqlBool>`(sign_in_throttles.failures = ${free + extra} and sign_in_throttles.last_failure_at <= ${now - 2 ** extra})`);
  }
  branches.push(sql<SqlBool>`sign_in_throttles.last_failure_at <= ${now - rule.maxDelaySeconds}`);
  return sql<SqlBool>`(${sql.join(branches, sql` or `)})`;
}

/**
 * Counts one failure on the counter if it allows an attempt now (`free` null: always counts);
 * false when it does not. One conditional upsert, so concurrent attempts cannot all pass.
 */
export async function claimThrottleSlot(db: Executor, key: string, free: number | null, now: number, rule: ThrottleRule): Promise<boolean> {
  const row = await db
    .insertInto('sign_in_throttles')
    .values({ key, failures: 1, last_failure_at: now })
    .onConflict((oc) => {
      const update = oc.column('key').doUpdateSet({
        failures: sql<number>`case when sign_in_throttles.last_failure_at <= ${now - rule.resetAfterSeconds} then 1 else sign_in_throttles.failures + 1 end`,
        last_failure_at: now,
      });
      return free === null ? update : update.where(allowed(now, free, rule));
    })
    .returning('failures')
    .executeTakeFirst();
  return row !== undefined;
}

export function findThrottles(db: Executor, keys: string[]): Promise<ThrottleRow[]> {
  return db.selectFrom('sign_in_throttles').select(['key', 'failures', 'last_failure_at']).where('key', 'in', keys).execute();
}

/** Takes one failure back from each counter that has one. */
export async function giveBackFailures(db: Executor, keys: string[]): Promise<void> {
  await db.updateTable('sign_in_throttles').set({ failures: sql<number>`failures - 1` })
    .where('key', 'in', keys).where('failures', '>', 0).execute();
}

export async function deleteThrottles(db: Executor, keys: string[]): Promise<void> {
  await db.deleteFrom('sign_in_throttles').where('key', 'in', keys).execute();
}

/**
 * One attempt in a fixed window (createAttemptWindows in sign-in-throttle.ts): `failures` counts the
 * window's attempts and `last_failure_at` is when it opened. One conditional upsert; false when
 * the window is full.
 */
export async function takeWindowAttempt(db: Executor, key: string, limit: number, windowSeconds: number, now: number): Promise<boolean> {
  const expired = sql<SqlBool>`sign_in_throttles.last_failure_at <= ${now - windowSeconds}`;
  const row = await db
    .insertInto('sign_in_throttles')
    .values({ key, failures: 1, last_failure_at: now })
    .onConflict((oc) => oc.column('key').doUpdateSet({
      failures: sql<number>`case when ${expired} then 1 else sign_in_throttles.failures + 1 end`,
      last_failure_at: sql<number>`case when ${expired} then ${now} else sign_in_throttles.last_failure_at end`,
    }).where(sql<SqlBool>`(${expired} or sign_in_throttles.failures < ${limit})`))
    .returning('failures')
    .executeTakeFirst();
  return row !== undefined;
}

/** When the key's window opened, if it has one. */
export function findWindowStart(db: Executor, key: string): Promise<{ last_failure_at: number } | undefined> {
  return db.selectFrom('sign_in_throttles').select('last_failure_at').where('key', '=', key).executeTakeFirst();
}
