// How agents and their sessions read on a page and what their forms send (API.md 8.6): the words
// for providers, write policies and capabilities, usage and money, and the agent form's fields as
// the body of POST /v1/agents or the changes of a PATCH. Free of the DOM for unit tests
// (test/web/agents-lib.test.ts).
import type { Schemas } from './api.ts';

export type Agent = Schemas['Agent'];
export type AgentSession = Schemas['AgentSession'];
export type UsageSummary = Schemas['UsageSummary'];
type ModelPolicy = Schemas['ModelPolicy'];
export type Capability = Agent['capabilities'][number];
export type WritePolicy = Agent['tool_policy']['writes'];
export type Provider = Agent['model_policy']['provider'];
export type BudgetPeriod = Agent['model_policy']['budget_period'];

export const CAPABILITIES: [Capability, string, string][] = [
  ['CHAT', 'Chat', 'Answers people in sessions'],
  ['CODING', 'Coding', 'Writes and changes snippets and packages'],
  ['AMBIENT', 'Ambient', 'Acts on events without being asked (not triggered yet)'],
];

export const WRITES_WORDS: Record<WritePolicy, string> = {
  APPROVAL_REQUIRED: 'Asks a person to approve each change',
  ALLOWED: 'Makes changes without asking',
  DENIED: 'Never makes changes',
};

export const PROVIDER_WORDS: Record<Provider, string> = {
  local: 'Local: a rule-based offline planner (not a language model; free)',
  openai: 'OpenAI-compatible (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter)',
  anthropic: 'Anthropic',
};

export const PERIOD_WORDS: Record<BudgetPeriod, string> = { DAY: 'Per day', WEEK: 'Per week', MONTH: 'Per month' };

/** Cents as dollars: 2 -> "$0.02", 123456 -> "$1,234.56". */
export function formatCents(cents: number): string {
  const whole = Math.floor(cents / 100).toLocaleString('en-US');
  return `$${whole}.${String(cents % 100).padStart(2, '0')}`;
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** A usage summary in a line's parts: tokens, cost and API calls always; sandbox CPU when used. */
export function usageWords(u: UsageSummary): string[] {
  const words = [plural(u.provider_token_count, 'token', 'tokens'), formatCents(u.provider_cost_cents), plural(u.api_call_count, 'API call', 'API calls')];
  if (u.runtime_compute_seconds > 0) words.push(`${u.runtime_compute_seconds} s of sandbox CPU`);
  return words;
}

/** A budget typed in dollars ("5", "0.50", "$12") as cents; empty is no budget (null). */
export function parseDollars(text: string): { ok: true; value: number | null } | { ok: false; error: string } {
  const t = text.trim().replace(/^\$/, '').replace(/,/g, '');
  if (t === '') return { ok: true, value: null };
  const m = /^([0-9]{1,7})(?:\.([0-9]{0,2}))?$/.exec(t);
  if (!m) return { ok: false, error: 'Write an amount in dollars with at most two decimals, e.g. 5 or 0.50.' };
  return { ok: true, value: Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0')) };
}

/** Cents as the text of a dollars field: 500 -> "5.00", null -> "". */
export function dollarsText(cents: number | null): string {
  return cents === null ? '' : `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
}

/** What the agent form edits, as text where the person types it. */
export interface AgentFields {
  name: string;
  description: string;
  instructions: string;
  capabilities: Capability[];
  /** '' leaves the choice to the service (its configured provider) */
  provider: Provider | '';
  model: string;
  allowedModels: string;
  credentialSecretId: string;
  turnBudget: string;
  agentBudget: string;
  budgetPeriod: BudgetPeriod;
  writes: WritePolicy;
}

export const NEW_AGENT: AgentFields = {
  name: '', description: '', instructions: '', capabilities: ['CHAT'], provider: '', model: '', allowedModels: '', credentialSecretId: '',
  turnBudget: '', agentBudget: '', budgetPeriod: 'MONTH', writes: 'APPROVAL_REQUIRED',
};

export function fieldsOfAgent(a: Agent): AgentFields {
  const p = a.model_policy;
  return {
    name: a.name, description: a.description ?? '', instructions: a.instructions, capabilities: [...a.capabilities], provider: p.provider, model: p.default_model,
    allowedModels: p.allowed_models.join(', '), credentialSecretId: p.credential_secret_id ?? '', turnBudget: dollarsText(p.max_turn_budget_cents),
    agentBudget: dollarsText(p.max_budget_cents), budgetPeriod: p.budget_period, writes: a.tool_policy.writes,
  };
}

export interface AgentBody {
  name: string;
  description?: string;
  instructions: string;
  capabilities: Capability[];
  model_policy?: ModelPolicy;
  tool_policy?: { writes: WritePolicy };
}

/** Problems the form finds before anything is sent, by the API's field names (`body.model_policy.default_model`). */
export type FormProblems = Map<string, string>;

/**
 * The form as a create body. model_policy is sent only when the person set any of it; then it
 * needs a model (the API's default_model is required inside it), which the form says at the field.
 */
export function agentBody(f: AgentFields): { ok: true; body: AgentBody } | { ok: false; problems: FormProblems } {
  const problems: FormProblems = new Map();
  const turn = parseDollars(f.turnBudget);
  const total = parseDollars(f.agentBudget);
  if (!turn.ok) problems.set('body.model_policy.max_turn_budget_cents', turn.error);
  if (!total.ok) problems.set('body.model_policy.max_budget_cents', total.error);
  const allowed = f.allowedModels.split(/[\s,]+/).filter(Boolean);
  const policySet = f.provider !== '' || f.model.trim() !== '' || allowed.length > 0 || f.credentialSecretId !== '' || f.turnBudget.trim() !== '' || f.agentBudget.trim() !== '';
  if (policySet && f.model.trim() === '') problems.set('body.model_policy.default_model', 'Name the model when you choose a provider, allowed models, a key or budgets.');
  if (f.capabilities.length === 0) problems.set('body.capabilities', 'Choose at least one capability.');
  if (problems.size > 0 || !turn.ok || !total.ok) return { ok: false, problems };
  const body: AgentBody = { name: f.name.trim(), instructions: f.instructions, capabilities: f.capabilities, tool_policy: { writes: f.writes } };
  if (f.description.trim()) body.description = f.description.trim();
  if (policySet) {
    body.model_policy = {
      default_model: f.model.trim(), allowed_models: allowed, credential_secret_id: f.credentialSecretId || null, max_turn_budget_cents: turn.value,
      max_budget_cents: total.value, budget_period: f.budgetPeriod, ...(f.provider ? { provider: f.provider } : {}),
    };
  }
  return { ok: true, body };
}

/** A PATCH body: any of the create body's members; a description of null clears it. */
export type AgentPatch = Partial<Omit<AgentBody, 'description'>> & { description?: string | null };

/** The PATCH of an edit: only what differs from the agent as it was (model_policy and tool_policy go whole). */
export function agentChanges(base: Agent, f: AgentFields): { ok: true; body: AgentPatch } | { ok: false; problems: FormProblems } {
  const built = agentBody(f);
  if (!built.ok) return built;
  const b = built.body;
  const out: AgentPatch = {};
  if (b.name !== base.name) out.name = b.name;
  if ((b.description ?? null) !== base.description) out.description = b.description ?? null;
  if (b.instructions !== base.instructions) out.instructions = b.instructions;
  if (JSON.stringify(b.capabilities) !== JSON.stringify(base.capabilities)) out.capabilities = b.capabilities;
  if (b.tool_policy!.writes !== base.tool_policy.writes) out.tool_policy = b.tool_policy!;
  const policy = b.model_policy;
  const was = base.model_policy;
  if (policy) {
    const same =
      (policy.provider ?? was.provider) === was.provider && policy.default_model === was.default_model && JSON.stringify(policy.allowed_models) === JSON.stringify(was.allowed_models) &&
      policy.credential_secret_id === was.credential_secret_id && policy.max_turn_budget_cents === was.max_turn_budget_cents &&
      policy.max_budget_cents === was.max_budget_cents && policy.budget_period === was.budget_period;
    if (!same) out.model_policy = policy;
  }
  return { ok: true, body: out };
}

/** A session's title from the person's first message: its first line, at most 80 characters. */
export function titleFrom(message: string): string {
  const line = message.split('\n').map((l) => l.trim()).find(Boolean) ?? '';
  const words = line.replace(/\s+/g, ' ');
  return words.length <= 80 ? words : `${words.slice(0, 79).trimEnd()}…`;
}

/** What a session is called in lists and its page. */
export function sessionTitle(s: Pick<AgentSession, 'title' | 'id'>): string {
  return s.title ?? `Chat ${s.id.slice(-6)}`;
}

/** A turn or session state as a person reads it (who is waited on, in words). */
export const STATE_WORDS: Record<string, string> = {
  QUEUED: 'Queued',
  RUNNING: 'Working',
  WAITING_FOR_INPUT: 'Waiting for an answer',
  WAITING_FOR_PERMISSION: 'Waiting for approval',
  COMPLETED: 'Completed',
  FAILED: 'Failed',
  CANCELLED: 'Cancelled',
  ACTIVE: 'Active',
  ARCHIVED: 'Archived',
};

/** Why nothing new can be sent while a turn is under way, as the composer says it. */
export function busyWords(state: string, agentName: string): string {
  if (state === 'WAITING_FOR_INPUT') return `${agentName} asked you something above: answer it there to go on.`;
  if (state === 'WAITING_FOR_PERMISSION') return `${agentName} waits for a decision above before it goes on.`;
  if (state === 'QUEUED') return `Your message waits for ${agentName}; you can send the next one when it is answered.`;
  return `${agentName} is working; you can send your next message when it is done.`;
}
