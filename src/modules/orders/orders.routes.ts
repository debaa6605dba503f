// Routes of order drafts (spec 2.5 and 2.6, endpoints 4 and 13) and orders (API.md 8.7). A draft is
// read and acted on by its customer (a user credential without svc-context) and by the members of
// the seller's workspace (svc-context or a workspace token), who see it without field_values.
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import { userOf } from '../../platform/auth.js';
import type { Json } from '../../jobs/workflows.js';
import type { Services } from '../../services.js';
import { OfferId } from '../offers/offers.schemas.js';
import type { DraftViewer } from './order-drafts.service.js';
import {
  AnyOrderDraft, BegunOrderDraft, BeginOrderBody, CheckoutSession, ClaimOrderDraftBody, CreateDraftBootstrapBody, DraftWorkerBootstrap,
  ListOrderDraftsQuery, ListOrdersQuery, Order, OrderDraft, OrderDraftId, OrderId, SelectWorkspaceBody, SubmitConfigurationBody,
} from './orders.schemas.js';

const IdParams = Type.Object({ id: OrderDraftId });
const draftTags = ['order drafts'];

/** The caller as a draft sees them: the seller's member when the request has a workspace, else the customer. */
export function viewerOf(request: FastifyRequest): DraftViewer {
  if (request.scope) return { kind: 'seller', scope: request.scope };
  return { kind: 'customer', userId: userOf(request).userId };
}

const VERB_RULES =
  'Takes if-match (the draft\'s etag; 409 when stale) and answers 200 with the draft, or 422 WRONG_PHASE (metadata.status) when ' +
  'the draft is in another phase. Only the draft\'s customer may call it (a user credential without svc-context); anyone else gets 404.';

export function orderDraftRoutes(app: App, s: Pick<Services, 'checkout' | 'idempotency' | 'orderDrafts' | 'orders' | 'wizard'>): void {
  app.post('/v1/offers/:id/order_drafts', {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'createOrderDraft', summary: 'Start an order of an offer',
      description:
        'The signed-in customer starts an order: 201 with the draft (their view, with field_values) in `workspace`. It takes one of ' +
        'the offer\'s uses until it is paid or ends (422 OFFER_NOT_REDEEMABLE when none is left, or the offer is archived or expired; ' +
        '403 EMAIL_NOT_ALLOWED when the offer names other emails). The package version is fixed now (the latest release of a package ' +
        'offer). `ttl_expires_at` is now plus the offer\'s order_ttl_minutes. Accepts idempotency-key.',
      params: Type.Object({ id: OfferId }), headers: requestHeaders({ idempotency: 'optional', context: false }),
      response: responses({ 201: OrderDraft }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const userId = userOf(request).userId;
    const located = <T extends { id: string; etag: string }>(d: T) => withEtag(reply.header('location', `/v1/order_drafts/${d.id}`), d);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => located(await s.orderDrafts.getDraft({ kind: 'customer', userId }, id) as never) as never,
      async (tx) => {
        const draft = located(await s.orderDrafts.createDraft(userId, request.params.id, tx));
        return { status: 201, body: draft, resourceId: draft.id };
      });
  });

  app.post(verbPath('/v1/order_drafts', 'begin'), {
    config: { auth: 'none' },
    schema: {
      tags: draftTags, operationId: 'beginOrderDraft', summary: 'Start an order signed out',
      description:
        'No credential: the web app starts a draft for someone who has the offer\'s link but is not signed in yet. 201 with the draft ' +
        'in `auth` and a one-time `claim_token` (stored hashed, shown only here); it holds none of the offer\'s uses until the ' +
        'customer signs in and claims it with `:claim`. 404 when the link is unknown, archived or expired. Rate limited per client ' +
        'address (SVC_ORDER_BEGINS_PER_ADDRESS, 30) and per offer (SVC_ORDER_BEGINS_PER_OFFER, 300), each per 10 minutes: past ' +
        'either, 429 RESOURCE_EXHAUSTED (reason RATE_LIMITED) with retry-after.',
      body: BeginOrderBody, response: responses({ 201: BegunOrderDraft }, [400, 404, 429]),
    },
  }, async (request, reply) => {
    const begun = await s.orderDrafts.beginDraft(request.body.short_hash, request.ip);
    reply.code(201).header('location', `/v1/order_drafts/${begun.order_draft.id}`);
    return begun;
  });

  app.post(verbPath('/v1/order_drafts/:id', 'claim'), {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'claimOrderDraft', summary: 'Claim a draft begun signed out',
      description: `auth -> workspace: the signed-in customer takes the draft with its claim_token (a wrong token is 404), which takes one of the offer's uses as a new draft would (403 EMAIL_NOT_ALLOWED, 422 OFFER_NOT_REDEEMABLE). ${VERB_RULES}`,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: false }), body: ClaimOrderDraftBody,
      response: responses({ 200: OrderDraft }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => withEtag(reply, await s.orderDrafts.claimDraft(
    userOf(request).userId, request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body.claim_token)));

  app.get('/v1/order_drafts/:id', {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'getOrderDraft', summary: 'Get an order draft',
      description:
        'Its customer (a user credential without svc-context) gets `OrderDraft`, with field_values and locked_keys; ' +
        'a member of the seller\'s workspace (svc-context or a workspace token) gets `OrderDraftSellerView`, without them. Anyone ' +
        'else gets 404. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders({ context: true }),
      response: responses({ 200: AnyOrderDraft }, [400, 403, 404]),
    },
  }, async (request, reply) => withEtag(reply, await s.orderDrafts.getDraft(viewerOf(request), request.params.id)));

  app.get('/v1/order_drafts', {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'listOrderDrafts', summary: 'List order drafts',
      description:
        'With a workspace (svc-context or a workspace token): the drafts of the workspace\'s offers, as the seller sees them. A user ' +
        'credential without svc-context: the caller\'s own drafts, with their field_values. Newest first; `offer` and `status` filter.',
      headers: requestHeaders({ context: true }), querystring: Type.Object({ ...PageQuery, ...ListOrderDraftsQuery.properties }, { additionalProperties: false }),
      response: responses({ 200: pageOf(AnyOrderDraft, 'A page of order drafts') }),
    },
  }, async (request) => s.orderDrafts.listDrafts(viewerOf(request), request.query));

  app.post(verbPath('/v1/order_drafts/:id', 'selectWorkspace'), {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'selectOrderDraftWorkspace', summary: 'Choose the workspace to install in',
      description:
        'workspace -> compute: `{kind: existing, workspace_id}` (a workspace where the customer is owner or admin, else 403) or ' +
        '`{kind: new, name}` (created now, the customer its owner). The compute phase then runs as the operation ' +
        '`order_draft.compute` in that workspace: it registers a local cluster there (`cluster_id`) and moves the draft to ' +
        '`configure` once the cluster is active (`cluster_ready`), or to `compute_bootstrap` for a bring-your-own offer. ' + VERB_RULES,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: false }), body: SelectWorkspaceBody,
      response: responses({ 200: OrderDraft }, [400, 403, 404, 409, 422, 429]),
    },
  }, async (request, reply) => withEtag(reply, await s.wizard.selectWorkspace(
    userOf(request).userId, request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body)));

  app.post(verbPath('/v1/order_drafts/:id', 'createWorkerBootstrap'), {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'createOrderDraftWorkerBootstrap', summary: 'Get the join command for your own server',
      description:
        'compute_bootstrap (a bring-your-own offer): a worker bootstrap for the draft\'s cluster, with its one-time token and the ' +
        '`command` to run on the server (shown only in this response; a new one revokes the previous). The first machine that ' +
        'joins with it sets `server_joined` and moves the draft to `configure`. 200 with the draft and the bootstrap. ' + VERB_RULES,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: false }), body: CreateDraftBootstrapBody,
      response: responses({ 200: DraftWorkerBootstrap }, [400, 403, 404, 409, 422]),
    },
  }, async (request) => s.wizard.createDraftBootstrap(
    userOf(request).userId, request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body.ttl_seconds ?? 3600));

  app.post(verbPath('/v1/order_drafts/:id', 'submitConfiguration'), {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'submitOrderDraftConfiguration', summary: 'Submit the configuration',
      description:
        'configure -> payment, or configure -> install when nothing is to be paid (a non_billable_test offer, or a price of 0: the ' +
        'order is committed at once). The values are checked against the version\'s input schema after the offer\'s are merged in: ' +
        'unlocked offer values are defaults, locked ones win (sending a locked key with another value is 400 VALUE_LOCKED). Also ' +
        'accepted in `payment` before it is paid, to change the configuration: the open checkout session then charges a stale ' +
        'revision and the next POST /v1/order_drafts/{id}/checkout_sessions replaces it. An offer archived or expired meanwhile ends the draft `offer_expired` ' +
        '(422 OFFER_NOT_REDEEMABLE). ' + VERB_RULES,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: false }), body: SubmitConfigurationBody,
      response: responses({ 200: OrderDraft }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => withEtag(reply, await s.wizard.submitConfiguration(
    userOf(request).userId, request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body.field_values as Record<string, Json>)));

  app.post('/v1/order_drafts/:id/checkout_sessions', {
    config: { auth: 'user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'createOrderDraftCheckoutSession', summary: 'Open the hosted checkout',
      description:
        'In the payment phase: 201 with a new checkout session at the payment provider, or 200 with the open one when it ' +
        'charges the draft\'s current revision (`current_checkout_session.draft_revision`) and has at least 5 minutes left. A stale ' +
        'session (another revision, or about to expire) is expired at the provider and replaced. Send the customer to `url`; the ' +
        'payment reaches the service by the provider\'s webhook and by the return page, whichever comes first, and the draft moves ' +
        'to `install` with its order committed. Calls made at once (a double click) hand out one session: one answers 201, the ' +
        'others 200 with the same session (or 409 when the first one\'s change of the etag reached them first). ' +
        '503 PAYMENT_PROVIDER_UNAVAILABLE when the provider cannot be reached. ' + VERB_RULES,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: false }),
      response: responses({ 200: CheckoutSession, 201: CheckoutSession }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const result = await s.checkout.createCheckoutSession(userOf(request).userId, request.params.id, parseIfMatch(headerOf(request, 'if-match')));
    reply.code(result.status);
    return result.body;
  });

  app.post(verbPath('/v1/order_drafts/:id', 'cancel'), {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: draftTags, security: bearerSecurity, operationId: 'cancelOrderDraft', summary: 'Revoke an order draft',
      description:
        'By its customer or any member of the seller\'s workspace, in any phase before it is paid: the draft ends `revoked`. It ' +
        'passes through `cleaning_up` (the operation `order_draft.cleanup` expires an open checkout session, releases the cluster ' +
        'it registered, revokes its worker bootstrap and gives the offer\'s use back), then `terminated`. Idempotent: a draft ' +
        'already ending or ended is answered as it is. A paid draft is 422 WRONG_PHASE (its order is delivered, not revoked). ' +
        'Takes if-match (409 when stale).',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', context: true }),
      response: responses({ 200: AnyOrderDraft }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => withEtag(reply, await s.orderDrafts.cancelDraft(viewerOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')))));

  // ---- orders ----

  app.get('/v1/orders', {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: ['orders'], security: bearerSecurity, operationId: 'listOrders', summary: 'List orders',
      description:
        'With a workspace (svc-context or a workspace token): the orders of the workspace\'s offers (the seller\'s). A user credential ' +
        'without svc-context: the caller\'s own orders (the customer\'s). Newest first; `offer` and `status` filter.',
      headers: requestHeaders({ context: true }), querystring: Type.Object({ ...PageQuery, ...ListOrdersQuery.properties }, { additionalProperties: false }),
      response: responses({ 200: pageOf(Order, 'A page of orders') }),
    },
  }, async (request) => s.orders.listOrders(viewerOf(request), request.query));

  app.get('/v1/orders/:id', {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: ['orders'], security: bearerSecurity, operationId: 'getOrder', summary: 'Get an order',
      description: 'Its seller\'s members (svc-context or a workspace token) and its customer (a user credential without svc-context); anyone else gets 404.',
      params: Type.Object({ id: OrderId }), headers: requestHeaders({ context: true }),
      response: responses({ 200: Order }),
    },
  }, async (request, reply) => withEtag(reply, await s.orders.getOrder(viewerOf(request), request.params.id)));
}

