// An offer's uses as drafts take and give them back (API.md 8.7): a claimed draft holds one until
// it is paid (then the use is its order's for good) or ends unpaid (then it is given back). Each is
// one conditional statement, so 50 customers racing for the last use of an offer get exactly one.
import type { Executor } from '../../db/database.js';
import type { OffersTable } from '../../db/schema.js';

export type OfferRow = OffersTable;

/** The offer, whatever its workspace: customers reach it by its id or link. */
export function findOfferById(db: Executor, id: string): Promise<OfferRow | undefined> {
  return db.selectFrom('offers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findOfferByShortHash(db: Executor, shortHash: string): Promise<OfferRow | undefined> {
  return db.selectFrom('offers').selectAll().where('short_hash', '=', shortHash).executeTakeFirst();
}

/** Takes a use when the offer is active and has one left; false otherwise. */
export async function takeOfferUse(tx: Executor, offerId: string, now: number): Promise<boolean> {
  const result = await tx.updateTable('offers')
    .set((eb) => ({ uses_held: eb('uses_held', '+', 1), drafts_count: eb('drafts_count', '+', 1) }))
    .where('id', '=', offerId).where('archived_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses_held', '<', eb.ref('max_uses'))]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** A draft that ends unpaid gives its use back. */
export async function returnOfferUse(tx: Executor, offerId: string): Promise<void> {
  await tx.updateTable('offers').set((eb) => ({ uses_held: eb('uses_held', '-', 1) })).where('id', '=', offerId).where('uses_held', '>', 0).execute();
}

/** A paid draft's use becomes its order's. */
export async function countOrder(tx: Executor, offerId: string): Promise<void> {
  await tx.updateTable('offers').set((eb) => ({ orders_count: eb('orders_count', '+', 1) })).where('id', '=', offerId).execute();
}

/** The facts of many offers at once (list pages of drafts). */
export function offersByIds(db: Executor, ids: string[]): Promise<OfferRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('offers').selectAll().where('id', 'in', [...new Set(ids)]).execute();
}

/** Whether customers may still start or pay a draft of it: not archived, not expired. */
export function offerWithdrawn(offer: OfferRow, now: number): boolean {
  return offer.archived_at !== null || (offer.expires_at !== null && offer.expires_at <= now);
}
