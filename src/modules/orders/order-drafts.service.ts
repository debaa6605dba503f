// Order drafts (spec 2.5, API.md 8.7): starting one (signed in, or signed out and claimed later),
// reading them as the customer or the seller, and the wizard's verbs. Each verb checks the caller,
// then the etag (409), then the phase (422 WRONG_PHASE), and moves the draft in one conditional
// statement; the service-driven phases (compute, install) and every ending run as operations
// (order-workflows.ts), started in the transaction of the move.
import type { Db, Executor } from '../../db/database.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { randomString, safeEqual, sha256Hex } from '../../platform/crypto.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import { createAttemptWindows } from '../sessions/sign-in-throttle.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import type { OperationService } from '../operations/operations.service.js';
import { resolvedVersion } from '../offers/offers.service.js';
import { findUserById } from '../users/users.service.js';
import { findMemberRole } from '../workspaces/workspaces.service.js';
import { endDraft } from './draft-endings.js';
import { relatedOfDrafts } from './draft-events.js';
import { allows, canCancel, FIRST_PHASE, isEnding, phasesOf, type DraftMoveName } from './draft-moves.js';
import { findOfferById, findOfferByShortHash, offerWithdrawn, takeOfferUse, type OfferRow } from './offer-uses.js';
import * as repo from './order-drafts.repo.js';
import { toCustomerDraft, toSellerDraft } from './order-drafts.view.js';
import type { OrderDraftSellerViewT, OrderDraftT } from './orders.schemas.js';

/** Who reads or acts on a draft: its customer (a user credential without svc-context) or a member of the seller's workspace. */
export type DraftViewer = { kind: 'customer'; userId: string } | { kind: 'seller'; scope: WorkspaceScope };

/** Whose records a list of this viewer shows. */
export const ownerOf = (viewer: DraftViewer): repo.ListOwner =>
  viewer.kind === 'customer' ? { customer: viewer.userId } : { seller_workspace_id: viewer.scope.workspaceId };

export interface OrderDraftDeps {
  db: Db;
  cursors: CursorCodec;
  operations: Pick<OperationService, 'start'>;
  publicUrl: string;
  /** signed-out begins allowed per client address and per offer, each per BEGIN_WINDOW_SECONDS */
  beginLimits: { perAddress: number; perOffer: number };
}

/** The window of the signed-out begin limits. */
export const BEGIN_WINDOW_SECONDS = 10 * 60;
const tooManyBegins = (retryAfter: number) => new ApiError('RESOURCE_EXHAUSTED',
  'too many orders begun signed out from this address or for this offer; wait and try again, or sign in first', {
    reason: 'RATE_LIMITED', headers: { 'retry-after': String(retryAfter) },
  });

export const wrongPhase = (draft: { id: string; status: string }, wanted: string) =>
  new ApiError('FAILED_PRECONDITION', `order draft ${draft.id} is in ${draft.status}; this needs ${wanted}`, {
    reason: 'WRONG_PHASE', metadata: { status: draft.status },
  });

export const offerNotRedeemable = (message: string) => new ApiError('FAILED_PRECONDITION', message, { reason: 'OFFER_NOT_REDEEMABLE' });

/** The claim token of a draft begun signed out: `odc_` + 40 base62 characters, stored as its SHA-256. */
const CLAIM_PREFIX = 'odc_';

/** The customer's workspace scope now: their membership read at the moment of the action, never a copy. */
export async function customerScope(db: Executor, draft: repo.DraftRow): Promise<WorkspaceScope | null> {
  if (draft.workspace_id === null || draft.user_id === null) return null;
  const row = await findMemberRole(db, draft.workspace_id, draft.user_id);
  return row ? { workspaceId: draft.workspace_id, role: row.role as WorkspaceScope['role'], actorId: draft.user_id } : null;
}

export function createOrderDraftService(deps: OrderDraftDeps) {
  const { db, cursors, publicUrl } = deps;
  const beginWindows = createAttemptWindows(db);

  /** What the views of a page of drafts need, in four statements whatever the page's size. */
  const relatedOf = relatedOfDrafts;

  async function customerView(executor: Executor, row: repo.DraftRow): Promise<OrderDraftT> {
    return toCustomerDraft(row, (await relatedOf(executor, [row]))(row), publicUrl);
  }

  async function viewFor(viewer: DraftViewer, row: repo.DraftRow, executor: Executor = db): Promise<OrderDraftT | OrderDraftSellerViewT> {
    const related = (await relatedOf(executor, [row]))(row);
    return viewer.kind === 'customer' && row.user_id === viewer.userId ? toCustomerDraft(row, related, publicUrl) : toSellerDraft(row, related, publicUrl);
  }

  /** The draft if the viewer may see it: its customer, or a member of the seller's workspace; 404 otherwise (another tenant's draft is absent). */
  async function draftFor(executor: Executor, viewer: DraftViewer, id: string): Promise<repo.DraftRow> {
    const row = isId('orderDraft', id) ? await repo.findDraft(executor, id) : undefined;
    if (!row) throw notFound('order draft');
    const sees = viewer.kind === 'customer' ? row.user_id === viewer.userId : row.seller_workspace_id === viewer.scope.workspaceId;
    if (!sees) throw notFound('order draft');
    return row;
  }

  /** The customer's own draft, locked, checked against if-match (409) and the phases the verb's move is allowed from (422). */
  async function customerDraftIn(tx: Executor, userId: string, id: string, revision: number | null, move: DraftMoveName): Promise<repo.DraftRow> {
    await draftFor(tx, { kind: 'customer', userId }, id);
    const row = (await repo.lockDraft(tx, id))!;
    if (revision !== null && row.revision !== revision) throw etagMismatch(`order draft ${id}`, row.revision);
    if (!allows(move, row.status)) throw wrongPhase(row, phasesOf(move).join(' or '));
    return row;
  }

  /** Takes one of the offer's uses for the customer: 403 EMAIL_NOT_ALLOWED, 422 OFFER_NOT_REDEEMABLE. */
  async function admitCustomer(tx: Executor, offer: OfferRow, userId: string, now: number) {
    const user = await findUserById(tx, userId);
    if (!user) throw notFound('user');
    const email = user.email.toLowerCase();
    const allowed = offer.allowed_emails === null ? null : (JSON.parse(offer.allowed_emails) as string[]);
    if (allowed !== null && !allowed.includes(email)) {
      throw new ApiError('PERMISSION_DENIED', `this offer is not open to ${email}`, { reason: 'EMAIL_NOT_ALLOWED' });
    }
    if (offerWithdrawn(offer, now)) throw offerNotRedeemable(`offer ${offer.id} is ${offer.archived_at !== null ? 'archived' : 'expired'}`);
    const version = await resolvedVersion(tx, offer);
    if (!(await takeOfferUse(tx, offer.id, now))) throw offerNotRedeemable(`every use of offer ${offer.id} is taken`);
    return { email, version };
  }

  /** POST /v1/offers/{id}/order_drafts: a signed-in customer starts an order (status workspace). */
  async function createDraft(userId: string, offerId: string, tx: Executor): Promise<OrderDraftT> {
    const offer = isId('offer', offerId) ? await findOfferById(tx, offerId) : undefined;
    if (!offer) throw notFound('offer');
    const now = clock.now();
    const { email, version } = await admitCustomer(tx, offer, userId, now);
    const row = newDraftRow(offer, now, {
      status: FIRST_PHASE.signedIn, user_id: userId, customer_email: email, package_id: version.package_id, package_version_id: version.id, holds_use: 1,
    });
    await repo.insertDraft(tx, row);
    return customerView(tx, row);
  }

  function newDraftRow(offer: OfferRow, now: number, set: Partial<repo.DraftRow>): repo.DraftRow {
    return {
      id: newId('orderDraft'), offer_id: offer.id, seller_workspace_id: offer.workspace_id, status: FIRST_PHASE.signedOut, termination_reason: null,
      cluster_ready: 0, server_joined: 0, payment_completed: 0, user_id: null, customer_email: null, claim_token_hash: null,
      workspace_id: null, workspace_created: 0, cluster_id: null, cluster_allocated: 0, bootstrap_id: null, package_id: null,
      package_version_id: null, field_values: null, content_revision: 1, holds_use: 0, compute_operation_id: null,
      install_operation_id: null, cleanup_operation_id: null, expiry_notified_at: null, created_at: now, updated_at: now,
      ttl_expires_at: now + offer.order_ttl_minutes * 60, revision: 1, ...set,
    };
  }

  /** POST /v1/order_drafts:begin: a draft begun signed out (status auth); it holds no use until claimed. */
  /**
   * :begin, with no credential: rate limited per client address (any link, known or not, so
   * guessing links costs too) and per offer (a crowd of addresses cannot fill one seller's drafts).
   */
  async function beginDraft(shortHash: string, clientAddress: string): Promise<{ order_draft: OrderDraftSellerViewT; claim_token: string }> {
    await beginWindows.takeAll([{ key: `begin-addr:${clientAddress.slice(0, 64)}`, limit: deps.beginLimits.perAddress }], BEGIN_WINDOW_SECONDS, tooManyBegins);
    const offer = await findOfferByShortHash(db, shortHash);
    const now = clock.now();
    if (!offer || offerWithdrawn(offer, now)) throw notFound('offer');
    await beginWindows.takeAll([{ key: `begin-offer:${offer.id}`, limit: deps.beginLimits.perOffer }], BEGIN_WINDOW_SECONDS, tooManyBegins);
    const token = CLAIM_PREFIX + randomString(40);
    const row = newDraftRow(offer, now, { claim_token_hash: sha256Hex(token) });
    await repo.insertDraft(db, row);
    return { order_draft: toSellerDraft(row, (await relatedOf(db, [row]))(row), publicUrl), claim_token: token };
  }

  /** :claim: the signed-in customer takes a draft begun signed out, with its token (auth -> workspace). */
  async function claimDraft(userId: string, id: string, revision: number | null, token: string): Promise<OrderDraftT> {
    return db.transaction().execute(async (tx) => {
      const row = isId('orderDraft', id) ? await repo.lockDraft(tx, id) : undefined;
      // Without the token a draft is nobody's: 404, as for any draft the caller cannot see.
      if (!row || row.claim_token_hash === null || !safeEqual(row.claim_token_hash, sha256Hex(token))) throw notFound('order draft');
      if (revision !== null && row.revision !== revision) throw etagMismatch(`order draft ${id}`, row.revision);
      if (!allows('claim', row.status)) throw wrongPhase(row, phasesOf('claim').join(' or '));
      const now = clock.now();
      const offer = (await findOfferById(tx, row.offer_id))!;
      const { email, version } = await admitCustomer(tx, offer, userId, now);
      const moved = await repo.moveDraft(tx, id, 'claim', row.revision, {
        user_id: userId, customer_email: email, claim_token_hash: null, holds_use: 1,
        package_id: version.package_id, package_version_id: version.id,
      }, now);
      return customerView(tx, moved!);
    });
  }

  async function getDraft(viewer: DraftViewer, id: string): Promise<OrderDraftT | OrderDraftSellerViewT> {
    return viewFor(viewer, await draftFor(db, viewer, id));
  }

  async function listDrafts(viewer: DraftViewer, query: { cursor?: string; limit?: number; offer?: string; status?: string }): Promise<Page<OrderDraftT | OrderDraftSellerViewT>> {
    const filters: repo.DraftFilters = { offer: query.offer, status: query.status };
    const bound = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined));
    const scopeKey = viewer.kind === 'customer' ? viewer.userId : viewer.scope.workspaceId;
    const page = cursors.request(query, scopeKey, bound);
    const rows = await repo.listDrafts(db, ownerOf(viewer), filters, page);
    const related = await relatedOf(db, rows.slice(0, page.limit));
    return cursors.page(rows, page, scopeKey, bound, (row) =>
      viewer.kind === 'customer' ? toCustomerDraft(row, related(row), publicUrl) : toSellerDraft(row, related(row), publicUrl));
  }

  /**
   * :cancel by the customer or a seller member: the draft ends `revoked` (through cleaning_up).
   * Repeating it answers the draft as it is; a paid draft (its order is committed) is 422.
   */
  async function cancelDraft(viewer: DraftViewer, id: string, revision: number | null): Promise<OrderDraftT | OrderDraftSellerViewT> {
    return db.transaction().execute(async (tx) => {
      await draftFor(tx, viewer, id);
      const row = (await repo.lockDraft(tx, id))!;
      if (isEnding(row.status)) return viewFor(viewer, row, tx);
      if (revision !== null && row.revision !== revision) throw etagMismatch(`order draft ${id}`, row.revision);
      if (!canCancel(row)) {
        throw wrongPhase(row, 'a phase before payment (a paid order is delivered, not revoked)');
      }
      const actor = viewer.kind === 'customer' ? { actorId: viewer.userId, userId: viewer.userId } : { actorId: viewer.scope.actorId, userId: isId('user', viewer.scope.actorId) ? viewer.scope.actorId : null };
      const ended = await endDraft(tx, deps, row, 'revoked', actor);
      return viewFor(viewer, ended ?? row, tx);
    });
  }

  return { relatedOf, customerView, viewFor, draftFor, customerDraftIn, createDraft, loadCreated: (userId: string, id: string) => getDraft({ kind: 'customer', userId }, id), beginDraft, claimDraft, getDraft, listDrafts, cancelDraft };
}

export type OrderDraftService = ReturnType<typeof createOrderDraftService>;
