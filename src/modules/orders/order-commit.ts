// Committing an order (API.md 8.7): once a draft is paid (or nothing was to be paid) its order is
// written, the offer's use becomes the order's for good, the seller is told and the audit log
// records `order.commit`, and the delivery (order_draft.deliver) starts, all in the transaction that
// moved the draft to `install`. The unique order_draft_id makes a second commit of one draft fail
// instead of making two orders, whatever the order in which webhooks and return pages arrive.
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import { recordAuditEvent } from '../audit/audit.js';
import { orderPaid } from '../notifications/sources.js';
import type { OperationService } from '../operations/operations.service.js';
import { ORDER_DRAFT_DELIVER } from './draft-endings.js';
import { countOrder, type OfferRow } from './offer-uses.js';
import * as repo from './order-drafts.repo.js';
import { amountOf } from './order-drafts.view.js';

export interface PaidCheckout {
  provider: string;
  providerSessionId: string;
  subscriptionId: string | null;
  currentPeriodEnd: number | null;
}

export function formatAmount(cents: number, currency: string, interval: string): string {
  const value = `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;
  return interval === 'one_time' ? value : `${value} per ${interval}`;
}

/** Writes the order of a draft just moved to `install` and starts its delivery; answers the order. */
export async function commitOrder(
  tx: Executor, operations: Pick<OperationService, 'start'>, draft: repo.DraftRow, offer: OfferRow, paid: PaidCheckout | null,
): Promise<repo.OrderRow> {
  const now = clock.now();
  const amount = amountOf(offer);
  const order: repo.OrderRow = {
    id: newId('order'), offer_id: offer.id, order_draft_id: draft.id, seller_workspace_id: draft.seller_workspace_id,
    customer_user_id: draft.user_id!, customer_workspace_id: draft.workspace_id!, amount, currency: offer.currency, interval: offer.interval,
    status: 'delivery_pending', payment_provider: paid?.provider ?? 'none', payment_provider_checkout_id: paid?.providerSessionId ?? null,
    draft_revision: draft.content_revision, committed_at: now, subscription_id: paid?.subscriptionId ?? null,
    next_renewal_at: paid?.currentPeriodEnd ?? null, renewals: 0, delivery_id: newId('delivery'), install_id: null, install_operation_id: null,
    delivery_started_at: null, delivery_completed_at: null, created_at: now, updated_at: now, revision: 1,
  };
  await repo.insertOrder(tx, order);
  await countOrder(tx, offer.id);
  await repo.moveDraft(tx, draft.id, 'orderCommitted', null, { holds_use: 0 }, now);
  await recordAuditEvent(tx, { workspaceId: draft.seller_workspace_id, actor: { type: 'user', id: draft.user_id! }, requestId: null }, {
    action: 'order.commit', resourceType: 'order', resourceId: order.id,
    metadata: {
      offer_id: offer.id, order_draft_id: draft.id, amount: String(amount), currency: offer.currency, interval: offer.interval,
      customer_workspace_id: order.customer_workspace_id, payment_provider: order.payment_provider,
    },
  });
  if (amount > 0) {
    await orderPaid(tx, {
      sellerWorkspaceId: draft.seller_workspace_id, orderId: order.id, offerTitle: offer.title,
      amount: formatAmount(amount, offer.currency, offer.interval), customerEmail: draft.customer_email,
    });
  }
  await operations.start(tx, {
    type: ORDER_DRAFT_DELIVER, workspaceId: order.customer_workspace_id, ownerType: 'order_draft', ownerId: draft.id, clusterId: null,
    input: {}, metadata: { order_draft_id: draft.id, order_id: order.id }, actor: { actorId: draft.user_id!, userId: draft.user_id },
  });
  return order;
}
