import { Type } from 'typebox';
import { userOf } from '../../platform/auth.js';
import { bearerSecurity, requestHeaders, responses, verbPath, type App } from '../../platform/http.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { ListNotificationsQuery, MarkAllReadResult, Notification, NotificationId, UnreadCount } from './notifications.schemas.js';

const tags = ['notifications'];
const USER_ONLY = 'Needs a user credential (session token or trusted external JWT): notifications belong to people, not to workspace tokens (403).';

export function notificationRoutes(app: App, s: Pick<Services, 'notifications'>): void {
  app.get('/v1/notifications', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listNotifications', summary: 'List your notifications',
      description:
        'The caller\'s notifications, newest first, at most 50 a page: `has_more` says whether older ones exist, ' +
        'and `next_cursor` reaches them. `unread=true` lists only unread ones, `unread=false` only read ones; any other value is 400. ' +
        'Notifications are kept 90 days. A notification is superseded, not followed by another, when what it announced no longer ' +
        'lies ahead: a `secret_purge_scheduled` one once the secret is restored (`:undelete`), deleted for good (`DELETE ?force=true`) ' +
        'or purged. It is then marked read (a `read_at` already set stays) and its `context` gains `superseded_by` (`secret.undelete`, ' +
        '`secret.delete` or `secret.purge`) and `superseded_at`, so no unread notification states what is no longer true, and a ' +
        'list shows which ones were overtaken. ' + USER_ONLY,
      headers: requestHeaders({ context: false }), querystring: ListNotificationsQuery,
      response: responses({ 200: pageOf(Notification, 'A page of notifications') }, [400, 403]),
    },
  }, async (request) => s.notifications.list(userOf(request).userId, request.query));

  app.get(verbPath('/v1/notifications', 'unreadCount'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'countUnreadNotifications', summary: 'Count your unread notifications',
      description: 'How many of the caller\'s notifications are unread (for a badge; cheaper than listing). ' + USER_ONLY,
      headers: requestHeaders({ context: false }),
      response: responses({ 200: UnreadCount }, [403]),
    },
  }, async (request) => s.notifications.unreadCount(userOf(request).userId));

  app.post(verbPath('/v1/notifications', 'markAllRead'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'markAllNotificationsRead', summary: 'Mark all your notifications read',
      description: 'Marks every unread notification of the caller read, now; `updated` says how many were unread. No body. ' + USER_ONLY,
      headers: requestHeaders({ context: false }),
      response: responses({ 200: MarkAllReadResult }, [400, 403]),
    },
  }, async (request) => s.notifications.markAllRead(userOf(request).userId));

  app.post(verbPath('/v1/notifications/:id', 'markRead'), {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'markNotificationRead', summary: 'Mark a notification read',
      description:
        '200 with the notification and its `read_at`. Marking a read notification again changes nothing (its first `read_at` stays). ' +
        'Another user\'s notification is 404. No body. ' + USER_ONLY,
      params: Type.Object({ id: NotificationId }), headers: requestHeaders({ context: false }),
      response: responses({ 200: Notification }, [400, 403, 404]),
    },
  }, async (request) => s.notifications.markRead(userOf(request).userId, request.params.id));
}
