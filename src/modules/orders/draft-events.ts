// The orders side's domain events (API.md 8.11): recorded in the transaction of the change they
// report, in the seller's workspace (whose members read drafts and orders with a workspace, and whose
// webhook endpoints hear of them), each carrying the resource as that GET returns it:
//   order_draft.terminated  the draft's last move (cleaning_up -> terminated), with its termination_reason
//   order.delivered         the order's install became healthy (the draft is done)
//   order.delivery_failed   the order's install could not be delivered
import type { Executor } from '../../db/database.js';
import { recordEvent } from '../../events/record.js';
import { offersByIds } from './offer-uses.js';
import * as repo from './order-drafts.repo.js';
import { toOrder, toSellerDraft, type DraftOffer, type DraftRelated } from './order-drafts.view.js';

/** What the views of a page of drafts need, in four statements whatever the page's size. */
export async function relatedOfDrafts(executor: Executor, rows: repo.DraftRow[]): Promise<(row: repo.DraftRow) => DraftRelated> {
  const ids = rows.map((r) => r.id);
  const [offers, checkouts, orders] = await Promise.all([
    offersByIds(executor, rows.map((r) => r.offer_id)), repo.openCheckoutsOfDrafts(executor, ids), repo.ordersOfDrafts(executor, ids),
  ]);
  const urlsOf = await repo.urlsByInstall(executor, orders.map((o) => o.install_id));
  const offerOf = new Map(offers.map((o) => [o.id, o as DraftOffer]));
  const checkoutOf = new Map(checkouts.map((c) => [c.draft_id, c]));
  const orderOf = new Map(orders.map((o) => [o.order_draft_id, o]));
  return (row) => {
    const order = orderOf.get(row.id) ?? null;
    return { offer: offerOf.get(row.offer_id)!, checkout: checkoutOf.get(row.id) ?? null, order, urls: order?.install_id ? urlsOf.get(order.install_id) ?? [] : [] };
  };
}

/** order_draft.terminated, in the transaction of the terminate move: the draft as the seller's members GET it. */
export async function recordDraftTerminated(tx: Executor, draft: repo.DraftRow, publicUrl: string): Promise<void> {
  const data = toSellerDraft(draft, (await relatedOfDrafts(tx, [draft]))(draft), publicUrl);
  await recordEvent(tx, { type: 'order_draft.terminated', workspace_id: draft.seller_workspace_id, data });
}

/** order.delivered or order.delivery_failed, in the transaction that set the order's status: the order as the seller's members GET it. */
export async function recordOrderEvent(tx: Executor, type: 'order.delivered' | 'order.delivery_failed', order: repo.OrderRow, publicUrl: string): Promise<void> {
  const urls = (await repo.urlsByInstall(tx, [order.install_id])).get(order.install_id ?? '') ?? [];
  await recordEvent(tx, { type, workspace_id: order.seller_workspace_id, data: toOrder(order, urls, publicUrl) });
}
