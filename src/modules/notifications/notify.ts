// The one way to send a notification: `notify(tx, recipients, event)`, called inside the caller's
// transaction, so a notification exists exactly when the change it reports committed. An event is
// named by its type and key; each user gets it once, however often the caller runs (step retries,
// sweeps on several instances).
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { queueMail } from '../mail/mail.service.js';
import { notificationEmailOf } from '../users/users.service.js';
import { insertNotifications, markSuperseded, unsuperseded, workspaceAdmins } from './notifications.repo.js';
import type { NotificationResourceType, NotificationType, Severity } from './notifications.schemas.js';

/** Named users, or the owners and admins of a workspace at the time of the event. */
export type Recipients = { users: (string | null)[] } | { adminsOf: string };

export interface NotificationEvent {
  type: NotificationType;
  /** with the type, names the event (e.g. the operation id): one notification per user and event */
  key: string;
  resourceType: NotificationResourceType;
  resourceId: string;
  workspaceId: string | null;
  title: string;
  body: string;
  severity: Severity;
  context: Record<string, string>;
}

const dedupKeyOf = (type: NotificationType, key: string) => `${type}:${key}`;

/** Sends `event` to every recipient who does not have it yet; returns how many got it now. */
export async function notify(tx: Executor, to: Recipients, event: NotificationEvent): Promise<number> {
  const users = 'users' in to ? to.users.filter((u): u is string => u !== null) : await workspaceAdmins(tx, to.adminsOf);
  const now = clock.now();
  const context = JSON.stringify(event.context);
  const got = await insertNotifications(tx, [...new Set(users)].map((userId) => ({
    id: newId('notification'),
    user_id: userId,
    workspace_id: event.workspaceId,
    type: event.type,
    resource_type: event.resourceType,
    resource_id: event.resourceId,
    title: event.title.slice(0, 200),
    body: event.body.slice(0, 2000),
    severity: event.severity,
    context,
    dedup_key: dedupKeyOf(event.type, event.key),
    read_at: null,
    created_at: now,
  })));
  if (got.length) await mailNotification(tx, got, event);
  return got.length;
}

/**
 * Also e-mails the notification to those of its new recipients who chose so (PATCH /v1/me
 * `notification_email`): `all`, or `important` for warnings and critical ones. Queued in the same
 * transaction, so the mail exists exactly when the notification does.
 */
async function mailNotification(tx: Executor, userIds: string[], event: NotificationEvent): Promise<void> {
  for (const u of await notificationEmailOf(tx, userIds)) {
    const wanted = u.notification_email === 'all' || (u.notification_email === 'important' && event.severity !== 'info');
    if (!wanted || u.disabled_at !== null) continue;
    await queueMail(tx, {
      to: u.email, userId: u.id, kind: 'notification', subject: event.title.slice(0, 200),
      body: `${event.body.slice(0, 2000)}\n\n--\nA notification of svc. Choose which notifications are e-mailed to you on your account page.`,
    });
  }
}

/**
 * The one way to withdraw what notifications announced once it no longer holds (or has come to
 * pass): every notification of `type` about `resourceId` not superseded yet is marked read (if it
 * still was unread) and its context gains `superseded_by` (what superseded it) and `superseded_at`.
 * Nothing new is sent: as monitoring and alerting services close a resolved alert quietly, the
 * reader's list stays true without a second message. In the caller's transaction, so it holds
 * exactly when the change does.
 */
export async function supersede(tx: Executor, e: { type: NotificationType; resourceId: string; by: string }): Promise<void> {
  const now = clock.now();
  for (const row of await unsuperseded(tx, e.type, e.resourceId)) {
    const context = JSON.stringify({ ...(JSON.parse(row.context) as Record<string, string>), superseded_by: e.by, superseded_at: String(now) });
    await markSuperseded(tx, row.dedup_key, context, now);
  }
}
