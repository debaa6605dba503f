import { Type, type TSchema } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { acceptOperation } from '../operations/operation-steps.js';
import { OperationRef } from '../operations/operations.schemas.js';
import { WorkspaceId } from '../workspaces/workspaces.schemas.js';
import { ChangeRequest, ChangeRequestId, changeTierBody, PlanCheckoutId, PlanCheckout, Subscription } from './subscriptions.schemas.js';

const tags = ['subscriptions'];
const IdParams = Type.Object({ id: WorkspaceId });
const BASE = '/v1/workspaces/:id/subscription';
const CHANGE_RULES =
  'Needs the owner or admin role; if-match with the subscription\'s etag is required (a stale one is 409 ABORTED with the current ' +
  'etag in error.metadata.etag). 202 with the operation (owner_type workspace); its response names the change request and its ' +
  'status. Accepts idempotency-key. A workspace being deleted is 422 (reason WORKSPACE_DELETING).';

export function subscriptionRoutes(app: App, s: Pick<Services, 'config' | 'idempotency' | 'operations' | 'subscriptions' | 'planCheckouts'>): void {
  app.get(BASE, {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getSubscription', summary: 'Get the workspace\'s subscription',
      description: 'Its tier, status, current monthly period and the change waiting for the period end, if any. Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Subscription }),
    },
  }, async (request, reply) => withEtag(reply, await s.subscriptions.get(scopeOf(request))));

  const operation = (verb: string, operationId: string, summary: string, description: string, body?: ReturnType<typeof changeTierBody>) => {
    // :changeTier may answer a plan checkout instead of an operation (SVC_BILLING=payments, a raise)
    const success: Record<number, TSchema> = verb === 'changeTier' ? { 200: PlanCheckout, 201: PlanCheckout, 202: OperationRef } : { 202: OperationRef };
    app.post(verbPath(BASE, verb), {
      config: { auth: 'workspace-path' },
      schema: {
        tags, security: bearerSecurity, operationId, summary, description: `${description} ${CHANGE_RULES}`,
        params: IdParams, headers: requestHeaders({ ifMatch: 'required', idempotency: 'optional' }), ...(body ? { body } : {}),
        response: responses(success, [400, 403, 404, 409, 422]),
      },
    }, async (request, reply) => {
      const scope = scopeOf(request);
      const revision = parseIfMatch(headerOf(request, 'if-match'));
      const tier = (request.body as { tier?: string } | undefined)?.tier ?? '';
      if (verb === 'changeTier' && s.config.billing === 'payments' && s.planCheckouts.isPaidRaise((await s.subscriptions.get(scope)).tier, tier)) {
        // A raise paid through the provider: a plan checkout, not an operation; the plan moves when the payment arrives.
        const made = await s.planCheckouts.raise(scope, revision, tier);
        if (made.status === 201) reply.header('location', `/v1/workspaces/${scope.workspaceId}/subscription/checkouts/${made.body.id}`);
        return reply.code(made.status).send(made.body);
      }
      return acceptOperation(s, request, reply, scope.workspaceId, (tx) =>
        verb === 'changeTier' ? s.subscriptions.changeTier(scope, revision, tier, tx)
          : verb === 'cancel' ? s.subscriptions.cancel(scope, revision, tx)
            : s.subscriptions.reactivate(scope, revision, tx));
    });
  };

  operation('changeTier', 'changeSubscriptionTier', 'Change the plan',
    'With SVC_BILLING=operator (the default) a plan is raised only by the operator (`svc admin workspaces set-plan`): a tier ' +
    'above the current one is 403 (reason PLAN_SET_BY_OPERATOR), while a lower one, the withdrawal of a pending change, ' +
    '`:cancel` and `:reactivate` stay the workspace\'s own (they cost nobody anything); GET /v1/auth/settings says which holds. ' +
    'With SVC_BILLING=payments a tier above the current one is paid first: the answer is a plan checkout (201 with `Location`, or ' +
    '200 with the open one when it is for the same tier and has 5 minutes left) whose `checkout_url` is the payment provider\'s ' +
    'page (SVC_PAYMENT_PROVIDER, monthly at the plan\'s price from GET /v1/plans); nothing changes until the provider confirms the ' +
    'payment, then the plan moves at once (an applied upgrade change request; audited subscription.plan_paid). A raise to ' +
    'another tier replaces an open checkout (expired at the provider first); an expired or abandoned one changes nothing; a tier ' +
    'without a price is the operator\'s (403 PLAN_SET_BY_OPERATOR); 503 PAYMENT_PROVIDER_UNAVAILABLE when the provider cannot be ' +
    'reached; 409 (reason CONFLICT) when another raise changed the checkout meanwhile. ' +
    'Otherwise starts a `workspace.subscription.change_tier` operation (202). A lower tier is scheduled for the end of the current period, and is 422 FAILED_PRECONDITION (reason ' +
    'QUOTA_WOULD_BE_EXCEEDED, metadata metric, limit, usage) when the usage today is above the lower plan\'s allocation limits. ' +
    'A new change supersedes a pending one (its status becomes canceled); the current tier withdraws a pending change, and ' +
    'without one is 422 (reason SAME_TIER). A tier not in the catalog is 400.',
    changeTierBody(s.config.plans.tiers));
  operation('cancel', 'cancelSubscription', 'Cancel at the period end',
    'Starts a `workspace.subscription.cancel` operation: the subscription becomes `canceling` and returns to free at the end of ' +
    'the current period (a change request of kind cancel). 422 when it is already canceling (ALREADY_CANCELING), on free ' +
    '(NOTHING_TO_CANCEL), or when the usage is above free\'s limits (QUOTA_WOULD_BE_EXCEEDED). No body.');
  operation('reactivate', 'reactivateSubscription', 'Undo a scheduled cancel',
    'Starts a `workspace.subscription.reactivate` operation: the pending cancel is canceled and the subscription is `active` ' +
    'again, on its current plan. 422 when it is not canceling (reason NOT_CANCELING). No body.');

  app.get(`${BASE}/checkouts`, {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listPlanCheckouts', summary: 'List plan checkouts',
      description: 'SVC_BILLING=payments: every raise asked for the workspace\'s plan and its payment, newest first. Any member may list them.',
      params: IdParams, headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(PlanCheckout, 'A page of plan checkouts') }),
    },
  }, async (request) => s.planCheckouts.list(scopeOf(request), request.query));

  app.get(`${BASE}/checkouts/:checkout_id`, {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getPlanCheckout', summary: 'Get a plan checkout',
      description: 'Where a raise\'s payment stands: open (pay at checkout_url), paid (the plan moved), expired, canceled or refunded. Any member may read it.',
      params: Type.Object({ id: WorkspaceId, checkout_id: PlanCheckoutId }), headers: requestHeaders(),
      response: responses({ 200: PlanCheckout }),
    },
  }, async (request) => s.planCheckouts.get(scopeOf(request), request.params.checkout_id));

  app.get(`${BASE}/change_requests`, {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listSubscriptionChangeRequests', summary: 'List subscription change requests',
      description: 'Every change requested for the workspace\'s subscription, newest first; `created_at` and `effective_at` are ISO 8601 strings. Any member may list them.',
      params: IdParams, headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(ChangeRequest, 'A page of change requests') }),
    },
  }, async (request) => s.subscriptions.listChangeRequests(scopeOf(request), request.query));

  app.get(`${BASE}/change_requests/:request_id`, {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getSubscriptionChangeRequest', summary: 'Get a subscription change request',
      description: 'Any member may read it.',
      params: Type.Object({ id: WorkspaceId, request_id: ChangeRequestId }), headers: requestHeaders(),
      response: responses({ 200: ChangeRequest }),
    },
  }, async (request) => s.subscriptions.getChangeRequest(scopeOf(request), request.params.request_id));
}
