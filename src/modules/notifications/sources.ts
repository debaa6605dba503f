// The events that notify a person (API.md 8.2), each with its recipients, wording and event key in
// one place. Modules call these inside the transaction of the change they report.
//
// Titles and bodies name things as people know them (issue 34): an install by its package and
// cluster, a workspace, secret, machine or token by its name, an operation by what it did
// ("Deploying wiki 1.2.0 on dev failed"). Ids stay in resource_id and context, where links and
// scripts read them; a title or body never falls back to one. The callers pass the names of their
// own resources in (they hold the row already); a workspace's name is read here by primary key.
import type { Executor } from '../../db/database.js';
import type { OperationEnd } from '../../jobs/workflows.js';
import { isoFromSeconds } from '../../platform/clock.js';
import { workspaceNameOf } from './notifications.repo.js';
import { notify, supersede } from './notify.js';

/** "workspace Acme", or "your workspace" once it is gone (its deletion notifies too). */
async function workspaceLabel(tx: Executor, workspaceId: string): Promise<string> {
  const name = await workspaceNameOf(tx, workspaceId);
  return name === null ? 'your workspace' : `workspace ${name}`;
}

/** A machine as people know it: its name (callers pass its node's name when it has none), else what it is. */
export function machineLabel(m: { name: string | null; provider: string; instanceType: string | null }): string {
  return m.name !== null ? `machine ${m.name}` : `an unnamed ${m.provider}${m.instanceType ? ` ${m.instanceType}` : ''} machine`;
}

const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * Listens to every operation's end (WorkflowRegistry.onOperationEnd): one that a user started and
 * that failed notifies that user. Operations started by API tokens or OAuth clients notify nobody:
 * automation reads the operation.
 */
export async function operationFailed(tx: Executor, end: OperationEnd): Promise<void> {
  if (end.outcome !== 'FAILED' || end.requestedByUser === null) return;
  const what = await end.describe();
  await notify(tx, { users: [end.requestedByUser] }, {
    type: 'operation_failed', key: end.operationId, resourceType: 'operation', resourceId: end.operationId, workspaceId: end.workspaceId,
    title: `${what} failed`,
    body: `${what} failed: ${end.message ?? 'no message'}. Open the operation for its steps and the error of each.`,
    severity: 'critical',
    context: { operation_id: end.operationId, operation_type: end.type, owner_id: end.ownerId },
  });
}

/** An install went degraded (an update failed; the previous render still serves): the workspace's owners and admins. */
export function installDegraded(tx: Executor, e: {
  workspaceId: string; installId: string; operationId: string; packageName: string; clusterName: string; semver: string | null;
}): Promise<number> {
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'install_degraded', key: e.operationId, resourceType: 'install', resourceId: e.installId, workspaceId: e.workspaceId,
    title: `${e.packageName} on ${e.clusterName} is degraded`,
    body: `Updating ${e.packageName} on cluster ${e.clusterName}${e.semver ? ` to ${e.semver}` : ''} failed; its previous render keeps serving. ` +
      'Read the update\'s operation for the failing step, then update the install again.',
    severity: 'warning',
    context: { install_id: e.installId, operation_id: e.operationId },
  });
}

/** A subscription change took effect: the workspace's owners and admins. */
export async function subscriptionChangeApplied(tx: Executor, e: {
  workspaceId: string; changeRequestId: string; kind: string; previousTier: string; tier: string;
}): Promise<number> {
  const workspace = await workspaceLabel(tx, e.workspaceId);
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'subscription_change_applied', key: e.changeRequestId, resourceType: 'subscription_change_request', resourceId: e.changeRequestId,
    workspaceId: e.workspaceId,
    title: `Plan changed from ${e.previousTier} to ${e.tier}`,
    body: `The ${e.kind} of ${workspace} from ${e.previousTier} to ${e.tier} took effect; its quotas follow the ${e.tier} plan now.`,
    severity: 'info',
    context: { change_request_id: e.changeRequestId, kind: e.kind, previous_tier: e.previousTier, tier: e.tier },
  });
}

/** A renewal of the workspace's paid plan could not be charged (SVC_BILLING=payments): owners and admins, once per attempt. */
export function planSubscriptionPaymentFailed(tx: Executor, e: {
  workspaceId: string; key: string; tier: string; provider: string; attempt: number; nextAttemptAt: number | null;
}): Promise<number> {
  const next = e.nextAttemptAt === null
    ? 'The provider will not try again: the subscription ends and the workspace goes back to free.'
    : `The provider tries again at ${isoFromSeconds(e.nextAttemptAt)}; if it gives up, the workspace goes back to free.`;
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'subscription_payment_failed', key: e.key, resourceType: 'workspace', resourceId: e.workspaceId, workspaceId: e.workspaceId,
    title: `The ${e.tier} plan's renewal could not be charged`,
    body: `The payment for the next month of the ${e.tier} plan of workspace ${e.workspaceId} failed at ${e.provider} (attempt ${e.attempt}). ${next} ` +
      'Update the payment method at the provider to keep the plan.',
    severity: 'critical',
    context: { tier: e.tier, provider: e.provider, attempt: String(e.attempt), ...(e.nextAttemptAt === null ? {} : { next_attempt_at: isoFromSeconds(e.nextAttemptAt) }) },
  });
}

/** The payment provider keeps refusing a change of the workspace's plan subscription (it may keep charging): owners and admins, once. */
export function planSubscriptionSyncFailing(tx: Executor, e: { workspaceId: string; key: string; provider: string; ending: boolean; error: string }): Promise<number> {
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'subscription_provider_failing', key: e.key, resourceType: 'workspace', resourceId: e.workspaceId, workspaceId: e.workspaceId,
    title: e.ending ? `The plan's subscription at ${e.provider} could not be ended yet` : `The plan's subscription at ${e.provider} could not be changed yet`,
    body: `The service keeps asking ${e.provider} to ${e.ending ? 'end' : 'change'} the subscription that pays for workspace ${e.workspaceId}'s plan and keeps ` +
      `being refused (${e.error.slice(0, 300)}); it tries again with growing delays. Until it succeeds the provider may charge as before; ` +
      'the operator can end the subscription in the provider\'s dashboard.',
    severity: 'critical',
    context: { provider: e.provider, ending: String(e.ending) },
  });
}

/** A scheduled downgrade or cancel found usage above the new plan's limits at the period end: owners and admins. */
export async function subscriptionChangeRejected(tx: Executor, e: {
  workspaceId: string; changeRequestId: string; kind: string; tier: string; requestedTier: string; metric: string; limit: number; usage: number;
}): Promise<number> {
  const workspace = await workspaceLabel(tx, e.workspaceId);
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'subscription_change_rejected', key: e.changeRequestId, resourceType: 'subscription_change_request', resourceId: e.changeRequestId,
    workspaceId: e.workspaceId,
    title: `The ${e.kind} to ${e.requestedTier} was not applied`,
    body: `${upperFirst(workspace)} uses ${e.usage} of ${e.metric}, above the ${e.limit} the ${e.requestedTier} plan allows, so it stays on ${e.tier}. ` +
      'Reduce the usage and request the change again.',
    severity: 'critical',
    context: { change_request_id: e.changeRequestId, kind: e.kind, requested_tier: e.requestedTier, metric: e.metric, limit: String(e.limit), usage: String(e.usage) },
  });
}

/**
 * A quota reached a threshold (80 or 100 %): the workspace's owners and admins, or the user for a
 * per-user metric. `window` names the period the event belongs to (the UTC day): one notification
 * per metric, threshold and day, however often usage goes up and down around the threshold.
 */
export async function quotaThresholdReached(tx: Executor, e: {
  to: { adminsOf: string } | { users: string[] }; workspaceId: string | null; subjectId: string; metric: string; displayName: string;
  limit: number; usage: number; percent: number; tier: string; window: number;
}): Promise<number> {
  const full = e.percent >= 100;
  const who = e.workspaceId ? `${upperFirst(await workspaceLabel(tx, e.workspaceId))} uses` : 'You use';
  return notify(tx, e.to, {
    type: 'quota_threshold_reached', key: `${e.subjectId}:${e.metric}:${e.percent}:${e.window}`,
    resourceType: e.workspaceId ? 'workspace' : 'user', resourceId: e.subjectId, workspaceId: e.workspaceId,
    title: `${e.displayName} at ${e.percent} % of the ${e.tier} plan`,
    body: `${who} ${e.usage} of ${e.limit} (${e.metric}). ` +
      (full ? 'Further requests are refused until usage goes down or the plan is upgraded.' : 'Requests beyond the limit will be refused.'),
    severity: full ? 'critical' : 'warning',
    context: { metric: e.metric, limit: String(e.limit), usage: String(e.usage), percent: String(e.percent), tier: e.tier },
  });
}

/** An API token expires within 7 days: the owners and admins of its workspace. */
export function apiTokenExpiring(tx: Executor, e: { workspaceId: string; workspaceName: string; tokenId: string; name: string; expiresAt: number }): Promise<number> {
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'api_token_expiring', key: `${e.tokenId}:${e.expiresAt}`, resourceType: 'api_token', resourceId: e.tokenId, workspaceId: e.workspaceId,
    title: `API token "${e.name}" expires soon`,
    body: `The API token "${e.name}" of workspace ${e.workspaceName} stops working at ${isoFromSeconds(e.expiresAt)}. Create a new token and replace it where it is used.`,
    severity: 'warning',
    context: { api_token_id: e.tokenId, name: e.name, expires_at: String(e.expiresAt) },
  });
}

/**
 * A deleted secret will be destroyed at `purgeAt`: the owners and admins of its workspace. For the
 * secrets module (DELETE /v1/secrets/{id} without force), inside the transaction that soft-deletes
 * it. The event is that deletion, named by the revision it gave the secret: deleting it again after
 * an undelete is a new event, even within the same second.
 */
export function secretPurgeScheduled(tx: Executor, e: { workspaceId: string; secretId: string; name: string; purgeAt: number; revision: number }): Promise<number> {
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'secret_purge_scheduled', key: `${e.secretId}:${e.revision}`, resourceType: 'secret', resourceId: e.secretId, workspaceId: e.workspaceId,
    title: `Secret "${e.name}" will be destroyed`,
    body: `The secret "${e.name}" was deleted; every version of it is destroyed at ${isoFromSeconds(e.purgeAt)}. ` +
      'Until then, undeleting it (on its page, or POST /v1/secrets/{id}:undelete) restores it.',
    severity: 'warning',
    context: { secret_id: e.secretId, name: e.name, purge_at: String(e.purgeAt) },
  });
}

/**
 * The purge a secret_purge_scheduled notification announced no longer lies ahead: the secret was
 * restored (`secret.undelete`), deleted for good (`secret.delete`) or purged (`secret.purge`).
 * Its notifications are superseded (marked read, context.superseded_by names which), in the
 * transaction of that change; no new notification is sent.
 */
export function secretPurgeSuperseded(tx: Executor, e: { secretId: string; by: 'secret.undelete' | 'secret.delete' | 'secret.purge' }): Promise<void> {
  return supersede(tx, { type: 'secret_purge_scheduled', resourceId: e.secretId, by: e.by });
}

/** A machine's agent stopped heartbeating: the workspace's owners and admins, once per silence. */
export function machineUnreachable(tx: Executor, e: {
  workspaceId: string; machineId: string; name: string | null; provider: string; instanceType: string | null; clusterName: string; lastHeartbeatAt: number | null;
}): Promise<number> {
  const label = machineLabel(e);
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'machine_unreachable', key: `${e.machineId}:${e.lastHeartbeatAt ?? 0}`, resourceType: 'machine', resourceId: e.machineId,
    workspaceId: e.workspaceId,
    title: `${upperFirst(label)} on ${e.clusterName} is unreachable`,
    body: `The agent of ${label} (cluster ${e.clusterName}) missed 3 heartbeats` +
      (e.lastHeartbeatAt === null ? '' : ` (last one at ${isoFromSeconds(e.lastHeartbeatAt)})`) +
      '. Check that the server runs and can reach the service; the machine becomes ACTIVE again with its next heartbeat.',
    severity: 'warning',
    context: { machine_id: e.machineId, last_heartbeat_at: String(e.lastHeartbeatAt ?? '') },
  });
}

/** The machine heartbeats again or is gone: its unreachable notices no longer hold. */
export function machineReachable(tx: Executor, machineId: string, by: string): Promise<void> {
  return supersede(tx, { type: 'machine_unreachable', resourceId: machineId, by });
}

/** A machine will be deleted at its expires_at: owners and admins, `notice` (72h or 24h) before, once each. */
export function machineExpiry(tx: Executor, e: {
  workspaceId: string; machineId: string; name: string | null; provider: string; instanceType: string | null; clusterName: string; expiresAt: number; notice: '72h' | '24h';
}): Promise<number> {
  const label = machineLabel(e);
  return notify(tx, { adminsOf: e.workspaceId }, {
    type: 'machine_expiry', key: `${e.machineId}:${e.notice}:${e.expiresAt}`, resourceType: 'machine', resourceId: e.machineId,
    workspaceId: e.workspaceId,
    title: `${upperFirst(label)} on ${e.clusterName} expires ${e.notice === '72h' ? 'within 3 days' : 'within 24 hours'}`,
    body: `${upperFirst(label)} (cluster ${e.clusterName}) will be deleted at ${isoFromSeconds(e.expiresAt)}. ` +
      'To keep it, change or clear its expiry on its page (its expires_at, PATCH /v1/machines/{id}).',
    severity: e.notice === '24h' ? 'critical' : 'warning',
    context: { machine_id: e.machineId, expires_at: String(e.expiresAt), notice: e.notice },
  });
}

/** The machine is gone: what its notices announced no longer holds. */
export async function supersedeMachineNotices(tx: Executor, machineId: string, by: string): Promise<void> {
  await supersede(tx, { type: 'machine_unreachable', resourceId: machineId, by });
  await supersede(tx, { type: 'machine_expiry', resourceId: machineId, by });
}

/**
 * An agent turn waits on a person: its creator for a question or proposed code (`users`), or the
 * workspace's owners and admins for a member's turn that needs their approval to start.
 */
export function agentTurnWaiting(tx: Executor, e: {
  workspaceId: string; turnId: string; sessionId: string; waitingFor: 'input' | 'approval'; stepKey: string; what: string; to: { users: string[] } | { adminsOf: string };
}): Promise<number> {
  return notify(tx, e.to, {
    type: 'agent_turn_waiting', key: `${e.turnId}:${e.stepKey}`, resourceType: 'agent_turn', resourceId: e.turnId, workspaceId: e.workspaceId,
    title: e.waitingFor === 'input' ? 'An agent has a question for you' : 'An agent turn waits for approval',
    body: `${e.what.slice(0, 1500)} Open the session to ${e.waitingFor === 'input' ? 'answer' : 'approve or reject'}.`,
    severity: 'info',
    context: { turn_id: e.turnId, session_id: e.sessionId, waiting_for: e.waitingFor },
  });
}

/** The turn no longer waits (answered, resolved, cancelled or ended): its notices no longer hold. */
export function agentTurnAnswered(tx: Executor, turnId: string, by: string): Promise<void> {
  return supersede(tx, { type: 'agent_turn_waiting', resourceId: turnId, by });
}

/** An order of an offer was paid (API.md 8.7): the seller's owners and admins. */
export function orderPaid(tx: Executor, e: { sellerWorkspaceId: string; orderId: string; offerTitle: string; amount: string; customerEmail: string | null }): Promise<number> {
  return notify(tx, { adminsOf: e.sellerWorkspaceId }, {
    type: 'order_paid', key: e.orderId, resourceType: 'order', resourceId: e.orderId, workspaceId: e.sellerWorkspaceId,
    title: `New order: ${e.offerTitle}`,
    body: `${e.customerEmail ?? 'A customer'} paid ${e.amount} for "${e.offerTitle}"; its install is being delivered.`,
    severity: 'info',
    context: { order_id: e.orderId, amount: e.amount },
  });
}

/** The install an order delivers failed: the seller's owners and admins. */
export function orderDeliveryFailed(tx: Executor, e: { sellerWorkspaceId: string; orderId: string; offerTitle: string; customerEmail: string | null; message: string }): Promise<number> {
  return notify(tx, { adminsOf: e.sellerWorkspaceId }, {
    type: 'order_delivery_failed', key: e.orderId, resourceType: 'order', resourceId: e.orderId, workspaceId: e.sellerWorkspaceId,
    title: `Delivering "${e.offerTitle}" failed`,
    body: `The install of "${e.offerTitle}" for ${e.customerEmail ?? 'a customer'} failed: ${e.message}. The customer's payment stands; read the order and its install operation.`,
    severity: 'critical',
    context: { order_id: e.orderId },
  });
}

/** The install an order delivered runs: the customer. */
export function orderDelivered(tx: Executor, e: { customerUserId: string; customerWorkspaceId: string; orderId: string; installId: string; offerTitle: string; url: string | null }): Promise<number> {
  return notify(tx, { users: [e.customerUserId] }, {
    type: 'order_delivered', key: e.orderId, resourceType: 'order', resourceId: e.orderId, workspaceId: e.customerWorkspaceId,
    title: `"${e.offerTitle}" is ready`,
    body: `Your order of "${e.offerTitle}" is delivered: ${e.url ? `it answers at ${e.url}` : 'it runs'}.`,
    severity: 'info',
    context: { order_id: e.orderId, install_id: e.installId, ...(e.url ? { url: e.url } : {}) },
  });
}

/** A draft ends `timeout` soon unless finished: its customer, once. */
export function orderDraftExpiring(tx: Executor, e: { customerUserId: string; workspaceId: string | null; draftId: string; offerTitle: string; expiresAt: number }): Promise<number> {
  return notify(tx, { users: [e.customerUserId] }, {
    type: 'order_draft_expiring', key: e.draftId, resourceType: 'order_draft', resourceId: e.draftId, workspaceId: e.workspaceId,
    title: `Your order of "${e.offerTitle}" expires soon`,
    body: `Your order of "${e.offerTitle}" ends at ${isoFromSeconds(e.expiresAt)} unless it is finished before; open it to go on.`,
    severity: 'warning',
    context: { order_draft_id: e.draftId, expires_at: String(e.expiresAt) },
  });
}

/** A person's password was changed (their other sessions were signed out): that person, as a security notice. */
export function passwordChanged(tx: Executor, e: { userId: string; changedAt: number; revokedSessions: number }): Promise<number> {
  return notify(tx, { users: [e.userId] }, {
    type: 'password_changed', key: `${e.userId}:${e.changedAt}`, resourceType: 'user', resourceId: e.userId, workspaceId: null,
    title: 'Your password was changed',
    body: `Your password was changed${e.revokedSessions ? `, and ${e.revokedSessions} other session${e.revokedSessions === 1 ? ' was' : 's were'} signed out` : ''}. ` +
      'If this was not you, reset your password now and tell the operator of this service.',
    severity: 'warning',
    context: { revoked_sessions: String(e.revokedSessions) },
  });
}

/** Two-factor sign-in was turned on or off for a person's account: that person, as a security notice. */
export function twoFactorChanged(tx: Executor, e: { userId: string; enabled: boolean; at: number }): Promise<number> {
  return notify(tx, { users: [e.userId] }, {
    type: e.enabled ? 'two_factor_enabled' : 'two_factor_disabled', key: `${e.userId}:${e.at}:${e.enabled ? 'on' : 'off'}`,
    resourceType: 'user', resourceId: e.userId, workspaceId: null,
    title: e.enabled ? 'Two-factor sign-in is on' : 'Two-factor sign-in was turned off',
    body: e.enabled
      ? 'Signing in to your account now asks for a code from your authenticator app (or a recovery code) after the password. Keep your recovery codes somewhere safe.'
      : 'Signing in to your account asks for the password only now. If this was not you, change your password, set up two factors again and tell the operator of this service.',
    severity: e.enabled ? 'info' : 'warning',
    context: {},
  });
}
