// Agent sessions (chats): the list (a member's own; owners and admins see every session of the
// workspace, so it names who started each), filtered by agent and state, and the table an agent's
// page shows. A session opens its chat (its html_url, /agent_sessions/{id}).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useSession, useWorkspace } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { formatCents, sessionTitle, STATE_WORDS, type AgentSession } from '../../lib/agents.ts';
import { ListView, type Column } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code } from '../../components/Fields.tsx';
import { SelectField } from '../../components/Form.tsx';

type SessionState = AgentSession['state'];
const SESSION_STATES: SessionState[] = ['ACTIVE', 'WAITING_FOR_INPUT', 'WAITING_FOR_PERMISSION', 'COMPLETED', 'FAILED', 'CANCELLED', 'ARCHIVED'];

/** The agents of the workspace by id (names for lists; the first 100, newest first). */
export function useAgentNames(): { agents: { id: string; name: string }[]; nameOf: (id: string) => string } {
  const list = useApi(() => ok(client.GET('/v1/agents', { params: { query: { limit: 100 } } })), [useWorkspace().id]);
  const agents = list.data?.data ?? [];
  return { agents, nameOf: (id) => agents.find((a) => a.id === id)?.name ?? id };
}

/** Who started a session, in words: "You", a member's e-mail, else the id. */
function useStarter(): (createdBy: string) => ComponentChildren {
  const { me } = useSession();
  const ws = useWorkspace();
  const members = useApi(() => ok(client.GET('/v1/workspaces/{id}/members', { params: { path: { id: ws.id }, query: { limit: 100 } } })), [ws.id]);
  const emails = new Map((members.data?.data ?? []).map((m) => [m.user_id, m.email]));
  return (id) => (id === me.id ? 'You' : emails.get(id) ?? <Code>{id}</Code>);
}

/** `onAgentPage`: the agent is the page's, so no column names it. */
export function SessionsTable(props: { agentId?: string; state?: SessionState; empty: ComponentChildren; reloadKey?: unknown; onAgentPage?: boolean }) {
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const names = useAgentNames();
  const starter = useStarter();
  const columns: Column<AgentSession>[] = [
    { label: 'Chat', cell: (s) => <a href={`/agent_sessions/${s.id}`}>{sessionTitle(s)}</a> },
    { label: 'State', cell: (s) => <StateBadge state={s.state} label={STATE_WORDS[s.state]} /> },
    { label: 'Spent', cell: (s) => formatCents(s.usage_summary.provider_cost_cents) },
    { label: 'Updated', cell: (s) => <Time at={s.updated_at} /> },
  ];
  if (!props.onAgentPage) columns.splice(1, 0, { label: 'Agent', cell: (s) => <a href={`/agents/${s.agent_id}`}>{names.nameOf(s.agent_id)}</a> });
  if (admin) columns.splice(columns.length - 1, 0, { label: 'Started by', cell: (s) => starter(s.created_by) });
  return (
    <ListView<AgentSession>
      label="Chats"
      deps={[props.agentId, props.state, props.reloadKey]}
      load={(cursor, limit) => ok(client.GET('/v1/agent_sessions', { params: { query: { cursor, limit, agent_id: props.agentId, state: props.state } } }))}
      rowKey={(s) => s.id}
      columns={columns}
      empty={props.empty}
    />
  );
}

export function SessionList(_props: { path?: string }) {
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const names = useAgentNames();
  const [agentId, setAgentId] = useState('');
  const [state, setState] = useState('');
  return (
    <Page title="Chats" subtitle={admin ? 'Every conversation with an agent in this workspace: you may read the others’ and post only to your own.' : 'Your conversations with the workspace’s agents.'}>
      <div class="filters">
        <SelectField label="Agent" value={agentId} onValue={setAgentId} options={[['', 'Every agent'], ...names.agents.map((a) => [a.id, a.name] as [string, string])]} />
        <SelectField label="State" value={state} onValue={setState} options={[['', 'Any state'], ...SESSION_STATES.map((s) => [s, STATE_WORDS[s] ?? s] as [string, string])]} />
      </div>
      <SessionsTable
        agentId={agentId || undefined}
        state={(state || undefined) as SessionState | undefined}
        empty={
          agentId || state ? (
            <p>No chat matches these filters.</p>
          ) : (
            <p>
              No chats yet. Open one of the <a href="/agents">agents</a> and start a new chat.
            </p>
          )
        }
      />
    </Page>
  );
}
