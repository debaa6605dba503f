import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { UsersTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type UserRow = UsersTable;

export function findUserByEmail(db: Executor, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

export function findUserById(db: Executor, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function anyUserExists(db: Executor): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export async function updatePasswordHash(db: Executor, id: string, hash: string, now: number): Promise<boolean> {
  const res = await db.updateTable('users').set({ password_hash: hash, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function insertUser(db: Executor, row: UserRow): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

/** The instance's users, newest first (instance admins). */
export function listUsers(db: Executor, page: PageRequest): Promise<UserRow[]> {
  return keysetPage(db.selectFrom('users').selectAll(), 'id', page).execute();
}

export async function setDisabledAt(db: Executor, id: string, at: number | null, now: number): Promise<boolean> {
  const res = await db.updateTable('users').set({ disabled_at: at, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function setAdminGrantedAt(db: Executor, id: string, at: number | null, now: number): Promise<boolean> {
  const res = await db.updateTable('users').set({ admin_granted_at: at, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function updateProfile(db: Executor, id: string, patch: { name?: string | null; notification_email?: UserRow['notification_email'] }, now: number): Promise<boolean> {
  const res = await db.updateTable('users').set({ ...patch, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Deletes the account; its sessions, memberships, notifications and reset links go with it (foreign keys). */
export async function deleteUserRow(db: Executor, id: string): Promise<boolean> {
  return Number((await db.deleteFrom('users').where('id', '=', id).executeTakeFirst()).numDeletedRows) === 1;
}

/** The e-mail choice of each user (notifications decide whom to mail in one query). */
export function notificationEmailOf(db: Executor, userIds: string[]): Promise<Pick<UserRow, 'id' | 'email' | 'notification_email' | 'disabled_at'>[]> {
  if (userIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('users').select(['id', 'email', 'notification_email', 'disabled_at']).where('id', 'in', userIds).execute();
}
