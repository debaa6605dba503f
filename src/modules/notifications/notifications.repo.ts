// SQL of notifications. Inserts skip an event a user already has (unique dedup_key per user), so a
// retried step, a second instance or a repeated sweep never sends it twice.
import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { NotificationsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type NotificationRow = NotificationsTable;

/** Inserts the rows a user does not have yet; returns the users who got one now. */
export async function insertNotifications(tx: Executor, rows: NotificationRow[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await tx
    .insertInto('notifications')
    .values(rows)
    .onConflict((oc) => oc.columns(['dedup_key', 'user_id']).doNothing())
    .returning('user_id')
    .execute();
  return inserted.map((r) => r.user_id);
}

/**
 * The events (dedup key and context; the same for every recipient) of the notifications of `type`
 * about a resource that are not superseded yet (index notifications_resource_idx).
 */
export async function unsuperseded(tx: Executor, type: string, resourceId: string): Promise<{ dedup_key: string; context: string }[]> {
  const rows = await tx.selectFrom('notifications').select(['dedup_key', 'context']).distinct()
    .where('resource_id', '=', resourceId).where('type', '=', type).execute();
  return rows.filter((r) => !Object.hasOwn(JSON.parse(r.context) as object, 'superseded_by'));
}

/** Sets the context of an event's notifications and marks the unread ones read (a read_at already set is kept), in one statement. */
export async function markSuperseded(tx: Executor, dedupKey: string, context: string, now: number): Promise<void> {
  await tx.updateTable('notifications').set({ context, read_at: sql<number>`coalesce(read_at, ${now})` }).where('dedup_key', '=', dedupKey).execute();
}

/** The owners and admins of a workspace: who hears about what happens in it. */
export async function workspaceAdmins(db: Executor, workspaceId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('workspace_members')
    .select('user_id')
    .where('workspace_id', '=', workspaceId)
    .where('role', 'in', ['owner', 'admin'])
    .orderBy('user_id')
    .execute();
  return rows.map((r) => r.user_id);
}

/** A workspace's name, by primary key, for the wording of a notification about it (null once it is gone). */
export async function workspaceNameOf(db: Executor, workspaceId: string): Promise<string | null> {
  const row = await db.selectFrom('workspaces').select('name').where('id', '=', workspaceId).executeTakeFirst();
  return row?.name ?? null;
}

/** One page of a user's notifications, newest first; `read`: only read (true) or unread (false) ones. */
export function listNotifications(db: Executor, userId: string, read: boolean | undefined, page: PageRequest): Promise<NotificationRow[]> {
  let q = db.selectFrom('notifications').selectAll().where('user_id', '=', userId);
  if (read === false) q = q.where('read_at', 'is', null);
  if (read === true) q = q.where('read_at', 'is not', null);
  return keysetPage(q, 'id', page).execute();
}

/** Marks one of the user's notifications read (unless it already is); the row, or undefined when it is not the user's. */
export async function markRead(db: Executor, userId: string, id: string, now: number): Promise<NotificationRow | undefined> {
  const updated = await db
    .updateTable('notifications')
    .set({ read_at: now })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('read_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return updated ?? db.selectFrom('notifications').selectAll().where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
}

export async function markAllRead(db: Executor, userId: string, now: number): Promise<number> {
  const res = await db.updateTable('notifications').set({ read_at: now }).where('user_id', '=', userId).where('read_at', 'is', null).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

// Polled by clients for a badge: prepared, and answered from the partial index of unread rows.
const unreadCount = preparedQuery((db, p: { userId: string }) =>
  db.selectFrom('notifications').select((eb) => eb.fn.countAll<number | string>().as('n')).where('user_id', '=', p.userId).where('read_at', 'is', null));

export async function countUnread(db: Executor, userId: string): Promise<number> {
  const [row] = await unreadCount(db, { userId });
  return Number(row?.n ?? 0);
}

/** Deletes notifications created before `before`; returns how many. */
export async function purgeOlderThan(db: Executor, before: number): Promise<number> {
  const res = await db.deleteFrom('notifications').where('created_at', '<', before).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * API tokens expiring after `now` and at the latest at `until` that were not announced yet (to
 * anyone: the sweep's cost stays with new ones), soonest first, at most `limit`.
 */
export function unannouncedExpiringTokens(
  db: Executor, now: number, until: number, limit: number,
): Promise<{ id: string; workspace_id: string; name: string; expires_at: number | null; workspace_name: string }[]> {
  return db
    .selectFrom('api_tokens as t')
    .innerJoin('workspaces as w', 'w.id', 't.workspace_id')
    .select(['t.id', 't.workspace_id', 't.name', 't.expires_at', 'w.name as workspace_name'])
    .where('t.expires_at', '>', now)
    .where('t.expires_at', '<=', until)
    .where(({ not, exists, selectFrom }) => not(exists(
      selectFrom('notifications as n').select('n.id')
        .where('n.dedup_key', '=', sql<string>`'api_token_expiring:' || ${sql.ref('t.id')} || ':' || ${sql.ref('t.expires_at')}`),
    )))
    .orderBy('t.expires_at')
    .limit(limit)
    .execute();
}
