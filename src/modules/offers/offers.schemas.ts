// Offers (API.md 8.7): a seller's priced, configurable promise to install a package for a
// customer; the bodies of their routes; and what `GET /v1/offers:resolve` shows anyone who holds
// the offer's link.
import { Type, type Static, type TSchema } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { UnixSecondsInput } from '../../platform/integer-bounds.js';

export const CURRENCIES = ['eur', 'usd'] as const;
export const PRICE_INTERVALS = ['one_time', 'month', 'year'] as const;
export const COMMERCIAL_MODES = ['paid', 'non_billable_test'] as const;
export const COMPUTE_MODES = ['platform', 'bring_your_own'] as const;
export type ComputeMode = (typeof COMPUTE_MODES)[number];
export const OFFER_STATUSES = ['active', 'archived', 'expired', 'redeemed'] as const;
export type OfferStatus = (typeof OFFER_STATUSES)[number];

/** The most keys `field_values` may hold, on an offer and on a draft. */
export const MAX_FIELD_VALUES = 100;
/** A field value's serialized size at most (bytes of JSON), and all of them together. */
export const MAX_FIELD_VALUE_BYTES = 16 * 1024;
export const MAX_FIELD_VALUES_BYTES = 64 * 1024;

export const OfferId = Type.String({ minLength: 1, maxLength: 56, description: 'offer id (ofr_...)' });
export const SHORT_HASH_PATTERN = '^[0-9A-Za-z]{8}$';

const unix = (description: string) => Type.Integer({ minimum: 0, description: `${description} (Unix seconds)` });
function Nullable<T extends TSchema>(schema: T, description: string) {
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [(schema as unknown as { type: string }).type, 'null'], description });
}

export const Pricing = Type.Object(
  {
    currency: StringEnum(CURRENCIES, { description: 'ISO 4217, lowercase' }),
    unit_amount: Type.Integer({ minimum: 0, maximum: 100_000_000, description: 'the price in cents (0: free; nothing is paid)' }),
    interval: StringEnum(PRICE_INTERVALS, {
      description: '`one_time`: paid once; `month` / `year`: a subscription renewed every interval (the order shows next_renewal_at)',
    }),
  },
  { additionalProperties: false, description: 'What the customer pays' },
);
export type PricingT = Static<typeof Pricing>;

const FieldValue = Type.Object(
  {
    value: Type.Unknown({ description: 'a value for the key of the version\'s input schema' }),
    locked: Type.Boolean({ description: 'true: the customer cannot change it (and the resolved schema omits the key); false: a pre-fill they may change' }),
  },
  { additionalProperties: false },
);

export const OfferFieldValues = Type.Record(Type.String({ minLength: 1, maxLength: 128 }), FieldValue, {
  maxProperties: MAX_FIELD_VALUES,
  description: `values of the version's input schema chosen by the seller, each \`{"value": ..., "locked": true|false}\`, at most ${MAX_FIELD_VALUES} keys; checked against the schema`,
});

const Customer = Type.Object(
  {
    display_name: Type.String({ minLength: 1, maxLength: 200, description: 'who the offer is for, as the seller names them' }),
    external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'the seller\'s own reference for the customer (a CRM id)' })),
  },
  { additionalProperties: false },
);

export const CreateOfferBody = Type.Object(
  {
    package_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'pkg_ id: the offer installs the package\'s latest release when a customer claims it. Exactly one of package_id and package_version_id' })),
    package_version_id: Type.Optional(Type.String({ minLength: 1, maxLength: 55, description: 'pkv_ id: the offer installs exactly this version' })),
    title: Type.String({ minLength: 1, maxLength: 200, description: 'what the customer sees as the product\'s name' }),
    pricing: Pricing,
    commercial_mode: Type.Optional(StringEnum(COMMERCIAL_MODES, {
      default: 'paid', description: '`paid` (default): the customer pays at checkout; `non_billable_test`: nothing is charged (the payment phase is skipped)',
    })),
    compute: Type.Optional(Type.Object({
      mode: StringEnum(COMPUTE_MODES, {
        description: '`platform` (default): the service registers a cluster in the customer\'s workspace; `bring_your_own`: the customer joins their own server as a machine',
      }),
    }, { additionalProperties: false })),
    field_values: Type.Optional(OfferFieldValues),
    allowed_emails: Type.Optional(Type.Array(Type.String({ format: 'email', maxLength: 254 }), {
      minItems: 1, maxItems: 50, description: 'only customers signed in with one of these emails may order (case-insensitive); absent: anyone with the link',
    })),
    expires_at: Type.Optional(UnixSecondsInput('the link stops working then; must be in the future')),
    max_uses: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 10_000 }), Type.Null()], {
      description: 'how many orders the offer may make (default 1; null: unlimited). A claimed draft holds one use until it is paid or ends',
    })),
    order_ttl_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440, default: 120, description: 'a draft must be done within this many minutes of its creation, else it ends `timeout`' })),
    customer: Type.Optional(Customer),
    notes: Type.Optional(Type.String({ maxLength: 500, description: 'shown to the customer' })),
    internal_note: Type.Optional(Type.String({ maxLength: 500, description: 'seen only by the seller\'s members' })),
  },
  {
    additionalProperties: false,
    description: 'A new offer. Exactly one of package_id and package_version_id.',
    examples: [{
      package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k', title: 'Hello service, hosted', pricing: { currency: 'eur', unit_amount: 4900, interval: 'month' },
      field_values: { greeting: { value: 'Hello from ACME', locked: true } }, max_uses: 1, order_ttl_minutes: 120,
      customer: { display_name: 'Globex' },
    }],
  },
);
export type CreateOfferBodyT = Static<typeof CreateOfferBody>;

export const PatchOfferBody = Type.Object(
  {
    title: Type.Optional(CreateOfferBody.properties.title),
    pricing: Type.Optional(Pricing),
    commercial_mode: Type.Optional(StringEnum(COMMERCIAL_MODES, { description: '`paid`: the customer pays at checkout; `non_billable_test`: nothing is charged' })),
    compute: CreateOfferBody.properties.compute,
    field_values: Type.Optional(OfferFieldValues),
    allowed_emails: Type.Optional(Type.Union([CreateOfferBody.properties.allowed_emails, Type.Null()])),
    expires_at: Type.Optional(Type.Union([UnixSecondsInput('the link stops working then'), Type.Null()])),
    max_uses: CreateOfferBody.properties.max_uses,
    // Without the create body's default: a PATCH that leaves it out must not reset it to 120.
    order_ttl_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440, description: 'a draft must be done within this many minutes of its creation' })),
    customer: Type.Optional(Type.Union([Customer, Type.Null()])),
    notes: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'shown to the customer; null clears it' })),
    internal_note: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'seen only by the seller\'s members; null clears it' })),
  },
  {
    additionalProperties: false, minProperties: 1,
    description: 'Changes to an offer nobody has used yet (no draft claimed it): the members given replace the current ones; null clears an optional one.',
    examples: [{ pricing: { currency: 'eur', unit_amount: 3900, interval: 'month' } }],
  },
);
export type PatchOfferBodyT = Static<typeof PatchOfferBody>;

export const Offer = Type.Object(
  {
    id: Type.String({ description: 'ofr_ id' }),
    workspace_id: Type.String({ description: 'the seller\'s workspace (ws_ id)' }),
    package_id: Type.String({ description: 'pkg_ id' }),
    package_version_id: Nullable(Type.String(), 'the version sold (pkv_ id), or null: the package\'s latest release when a draft is claimed'),
    title: Type.String(),
    pricing: Pricing,
    commercial_mode: StringEnum(COMMERCIAL_MODES),
    compute: Type.Object({ mode: StringEnum(COMPUTE_MODES) }),
    field_values: OfferFieldValues,
    allowed_emails: Nullable(Type.Array(Type.String()), 'who may order; null: anyone with the link'),
    expires_at: Nullable(Type.Integer({ minimum: 0 }), 'when the link stops working (Unix seconds), or null'),
    max_uses: Nullable(Type.Integer({ minimum: 1 }), 'orders the offer may make, or null: unlimited'),
    uses: Type.Integer({ minimum: 0, description: 'uses taken: orders committed plus drafts holding one now' }),
    orders_count: Type.Integer({ minimum: 0, description: 'orders committed' }),
    order_ttl_minutes: Type.Integer({ minimum: 1 }),
    customer: Nullable(Type.Object({ display_name: Type.String(), external_id: Type.Optional(Type.String()) }), 'who the offer is for, or null'),
    notes: Nullable(Type.String(), 'shown to the customer, or null'),
    internal_note: Nullable(Type.String(), 'seen by the seller only, or null'),
    short_hash: Type.String({ pattern: SHORT_HASH_PATTERN, description: '8 base62 characters: the offer\'s link is {public_url}/i/{short_hash}' }),
    url: Type.String({ format: 'uri', description: 'the link to send the customer' }),
    status: StringEnum(OFFER_STATUSES, {
      description: 'computed: `archived` (deleted; restore with :undelete), `expired` (past expires_at), `redeemed` (every use taken), else `active`',
    }),
    html_url: Type.String({ format: 'uri', description: 'the dashboard view of the offer' }),
    created_by: Type.String({ description: 'usr_, tok_ or oac_ id' }),
    created_at: unix('created'),
    updated_at: unix('last change'),
    archived_at: Nullable(Type.Integer({ minimum: 0 }), 'when it was archived (Unix seconds), or null'),
    etag: Type.String({ description: 'changes on every write; send it back in if-match' }),
  },
  {
    $id: 'Offer',
    description: 'A seller\'s priced, configurable promise to install a package for a customer, and the link that redeems it.',
    examples: [{
      id: 'ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', workspace_id: 'ws_01kaxq3m7y0c9v8t6r5p4n3m2k', package_id: 'pkg_01kaxq3m7y0c9v8t6r5p4n3m2k',
      package_version_id: null, title: 'Hello service, hosted', pricing: { currency: 'eur', unit_amount: 4900, interval: 'month' },
      commercial_mode: 'paid', compute: { mode: 'platform' }, field_values: { greeting: { value: 'Hello from ACME', locked: true } },
      allowed_emails: null, expires_at: null, max_uses: 1, uses: 0, orders_count: 0, order_ttl_minutes: 120,
      customer: { display_name: 'Globex' }, notes: null, internal_note: null, short_hash: 'a8Kd02Xz', url: 'https://svc.example.com/i/a8Kd02Xz',
      status: 'active', html_url: 'https://svc.example.com/offers/ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', created_by: 'usr_01kaxq3m7y0c9v8t6r5p4n3m2k',
      created_at: 1767225600, updated_at: 1767225600, archived_at: null, etag: '1',
    }],
  },
);
export type OfferT = Static<typeof Offer>;

export const ListOffersQuery = Type.Object(
  {
    status: Type.Optional(StringEnum(OFFER_STATUSES, { description: 'only offers in this status' })),
    package_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only offers of this package' })),
  },
  { additionalProperties: false },
);

export const ResolvedOffer = Type.Object(
  {
    offer_id: Type.String({ description: 'ofr_ id: start an order with POST /v1/offers/{offer_id}/order_drafts' }),
    short_hash: Type.String(),
    title: Type.String(),
    package: Type.Object({ name: Type.String(), version: Type.String({ description: 'the semver the customer will get (the latest release now, for a package offer)' }) }),
    pricing: Pricing,
    commercial_mode: StringEnum(COMMERCIAL_MODES),
    compute_mode: StringEnum(COMPUTE_MODES),
    seller: Type.Object({ workspace_name: Type.String() }),
    customer_display_name: Nullable(Type.String(), 'who the seller made it for, or null'),
    notes: Nullable(Type.String(), 'the seller\'s notes for the customer, or null'),
    input_schema: Type.Object({}, { additionalProperties: true, description: 'the version\'s input schema without the keys the offer locks' }),
    expires_at: Nullable(Type.Integer({ minimum: 0 }), 'when the link stops working (Unix seconds), or null'),
    restricted: Type.Boolean({ description: 'true: only some emails may order (which ones is not shown)' }),
    redeemable: Type.Boolean({ description: 'false: every use is taken (a customer whose draft holds one can still go on with it)' }),
  },
  {
    $id: 'ResolvedOffer',
    description: 'What anyone holding an offer\'s link may see of it: never its uses, emails, internal note or locked values.',
    examples: [{
      offer_id: 'ofr_01kaxq3m7y0c9v8t6r5p4n3m2k', short_hash: 'a8Kd02Xz', title: 'Hello service, hosted',
      package: { name: 'hello', version: '1.2.0' }, pricing: { currency: 'eur', unit_amount: 4900, interval: 'month' },
      commercial_mode: 'paid', compute_mode: 'platform', seller: { workspace_name: 'ACME' }, customer_display_name: 'Globex', notes: null,
      input_schema: { type: 'object', properties: { replicas: { type: 'integer', default: 1 } } }, expires_at: null, restricted: false, redeemable: true,
    }],
  },
);
export type ResolvedOfferT = Static<typeof ResolvedOffer>;

export const OFFER_SCHEMAS = [Offer, ResolvedOffer];
