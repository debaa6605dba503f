// The named schemas of the workspace account (plans, subscriptions, quotas, notifications), added
// once to the app so the OpenAPI document lists them under components.schemas.
import { MarkAllReadResult, Notification, UnreadCount } from '../notifications/notifications.schemas.js';
import { PlanSchema } from '../plans/plans.schemas.js';
import { QuotaEntry } from '../quotas/quotas.schemas.js';
import { ChangeRequest, PlanCheckout, Subscription } from '../subscriptions/subscriptions.schemas.js';

export const ACCOUNT_SCHEMAS = [PlanSchema, Subscription, ChangeRequest, PlanCheckout, QuotaEntry, Notification, UnreadCount, MarkAllReadResult];
