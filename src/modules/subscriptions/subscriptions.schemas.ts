// A workspace's subscription and its change requests (API.md 8.2; spec 2.11, endpoint 10).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';

export const SUBSCRIPTION_STATUSES = ['active', 'canceling'] as const;
export const CHANGE_KINDS = ['upgrade', 'downgrade', 'cancel'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];
export const CHANGE_STATUSES = ['pending', 'applied', 'canceled', 'rejected'] as const;
export type ChangeStatus = (typeof CHANGE_STATUSES)[number];

export const CHANGE_TIER = 'workspace.subscription.change_tier';
export const CANCEL = 'workspace.subscription.cancel';
export const REACTIVATE = 'workspace.subscription.reactivate';

const Iso = (description: string) => Type.String({ format: 'date-time', description: `${description} (ISO 8601, UTC)` });

const ScheduledChange = Type.Object(
  {
    change_request_id: Type.String({ description: 'scr_ id of the pending change request' }),
    kind: StringEnum(CHANGE_KINDS, { description: 'downgrade or cancel (an upgrade applies at once)' }),
    requested_tier: Type.String({ description: 'the tier it moves to' }),
    effective_at: Iso('when the workers apply it: the end of the current period'),
  },
  { description: 'the change waiting for the period end' },
);

const PendingCheckout = Type.Object(
  {
    plan_checkout_id: Type.String({ description: 'pck_ id (GET .../subscription/checkouts/{id})' }),
    tier: Type.String({ description: 'the plan it pays for' }),
    checkout_url: Type.String({ description: 'where an owner or admin pays' }),
    expires_at: Type.Integer({ minimum: 0, description: 'Unix seconds: when it can no longer be paid' }),
  },
  { description: 'a raise waiting for its payment' },
);

export const PAID_SUBSCRIPTION_STATES = ['active', 'ending', 'ended'] as const;

const PaidSubscription = Type.Object(
  {
    provider: Type.String({ description: 'local or stripe' }),
    provider_subscription_id: Type.String({ description: 'the provider\'s subscription (lsub_ or Stripe\'s sub_)' }),
    plan_checkout_id: Type.String({ description: 'the paid plan checkout (pck_) that started it' }),
    tier: Type.String({ description: 'the plan it pays for' }),
    state: StringEnum(PAID_SUBSCRIPTION_STATES, {
      description: 'active (renews every month), ending (the service asked the provider to end it now: a newer paid raise replaced it, the operator set the ' +
        'plan, the plan went to free, or the workspace is being deleted; see end_reason) or ended (the provider ended it)',
    }),
    cancel_at_period_end: Type.Boolean({ description: 'true while a cancel (or a downgrade to free) is scheduled: the provider ends it at current_period_end instead of charging again' }),
    next_tier: Type.Union([Type.String(), Type.Null()], { description: 'a downgrade to a lower paid plan is scheduled: the provider charges that plan\'s price from the next period on, without proration' }),
    current_period_start: Type.Integer({ minimum: 0, description: 'Unix seconds: the start of the period paid for' }),
    current_period_end: Type.Integer({ minimum: 0, description: 'Unix seconds: the end of the period paid for (each renewal moves it a month on)' }),
    renewals: Type.Integer({ minimum: 0, description: 'months the provider charged after the first' }),
    end_reason: Type.Union([Type.String(), Type.Null()], { description: 'why it is ending or ended' }),
    ended_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Unix seconds: when it ended' }),
    sync: StringEnum(['done', 'pending', 'retrying'] as const, {
      description: 'whether the provider holds what the service asked (end it, end it at the period end, renew, a new price): done, pending (the job is ' +
        'on its way) or retrying (the provider refused or could not be reached; retried with growing delays, last_error says why)',
    }),
    sync_attempts: Type.Integer({ minimum: 0, description: 'failed attempts since the last success' }),
    last_error: Type.Union([Type.String(), Type.Null()], { description: 'the provider\'s last refusal, while retrying' }),
  },
  {
    description:
      'SVC_BILLING=payments: the workspace\'s newest plan subscription at the payment provider. A cancel or a downgrade to free ends it at ' +
      'the period end (cancel_at_period_end, as Stripe recommends: the plan stays paid until then and is not charged again); a downgrade ' +
      'to a lower paid plan charges that plan\'s price from the next period, without proration; a newer paid raise, the operator\'s ' +
      '`svc admin workspaces set-plan` and the workspace\'s deletion end it at once (without a refund of the unused days). The provider ' +
      'ending it on its own (it gave up charging) lowers the workspace to free at once.',
  },
);
export type PaidSubscriptionT = Static<typeof PaidSubscription>;

export const Subscription = Type.Object(
  {
    id: Type.String({ description: 'sub_ id (one per workspace, for its whole life)' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    tier: Type.String({ description: 'the current plan (GET /v1/plans); the workspace\'s plan.tier' }),
    status: StringEnum(SUBSCRIPTION_STATUSES, { description: 'active, or canceling while a cancel waits for the period end' }),
    cancellation_scheduled: Type.Boolean({ description: 'true iff status is canceling' }),
    current_period_start: Type.Integer({ minimum: 0, description: 'start of the current monthly period (Unix seconds): the period paid for while a plan subscription at the payment provider renews (paid_subscription), else months from the workspace\'s creation' }),
    current_period_end: Type.Integer({
      minimum: 0, description: 'end of the current monthly period (Unix seconds); scheduled downgrades and cancels apply then, at scheduled_change.effective_at, the same instant',
    }),
    billed_by: StringEnum(['platform', 'seller'], { description: 'platform (this service\'s operator bills the workspace) or seller' }),
    scheduled_change: Type.Union([ScheduledChange, Type.Null()], { description: 'the downgrade or cancel waiting for the period end, if any' }),
    pending_checkout: Type.Union([PendingCheckout, Type.Null()], { description: 'SVC_BILLING=payments: the raise waiting for its payment, if any (not part of the etag)' }),
    paid_subscription: Type.Union([PaidSubscription, Type.Null()], { description: 'SVC_BILLING=payments: the newest subscription at the payment provider that paid for the plan, if any (not part of the etag)' }),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds: the workspace\'s creation, when it started on free' }),
    etag: Type.String({ description: 'changes on every change request and when a change applies; send it back in if-match' }),
  },
  {
    $id: 'Subscription',
    description: 'A workspace\'s subscription. Every workspace has one, on the free plan with monthly periods until changed.',
    examples: [{
      id: 'sub_01jf8x3q6m2c4y7n0k5t9r1b3a', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', tier: 'pro', status: 'canceling',
      cancellation_scheduled: true, current_period_start: 1767607200, current_period_end: 1770285600,
      billed_by: 'platform',
      scheduled_change: { change_request_id: 'scr_01jf9a0b1c2d3e4f5g6h7j8k9m', kind: 'cancel', requested_tier: 'free', effective_at: '2026-02-05T10:00:00.000Z' },
      pending_checkout: null,
      paid_subscription: {
        provider: 'stripe', provider_subscription_id: 'sub_1Q2w3E4r5T6y7U8i', plan_checkout_id: 'pck_01jf8x9a0b1c2d3e4f5g6h7j8k', tier: 'pro', state: 'active',
        cancel_at_period_end: true, next_tier: null, current_period_start: 1767607200, current_period_end: 1770285600, renewals: 0,
        end_reason: null, ended_at: null, sync: 'done', sync_attempts: 0, last_error: null,
      },
      created_at: 1767607200, etag: '4',
    }],
  },
);
export type SubscriptionT = Static<typeof Subscription>;

export const ChangeRequest = Type.Object(
  {
    id: Type.String({ description: 'scr_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    kind: StringEnum(CHANGE_KINDS, { description: 'upgrade (applies at once), downgrade or cancel (apply at the period end)' }),
    previous_tier: Type.String({ description: 'the tier when the change was requested' }),
    requested_tier: Type.String({ description: 'the tier asked for (free for a cancel)' }),
    status: StringEnum(CHANGE_STATUSES, {
      description:
        'pending (waiting for effective_at), applied, canceled (withdrawn by :reactivate, by a later change, or by a :changeTier ' +
        'back to the current tier) or rejected (at the period end the usage was above the requested plan\'s limits)',
    }),
    status_reason: Type.Union([Type.String(), Type.Null()], { description: 'why it was canceled or rejected; null otherwise' }),
    effective_at: Iso('when it applies (applied: when it did)'),
    resolved_at: Type.Union([Iso('when it was applied, canceled or rejected'), Type.Null()], { description: 'null while pending' }),
    operation_id: Type.Union([Type.String(), Type.Null()], { description: 'the operation of the request that made it' }),
    created_at: Iso('when it was requested'),
  },
  {
    $id: 'SubscriptionChangeRequest',
    description: 'One requested change of a subscription (upgrade, downgrade or cancel): when it applies and how it ended.',
    examples: [{
      id: 'scr_01jf9a0b1c2d3e4f5g6h7j8k9m', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', kind: 'downgrade', previous_tier: 'pro',
      requested_tier: 'free', status: 'pending', status_reason: null, effective_at: '2026-02-05T10:00:00.000Z', resolved_at: null,
      operation_id: 'op_01jf9a0b1c2d3e4f5g6h7j8k9n', created_at: '2026-01-20T08:30:00.000Z',
    }],
  },
);
export type ChangeRequestT = Static<typeof ChangeRequest>;
export const ChangeRequestRef = Type.Unsafe<ChangeRequestT>({ $ref: 'SubscriptionChangeRequest#' });

export const ChangeRequestId = Type.String({ minLength: 1, maxLength: 53, description: 'change request id (scr_...)' });

/** The body of :changeTier; `tiers` is the catalog, so a tier it does not list is 400. */
export function changeTierBody(tiers: string[]) {
  return Type.Object(
    { tier: StringEnum(tiers, { description: 'the plan to move to: one of the catalog\'s tiers (GET /v1/plans)' }) },
    { additionalProperties: false, description: 'The tier to move to.', examples: [{ tier: tiers[tiers.length - 1] ?? 'free' }] },
  );
}

export const PLAN_CHECKOUT_STATES = ['creating', 'open', 'paid', 'expired', 'canceled', 'refunded'] as const;
export type PlanCheckoutStateT = (typeof PLAN_CHECKOUT_STATES)[number];

export const PlanCheckout = Type.Object(
  {
    id: Type.String({ description: 'pck_ id' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    tier: Type.String({ description: 'the plan paid for' }),
    previous_tier: Type.String({ description: 'the plan when the raise was asked' }),
    state: StringEnum(PLAN_CHECKOUT_STATES, {
      description:
        'creating (the payment provider is being asked for the session), open (waiting for the payment at checkout_url), paid (the ' +
        'provider confirmed it and the plan moved: change_request_id), expired (not paid in time: nothing changed), canceled (replaced ' +
        'by a later raise, or the provider could not make it: nothing changed), refunded (paid when the plan could no longer take it, ' +
        'e.g. it had moved meanwhile: the payment is given back)',
    }),
    status_reason: Type.Union([Type.String(), Type.Null()], { description: 'why it was canceled or refunded; null otherwise' }),
    provider: Type.String({ description: 'the payment provider: local or stripe (SVC_PAYMENT_PROVIDER)' }),
    provider_session_id: Type.Union([Type.String(), Type.Null()], { description: 'the provider\'s checkout session id; null while creating' }),
    checkout_url: Type.Union([Type.String(), Type.Null()], { description: 'where an owner or admin pays (the provider\'s hosted page); null while creating' }),
    amount: Type.Integer({ minimum: 0, description: 'cents per month: the plan\'s price when the raise was asked' }),
    currency: Type.String({ description: 'eur or usd' }),
    interval: StringEnum(['month'], { description: 'the provider bills the plan every month' }),
    expires_at: Type.Integer({ minimum: 0, description: 'Unix seconds: when it can no longer be paid' }),
    created_by: Type.String({ description: 'the usr_ (or tok_, oac_) id that asked for the raise' }),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    completed_at: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Unix seconds: when the provider confirmed the payment; null until then' }),
    change_request_id: Type.Union([Type.String(), Type.Null()], { description: 'the applied upgrade (scr_) once paid; null otherwise' }),
  },
  {
    $id: 'PlanCheckout',
    description:
      'A raise of the workspace\'s plan waiting for its payment (SVC_BILLING=payments). Open checkout_url to pay; the plan moves when the ' +
      'payment provider confirms the payment (its webhook, or the return page), never before.',
    examples: [{
      id: 'pck_01jf9a0b1c2d3e4f5g6h7j8k9m', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a', tier: 'pro', previous_tier: 'free', state: 'open',
      status_reason: null, provider: 'local', provider_session_id: 'chk_01jf9a0b1c2d3e4f5g6h7j8k9n',
      checkout_url: 'https://svc.example.com/checkout/chk_01jf9a0b1c2d3e4f5g6h7j8k9n', amount: 2900, currency: 'usd', interval: 'month',
      expires_at: 1767227400, created_by: 'usr_01jf8x3q6m2c4y7n0k5t9r1b3a', created_at: 1767225600, completed_at: null, change_request_id: null,
    }],
  },
);
export type PlanCheckoutT = Static<typeof PlanCheckout>;
export const PlanCheckoutRef = Type.Unsafe<PlanCheckoutT>({ $ref: 'PlanCheckout#' });
export const PlanCheckoutId = Type.String({ minLength: 1, maxLength: 53, description: 'plan checkout id (pck_...)' });
