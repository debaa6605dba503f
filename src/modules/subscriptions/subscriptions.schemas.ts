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

export const Subscription = Type.Object(
  {
    id: Type.String({ description: 'sub_ id (one per workspace, for its whole life)' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    tier: Type.String({ description: 'the current plan (GET /v1/plans); the workspace\'s plan.tier' }),
    status: StringEnum(SUBSCRIPTION_STATUSES, { description: 'active, or canceling while a cancel waits for the period end' }),
    cancellation_scheduled: Type.Boolean({ description: 'true iff status is canceling' }),
    current_period_start: Type.Integer({ minimum: 0, description: 'start of the current monthly period (Unix seconds)' }),
    current_period_end: Type.Integer({
      minimum: 0, description: 'end of the current monthly period (Unix seconds); scheduled downgrades and cancels apply then, at scheduled_change.effective_at, the same instant',
    }),
    billed_by: StringEnum(['platform', 'seller'], { description: 'platform (this service\'s operator bills the workspace) or seller' }),
    scheduled_change: Type.Union([ScheduledChange, Type.Null()], { description: 'the downgrade or cancel waiting for the period end, if any' }),
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
