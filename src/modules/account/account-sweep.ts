// The workspace account's periodic work, run by the workers of every instance: apply the
// subscription changes that are due, announce API tokens expiring within 7 days, and drop
// notifications past their 90 days and rate counters of past days. Each part is safe to run on
// several instances at once (conditional updates, unique notification keys, idempotent deletes).
import type { Logger } from 'pino';
import type { NotificationService } from '../notifications/notifications.service.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import type { SubscriptionService } from '../subscriptions/subscriptions.service.js';

export interface AccountSweepResult {
  change_requests: number;
  token_notices: number;
  notifications_purged: number;
  counters_purged: number;
}

export async function sweepAccount(
  s: { subscriptions: Pick<SubscriptionService, 'applyDue'>; notifications: Pick<NotificationService, 'notifyExpiringTokens' | 'purgeExpired'>; quotas: Pick<QuotaService, 'purgeCounters'> },
  logger: Pick<Logger, 'warn'>,
): Promise<AccountSweepResult> {
  const out: AccountSweepResult = { change_requests: 0, token_notices: 0, notifications_purged: 0, counters_purged: 0 };
  // One failing part must not starve the others until the next run.
  const part = async (name: keyof AccountSweepResult, fn: () => Promise<number>) => {
    try {
      out[name] = await fn();
    } catch (err) {
      logger.warn({ err, part: name }, 'account sweep failed');
    }
  };
  await part('change_requests', () => s.subscriptions.applyDue());
  await part('token_notices', () => s.notifications.notifyExpiringTokens());
  await part('notifications_purged', () => s.notifications.purgeExpired());
  await part('counters_purged', () => s.quotas.purgeCounters());
  return out;
}
