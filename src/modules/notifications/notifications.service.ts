// The caller's notifications (endpoint 16): list (at most 50 a page), mark read, count unread; and
// the workers' sweeps: API tokens expiring within 7 days, and the 90-day retention.
import type { Db } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import * as repo from './notifications.repo.js';
import type { ListNotificationsQueryT, NotificationResourceType, NotificationT, NotificationType, Severity } from './notifications.schemas.js';
import { apiTokenExpiring } from './sources.js';

/** Notifications older than this are deleted by the workers. */
export const NOTIFICATION_RETENTION_SECONDS = 90 * 24 * 3600;
/** API tokens expiring within this are announced to their workspace's owners and admins. */
export const TOKEN_EXPIRY_NOTICE_SECONDS = 7 * 24 * 3600;

export function toNotification(row: repo.NotificationRow): NotificationT {
  return {
    id: row.id,
    type: row.type as NotificationType,
    resource_type: row.resource_type as NotificationResourceType,
    resource_id: row.resource_id,
    workspace_id: row.workspace_id,
    title: row.title,
    body: row.body,
    severity: row.severity as Severity,
    context: JSON.parse(row.context) as Record<string, string>,
    ...(row.read_at !== null ? { read_at: row.read_at } : {}),
    created_at: row.created_at,
  };
}

export function createNotificationService(deps: { db: Db; cursors: CursorCodec }) {
  const { db, cursors } = deps;

  async function list(userId: string, query: ListNotificationsQueryT): Promise<Page<NotificationT>> {
    const filters = { unread: query.unread };
    const page = cursors.request(query, userId, filters);
    const read = query.unread === undefined ? undefined : query.unread === 'false';
    const rows = await repo.listNotifications(db, userId, read, page);
    return cursors.page(rows, page, userId, filters, toNotification);
  }

  async function markRead(userId: string, id: string): Promise<NotificationT> {
    const row = isId('notification', id) ? await repo.markRead(db, userId, id, clock.now()) : undefined;
    if (!row) throw notFound('notification');
    return toNotification(row);
  }

  async function markAllRead(userId: string): Promise<{ updated: number }> {
    return { updated: await repo.markAllRead(db, userId, clock.now()) };
  }

  async function unreadCount(userId: string): Promise<{ unread_count: number }> {
    return { unread_count: await repo.countUnread(db, userId) };
  }

  /**
   * Announces every API token that expires within 7 days and was not announced yet; returns how
   * many notifications were sent. Safe on every instance at once (one notification per token and user).
   */
  async function notifyExpiringTokens(): Promise<number> {
    const now = clock.now();
    const tokens = await repo.unannouncedExpiringTokens(db, now, now + TOKEN_EXPIRY_NOTICE_SECONDS, 500);
    let sent = 0;
    for (const token of tokens) {
      sent += await db.transaction().execute((tx) =>
        apiTokenExpiring(tx, { workspaceId: token.workspace_id, workspaceName: token.workspace_name, tokenId: token.id, name: token.name, expiresAt: token.expires_at! }));
    }
    return sent;
  }

  /** Deletes notifications past the 90-day retention; returns how many. */
  function purgeExpired(): Promise<number> {
    return repo.purgeOlderThan(db, clock.now() - NOTIFICATION_RETENTION_SECONDS);
  }

  return { list, markRead, markAllRead, unreadCount, notifyExpiringTokens, purgeExpired };
}

export type NotificationService = ReturnType<typeof createNotificationService>;
