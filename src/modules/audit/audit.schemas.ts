// The audit log (API.md 8.1): GET /v1/audit_events.
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { PageQuery } from '../../platform/pagination.js';
import { ACTOR_TYPES, AUDIT_ACTIONS, AUDIT_RESOURCE_TYPES } from './audit.js';

const ACTIONS_DESCRIPTION =
  'What happened: `secret.create`, `secret.update` (name, description, labels or aliases), `secret.delete` (soft, or `force`), ' +
  '`secret.undelete`, `secret.purge` (by the service, past purge_at), `secret.version.create`, `secret.version.enable`, ' +
  '`secret.version.disable`, `secret.version.destroy`, `secret.version.access` (a value was read: `:access`, or an install ' +
  'deploy that applied it), `api_token.create`, `api_token.revoke`, `oauth_client.create`, `oauth_client.delete`, ' +
  '`workspace.member.add`, `workspace.member.update` (role change), `workspace.member.remove`, `workspace.delete` (requested), ' +
  '`workspace.invitation.create` (a member was added by an e-mail without an account), `workspace.invitation.revoke`, ' +
  '`workspace.invitation.accept` (the actor is the account that joined), ' +
  '`worker_bootstrap.create`, `worker_bootstrap.use` (a server joined with it; the actor is the new machine), `worker_bootstrap.revoke`, ' +
  '`machine.create` (a provisioned machine was requested), `machine.delete` (requested by a person, or by the service at the machine\'s expires_at), ' +
  '`agent.create`, `agent.update`, `agent.delete` (archived), `agent.undelete`, `approval_request.approve` and `approval_request.reject` ' +
  '(a person decided on code an agent proposed, or on a member\'s turn; metadata: turn_id, kind, and the reason of a rejection), ' +
  '`offer.create`, `offer.update`, `offer.delete` (archived), `offer.undelete`, `order.commit` (a paid or free order became an ' +
  'order), `subscription.set_plan` (the operator set the workspace\'s plan with `svc admin workspaces set-plan`: actor `system` ' +
  '`operator`; metadata previous_tier, tier, change_request_id), `subscription.checkout.create` (SVC_BILLING=payments: an owner ' +
  'or admin asked to raise the plan and a plan checkout was opened at the payment provider; resource the plan checkout (pck_); ' +
  'metadata tier, previous_tier, amount, currency, provider, provider_session_id), `subscription.plan_paid` (the provider confirmed the ' +
  'payment and the plan moved: the actor is the person who asked for the raise; resource the workspace; metadata previous_tier, ' +
  'tier, change_request_id, plan_checkout_id, amount, currency, provider, provider_session_id, provider_subscription_id, payment_ref when known), ' +
  '`subscription.plan_renewed` (the provider charged the next month of the paid plan: actor `system` `payment_provider`; metadata tier, ' +
  'provider, provider_subscription_id, current_period_start, current_period_end), `subscription.plan_ended` (the provider ended the ' +
  'plan\'s subscription on its own, e.g. it gave up charging, and the workspace went to free at once: actor `system` `payment_provider`; ' +
  'metadata previous_tier, tier, change_request_id, provider, provider_subscription_id), ' +
  '`cluster.create` (registered; metadata provider, operation_id), ' +
  '`cluster.update` (renamed; metadata previous_name), `cluster.delete` (deletion started; metadata operation_id), ' +
  '`cluster.capabilities.refresh` (metadata operation_id), `package.create`, `package.version.create` (published; metadata package_id, ' +
  'package_name, semver), `install.create` (a deploy of a new install, by a person or by an order\'s delivery; metadata package_id, ' +
  'package_name, package_version_id, semver, cluster_id, cluster_name, operation_id), `install.update` (a redeploy: new values or ' +
  'version; the same metadata), `install.delete` (deletion started; metadata package_id, package_name, cluster_id, cluster_name, operation_id), ' +
  '`user.two_factor.enable` and `user.two_factor.disable` (a member turned ' +
  'two-factor sign-in on or off for their account: recorded in every workspace they belong to; resource the usr_ id; metadata method `totp`), ' +
  '`workspace.two_factor_requirement.enable` and `workspace.two_factor_requirement.disable` (an owner changed require_two_factor)';

export const AuditEvent = Type.Object(
  {
    id: Type.String({ description: 'aud_ id; ids sort by time' }),
    workspace_id: Type.String({ description: 'ws_ id' }),
    actor: Type.Object(
      {
        type: StringEnum(ACTOR_TYPES, {
          description: '`user` (usr_ id; session or user JWT), `api_token` (tok_ id), `oauth_client` (oac_ id), `machine` (mch_ id: a machine agent joining), or `system` for what the service does on its own (purging a secret, deleting an expired machine)',
        }),
        id: Type.String({ description: 'the usr_, tok_, oac_ or mch_ id; for `system`, the job that acted (e.g. `secret-purge`), or `operator` for an operator\'s command' }),
        name: Type.Union([Type.String(), Type.Null()], {
          description: 'the actor\'s name when the event was recorded: the user\'s display name, or the API token\'s, OAuth client\'s or machine\'s ' +
            'name; null for `system`, for a user without a name (read `email`), and for events recorded before names were kept',
        }),
        email: Type.Union([Type.String(), Type.Null()], {
          description: 'the acting user\'s e-mail when the event was recorded; null for other actors (and for events recorded before names were kept)',
        }),
      },
      { description: 'who acted, with the names people know them by, kept as they were at the time: the event reads the same after the actor is renamed or deleted' },
    ),
    action: StringEnum(AUDIT_ACTIONS, { description: ACTIONS_DESCRIPTION }),
    resource_type: StringEnum(AUDIT_RESOURCE_TYPES, { description: 'the kind of resource acted on' }),
    resource_id: Type.String({ description: 'its id (sec_, secv_, tok_, oac_, wsm_, inv_, ws_, wbs_, mch_, agt_, apr_, ofr_, ord_, clu_, pkg_, pkv_, inst_, pck_, or usr_ for an account\'s own changes)' }),
    resource_name: Type.Union([Type.String(), Type.Null()], {
      description: 'the resource\'s name when the event was recorded (a secret\'s, cluster\'s, package\'s or token\'s name, an offer\'s title, ' +
        '`wiki 1.2.0` for a package version, `wiki on dev` for an install), kept so that events about a renamed or deleted resource ' +
        'still read well; null when the resource has no name of its own (a secret version: read metadata.secret_id and version_number) or the event predates kept names',
    }),
    request_id: Type.Union([Type.String(), Type.Null()], {
      description: 'the x-request-id of the request that did it (match it with the server log); null for work the service did on its own (purge, a deploy resolving a secret)',
    }),
    created_at: Type.Integer({ minimum: 0, description: 'Unix seconds' }),
    metadata: Type.Record(Type.String(), Type.String(), {
      description: 'details as strings (names, version numbers, roles, the operation that deployed); never a secret value',
    }),
  },
  {
    $id: 'AuditEvent',
    description: 'One entry of the workspace\'s audit log. Events are written with the change they record, in the same transaction, and are never changed or removed through the API.',
    examples: [{
      id: 'aud_01jf8x3q6m2c4y7n0k5t9r1b3d', workspace_id: 'ws_01jf8x3q6m2c4y7n0k5t9r1b3a',
      actor: { type: 'api_token', id: 'tok_01jf8x3q6m2c4y7n0k5t9r1b3c', name: 'deployer', email: null }, action: 'secret.version.access',
      resource_type: 'secret_version', resource_id: 'secv_01jf8x3q6m2c4y7n0k5t9r1b3e', resource_name: null, request_id: 'req_9f2c4e1d7a6b3c5e000042',
      created_at: 1767225600, metadata: { secret_id: 'sec_01jf8x3q6m2c4y7n0k5t9r1b3f', version_number: '3', requested: 'latest' },
    }],
  },
);
export type AuditEventT = Static<typeof AuditEvent>;

export const ListAuditEventsQuery = Type.Object(
  {
    ...PageQuery,
    resource_id: Type.Optional(Type.String({
      minLength: 1, maxLength: 64,
      description: 'only events about this resource (a sec_, secv_, tok_, oac_, wsm_, inv_, ws_, wbs_, mch_, agt_, apr_, ofr_, ord_, clu_, pkg_, pkv_, inst_, pck_ or usr_ id). A secret\'s sec_ id also selects the ' +
        'events of its versions (`secret.version.*`, reads included), so "who read this secret" is one query; a secv_ id selects that version\'s events only',
    })),
    action: Type.Optional(StringEnum(AUDIT_ACTIONS, { description: 'only events of this action' })),
  },
  { additionalProperties: false },
);
export type ListAuditEventsQueryT = Static<typeof ListAuditEventsQuery>;
