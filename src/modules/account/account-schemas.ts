// The named schemas of the workspace account (plans, subscriptions, quotas, notifications), added
// once to the app so the OpenAPI document lists them under components.schemas.
import { Notification } from '../notifications/notifications.schemas.js';
import { PlanSchema } from '../plans/plans.schemas.js';
import { QuotaEntry } from '../quotas/quotas.schemas.js';
import { ChangeRequest } from '../subscriptions/subscriptions.schemas.js';

export const ACCOUNT_SCHEMAS = [PlanSchema, ChangeRequest, QuotaEntry, Notification];
