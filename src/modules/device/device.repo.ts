// SQL for device codes (RFC 8628). Every state change is one conditional UPDATE, so concurrent
// polls and approvals cannot both win: the row's status is the lock.
import type { Executor } from '../../db/database.js';
import type { DeviceCodesTable } from '../../db/schema.js';

export type DeviceCodeStatus = 'pending' | 'approved' | 'denied' | 'exchanged';

export type DeviceCodeRow = Omit<DeviceCodesTable, 'status'> & { status: DeviceCodeStatus };

export async function insertDeviceCode(db: Executor, row: DeviceCodeRow): Promise<void> {
  await db.insertInto('device_codes').values(row).execute();
}

export async function findByDeviceCodeHash(db: Executor, hash: string): Promise<DeviceCodeRow | undefined> {
  const row = await db.selectFrom('device_codes').selectAll().where('device_code_hash', '=', hash).executeTakeFirst();
  return row as DeviceCodeRow | undefined;
}

export async function findByUserCode(db: Executor, userCode: string): Promise<DeviceCodeRow | undefined> {
  const row = await db.selectFrom('device_codes').selectAll().where('user_code', '=', userCode).executeTakeFirst();
  return row as DeviceCodeRow | undefined;
}

/**
 * Records a poll of a pending code when the client waited at least its interval since the last
 * one; false means it polled too fast (or the code is no longer pending).
 */
export async function recordPoll(db: Executor, id: string, now: number): Promise<boolean> {
  const res = await db
    .updateTable('device_codes')
    .set({ last_polled_at: now })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('last_polled_at', 'is', null), eb(eb('last_polled_at', '+', eb.ref('interval_s')), '<=', now)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Widens the polling interval of a code by `stepSeconds` (RFC 8628 slow_down); returns the new interval. */
export async function widenInterval(db: Executor, id: string, now: number, stepSeconds: number): Promise<number | null> {
  const row = await db
    .updateTable('device_codes')
    .set((eb) => ({ interval_s: eb('interval_s', '+', stepSeconds), last_polled_at: now }))
    .where('id', '=', id)
    .returning('interval_s')
    .executeTakeFirst();
  return row ? Number(row.interval_s) : null;
}

/** approved -> exchanged, once: of two concurrent polls exactly one sees `true`. */
export async function markExchanged(db: Executor, id: string, now: number): Promise<boolean> {
  const res = await db
    .updateTable('device_codes')
    .set({ status: 'exchanged' })
    .where('id', '=', id)
    .where('status', '=', 'approved')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** pending -> approved|denied by a signed-in user, while the code is alive. */
export async function decideDeviceCode(
  db: Executor,
  userCode: string,
  decision: 'approved' | 'denied',
  userId: string,
  now: number,
): Promise<boolean> {
  const res = await db
    .updateTable('device_codes')
    .set({ status: decision, user_id: userId })
    .where('user_code', '=', userCode)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Deletes codes that expired before `before`; their user codes become free for reuse. */
export async function purgeExpiredDeviceCodes(db: Executor, before: number): Promise<void> {
  await db.deleteFrom('device_codes').where('expires_at', '<', before).execute();
}
