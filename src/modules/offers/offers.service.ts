// Offers (API.md 8.7): admins of the seller's workspace make, change (until a draft used it),
// archive and restore them; any member reads them; anyone with the link resolves what a customer
// may see. `status` is computed from the row and the clock, never stored. The orders module reads
// offers, takes and returns uses and counts orders through the functions this file exports (each
// one statement in the caller's transaction), and fixes a draft's version with resolvedVersion().
import { randomBytes } from 'node:crypto';
import type { Db, Executor } from '../../db/database.js';
import type { PackageVersionsTable } from '../../db/schema.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { recordAuditEvent } from '../audit/audit.js';
import { findPackage, findVersion, resolveVersion } from '../packages/packages.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { checkFieldValuesBounds, checkOfferFieldValues, schemaWithoutLocked, type OfferFieldValuesMap } from './offer-values.js';
import * as repo from './offers.repo.js';
import type { CreateOfferBodyT, OfferStatus, OfferT, PatchOfferBodyT, ResolvedOfferT } from './offers.schemas.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findOfferById, findOfferByShortHash, findOffersByIds, type OfferRow } from './offers.repo.js';
/**
 * What an order draft does to its offer, each one conditional statement in the caller's
 * transaction (see offers.repo.ts): take a use (false when none is free or the link no longer
 * works), return one, count a paid order.
 */
export { countOrder, returnOfferUse, takeOfferUse } from './offers.repo.js';

/** Ends the offer's unpaid drafts (`offer_expired`) in the transaction that archives it: the orders module's. */
export type OfferWithdrawn = (tx: Executor, offerId: string) => Promise<void>;

export interface OfferServiceDeps {
  db: Db;
  cursors: CursorCodec;
  publicUrl: string;
  offerWithdrawn?: OfferWithdrawn | undefined;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const HASH_ATTEMPTS = 8;

/** 8 base62 characters from crypto randomness; bytes >= 248 are skipped so each character is uniform. */
export function newShortHash(): string {
  let out = '';
  while (out.length < 8) {
    for (const byte of randomBytes(16)) {
      if (byte < 248 && out.length < 8) out += BASE62[byte % 62];
    }
  }
  return out;
}

/** archived > expired > redeemed > active (API.md 8.7). */
export function statusOf(row: repo.OfferRow, now: number): OfferStatus {
  if (row.archived_at !== null) return 'archived';
  if (row.expires_at !== null && row.expires_at <= now) return 'expired';
  if (row.max_uses !== null && row.uses_held >= row.max_uses) return 'redeemed';
  return 'active';
}

export const fieldValuesOf = (row: Pick<repo.OfferRow, 'field_values'>): OfferFieldValuesMap => JSON.parse(row.field_values) as OfferFieldValuesMap;

/**
 * The package version a draft of this offer fixes: the offer's own version, or its package's
 * latest release now. 422 VERSION_NOT_FOUND when there is none (a package offer is only accepted
 * with a release, and versions are never removed, so this is not expected).
 */
export async function resolvedVersion(executor: Executor, offer: repo.OfferRow): Promise<PackageVersionsTable> {
  const version = offer.package_version_id !== null
    ? await findVersion(executor, offer.workspace_id, offer.package_version_id)
    : await resolveVersion(executor, offer.workspace_id, offer.package_id, { kind: 'latest' });
  if (!version) throw new ApiError('FAILED_PRECONDITION', `package ${offer.package_id} has no released (non-prerelease) version`, { reason: 'VERSION_NOT_FOUND' });
  return version;
}

const lowercasedEmails = (emails: string[]): string => JSON.stringify([...new Set(emails.map((e) => e.toLowerCase()))]);

function futureOrThrow(expiresAt: number | null | undefined, now: number): void {
  if (expiresAt !== undefined && expiresAt !== null && expiresAt <= now) throw fieldInvalid('body.expires_at', 'must be in the future (Unix seconds)');
}

/**
 * Whether a customer may make an account through this offer's link (with SVC_SIGNUP closed): the
 * offer can be ordered now (active, its seller's workspace active) and, when it names the e-mails
 * that may order, this is one of them. The composition root hands it to the users' service.
 */
export async function offerAdmitsSignUp(db: Db, shortHash: string, email: string): Promise<boolean> {
  const row = await repo.findOfferByShortHash(db, shortHash);
  if (!row || statusOf(row, clock.now()) !== 'active') return false;
  if (row.allowed_emails !== null && !(JSON.parse(row.allowed_emails) as string[]).includes(email)) return false;
  const seller = await repo.findSellerWorkspace(db, row.workspace_id);
  return seller?.state === 'active';
}

export function createOfferService(deps: OfferServiceDeps) {
  const { db, cursors, publicUrl } = deps;

  function toOffer(row: repo.OfferRow, now = clock.now()): OfferT {
    return {
      id: row.id, workspace_id: row.workspace_id, package_id: row.package_id, package_version_id: row.package_version_id, title: row.title,
      pricing: { currency: row.currency as OfferT['pricing']['currency'], unit_amount: row.unit_amount, interval: row.interval as OfferT['pricing']['interval'] },
      commercial_mode: row.commercial_mode as OfferT['commercial_mode'], compute: { mode: row.compute_mode as OfferT['compute']['mode'] },
      field_values: fieldValuesOf(row), allowed_emails: row.allowed_emails === null ? null : (JSON.parse(row.allowed_emails) as string[]),
      expires_at: row.expires_at, max_uses: row.max_uses, uses: row.uses_held, orders_count: row.orders_count, order_ttl_minutes: row.order_ttl_minutes,
      customer: row.customer_display_name === null ? null : {
        display_name: row.customer_display_name, ...(row.customer_external_id !== null ? { external_id: row.customer_external_id } : {}),
      },
      notes: row.notes, internal_note: row.internal_note, short_hash: row.short_hash, url: `${publicUrl}/i/${row.short_hash}`,
      status: statusOf(row, now), html_url: `${publicUrl}/offers/${row.id}`, created_by: row.created_by,
      created_at: row.created_at, updated_at: row.updated_at, archived_at: row.archived_at, etag: etagOf(row.revision),
    };
  }

  async function findOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.OfferRow> {
    const row = isId('offer', id) ? await repo.findOffer(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('offer');
    return row;
  }

  /** The version the body names, which must be the workspace's: exactly one of package_id and package_version_id. */
  async function versionOfBody(tx: Executor, workspaceId: string, body: CreateOfferBodyT): Promise<PackageVersionsTable> {
    if ((body.package_id === undefined) === (body.package_version_id === undefined)) {
      throw new ApiError('INVALID_ARGUMENT', 'send exactly one of package_id and package_version_id', {
        reason: 'INVALID_ARGUMENT',
        fieldViolations: [{ field: body.package_id === undefined ? 'body.package_id' : 'body.package_version_id', description: 'exactly one of package_id and package_version_id' }],
      });
    }
    if (body.package_version_id !== undefined) {
      const version = isId('packageVersion', body.package_version_id) ? await findVersion(tx, workspaceId, body.package_version_id) : undefined;
      if (!version) throw fieldInvalid('body.package_version_id', 'must name a package version of this workspace (pkv_...)', 'VERSION_NOT_FOUND');
      return version;
    }
    const pkg = isId('package', body.package_id!) ? await findPackage(tx, workspaceId, body.package_id!) : undefined;
    if (!pkg) throw fieldInvalid('body.package_id', 'must name a package of this workspace (pkg_...)', 'PACKAGE_NOT_FOUND');
    const version = await resolveVersion(tx, workspaceId, pkg.id, { kind: 'latest' });
    if (!version) {
      throw new ApiError('FAILED_PRECONDITION', `package ${pkg.id} has no released (non-prerelease) version to sell; publish one, or offer a version by package_version_id`, {
        reason: 'VERSION_NOT_FOUND',
      });
    }
    return version;
  }

  async function createOffer(scope: WorkspaceScope, body: CreateOfferBodyT, tx: Executor): Promise<OfferT> {
    requireRole(scope, 'admin');
    const now = clock.now();
    const fieldValues = (body.field_values ?? {}) as OfferFieldValuesMap;
    // The cheap checks first: nothing is read before the body is known to be bounded.
    checkFieldValuesBounds(fieldValues, 'body.field_values');
    futureOrThrow(body.expires_at, now);
    await assertWorkspaceActive(tx, scope.workspaceId);
    const version = await versionOfBody(tx, scope.workspaceId, body);
    checkOfferFieldValues(version, fieldValues);
    const base: Omit<repo.OfferRow, 'id' | 'short_hash'> = {
      workspace_id: scope.workspaceId, package_id: version.package_id, package_version_id: body.package_version_id ?? null, title: body.title,
      currency: body.pricing.currency, unit_amount: body.pricing.unit_amount, interval: body.pricing.interval,
      commercial_mode: body.commercial_mode ?? 'paid', compute_mode: body.compute?.mode ?? 'platform', field_values: JSON.stringify(fieldValues),
      allowed_emails: body.allowed_emails ? lowercasedEmails(body.allowed_emails) : null, expires_at: body.expires_at ?? null,
      max_uses: body.max_uses === undefined ? 1 : body.max_uses, uses_held: 0, orders_count: 0, drafts_count: 0,
      order_ttl_minutes: body.order_ttl_minutes ?? 120, customer_display_name: body.customer?.display_name ?? null,
      customer_external_id: body.customer?.external_id ?? null, notes: body.notes ?? null, internal_note: body.internal_note ?? null,
      created_by: scope.actorId, created_at: now, updated_at: now, archived_at: null, revision: 1,
    };
    const id = newId('offer');
    for (let attempt = 0; attempt < HASH_ATTEMPTS; attempt++) {
      const row: repo.OfferRow = { ...base, id, short_hash: newShortHash() };
      if (await repo.insertOfferIfHashFree(tx, row)) {
        await recordAuditEvent(tx, scope, { action: 'offer.create', resourceType: 'offer', resourceId: id, metadata: { title: row.title, package_id: row.package_id } });
        return toOffer(row, now);
      }
    }
    // 62^8 hashes: eight collisions in a row means the randomness is broken, not bad luck.
    throw new Error(`no free short hash after ${HASH_ATTEMPTS} attempts`);
  }

  async function loadOffer(workspaceId: string, id: string): Promise<OfferT | null> {
    const row = await repo.findOffer(db, workspaceId, id);
    return row ? toOffer(row) : null;
  }

  async function getOffer(scope: WorkspaceScope, id: string): Promise<OfferT> {
    return toOffer(await findOr404(db, scope, id));
  }

  async function listOffers(scope: WorkspaceScope, query: PageQueryT & repo.OfferFilters): Promise<Page<OfferT>> {
    const filters = { status: query.status, package_id: query.package_id };
    const page = cursors.request(query, scope.workspaceId, filters);
    const now = clock.now();
    const rows = await repo.listOffers(db, scope.workspaceId, filters, now, page);
    return cursors.page(rows, page, scope.workspaceId, filters, (r) => toOffer(r, now));
  }

  /** Why an offer cannot be changed: 409 stale etag, 422 archived, 422 in use; null when it can. */
  function refusal(row: repo.OfferRow, revision: number | null): ApiError | null {
    if (revision !== null && row.revision !== revision) return etagMismatch(`offer ${row.id}`, row.revision);
    if (row.archived_at !== null) return new ApiError('FAILED_PRECONDITION', `offer ${row.id} is archived; restore it first (:undelete)`, { reason: 'OFFER_ARCHIVED' });
    if (row.drafts_count > 0) {
      return new ApiError('FAILED_PRECONDITION', `offer ${row.id} has been used by a customer and can no longer be changed; archive it and make a new one`, { reason: 'OFFER_IN_USE' });
    }
    return null;
  }

  async function changesOf(current: repo.OfferRow, body: PatchOfferBodyT, now: number): Promise<Partial<repo.OfferRow>> {
    const changes: Partial<repo.OfferRow> = { updated_at: now };
    if (body.title !== undefined) changes.title = body.title;
    if (body.pricing !== undefined) Object.assign(changes, { currency: body.pricing.currency, unit_amount: body.pricing.unit_amount, interval: body.pricing.interval });
    if (body.commercial_mode !== undefined) changes.commercial_mode = body.commercial_mode;
    if (body.compute !== undefined) changes.compute_mode = body.compute.mode;
    if (body.field_values !== undefined) {
      checkOfferFieldValues(await resolvedVersion(db, current), body.field_values as OfferFieldValuesMap);
      changes.field_values = JSON.stringify(body.field_values);
    }
    if (body.allowed_emails !== undefined) changes.allowed_emails = body.allowed_emails === null ? null : lowercasedEmails(body.allowed_emails);
    if (body.expires_at !== undefined) changes.expires_at = body.expires_at;
    if (body.max_uses !== undefined) changes.max_uses = body.max_uses;
    if (body.order_ttl_minutes !== undefined) changes.order_ttl_minutes = body.order_ttl_minutes;
    if (body.customer !== undefined) {
      changes.customer_display_name = body.customer?.display_name ?? null;
      changes.customer_external_id = body.customer?.external_id ?? null;
    }
    if (body.notes !== undefined) changes.notes = body.notes;
    if (body.internal_note !== undefined) changes.internal_note = body.internal_note;
    return changes;
  }

  async function updateOffer(scope: WorkspaceScope, id: string, revision: number | null, body: PatchOfferBodyT): Promise<OfferT> {
    requireRole(scope, 'admin');
    const now = clock.now();
    if (body.field_values !== undefined) checkFieldValuesBounds(body.field_values, 'body.field_values');
    futureOrThrow(body.expires_at, now);
    const current = await findOr404(db, scope, id);
    const refused = refusal(current, revision);
    if (refused) throw refused;
    const changes = await changesOf(current, body, now);
    // The checks above read before writing; the write repeats them in its one statement, so a
    // draft claiming the offer meanwhile wins and this change is refused rather than applied.
    const row = await db.transaction().execute(async (tx) => {
      const updated = await repo.updateUnusedOfferIf(tx, scope.workspaceId, id, revision, changes);
      if (updated) await recordAuditEvent(tx, scope, { action: 'offer.update', resourceType: 'offer', resourceId: id, metadata: { fields: Object.keys(body).sort().join(',') } });
      return updated;
    });
    if (row) return toOffer(row, now);
    const again = await findOr404(db, scope, id);
    throw refusal(again, revision) ?? new ApiError('ABORTED', `offer ${id} changed while it was written; retry`, { reason: 'CONFLICT' });
  }

  /**
   * DELETE archives (the link stops working; the offer's unpaid drafts end `offer_expired` in the
   * same transaction); :undelete restores. Archiving an archived offer, or restoring an active
   * one, changes nothing and answers the offer as it is.
   */
  async function setOfferArchived(scope: WorkspaceScope, id: string, revision: number | null, archive: boolean): Promise<OfferT> {
    requireRole(scope, 'admin');
    if (!isId('offer', id)) throw notFound('offer');
    const now = clock.now();
    const row = await db.transaction().execute(async (tx) => {
      // The etag check and the write are one statement; only a miss reads why.
      const updated = await repo.setOfferArchivedIf(tx, scope.workspaceId, id, revision, archive ? now : null, now);
      if (!updated) {
        const current = await findOr404(tx, scope, id);
        if (revision !== null && current.revision !== revision) throw etagMismatch(`offer ${id}`, current.revision);
        return current;
      }
      if (archive) await deps.offerWithdrawn?.(tx, id);
      await recordAuditEvent(tx, scope, { action: archive ? 'offer.delete' : 'offer.undelete', resourceType: 'offer', resourceId: id, metadata: { title: updated.title } });
      return updated;
    });
    return toOffer(row, now);
  }

  /** What anyone with the link sees; 404 when the hash is unknown, or the offer archived, expired or its workspace going. */
  async function resolveOffer(shortHash: string): Promise<ResolvedOfferT> {
    const now = clock.now();
    const row = await repo.findOfferByShortHash(db, shortHash);
    const status = row ? statusOf(row, now) : 'archived';
    const seller = row && status !== 'archived' && status !== 'expired'
      ? await repo.findSellerWorkspace(db, row.workspace_id)
      : undefined;
    if (!row || !seller || seller.state !== 'active') throw notFound('offer');
    const version = await resolvedVersion(db, row);
    const pkg = await findPackage(db, row.workspace_id, row.package_id);
    return {
      offer_id: row.id, short_hash: row.short_hash, title: row.title, package: { name: pkg?.name ?? '', version: version.semver },
      pricing: { currency: row.currency as ResolvedOfferT['pricing']['currency'], unit_amount: row.unit_amount, interval: row.interval as ResolvedOfferT['pricing']['interval'] },
      commercial_mode: row.commercial_mode as ResolvedOfferT['commercial_mode'], compute_mode: row.compute_mode as ResolvedOfferT['compute_mode'],
      seller: { workspace_name: seller.name }, customer_display_name: row.customer_display_name, notes: row.notes,
      input_schema: schemaWithoutLocked(version.input_schema, fieldValuesOf(row)) as ResolvedOfferT['input_schema'],
      expires_at: row.expires_at, restricted: row.allowed_emails !== null, redeemable: status === 'active',
    };
  }

  return { toOffer, createOffer, loadOffer, getOffer, listOffers, updateOffer, setOfferArchived, resolveOffer, resolvedVersion };
}

export type OfferService = ReturnType<typeof createOfferService>;
