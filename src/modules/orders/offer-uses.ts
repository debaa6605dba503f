// What the orders side uses of offers (API.md 8.7), all through the offers service: reads (many at
// once for a page of drafts), the use counters, and whether customers may still start or pay a
// draft of one.
import type { OfferRow } from '../offers/offers.service.js';

export {
  countOrder, findOfferById, findOfferByShortHash, findOffersByIds as offersByIds, returnOfferUse, takeOfferUse, type OfferRow,
} from '../offers/offers.service.js';

/** Whether customers may no longer start or pay a draft of it: archived, or expired. */
export function offerWithdrawn(offer: OfferRow, now: number): boolean {
  return offer.archived_at !== null || (offer.expires_at !== null && offer.expires_at <= now);
}
