// The periodic work of order drafts (API.md 8.7), run by the workers of every instance: drafts past
// their ttl end `timeout`; drafts whose offer expired end `offer_expired`; customers are told once
// when a draft is about to expire; refunds that failed are tried again; and the payment providers'
// own chores run (the local provider's event deliveries and simulated renewals). Safe on several
// instances at once: each ending is one conditional move of the draft, each notice has a unique key.
import type { Db } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { orderDraftExpiring } from '../notifications/sources.js';
import type { OperationService } from '../operations/operations.service.js';
import type { CheckoutService } from './checkout.service.js';
import { endDraft } from './draft-endings.js';
import { findOfferById } from './offer-uses.js';
import * as repo from './order-drafts.repo.js';

export interface OrderSweepResult {
  timed_out: number;
  offer_expired: number;
  expiry_notices: number;
  refunds_retried: number;
}

/** drafts looked at per kind and run; the rest wait for the next run */
const BATCH = 200;

export async function sweepOrders(deps: {
  db: Db; operations: Pick<OperationService, 'start'>; publicUrl: string; checkout: Pick<CheckoutService, 'refundOrphans'>; noticeSeconds: number;
  providerChores: () => Promise<void>;
}): Promise<OrderSweepResult> {
  const { db } = deps;
  const out: OrderSweepResult = { timed_out: 0, offer_expired: 0, expiry_notices: 0, refunds_retried: 0 };
  const now = clock.now();
  for (const draft of await repo.expiredDrafts(db, now, BATCH)) {
    if (await db.transaction().execute((tx) => endDraft(tx, deps, draft, 'timeout'))) out.timed_out++;
  }
  for (const draft of await repo.draftsOfExpiredOffers(db, now, BATCH)) {
    if (await db.transaction().execute((tx) => endDraft(tx, deps, draft, 'offer_expired'))) out.offer_expired++;
  }
  if (deps.noticeSeconds > 0) {
    for (const draft of await repo.draftsToWarn(db, now, deps.noticeSeconds, BATCH)) {
      await db.transaction().execute(async (tx) => {
        if (!(await repo.markExpiryNotified(tx, draft.id, now))) return;
        const offer = await findOfferById(tx, draft.offer_id);
        out.expiry_notices += await orderDraftExpiring(tx, {
          customerUserId: draft.user_id!, workspaceId: draft.workspace_id, draftId: draft.id, offerTitle: offer?.title ?? draft.offer_id, expiresAt: draft.ttl_expires_at,
        });
      });
    }
  }
  out.refunds_retried = await deps.checkout.refundOrphans();
  await deps.providerChores();
  return out;
}
