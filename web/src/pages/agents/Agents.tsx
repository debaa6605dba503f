// Agents (API.md 8.6): the workspace's list (filter: state) and creating one (owners and admins;
// members talk to agents but do not manage them).
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { agentBody, formatCents, NEW_AGENT, WRITES_WORDS, type Agent, type AgentFields, type FormProblems } from '../../lib/agents.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { SelectField, useAction } from '../../components/Form.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { AgentForm } from './AgentForm.tsx';

const STATES: [string, string][] = [
  ['', 'Enabled and archived'],
  ['ENABLED', 'Enabled'],
  ['ARCHIVED', 'Archived'],
];

export function AgentList(_props: { path?: string }) {
  const [state, setState] = useState('');
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  return (
    <Page
      title="Agents"
      subtitle="Assistants that answer questions about the workspace and act in it through code you can read, as the person talking to them."
      actions={admin ? <a class="button primary" href="/agents/new">New agent</a> : <span class="muted small">Creating agents needs the admin or owner role.</span>}
    >
      <div class="filters">
        <SelectField label="State" value={state} onValue={setState} options={STATES} />
      </div>
      <ListView<Agent>
        label="Agents"
        deps={[state]}
        load={(cursor, limit) => ok(client.GET('/v1/agents', { params: { query: { cursor, limit, state: (state || undefined) as Agent['state'] | undefined } } }))}
        rowKey={(a) => a.id}
        columns={[
          { label: 'Name', cell: (a) => <a href={`/agents/${a.id}`}>{a.name}</a> },
          { label: 'Description', cell: (a) => a.description ?? <span class="muted">—</span> },
          { label: 'Model', cell: (a) => `${a.model_policy.default_model} (${a.model_policy.provider})` },
          { label: 'Changes', cell: (a) => WRITES_WORDS[a.tool_policy.writes] },
          { label: 'State', cell: (a) => <StateBadge state={a.state} /> },
          { label: 'Spent', cell: (a) => formatCents(a.usage_summary.provider_cost_cents) },
        ]}
        empty={
          state ? (
            <p>No agent matches this filter.</p>
          ) : (
            <p>
              No agents yet.{' '}
              {admin && (
                <>
                  <a href="/agents/new">Create one</a> to ask questions about the workspace in plain words.
                </>
              )}
            </p>
          )
        }
      />
    </Page>
  );
}

export function NewAgent(_props: { path?: string }) {
  const action = useAction();
  const [problems, setProblems] = useState<FormProblems>(new Map());
  const { route } = useLocation();

  async function save(fields: AgentFields) {
    const built = agentBody(fields);
    setProblems(built.ok ? new Map() : built.problems);
    if (!built.ok) return;
    const created = await action.run(() => ok(client.POST('/v1/agents', { params: { header: { 'idempotency-key': idempotencyKey() } }, body: built.body })));
    if (created) route(`/agents/${created.id}`);
  }

  return (
    <Page title="New agent" breadcrumb={['Agents', '/agents']}>
      <NeedsRole need="admin" what="create agents">
        <AgentForm initial={NEW_AGENT} submitLabel="Create agent" busy={action.busy} error={action.error} problems={problems} onSave={(f) => void save(f)} />
      </NeedsRole>
    </Page>
  );
}
