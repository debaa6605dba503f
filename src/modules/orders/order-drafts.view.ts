// How drafts and orders look on the wire: the customer's view of a draft (with field_values and the
// offer's locked keys) and everyone else's (without), and an order with its delivery. Built from
// rows read in batches, so a page costs a fixed number of statements.
import type { Json } from '../../jobs/workflows.js';
import { etagOf } from '../../platform/etag.js';
import { lockedKeysOf } from '../offers/offer-values.js';
import { fieldValuesOf } from '../offers/offers.service.js';
import type { UrlEntryT } from '../installs/installs.schemas.js';
import { allows } from './draft-moves.js';
import type { CheckoutRow, DraftRow, OrderRow } from './order-drafts.repo.js';
import type { DraftStatus, OrderDraftSellerViewT, OrderDraftT, OrderStatus, OrderT, TerminationReason } from './orders.schemas.js';

/** What a view needs of the draft's offer. */
export interface DraftOffer {
  title: string;
  short_hash: string;
  unit_amount: number;
  currency: string;
  interval: string;
  compute_mode: string;
  commercial_mode: string;
  /** the offer's field_values JSON */
  field_values: string;
}

/** What the customer pays: nothing for a test offer. */
export function amountOf(offer: DraftOffer): number {
  return offer.commercial_mode === 'non_billable_test' ? 0 : Number(offer.unit_amount);
}


export interface DraftRelated {
  offer: DraftOffer;
  checkout: CheckoutRow | null;
  order: OrderRow | null;
  urls: UrlEntryT[];
}

function deliveryOf(order: OrderRow, urls: UrlEntryT[]) {
  return {
    id: order.delivery_id,
    urls,
    install_id: order.install_id,
    install_operation_id: order.install_operation_id,
    started_at: order.delivery_started_at,
    completed_at: order.delivery_completed_at,
  };
}

export function toSellerDraft(row: DraftRow, rel: DraftRelated, publicUrl: string): OrderDraftSellerViewT {
  const { offer, checkout, order } = rel;
  const draft: OrderDraftSellerViewT = {
    id: row.id,
    offer_id: row.offer_id,
    offer_title: offer.title,
    offer_short_hash: offer.short_hash,
    status: row.status as DraftStatus,
    cluster_ready: row.cluster_ready === 1,
    server_joined: row.server_joined === 1,
    payment_completed: row.payment_completed === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    ttl_expires_at: row.ttl_expires_at,
    etag: etagOf(row.revision),
    compute_mode: offer.compute_mode as OrderDraftT['compute_mode'],
    amount: amountOf(offer),
    currency: offer.currency as OrderDraftT['currency'],
    interval: offer.interval as OrderDraftT['interval'],
    html_url: `${publicUrl}/order_drafts/${row.id}`,
  };
  if (row.termination_reason !== null) draft.termination_reason = row.termination_reason as TerminationReason;
  if (row.user_id !== null) draft.user_id = row.user_id;
  if (row.customer_email !== null) draft.customer_email = row.customer_email;
  if (row.workspace_id !== null) draft.workspace_id = row.workspace_id;
  if (row.cluster_id !== null) draft.cluster_id = row.cluster_id;
  if (checkout && checkout.status === 'open' && allows('checkoutOpened', row.status)) {
    draft.current_checkout_session = { id: checkout.provider_session_id, draft_revision: checkout.draft_revision, url: checkout.url, expires_at: checkout.expires_at };
  }
  if (row.install_operation_id !== null) draft.install_operation_id = row.install_operation_id;
  if (order) {
    draft.order = {
      id: order.id, payment_provider_checkout_id: order.payment_provider_checkout_id, draft_revision: order.draft_revision, committed_at: order.committed_at,
    };
    draft.delivery = deliveryOf(order, rel.urls);
  }
  return draft;
}

export function toCustomerDraft(row: DraftRow, rel: DraftRelated, publicUrl: string): OrderDraftT {
  return {
    ...toSellerDraft(row, rel, publicUrl),
    field_values: configuredValuesOf(row) ?? prefillsOf(rel.offer),
    locked_keys: lockedKeysOf(fieldValuesOf(rel.offer)),
  };
}

/** The customer's configured values (JSON written by :submitConfiguration from checked values), or null before. */
export function configuredValuesOf(row: DraftRow): Record<string, Json> | null {
  return row.field_values === null ? null : (JSON.parse(row.field_values) as Record<string, Json>);
}

/** Before the customer configured anything, their values are the offer's pre-fills. */
export function prefillsOf(offer: DraftOffer): Record<string, unknown> {
  const values = JSON.parse(offer.field_values) as Record<string, { value: unknown }>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = v.value;
  return out;
}

export function toOrder(row: OrderRow, urls: UrlEntryT[], publicUrl: string): OrderT {
  return {
    id: row.id,
    offer_id: row.offer_id,
    order_draft_id: row.order_draft_id,
    seller_workspace_id: row.seller_workspace_id,
    customer_user_id: row.customer_user_id,
    customer_workspace_id: row.customer_workspace_id,
    amount: Number(row.amount),
    currency: row.currency as OrderT['currency'],
    interval: row.interval as OrderT['interval'],
    status: row.status as OrderStatus,
    payment_provider: row.payment_provider,
    payment_provider_checkout_id: row.payment_provider_checkout_id,
    draft_revision: row.draft_revision,
    committed_at: row.committed_at,
    next_renewal_at: row.next_renewal_at === null ? null : Number(row.next_renewal_at),
    renewals: row.renewals,
    delivery: deliveryOf(row, urls),
    html_url: `${publicUrl}/orders/${row.id}`,
    etag: etagOf(row.revision),
  };
}
