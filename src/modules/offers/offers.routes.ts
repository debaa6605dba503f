// Routes of offers (API.md 8.7): the seller's CRUD, archive and restore, and the public :resolve
// that a customer's browser calls with the link's short hash.
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { CreateOfferBody, ListOffersQuery, Offer, OfferId, PatchOfferBody, ResolvedOffer, SHORT_HASH_PATTERN, type OfferT } from './offers.schemas.js';

const tags = ['offers'];
const OfferParams = Type.Object({ id: OfferId });
const ListQuery = Type.Object({ ...PageQuery, ...ListOffersQuery.properties }, { additionalProperties: false });
const ResolveQuery = Type.Object(
  { short_hash: Type.String({ minLength: 8, maxLength: 8, pattern: SHORT_HASH_PATTERN, description: 'the 8 characters after /i/ in the offer\'s link' }) },
  { additionalProperties: false },
);

const STATUS_NOTE =
  '`status` is computed: `archived` (archived_at set) over `expired` (expires_at passed) over `redeemed` (max_uses not null and ' +
  'every use taken) over `active`.';

export function offerRoutes(app: App, s: Pick<Services, 'idempotency' | 'offers'>): void {
  const setArchived = (archive: boolean) => async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) =>
    withEtag(reply, await s.offers.setOfferArchived(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), archive));

  app.post('/v1/offers', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createOffer', summary: 'Make an offer',
      description:
        'Needs the admin or owner role. 201 with the offer, its URL in Location and its etag in ETag; send the customer its `url` ' +
        '(`{public_url}/i/{short_hash}`). Exactly one of package_id (the package\'s latest release when a customer claims it; the ' +
        'package must have a release now) and package_version_id (exactly that version), of this workspace: otherwise 400 ' +
        '(PACKAGE_NOT_FOUND, VERSION_NOT_FOUND), or 422 VERSION_NOT_FOUND for a package without a release. field_values, locked or ' +
        'not, must match the version\'s input schema (the keys the customer fills in may be left out; no secret references): 400 ' +
        'VALUES_INVALID with a violation per bad value. expires_at must be in the future. allowed_emails are lowercased and ' +
        'deduplicated. Defaults: commercial_mode paid, compute.mode platform, max_uses 1, order_ttl_minutes 120. Recorded in the ' +
        'audit log (`offer.create`). Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateOfferBody,
      response: responses({ 201: Offer }, [400, 403, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const located = (offer: OfferT) => withEtag(reply.header('location', `/v1/offers/${offer.id}`), offer);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const offer = await s.offers.loadOffer(scope.workspaceId, id);
        return offer && located(offer);
      },
      async (tx) => {
        const offer = located(await s.offers.createOffer(scope, request.body, tx));
        return { status: 201, body: offer, resourceId: offer.id };
      });
  });

  app.get('/v1/offers', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listOffers', summary: 'List offers',
      description: `The workspace's offers, newest first; filters combine. Any member may list them. ${STATUS_NOTE}`,
      headers: requestHeaders(), querystring: ListQuery,
      response: responses({ 200: pageOf(Offer, 'A page of offers') }),
    },
  }, async (request) => s.offers.listOffers(scopeOf(request), request.query));

  app.get('/v1/offers/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getOffer', summary: 'Get an offer',
      description: `Any member may read it. Sends the etag in the ETag header. ${STATUS_NOTE}`,
      params: OfferParams, headers: requestHeaders(),
      response: responses({ 200: Offer }),
    },
  }, async (request, reply) => withEtag(reply, await s.offers.getOffer(scopeOf(request), request.params.id)));

  app.patch('/v1/offers/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateOffer', summary: 'Change an offer nobody has used',
      description:
        'Needs the admin or owner role and if-match (409 ABORTED with the current etag when it moved). Only until a customer ' +
        'claims a draft of it: then 422 OFFER_IN_USE (archive it and make a new one); an archived offer is 422 OFFER_ARCHIVED. ' +
        'The members sent replace the current ones; null clears an optional one. field_values are checked as on create, against ' +
        'the version the offer sells now. Recorded in the audit log (`offer.update`).',
      params: OfferParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchOfferBody,
      response: responses({ 200: Offer }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) =>
    withEtag(reply, await s.offers.updateOffer(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body)));

  app.delete('/v1/offers/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteOffer', summary: 'Archive an offer',
      description:
        'Needs the admin or owner role and if-match. 200 with the offer `archived` (archived_at set): its link stops working ' +
        '(:resolve is 404, no new drafts), and its drafts not paid yet end with termination_reason `offer_expired`. Orders ' +
        'already paid are delivered. :undelete restores it. Recorded in the audit log (`offer.delete`).',
      params: OfferParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Offer }, [400, 403, 404, 409]),
    },
  }, setArchived(true));

  app.post(verbPath('/v1/offers/:id', 'undelete'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'undeleteOffer', summary: 'Restore an archived offer',
      description:
        'Needs the admin or owner role and if-match. 200 with the offer and archived_at null: its link works again (unless it ' +
        'expired meanwhile). Drafts ended by the archive stay ended. Recorded in the audit log (`offer.undelete`).',
      params: OfferParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Offer }, [400, 403, 404, 409]),
    },
  }, setArchived(false));

  app.get(verbPath('/v1/offers', 'resolve'), {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'resolveOffer', summary: 'What an offer\'s link shows',
      description:
        'Needs no credential: the customer\'s browser calls it with the short hash of the link it opened. Answers only what a ' +
        'customer may see: title, package name and version, pricing, the seller workspace\'s name, notes, the input schema without ' +
        'the keys the offer locks (an unlocked pre-fill is its property\'s `default`), expires_at, whether only some emails may ' +
        'order and whether a use is free. Never the offer\'s uses, emails, internal note or locked values. 404 when the hash is ' +
        'unknown or the offer archived or expired.',
      querystring: ResolveQuery,
      response: responses({ 200: ResolvedOffer }, [400, 404]),
    },
  }, async (request) => s.offers.resolveOffer(request.query.short_hash));
}
