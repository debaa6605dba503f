// Order drafts (spec 2.5), checkout sessions (spec 2.6) and orders (API.md 8.7): the records, the
// customer's and the seller's views of a draft, and the bodies of the wizard's verbs.
import { Type, type Static, type TSchema } from 'typebox';
import { refTo, StringEnum } from '../../platform/http.js';
import { UrlEntry } from '../installs/installs.schemas.js';
import { CreatedWorkerBootstrap } from '../machines/machines.schemas.js';
import { COMPUTE_MODES, CURRENCIES, PRICE_INTERVALS } from '../offers/offers.schemas.js';
import { DRAFT_PHASES, type DraftStatus } from './draft-moves.js';

/** The wizard's phases (draft-moves.ts declares them with the moves between them). */
export const DRAFT_STATUSES = DRAFT_PHASES;
export type { DraftStatus };
export const TERMINATION_REASONS = ['timeout', 'revoked', 'offer_expired', 'install_failed', 'cluster_allocation_failed', 'quota_exceeded'] as const;
export type TerminationReason = (typeof TERMINATION_REASONS)[number];
export const ORDER_STATUSES = ['delivery_pending', 'delivery_running', 'delivered', 'delivery_failed'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const OrderDraftId = Type.String({ minLength: 1, maxLength: 55, description: 'order draft id (odft_...)' });
export const OrderId = Type.String({ minLength: 1, maxLength: 56, description: 'order id (ord_...)' });

const unix = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });

const CurrentCheckoutSession = Type.Object(
  {
    id: Type.String({ description: 'the payment provider\'s checkout session id' }),
    draft_revision: Type.Integer({ minimum: 1, description: 'the draft\'s content revision the session charges for' }),
    url: Type.String({ format: 'uri', description: 'the provider-hosted checkout page' }),
    expires_at: unix('the session can no longer be paid after this'),
  },
  { description: 'The open checkout session of the draft' },
);

const DraftOrder = Type.Object(
  {
    id: Type.String({ description: 'ord_ id' }),
    payment_provider_checkout_id: Type.Union([Type.String(), Type.Null()], { description: 'the paid checkout session, or null when nothing was paid' }),
    draft_revision: Type.Integer({ minimum: 1 }),
    committed_at: unix('when the order was committed'),
  },
  { description: 'The order the draft committed once paid' },
);

export const Delivery = Type.Object(
  {
    id: Type.String({ description: 'dlv_ id' }),
    urls: Type.Array(UrlEntry, { description: 'the delivered install\'s URLs' }),
    install_id: Type.Union([Type.String(), Type.Null()], { description: 'inst_ id in the customer\'s workspace, once started' }),
    install_operation_id: Type.Union([Type.String(), Type.Null()], { description: 'the install.create operation (op_ id), once started' }),
    started_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Unix seconds, or null' }),
    completed_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Unix seconds when the install became healthy or failed, or null' }),
  },
  { description: 'The install the order delivers' },
);

const draftProperties = {
  id: Type.String({ description: 'odft_ id' }),
  offer_id: Type.String({ description: 'the offer being redeemed (ofr_ id)' }),
  offer_title: Type.String({ description: 'the offer\'s title' }),
  offer_short_hash: Type.String({ description: 'the offer\'s link is {public_url}/i/{offer_short_hash}; GET /v1/offers:resolve with it gives the input schema the configuration fills' }),
  status: StringEnum(DRAFT_STATUSES, { description: 'the wizard phase (see the order drafts tag for the moves)' }),
  cluster_ready: Type.Boolean({ description: 'the platform cluster of the compute phase is active' }),
  server_joined: Type.Boolean({ description: 'bring your own: a machine joined the draft\'s cluster' }),
  payment_completed: Type.Boolean({ description: 'the checkout was paid (or nothing was to be paid)' }),
  created_at: unix('created'),
  updated_at: unix('last change'),
  ttl_expires_at: unix('the draft ends `timeout` if it is not done by then'),
  etag: Type.String({ description: 'changes on every write; send it back in if-match' }),
  termination_reason: Type.Optional(StringEnum(TERMINATION_REASONS, { description: 'set when the draft is cleaning_up or terminated' })),
  user_id: Type.Optional(Type.String({ minLength: 1, description: 'the customer (usr_ id); absent while in auth' })),
  customer_email: Type.Optional(Type.String()),
  workspace_id: Type.Optional(Type.String({ description: 'the customer\'s workspace, chosen or created in the workspace phase' })),
  cluster_id: Type.Optional(Type.String({ description: 'the cluster of the compute phase' })),
  current_checkout_session: Type.Optional(CurrentCheckoutSession),
  install_operation_id: Type.Optional(Type.String({ description: 'the install.create operation of the delivery' })),
  order: Type.Optional(DraftOrder),
  delivery: Type.Optional(Delivery),
  compute_mode: StringEnum(COMPUTE_MODES, { description: 'the offer\'s compute mode' }),
  amount: Type.Integer({ minimum: 0, description: 'what the customer pays, in cents (0: nothing)' }),
  currency: StringEnum(CURRENCIES),
  interval: StringEnum(PRICE_INTERVALS),
  html_url: Type.String({ format: 'uri', description: 'the wizard page of the draft' }),
};

const EXAMPLE_DRAFT = {
  id: 'odft_01kaxq3m7y0c9v8t6r5p4n3m2k', offer_id: 'ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', offer_title: 'Hello service, hosted', offer_short_hash: 'a8Kd02Xz', status: 'payment', cluster_ready: true, server_joined: false,
  payment_completed: false, created_at: 1767225600, updated_at: 1767225720, ttl_expires_at: 1767232800, etag: '5',
  user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', customer_email: 'ada@globex.example', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2m',
  cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k',
  current_checkout_session: { id: 'chk_01kaxq3m7y0c9v8t6r5p4n3m2k', draft_revision: 2, url: 'https://svc.example.com/checkout/chk_01kaxq3m7y0c9v8t6r5p4n3m2k', expires_at: 1767227520 },
  compute_mode: 'platform', amount: 4900, currency: 'eur', interval: 'month', html_url: 'https://svc.example.com/order_drafts/odft_01kaxq3m7y0c9v8t6r5p4n3m2k',
};

export const OrderDraftSellerView = Type.Object(draftProperties, {
  $id: 'OrderDraftSellerView',
  description: 'An order draft as the seller\'s members (and anyone but its customer) see it: every field but field_values (and locked_keys).',
  examples: [EXAMPLE_DRAFT],
});

export const OrderDraft = Type.Object(
  {
    ...draftProperties,
    field_values: Type.Object({}, {
      additionalProperties: true,
      description: 'the configuration: the customer\'s values and the offer\'s pre-fills (locked ones win); only ever shown to the customer',
    }),
    locked_keys: Type.Array(Type.String(), { description: 'keys of field_values the offer locks: shown as fixed, not changeable' }),
  },
  {
    $id: 'OrderDraft',
    description: 'An order draft as its customer sees it, with field_values and locked_keys.',
    examples: [{ ...EXAMPLE_DRAFT, field_values: { greeting: 'Hello from ACME', replicas: 2 }, locked_keys: ['greeting'] }],
  },
);
export type OrderDraftT = Static<typeof OrderDraft>;
export type OrderDraftSellerViewT = Static<typeof OrderDraftSellerView>;

/** Either view: the customer's (with field_values) or anyone else's. */
export const AnyOrderDraft = Type.Union([refTo(OrderDraft), refTo(OrderDraftSellerView)] as TSchema[], {
  $id: 'OrderDraftView',
  description: 'OrderDraft (with field_values) when the caller is the draft\'s customer, OrderDraftSellerView otherwise',
  examples: [EXAMPLE_DRAFT],
});

export const BegunOrderDraft = Type.Object(
  {
    order_draft: refTo(OrderDraftSellerView),
    claim_token: Type.String({ description: 'claims the draft once signed in (:claim); shown in this response only, stored hashed' }),
  },
  {
    $id: 'BegunOrderDraft', description: 'A draft begun signed out (status auth) and the one-time token that claims it.',
    examples: [{ order_draft: { ...EXAMPLE_DRAFT, status: 'auth', cluster_ready: false, etag: '1', user_id: undefined, customer_email: undefined, workspace_id: undefined, cluster_id: undefined, current_checkout_session: undefined }, claim_token: 'odc_3kTq9ZbV1mX8pL2wR7yN4cJ6hF0sD5gA8eB1uK3o' }],
  },
);

export const CheckoutSession = Type.Object(
  {
    id: Type.String({ description: 'the payment provider\'s checkout session id' }),
    url: Type.String({ format: 'uri', description: 'the provider-hosted checkout address: send the customer there' }),
    expires_at: unix('the session can no longer be paid after this'),
  },
  {
    $id: 'CheckoutSession',
    description: 'A hosted checkout session: created, or the open one of the draft\'s current revision reused.',
    examples: [{ id: 'chk_01kaxq3m7y0c9v8t6r5p4n3m2k', url: 'https://svc.example.com/checkout/chk_01kaxq3m7y0c9v8t6r5p4n3m2k', expires_at: 1767227520 }],
  },
);
export type CheckoutSessionT = Static<typeof CheckoutSession>;

export const Order = Type.Object(
  {
    id: Type.String({ description: 'ord_ id' }),
    offer_id: Type.String(),
    order_draft_id: Type.String(),
    seller_workspace_id: Type.String(),
    customer_user_id: Type.String(),
    customer_workspace_id: Type.String(),
    amount: Type.Integer({ minimum: 0, description: 'cents paid (per interval for a recurring order)' }),
    currency: StringEnum(CURRENCIES),
    interval: StringEnum(PRICE_INTERVALS),
    status: StringEnum(ORDER_STATUSES, { description: 'the delivery: pending, running, delivered or failed' }),
    payment_provider: Type.String({ description: 'local, stripe, or none when nothing was paid' }),
    payment_provider_checkout_id: Type.Union([Type.String(), Type.Null()], { description: 'the paid checkout session, or null' }),
    draft_revision: Type.Integer({ minimum: 1 }),
    committed_at: unix('committed'),
    next_renewal_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'a recurring order: when its subscription renews next (Unix seconds); null for one-time' }),
    renewals: Type.Integer({ minimum: 0, description: 'periods renewed since the first' }),
    delivery: Delivery,
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the order' }),
    etag: Type.String(),
  },
  {
    $id: 'Order',
    description: 'A paid (or free) order and its delivery, seen by the seller\'s members and by its customer.',
    examples: [{
      id: 'ord_01kaxq3m7y0c9v8t6r5p4n3m2k', offer_id: 'ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', order_draft_id: 'odft_01kaxq3m7y0c9v8t6r5p4n3m2k',
      seller_workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', customer_user_id: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2m', customer_workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2m',
      amount: 4900, currency: 'eur', interval: 'month', status: 'delivered', payment_provider: 'local',
      payment_provider_checkout_id: 'chk_01kaxq3m7y0c9v8t6r5p4n3m2k', draft_revision: 2, committed_at: 1767225900, next_renewal_at: 1769817900, renewals: 0,
      delivery: {
        id: 'dlv_01kaxq3m7y0c9v8t6r5p4n3m2k', urls: [], install_id: 'inst_01kaxq3m7y0c9v8t6r5p4n3m2k', install_operation_id: 'op_01kaxq3m7y0c9v8t6r5p4n3m2k',
        started_at: 1767225900, completed_at: 1767225902,
      },
      html_url: 'https://svc.example.com/orders/ord_01kaxq3m7y0c9v8t6r5p4n3m2k', etag: '3',
    }],
  },
);
export type OrderT = Static<typeof Order>;

// ---- bodies and queries ----

export const BeginOrderBody = Type.Object(
  { short_hash: Type.String({ minLength: 8, maxLength: 8, pattern: '^[0-9A-Za-z]{8}$', description: 'the offer link\'s short hash' }) },
  { additionalProperties: false, examples: [{ short_hash: 'a8Kd02Xz' }] },
);

export const ClaimOrderDraftBody = Type.Object(
  { claim_token: Type.String({ minLength: 1, maxLength: 100, description: 'the token :begin answered' }) },
  { additionalProperties: false, examples: [{ claim_token: 'odc_3kTq9ZbV1mX8pL2wR7yN4cJ6hF0sD5gA8eB1uK3o' }] },
);

export const SelectWorkspaceBody = Type.Union(
  [
    Type.Object({
      kind: Type.Literal('existing'),
      workspace_id: Type.String({ minLength: 1, maxLength: 53, description: 'a workspace where the customer is owner or admin' }),
    }, { additionalProperties: false }),
    Type.Object({
      kind: Type.Literal('new'),
      name: Type.String({ minLength: 1, maxLength: 100, description: 'the new workspace\'s name; the customer becomes its owner' }),
    }, { additionalProperties: false }),
  ],
  { description: 'Where the install goes: an existing workspace of the customer, or a new one.', examples: [{ kind: 'new', name: 'Globex production' }] },
);
export type SelectWorkspaceBodyT = Static<typeof SelectWorkspaceBody>;

export const CreateDraftBootstrapBody = Type.Object(
  { ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 86_400, description: 'how long the join token works (default 3600)' })) },
  { additionalProperties: false, examples: [{ ttl_seconds: 3600 }] },
);

export const SubmitConfigurationBody = Type.Object(
  {
    field_values: Type.Object({}, {
      additionalProperties: true, description: 'values for the version\'s input schema; locked offer values win over these (a locked key sent with another value is 400)',
    }),
  },
  { additionalProperties: false, examples: [{ field_values: { replicas: 2 } }] },
);

export const DraftWorkerBootstrap = Type.Object(
  {
    order_draft: refTo(OrderDraft),
    worker_bootstrap: refTo(CreatedWorkerBootstrap),
  },
  {
    $id: 'DraftWorkerBootstrap', description: 'The draft and the worker bootstrap that joins the customer\'s server to its cluster (token shown once).',
    examples: [{
      order_draft: { ...EXAMPLE_DRAFT, status: 'compute_bootstrap', field_values: {}, locked_keys: [], current_checkout_session: undefined },
      worker_bootstrap: {
        id: 'wbs_01kaxq3m7y0c9v8t6r5p4n3m2k', cluster_id: 'clu_01kaxq3m7y0c9v8t6r5p4n3m2k', status: 'active', expires_at: 1767229200, used_by_machine_id: null,
        created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k', created_at: 1767225600, etag: '1', token: 'svcb_example', command: 'svc machine join --server https://svc.example.com --token svcb_example',
        cloud_init: '#cloud-config\n',
      },
    }],
  },
);

export const ListOrderDraftsQuery = Type.Object(
  {
    offer: Type.Optional(Type.String({ minLength: 1, maxLength: 56, description: 'only drafts of this offer (ofr_ id)' })),
    status: Type.Optional(StringEnum(DRAFT_STATUSES, { description: 'only drafts in this phase' })),
  },
  { additionalProperties: false },
);

export const ListOrdersQuery = Type.Object(
  {
    offer: Type.Optional(Type.String({ minLength: 1, maxLength: 56, description: 'only orders of this offer (ofr_ id)' })),
    status: Type.Optional(StringEnum(ORDER_STATUSES, { description: 'only orders with this delivery status' })),
  },
  { additionalProperties: false },
);

export const ORDER_SCHEMAS = [OrderDraft, OrderDraftSellerView, AnyOrderDraft, BegunOrderDraft, CheckoutSession, Order, DraftWorkerBootstrap];
