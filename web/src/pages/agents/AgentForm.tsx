// The agent form, for a new agent and for an agent's settings: name, description, instructions,
// capabilities, the model (provider, model, allowed models, whose API key), budgets in dollars and
// what its changes need (tool_policy.writes). Problems the form can see (an amount that is not
// one, budgets without a model) show at their field before anything is sent; the API's field
// violations show at the same fields.
import { useState } from 'preact/hooks';
import { client, ok, type ApiError } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { CAPABILITIES, PERIOD_WORDS, PROVIDER_WORDS, WRITES_WORDS, type AgentFields, type BudgetPeriod, type Capability, type FormProblems, type Provider, type WritePolicy } from '../../lib/agents.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { CheckboxField, SelectField, TextArea, TextField } from '../../components/Form.tsx';

const SHOWN = [
  'body.name', 'body.description', 'body.instructions', 'body.capabilities', 'body.model_policy.provider', 'body.model_policy.default_model',
  'body.model_policy.allowed_models', 'body.model_policy.credential_secret_id', 'body.model_policy.max_turn_budget_cents',
  'body.model_policy.max_budget_cents', 'body.model_policy.budget_period', 'body.tool_policy.writes',
];

export function AgentForm(props: {
  initial: AgentFields;
  submitLabel: string;
  busy: boolean;
  error: ApiError | undefined;
  /** problems found before sending (agentBody), by field */
  problems: FormProblems;
  onSave: (fields: AgentFields) => void;
  onCancel?: () => void;
  disabled?: boolean;
}) {
  const [f, setF] = useState<AgentFields>(props.initial);
  const set = (change: Partial<AgentFields>) => setF({ ...f, ...change });
  const secrets = useApi(() => ok(client.GET('/v1/secrets', { params: { query: { limit: 100, state: 'active' } } })), []);
  const problem = (field: string) => props.problems.get(field) ?? props.error?.violations().get(field);
  const toggle = (c: Capability, on: boolean) => set({ capabilities: on ? CAPABILITIES.map(([k]) => k).filter((k) => k === c || f.capabilities.includes(k)) : f.capabilities.filter((k) => k !== c) });

  return (
    <form
      class="card form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        props.onSave(f);
      }}
    >
      <ErrorNotice error={props.error} shownFields={SHOWN} title="The agent was not saved." />
      <TextField label="Name" required maxLength={120} value={f.name} onValue={(name) => set({ name })} error={problem('body.name')} />
      <TextArea label="Description" rows={2} value={f.description} onValue={(description) => set({ description })} hint="Optional, at most 500 characters: what it is for." error={problem('body.description')} />
      <TextArea
        label="Instructions"
        required
        rows={6}
        value={f.instructions}
        onValue={(instructions) => set({ instructions })}
        hint="What the agent is told before every turn, e.g. who it helps and how it should answer."
        error={problem('body.instructions')}
      />
      <fieldset class="fieldset">
        <legend>Capabilities</legend>
        {CAPABILITIES.map(([c, label, hint]) => (
          <CheckboxField key={c} label={label} hint={hint} checked={f.capabilities.includes(c)} onValue={(on) => toggle(c, on)} />
        ))}
        {problem('body.capabilities') && <p class="field-error">{problem('body.capabilities')}</p>}
      </fieldset>
      <fieldset class="fieldset">
        <legend>Model</legend>
        <SelectField
          label="Provider"
          value={f.provider}
          onValue={(v) => set({ provider: v as Provider | '' })}
          options={[['', 'The service’s default'], ...(Object.entries(PROVIDER_WORDS) as [string, string][])]}
          hint="Local is built into the service: a rule-based planner, not a language model. It works offline, costs nothing and understands a fixed set of requests about this workspace (lists, counts, failed operations, URLs, creating a secret or snippet, deploying); anything else it turns into a search of the API."
          error={problem('body.model_policy.provider')}
        />
        <TextField label="Model" maxLength={120} value={f.model} onValue={(model) => set({ model })} hint="e.g. local-1, gpt-4o-mini, llama3.1, claude-sonnet-4-5. Empty: the service’s default model." error={problem('body.model_policy.default_model')} />
        <TextField label="Allowed models" value={f.allowedModels} onValue={(allowedModels) => set({ allowedModels })} hint="Optional, separated by commas; the model above must be one of them." error={problem('body.model_policy.allowed_models')} />
        <SelectField
          label="API key"
          value={f.credentialSecretId}
          onValue={(credentialSecretId) => set({ credentialSecretId })}
          options={[['', 'The service’s key'], ...(secrets.data?.data ?? []).map((s) => [s.id, `Secret ${s.name}`] as [string, string])]}
          hint="Bring your own key: a secret of this workspace whose value is the provider’s API key. It is read at each model call and never shown."
          error={problem('body.model_policy.credential_secret_id')}
        />
      </fieldset>
      <fieldset class="fieldset">
        <legend>Budgets</legend>
        <TextField label="Most one turn may cost (USD)" value={f.turnBudget} onValue={(turnBudget) => set({ turnBudget })} hint="Empty: no limit. Checked before every model call." error={problem('body.model_policy.max_turn_budget_cents')} />
        <TextField label="Most the agent may spend (USD)" value={f.agentBudget} onValue={(agentBudget) => set({ agentBudget })} hint="Empty: no limit. All its turns, in each period below." error={problem('body.model_policy.max_budget_cents')} />
        <SelectField label="Budget period" value={f.budgetPeriod} onValue={(v) => set({ budgetPeriod: v as BudgetPeriod })} options={Object.entries(PERIOD_WORDS) as [string, string][]} error={problem('body.model_policy.budget_period')} />
      </fieldset>
      <SelectField
        label="Changes"
        value={f.writes}
        onValue={(v) => set({ writes: v as WritePolicy })}
        options={Object.entries(WRITES_WORDS) as [string, string][]}
        hint="Code that changes something (creating a secret, deploying). The agent never does more than the person talking to it may."
        error={problem('body.tool_policy.writes')}
      />
      <div class="actions">
        <button class="primary" type="submit" disabled={props.busy || props.disabled}>
          {props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
