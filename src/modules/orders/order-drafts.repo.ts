// SQL of order drafts, their checkout sessions, orders and the payment events taken in. Every move
// of a draft is one conditional UPDATE (on its status, from the phases draft-moves.ts allows the move
// from, and on its revision when a person's if-match names one), so two requests, a webhook and a
// return page, or two workers never both move it.
import { PostgresAdapter } from 'kysely';
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { CheckoutSessionsTable, OrderDraftsTable, OrdersTable, PaymentEventsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { UrlEntryT } from '../installs/installs.schemas.js';
import { DRAFT_MOVES, ENDABLE_PHASES, type DraftMoveName, type MoveTarget } from './draft-moves.js';

export type DraftRow = OrderDraftsTable;
export type CheckoutRow = CheckoutSessionsTable;
export type OrderRow = OrdersTable;

const isPostgres = (db: Executor) => db.getExecutor().adapter instanceof PostgresAdapter;

// ---- drafts ----

export async function insertDraft(db: Executor, row: DraftRow): Promise<void> {
  await db.insertInto('order_drafts').values(row).execute();
}

export function findDraft(db: Executor, id: string): Promise<DraftRow | undefined> {
  return db.selectFrom('order_drafts').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The draft, locked for the rest of the transaction on PostgreSQL (SQLite transactions already hold the writer lock). */
export function lockDraft(tx: Executor, id: string): Promise<DraftRow | undefined> {
  const q = tx.selectFrom('order_drafts').selectAll().where('id', '=', id);
  return (isPostgres(tx) ? q.forUpdate() : q).executeTakeFirst();
}

export type DraftChange = Partial<Omit<DraftRow, 'id' | 'offer_id' | 'seller_workspace_id' | 'created_at' | 'revision' | 'status'>>;

/**
 * Makes one of the draft's moves (draft-moves.ts): sets `change` (its new phase, and a new revision)
 * where the draft still is in a phase the move is allowed from and, when `revision` is given, at
 * that revision. The new phase is the move's own unless it has several (then `change.status` names
 * it). Undefined when the draft was not moved (another move won, or a stale etag).
 */
export function moveDraft<M extends DraftMoveName>(
  db: Executor, id: string, move: M, revision: number | null, change: DraftChange & { status?: MoveTarget<M> }, now: number,
): Promise<DraftRow | undefined> {
  const { from, to } = DRAFT_MOVES[move];
  const status = change.status ?? (to.length === 1 ? to[0] : undefined);
  if (status === undefined || !(to as readonly string[]).includes(status)) throw new Error(`order draft move ${move} needs one of ${to.join(', ')}`);
  let q = db.updateTable('order_drafts')
    .set((eb) => ({ ...change, status, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('status', 'in', from);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

export interface DraftFilters {
  offer?: string;
  status?: string;
}

/** Whose drafts or orders a list shows: the seller's workspace's, or the customer's own. */
export type ListOwner = { seller_workspace_id: string } | { customer: string };

export function listDrafts(db: Executor, owner: ListOwner, f: DraftFilters, page: PageRequest): Promise<DraftRow[]> {
  let q = 'customer' in owner
    ? db.selectFrom('order_drafts').selectAll().where('user_id', '=', owner.customer)
    : db.selectFrom('order_drafts').selectAll().where('seller_workspace_id', '=', owner.seller_workspace_id);
  if (f.offer !== undefined) q = q.where('offer_id', '=', f.offer);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  return keysetPage(q, 'id', page).execute();
}

/** Drafts not yet done whose ttl passed (unpaid: a paid draft's order is committed and its delivery goes on). */
export function expiredDrafts(db: Executor, now: number, limit: number): Promise<DraftRow[]> {
  return db.selectFrom('order_drafts').selectAll()
    .where('status', 'in', ENDABLE_PHASES).where('payment_completed', '=', 0).where('ttl_expires_at', '<=', now)
    .orderBy('ttl_expires_at').limit(limit).execute();
}

/** Open drafts of a customer ending within `within` seconds that were not told yet. */
export function draftsToWarn(db: Executor, now: number, within: number, limit: number): Promise<DraftRow[]> {
  return db.selectFrom('order_drafts').selectAll()
    .where('status', 'in', ENDABLE_PHASES).where('payment_completed', '=', 0).where('user_id', 'is not', null)
    .where('expiry_notified_at', 'is', null).where('ttl_expires_at', '<=', now + within).where('ttl_expires_at', '>', now)
    .orderBy('ttl_expires_at').limit(limit).execute();
}

/** Records that the customer was told of the draft's expiry; false when another run did it first. */
export async function markExpiryNotified(tx: Executor, id: string, now: number): Promise<boolean> {
  const marked = await tx.updateTable('order_drafts').set({ expiry_notified_at: now }).where('id', '=', id).where('expiry_notified_at', 'is', null).executeTakeFirst();
  return Number(marked.numUpdatedRows) > 0;
}

/** Unpaid open drafts whose offer expired. */
export function draftsOfExpiredOffers(db: Executor, now: number, limit: number): Promise<DraftRow[]> {
  return db.selectFrom('order_drafts as d').innerJoin('offers as o', 'o.id', 'd.offer_id').selectAll('d')
    .where('d.status', 'in', ENDABLE_PHASES).where('d.payment_completed', '=', 0)
    .where('o.expires_at', 'is not', null).where('o.expires_at', '<=', now)
    .orderBy('d.id').limit(limit).execute();
}

/** Unpaid open drafts of an offer (its archive ends them). */
export function openDraftsOfOffer(db: Executor, offerId: string): Promise<DraftRow[]> {
  return db.selectFrom('order_drafts').selectAll()
    .where('offer_id', '=', offerId).where('status', 'in', ENDABLE_PHASES).where('payment_completed', '=', 0)
    .orderBy('id').execute();
}

/** A machine joined the cluster of a draft waiting for one: the draft moves on (bring your own server). */
export function markServerJoined(tx: Executor, clusterId: string, now: number): Promise<DraftRow | undefined> {
  return tx.updateTable('order_drafts')
    .set((eb) => ({ server_joined: 1, status: DRAFT_MOVES.serverJoined.to[0], updated_at: now, revision: eb('revision', '+', 1) }))
    .where('cluster_id', '=', clusterId).where('status', 'in', DRAFT_MOVES.serverJoined.from)
    .returningAll().executeTakeFirst();
}

// ---- checkout sessions ----
// status: pending (a slot taken, the provider not answered yet; never shown) -> open -> complete or
// expired; complete never changes again.

export async function insertCheckout(db: Executor, row: CheckoutRow): Promise<void> {
  await db.insertInto('checkout_sessions').values(row).execute();
}

export function findCheckoutByProviderId(db: Executor, provider: string, providerSessionId: string): Promise<CheckoutRow | undefined> {
  return db.selectFrom('checkout_sessions').selectAll()
    .where('provider', '=', provider).where('provider_session_id', '=', providerSessionId).executeTakeFirst();
}

/**
 * The draft's newest checkout slot: a session row in status `pending` taken before the provider is
 * called (checkout.service.ts), so that calls made at once all create the same provider session.
 */
export function pendingCheckoutOf(db: Executor, draftId: string): Promise<CheckoutRow | undefined> {
  return db.selectFrom('checkout_sessions').selectAll()
    .where('draft_id', '=', draftId).where('status', '=', 'pending').orderBy('id', 'desc').limit(1).executeTakeFirst();
}

export function findCheckout(db: Executor, id: string): Promise<CheckoutRow | undefined> {
  return db.selectFrom('checkout_sessions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** pending -> open with what the provider made; false when the slot was settled or given up before. */
export async function settleCheckout(db: Executor, id: string, made: { provider_session_id: string; url: string; expires_at: number }): Promise<boolean> {
  const result = await db.updateTable('checkout_sessions').set({ ...made, status: 'open' }).where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** pending -> expired: a slot nobody settled in time (its caller failed or died), never handed out. */
export async function abandonCheckout(db: Executor, id: string): Promise<void> {
  await db.updateTable('checkout_sessions').set({ status: 'expired' }).where('id', '=', id).where('status', '=', 'pending').execute();
}

/** The draft's newest checkout session in status open, if any. */
export function openCheckoutOf(db: Executor, draftId: string): Promise<CheckoutRow | undefined> {
  return db.selectFrom('checkout_sessions').selectAll()
    .where('draft_id', '=', draftId).where('status', '=', 'open').orderBy('id', 'desc').limit(1).executeTakeFirst();
}

export function openCheckoutsOf(db: Executor, draftId: string): Promise<CheckoutRow[]> {
  return db.selectFrom('checkout_sessions').selectAll().where('draft_id', '=', draftId).where('status', '=', 'open').orderBy('id').execute();
}

export async function countCheckoutsOf(db: Executor, draftId: string): Promise<number> {
  const row = await db.selectFrom('checkout_sessions').select((eb) => eb.fn.countAll<string | number>().as('n')).where('draft_id', '=', draftId).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The open sessions of many drafts at once (list pages). */
export function openCheckoutsOfDrafts(db: Executor, draftIds: string[]): Promise<CheckoutRow[]> {
  if (draftIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('checkout_sessions').selectAll().where('draft_id', 'in', draftIds).where('status', '=', 'open').orderBy('id').execute();
}

/** Forward only: open -> complete or expired; complete never changes again. True when it moved. */
export async function moveCheckout(
  db: Executor, id: string, to: 'complete' | 'expired', facts: { completed_at?: number; payment_ref?: string | null; subscription_id?: string | null },
): Promise<boolean> {
  const from = to === 'complete' ? ['open', 'expired'] : ['open'];
  const result = await db.updateTable('checkout_sessions').set({ status: to, ...facts }).where('id', '=', id).where('status', 'in', from).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function markCheckoutRefunded(db: Executor, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('checkout_sessions').set({ refunded_at: now }).where('id', '=', id).where('refunded_at', 'is', null).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Paid sessions no order took (a payment that came after its draft ended, or for a stale revision), not refunded yet. */
export function unrefundedOrphans(db: Executor, limit: number): Promise<CheckoutRow[]> {
  return db.selectFrom('checkout_sessions as c').selectAll('c')
    .where('c.status', '=', 'complete').where('c.refunded_at', 'is', null)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('orders as o').select('o.id')
      .whereRef('o.order_draft_id', '=', 'c.draft_id').whereRef('o.payment_provider_checkout_id', '=', 'c.provider_session_id'))))
    .orderBy('c.id').limit(limit).execute();
}

// ---- orders ----

export async function insertOrder(db: Executor, row: OrderRow): Promise<void> {
  await db.insertInto('orders').values(row).execute();
}

export function findOrder(db: Executor, id: string): Promise<OrderRow | undefined> {
  return db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findOrderOfDraft(db: Executor, draftId: string): Promise<OrderRow | undefined> {
  return db.selectFrom('orders').selectAll().where('order_draft_id', '=', draftId).executeTakeFirst();
}

export function ordersOfDrafts(db: Executor, draftIds: string[]): Promise<OrderRow[]> {
  if (draftIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('orders').selectAll().where('order_draft_id', 'in', draftIds).execute();
}

export function updateOrder(db: Executor, id: string, set: Partial<Omit<OrderRow, 'id' | 'revision'>>, now: number): Promise<OrderRow | undefined> {
  return db.updateTable('orders').set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).returningAll().executeTakeFirst();
}

export function listOrders(db: Executor, owner: ListOwner, f: DraftFilters, page: PageRequest): Promise<OrderRow[]> {
  let q = 'customer' in owner
    ? db.selectFrom('orders').selectAll().where('customer_user_id', '=', owner.customer)
    : db.selectFrom('orders').selectAll().where('seller_workspace_id', '=', owner.seller_workspace_id);
  if (f.offer !== undefined) q = q.where('offer_id', '=', f.offer);
  if (f.status !== undefined) q = q.where('status', '=', f.status);
  return keysetPage(q, 'id', page).execute();
}

/** Forward only: the renewal moves next_renewal_at later, never back (a late or repeated event changes nothing). */
export async function renewOrders(db: Executor, subscriptionId: string, periodEnd: number, now: number): Promise<number> {
  const result = await db.updateTable('orders')
    .set((eb) => ({ next_renewal_at: periodEnd, renewals: eb('renewals', '+', 1), updated_at: now, revision: eb('revision', '+', 1) }))
    .where('subscription_id', '=', subscriptionId)
    .where((eb) => eb.or([eb('next_renewal_at', 'is', null), eb('next_renewal_at', '<', periodEnd)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export async function endSubscriptionOrders(db: Executor, subscriptionId: string, now: number): Promise<number> {
  const result = await db.updateTable('orders')
    .set((eb) => ({ next_renewal_at: null, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('subscription_id', '=', subscriptionId).where('next_renewal_at', 'is not', null).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** URLs of installs, for the deliveries of a page of orders or drafts (one statement). */
export function urlsOfInstalls(db: Executor, installIds: string[]) {
  if (installIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('install_urls').selectAll().where('install_id', 'in', installIds).orderBy('route_key').execute();
}

/** Those URLs by install, as deliveries show them. */
export async function urlsByInstall(db: Executor, installIds: (string | null)[]): Promise<Map<string, UrlEntryT[]>> {
  const out = new Map<string, UrlEntryT[]>();
  for (const r of await urlsOfInstalls(db, installIds.filter((i): i is string => i !== null))) {
    const list = out.get(r.install_id) ?? [];
    list.push({ route_key: r.route_key, hostname: r.hostname, url: r.url, error: r.error, updated_at: r.updated_at, last_observed_at: r.last_observed_at });
    out.set(r.install_id, list);
  }
  return out;
}

// ---- payment events ----

/** Records a provider event by its id; false when it was taken in before (the caller then changes nothing). */
export async function recordPaymentEvent(db: Executor, row: PaymentEventsTable): Promise<boolean> {
  const result = await db.insertInto('payment_events').values(row)
    .onConflict((oc) => oc.columns(['provider', 'event_id']).doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function setPaymentEventOutcome(db: Executor, provider: string, eventId: string, outcome: string): Promise<void> {
  await db.updateTable('payment_events').set({ outcome }).where('provider', '=', provider).where('event_id', '=', eventId).execute();
}
