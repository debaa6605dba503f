// Notifications (spec 2.11, endpoint 16; API.md 8.2): per user, about the things that need a person.
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const NOTIFICATION_TYPES = [
  'operation_failed',
  'install_degraded',
  'subscription_change_applied',
  'subscription_change_rejected',
  'subscription_payment_failed',
  'subscription_provider_failing',
  'quota_threshold_reached',
  'api_token_expiring',
  'secret_purge_scheduled',
  'machine_expiry',
  'machine_unreachable',
  'agent_turn_waiting',
  'order_paid',
  'order_delivery_failed',
  'order_delivered',
  'order_draft_expiring',
  'password_changed',
  'two_factor_enabled',
  'two_factor_disabled',
] as const;
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];

export const NOTIFICATION_RESOURCE_TYPES = [
  'operation', 'install', 'subscription_change_request', 'workspace', 'user', 'api_token', 'secret', 'machine', 'agent_turn', 'order', 'order_draft',
] as const;
export type NotificationResourceType = (typeof NOTIFICATION_RESOURCE_TYPES)[number];

export const SEVERITIES = ['info', 'warning', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** The spec caps the list at 50 recent items per page. */
export const NOTIFICATIONS_PAGE_MAX = 50;

export const NotificationId = Type.String({ minLength: 1, maxLength: 53, description: 'notification id (ntf_...)' });

export const Notification = Type.Object(
  {
    id: Type.String({ description: 'ntf_ id' }),
    type: StringEnum(NOTIFICATION_TYPES, {
      description:
        'operation_failed (an operation you started failed), install_degraded (an update failed; the previous render serves), ' +
        'subscription_change_applied, subscription_change_rejected (a scheduled downgrade or cancel found usage above the new plan\'s limits), ' +
        'subscription_payment_failed (SVC_BILLING=payments: a renewal of the paid plan could not be charged; owners and admins), ' +
        'subscription_provider_failing (the payment provider keeps refusing to end or change the plan\'s subscription; owners and admins, once) ' +
        'quota_threshold_reached (a quota reached 80 % or 100 %), api_token_expiring (within 7 days), ' +
        'secret_purge_scheduled (a deleted secret will be destroyed at purge_at; superseded once it is restored, deleted for good or purged), ' +
        'machine_expiry (a machine is deleted at its expires_at: sent to the workspace\'s owners and admins 72 h and 24 h before, once each), ' +
        'machine_unreachable (a machine\'s agent missed 3 heartbeats; superseded when it heartbeats again or is deleted), ' +
        'agent_turn_waiting (an agent turn waits for your approval or your answer; sent to the turn\'s creator, and for a member\'s turn that needs an admin\'s approval to the owners and admins; superseded once answered or ended), ' +
        'order_paid (an order of your workspace\'s offer was paid; owners and admins of the seller), ' +
        'order_delivery_failed (the install an order delivers failed; owners and admins of the seller), ' +
        'order_delivered (the install you ordered runs; the customer), order_draft_expiring (your order draft ends soon unless finished; the customer), ' +
        'password_changed (your password was changed and your other sessions signed out; if it was not you, reset it), ' +
        'two_factor_enabled and two_factor_disabled (two-factor sign-in was turned on or off for your account; if it was not you, act now)'
    }),
    resource_type: StringEnum(NOTIFICATION_RESOURCE_TYPES, { description: 'the kind of resource the notification is about' }),
    resource_id: Type.String({ description: 'prefixed id of that resource (it may be gone since)' }),
    workspace_id: Type.Union([Type.String(), Type.Null()], { description: 'the workspace concerned; null for notifications about the user alone' }),
    title: Type.String({ description: 'one line' }),
    body: Type.String({ description: 'what happened and what to do' }),
    severity: StringEnum(SEVERITIES, { description: 'info, warning (act soon) or critical (something is broken or refused)' }),
    context: Type.Record(Type.String(), Type.String(), {
      description: 'machine-readable details as strings (ids, metric, limit, ...), by type. A superseded notification (what it announced ' +
        'no longer lies ahead) also has `superseded_by`, the audit action that superseded it (`secret.undelete`, `secret.delete`, ' +
        '`secret.purge`), and `superseded_at` (Unix seconds)',
    }),
    read_at: Type.Optional(Type.Integer({ minimum: 0, description: 'when it was marked read (Unix seconds); omitted while unread' })),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
  },
  {
    $id: 'Notification',
    description: 'A message to one user about something that needs their attention. Sent once per event; kept 90 days. One whose news no longer holds is superseded (marked read, ' +
      '`context.superseded_by` set), not followed by another message.',
    examples: [{
      id: 'ntf_01jf8x3q6m2c4y7n0k5t9r1b3d', type: 'quota_threshold_reached', resource_type: 'workspace', resource_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a',
      workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', title: 'Clusters at 100 % of the free plan', severity: 'critical',
      body: 'Workspace Acme uses 3 of 3 clusters allowed by its plan (free). Creating another is refused until one is deleted or the plan is upgraded.',
      context: { metric: 'compute/clusters', limit: '3', usage: '3', percent: '100', tier: 'free' }, created_at: 1767225600,
    }],
  },
);
export type NotificationT = Static<typeof Notification>;
export const NotificationRef = Type.Unsafe<NotificationT>({ $ref: 'Notification#' });

export const ListNotificationsQuery = Type.Object(
  {
    unread: Type.Optional(StringEnum(['true', 'false'], {
      description: 'exactly `true` (only unread notifications) or `false` (only read ones); omitted: both. Anything else is 400',
    })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'next_cursor of a previous page, with the same unread filter' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: NOTIFICATIONS_PAGE_MAX, default: NOTIFICATIONS_PAGE_MAX, description: 'items per page, 1-50' })),
  },
  { additionalProperties: false },
);
export type ListNotificationsQueryT = Static<typeof ListNotificationsQuery>;

export const MarkAllReadResult = Type.Object(
  { updated: Type.Integer({ minimum: 0, description: 'how many notifications were unread and are now read' }) },
  { $id: 'MarkAllReadResult', description: 'The outcome of :markAllRead', examples: [{ updated: 4 }] },
);

export const UnreadCount = Type.Object(
  { unread_count: Type.Integer({ minimum: 0, description: 'notifications of the caller not yet read' }) },
  { $id: 'UnreadCount', description: 'The number of unread notifications', examples: [{ unread_count: 2 }] },
);
