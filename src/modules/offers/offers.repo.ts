// SQL of offers (API.md 8.7). One statement per function; the service composes them in
// transactions. The use counters are changed only by single conditional UPDATEs, so concurrent
// customers can never take more uses than max_uses allows (no read-then-write).
import type { ExpressionBuilder } from 'kysely';
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { Database, OffersTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { OfferStatus } from './offers.schemas.js';

export type OfferRow = OffersTable;

type OfferEb = ExpressionBuilder<Database, 'offers'>;

/** Not archived and not past its expires_at at `now`: a link that still works. */
const live = (eb: OfferEb, now: number) =>
  eb.and([eb('archived_at', 'is', null), eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)])]);

/** A use is still free: no limit, or fewer held than the limit. */
const useFree = (eb: OfferEb) => eb.or([eb('max_uses', 'is', null), eb('uses_held', '<', eb.ref('max_uses'))]);

/** The SQL form of the computed status (offers.service.ts statusOf), for the list filter. */
function statusIs(eb: OfferEb, status: OfferStatus, now: number) {
  switch (status) {
    case 'archived':
      return eb('archived_at', 'is not', null);
    case 'expired':
      return eb.and([eb('archived_at', 'is', null), eb('expires_at', 'is not', null), eb('expires_at', '<=', now)]);
    case 'redeemed':
      return eb.and([live(eb, now), eb('max_uses', 'is not', null), eb('uses_held', '>=', eb.ref('max_uses'))]);
    case 'active':
      return eb.and([live(eb, now), useFree(eb)]);
  }
}

/** Inserts unless the short hash is taken (then false: the caller draws another). */
export async function insertOfferIfHashFree(tx: Executor, row: OfferRow): Promise<boolean> {
  const res = await tx.insertInto('offers').values(row).onConflict((oc) => oc.column('short_hash').doNothing()).executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

export function findOffer(db: Executor, workspaceId: string, id: string): Promise<OfferRow | undefined> {
  return db.selectFrom('offers').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The offer whatever its workspace: for the customer's side (order drafts), never for a seller's route. */
export function findOfferById(db: Executor, id: string): Promise<OfferRow | undefined> {
  return db.selectFrom('offers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findOfferByShortHash(db: Executor, shortHash: string): Promise<OfferRow | undefined> {
  return db.selectFrom('offers').selectAll().where('short_hash', '=', shortHash).executeTakeFirst();
}

/** Many offers at once, whatever their workspaces (a page of order drafts); none for no ids. */
export function findOffersByIds(db: Executor, ids: string[]): Promise<OfferRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('offers').selectAll().where('id', 'in', [...new Set(ids)]).execute();
}

/** The seller's workspace as the public view of an offer names it (and whether it is still active). */
export function findSellerWorkspace(db: Executor, workspaceId: string): Promise<{ name: string; state: string } | undefined> {
  return db.selectFrom('workspaces').select(['name', 'state']).where('id', '=', workspaceId).executeTakeFirst();
}

export interface OfferFilters {
  status?: OfferStatus | undefined;
  package_id?: string | undefined;
}

export function listOffers(db: Executor, workspaceId: string, filters: OfferFilters, now: number, page: PageRequest): Promise<OfferRow[]> {
  let q = db.selectFrom('offers').selectAll().where('workspace_id', '=', workspaceId);
  if (filters.package_id) q = q.where('package_id', '=', filters.package_id);
  const status = filters.status;
  if (status) q = q.where((eb) => statusIs(eb, status, now));
  return keysetPage(q, 'id', page).execute();
}

/**
 * Writes the seller's `changes` when the revision matches (null: any), the offer is not archived
 * and no draft has ever used it; returns the new row, or undefined (the caller explains why).
 */
export function updateUnusedOfferIf(tx: Executor, workspaceId: string, id: string, revision: number | null, changes: Partial<OfferRow>): Promise<OfferRow | undefined> {
  let q = tx
    .updateTable('offers')
    .set((eb) => ({ ...changes, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('archived_at', 'is', null)
    .where('drafts_count', '=', 0);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/**
 * Archives (archivedAt) or restores (null) an offer that is in the other state, when the revision
 * matches (null: any); the new row, or undefined (the caller reads why: absent, stale, or already so).
 */
export function setOfferArchivedIf(tx: Executor, workspaceId: string, id: string, revision: number | null, archivedAt: number | null, now: number): Promise<OfferRow | undefined> {
  let q = tx
    .updateTable('offers')
    .set((eb) => ({ archived_at: archivedAt, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('archived_at', archivedAt === null ? 'is not' : 'is', null);
  if (revision !== null) q = q.where('revision', '=', revision);
  return q.returningAll().executeTakeFirst();
}

/**
 * Takes one use of the offer for a draft being claimed, in one conditional statement: only while
 * it is not archived, not expired at `now`, and a use is free. True when a use was taken. It also
 * counts the draft (drafts_count: a used offer can no longer be changed). The offer's etag moves:
 * its `uses` changed.
 */
export async function takeOfferUse(tx: Executor, offerId: string, now: number): Promise<boolean> {
  const res = await tx
    .updateTable('offers')
    .set((eb) => ({ uses_held: eb('uses_held', '+', 1), drafts_count: eb('drafts_count', '+', 1), revision: eb('revision', '+', 1) }))
    .where('id', '=', offerId)
    .where((eb) => eb.and([live(eb, now), useFree(eb)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Gives a draft's use back (it ended unpaid); never below 0. True when a use was returned. */
export async function returnOfferUse(tx: Executor, offerId: string): Promise<boolean> {
  const res = await tx
    .updateTable('offers')
    .set((eb) => ({ uses_held: eb('uses_held', '-', 1), revision: eb('revision', '+', 1) }))
    .where('id', '=', offerId)
    .where('uses_held', '>', 0)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Counts an order committed on the offer (its draft's use stays held: the order keeps it). */
export async function countOrder(tx: Executor, offerId: string): Promise<void> {
  await tx
    .updateTable('offers')
    .set((eb) => ({ orders_count: eb('orders_count', '+', 1), revision: eb('revision', '+', 1) }))
    .where('id', '=', offerId)
    .execute();
}
