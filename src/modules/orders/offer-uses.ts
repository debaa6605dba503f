// What the orders side reads of offers beyond the offers module's repo (API.md 8.7): many at once
// for a page of drafts, and whether customers may still start or pay a draft of one.
import type { Executor } from '../../db/database.js';
import type { OfferRow } from '../offers/offers.service.js';

export { countOrder, findOfferById, findOfferByShortHash, returnOfferUse, takeOfferUse, type OfferRow } from '../offers/offers.repo.js';

/** The facts of many offers at once (list pages of drafts). */
export function offersByIds(db: Executor, ids: string[]): Promise<OfferRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('offers').selectAll().where('id', 'in', [...new Set(ids)]).execute();
}

/** Whether customers may no longer start or pay a draft of it: archived, or expired. */
export function offerWithdrawn(offer: OfferRow, now: number): boolean {
  return offer.archived_at !== null || (offer.expires_at !== null && offer.expires_at <= now);
}
