// The admission of a turn at submit (API.md 8.6), in the submitting transaction, in this order:
// the session and the agent must be live, the runtime asked for must exist, the agent's model must
// be allowed, its provider must have a key, its budget and the workspace's spend quota must not be
// used up, and the daily turn quota is counted. A member's turn on an agent whose writes need no
// approval waits for an owner's or admin's approval first: the member delegates writes to a model
// nobody watches, which their admins decide on. Every refusal is a recorded decision on the turn,
// not an HTTP error: the turn exists, FAILED, with admission_error saying why.
import type { Executor } from '../../db/database.js';
import type { AgentsConfig } from '../../config-agents.js';
import { roleAtLeast, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { agentSpendSince, type AgentRow, type SessionRow } from './agents.repo.js';
import { periodStart } from './agent-usage.js';
import type { AdmissionErrorCode, WritePolicy } from './agents.schemas.js';
import type { StoredModelPolicy } from './agents.service.js';
import { keyAvailability } from './provider-keys.js';

export interface Admission {
  decision: 'ALLOWED' | 'DENIED' | 'APPROVAL_REQUIRED';
  reason: string;
  error: { code: AdmissionErrorCode; message: string } | null;
}

const deny = (code: AdmissionErrorCode, message: string): Admission => ({ decision: 'DENIED', reason: message, error: { code, message } });

export interface AdmissionInput {
  scope: WorkspaceScope;
  session: SessionRow;
  agent: AgentRow;
  policy: StoredModelPolicy;
  writes: WritePolicy;
  hint: 'AUTO' | 'CODE_MODE' | 'RETAINED_RUNTIME';
  quotas: Pick<QuotaService, 'enforce' | 'check'>;
  config: AgentsConfig;
}

function quotaRefusal(err: unknown): string | null {
  return err instanceof ApiError && err.options.reason === 'QUOTA_EXCEEDED' ? err.message : null;
}

export async function admissionOf(tx: Executor, input: AdmissionInput): Promise<Admission> {
  const { scope, session, agent, policy } = input;
  if (session.archived === 1) return deny('SESSION_ARCHIVED', `session ${session.id} is archived; restore it (:undelete) or start a new one`);
  if (agent.state === 'ARCHIVED') return deny('AGENT_ARCHIVED', `agent ${agent.id} is archived; an admin can restore it (:undelete)`);
  if (input.hint === 'RETAINED_RUNTIME') {
    return deny('RUNTIME_UNAVAILABLE', 'RETAINED_RUNTIME was asked for, but this service has no retained runtime configured; send AUTO or CODE_MODE (the sandbox)');
  }
  if (policy.allowed_models.length > 0 && !policy.allowed_models.includes(policy.default_model)) {
    return deny('MODEL_NOT_ALLOWED', `the agent's model ${policy.default_model} is not among its allowed_models`);
  }
  const key = await keyAvailability(tx, scope.workspaceId, policy, input.config);
  if (!key.ok) return deny('CREDENTIAL_UNAVAILABLE', key.message);
  if (policy.max_turn_budget_cents === 0) return deny('BUDGET_EXHAUSTED', 'the agent\'s max_turn_budget_cents is 0: no model call fits');
  if (policy.max_budget_cents !== null) {
    const since = periodStart(policy.budget_period, clock.now());
    const spent = await agentSpendSince(tx, agent.id, since);
    if (spent >= policy.max_budget_cents) {
      return deny('BUDGET_EXHAUSTED', `the agent spent ${spent} of its ${policy.max_budget_cents} cents this ${policy.budget_period.toLowerCase()}`);
    }
  }
  try {
    await input.quotas.check(tx, scope.workspaceId, 'agents/cost_cents');
    await input.quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'agents/turns');
  } catch (err) {
    const message = quotaRefusal(err);
    if (message === null) throw err;
    return deny('QUOTA_EXCEEDED', message);
  }
  if (input.writes === 'ALLOWED' && !roleAtLeast(scope.role, 'admin')) {
    return {
      decision: 'APPROVAL_REQUIRED',
      reason: 'the agent writes without asking (tool_policy.writes ALLOWED) and the turn is a member\'s: an owner or admin approves it first',
      error: null,
    };
  }
  return { decision: 'ALLOWED', reason: 'code mode: the agent acts through the sandbox with the rights of the turn\'s creator', error: null };
}
