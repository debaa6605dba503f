// An agent's page (its html_url, /agents/{id}): "New chat", what it used, its settings (owners and
// admins edit them with the etag read when editing began: a 409 shows the current agent and offers
// to apply the change again), archive and restore (the same), and its chats.
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { agentChanges, fieldsOfAgent, PERIOD_WORDS, PROVIDER_WORDS, usageWords, WRITES_WORDS, formatCents, type Agent, type AgentFields, type AgentPatch, type FormProblems } from '../../lib/agents.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { AgentForm } from './AgentForm.tsx';
import { SessionsTable } from './Sessions.tsx';

type Write = { kind: 'patch'; body: AgentPatch } | { kind: 'archive' | 'restore' };

function send(what: Write, a: Agent): Promise<Agent> {
  const params = { path: { id: a.id }, header: { 'if-match': a.etag } };
  if (what.kind === 'patch') return ok(client.PATCH('/v1/agents/{id}', { params, body: what.body }));
  if (what.kind === 'archive') return ok(client.DELETE('/v1/agents/{id}', { params }));
  return ok(client.POST('/v1/agents/{id}:undelete', { params }));
}

const budget = (cents: number | null) => (cents === null ? 'No limit' : formatCents(cents));

export function AgentPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const agent = useRecord(id, () => ok(client.GET('/v1/agents/{id}', { params: { path: { id } } })));
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const write = useAction();
  // The agent as it was when editing began: its etag goes with the change.
  const [editing, setEditing] = useState<Agent | null>(null);
  const [problems, setProblems] = useState<FormProblems>(new Map());
  const [pending, setPending] = useState<Write | null>(null);
  const [confirming, setConfirming] = useState(false);

  if (agent.error) {
    return (
      <Page title="Agent" breadcrumb={['Agents', '/agents']}>
        <ErrorNotice error={agent.error} title="The agent could not be loaded." />
      </Page>
    );
  }
  const a = agent.data;
  if (!a) return <p aria-busy="true">Loading…</p>;

  async function act(what: Write, base: Agent) {
    setConfirming(false);
    setPending(what);
    const next = await write.run(() => send(what, base));
    if (!next) return;
    agent.set(next);
    setPending(null);
    setEditing(null);
  }

  function save(fields: AgentFields) {
    const changes = agentChanges(editing!, fields);
    setProblems(changes.ok ? new Map() : changes.problems);
    if (!changes.ok) return;
    if (Object.keys(changes.body).length === 0) return setEditing(null);
    void act({ kind: 'patch', body: changes.body }, editing!);
  }

  const archived = a.state === 'ARCHIVED';
  const p = a.model_policy;
  return (
    <Page
      title={a.name}
      subtitle={<>Agent · <StateBadge state={a.state} /></>}
      breadcrumb={['Agents', '/agents']}
      actions={
        <>
          {!archived && (
            <a class="button primary" href={`/agents/${a.id}/chat`}>
              New chat
            </a>
          )}
          {admin && (
            <button type="button" class={archived ? undefined : 'danger'} disabled={write.busy || editing !== null} onClick={() => (archived ? void act({ kind: 'restore' }, a) : setConfirming(true))}>
              {archived ? 'Restore' : 'Archive'}
            </button>
          )}
        </>
      }
    >
      <Conflict error={write.error} what="The agent" onReload={() => agent.reload()} onReapply={() => pending && void act(pending, agent.data!)} busy={write.busy} />
      {!isConflict(write.error) && !editing && <ErrorNotice error={write.error} />}
      {archived && (
        <p class="notice notice-warn" role="status">
          Archived <Time at={a.archived_at} />: it takes no new turns until it is restored. Its chats and usage stay readable.
        </p>
      )}
      {a.description && <p>{a.description}</p>}
      <Section title="Usage">
        <p>{usageWords(a.usage_summary).join(' · ')}</p>
        <p class="muted small">All its turns. Budget: {budget(p.max_turn_budget_cents)} a turn; {budget(p.max_budget_cents)} {PERIOD_WORDS[p.budget_period].toLowerCase()}.</p>
      </Section>
      <Section title="Chats">
        <SessionsTable agentId={a.id} onAgentPage empty={<p>No chats with {a.name} yet.{!archived && <> <a href={`/agents/${a.id}/chat`}>Start one</a>.</>}</p>} />
      </Section>
      <Section
        title="Settings"
        actions={
          admin &&
          !editing && (
            <button type="button" onClick={() => setEditing(a)}>
              Edit settings
            </button>
          )
        }
      >
        {editing ? (
          <AgentForm
            initial={fieldsOfAgent(editing)}
            submitLabel="Save changes"
            busy={write.busy}
            error={isConflict(write.error) ? undefined : write.error}
            problems={problems}
            onSave={save}
            onCancel={() => setEditing(null)}
          />
        ) : (
          <>
            <Fields
              rows={[
                ['Instructions', <pre class="prose">{a.instructions}</pre>],
                ['Capabilities', a.capabilities.map((c) => c.charAt(0) + c.slice(1).toLowerCase()).join(', ')],
                ['Provider', PROVIDER_WORDS[p.provider]],
                ['Model', <Code>{p.default_model}</Code>],
                ['Allowed models', p.allowed_models.length ? p.allowed_models.join(', ') : 'Only its model'],
                ['API key', p.credential_secret_id ? <a href={`/secrets/${p.credential_secret_id}`}>Secret {p.credential_secret_id}</a> : 'The service’s key'],
                ['Changes', WRITES_WORDS[a.tool_policy.writes]],
                ['ID', <Code>{a.id}</Code>],
                ['Created', <Time at={a.created_at} />],
                ['Updated', <Time at={a.updated_at} />],
              ]}
            />
            <NeedsRole need="admin" what="change agents' settings, archive or restore them">
              {null}
            </NeedsRole>
          </>
        )}
      </Section>
      <Confirm open={confirming} title={`Archive the agent ${a.name}?`} confirmLabel="Archive agent" danger onConfirm={() => void act({ kind: 'archive' }, a)} onCancel={() => setConfirming(false)}>
        <p>It takes no new turns; turns already running finish. Its chats and usage stay, and it can be restored.</p>
      </Confirm>
    </Page>
  );
}
