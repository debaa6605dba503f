// A chat (a session's html_url, /agent_sessions/{id}) and a new one (/agents/{id}/chat). The chat
// replays the session's events and follows them live (useChat): the agent's text shows as it is
// written, tool calls as rows, questions and approvals as cards; a polite live region says whole
// messages, questions, approvals and endings. The session's creator writes and cancels; owners and
// admins may read another member's chat (and approve a member's turn that needs them). A new chat
// becomes a session with its first message, titled by it, then opens as its chat.
import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { useApi } from '../../lib/useApi.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { useSession, useWorkspace } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { useChat, type Link } from '../../lib/useChat.ts';
import { activeTurn } from '../../lib/chat.ts';
import { busyWords, sessionTitle, STATE_WORDS, titleFrom, usageWords } from '../../lib/agents.ts';
import { Page } from '../../components/Page.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { Conversation } from './Conversation.tsx';
import { Composer } from './Composer.tsx';
import './chat.css';

const LINK_WORDS: Record<Link, string> = { loading: 'Loading the conversation…', live: 'Live', reconnecting: 'Connection lost; reconnecting…', closed: 'Not following' };

/** Keeps the page scrolled to the newest text while the reader is at the bottom (not when they scrolled up to read). */
function useStickToBottom(change: unknown): void {
  const atBottom = useRef(true);
  useEffect(() => {
    const onScroll = () => {
      atBottom.current = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 120;
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    return () => window.removeEventListener('scroll', onScroll);
  }, []);
  useEffect(() => {
    if (atBottom.current) window.scrollTo({ top: document.documentElement.scrollHeight });
  }, [change]);
}

function submitTurn(sessionId: string, message: string) {
  return ok(client.POST('/v1/agent_turns', { params: { header: { 'idempotency-key': idempotencyKey() } }, body: { session_id: sessionId, message } }));
}

export function ChatPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const ws = useWorkspace();
  const { me } = useSession();
  const session = useRecord(id, () => ok(client.GET('/v1/agent_sessions/{id}', { params: { path: { id } } })));
  const s = session.data;
  const agent = useApi(() => (s ? ok(client.GET('/v1/agents/{id}', { params: { path: { id: s.agent_id } } })) : Promise.resolve(undefined)), [s?.agent_id]);
  const chat = useChat(id, ws.id, () => void session.reload());
  const sending = useAction();
  const cancelling = useAction();
  useStickToBottom(chat.conversation);

  if (session.error) {
    return (
      <Page title="Chat" breadcrumb={['Chats', '/agent_sessions']}>
        <ErrorNotice error={session.error} title="The chat could not be loaded." />
      </Page>
    );
  }
  if (!s) return <p aria-busy="true">Loading…</p>;

  const mine = s.created_by === me.id;
  const active = activeTurn(chat.conversation);
  const agentName = agent.data?.name ?? 'the agent';
  // The session as last read says how its latest turn ended; a turn under way is newer than that.
  const shown = active && s.state !== 'ARCHIVED' ? active.state : s.state;
  const closed = s.state === 'ARCHIVED' ? 'This chat is archived: it takes no new messages.' : agent.data?.state === 'ARCHIVED' ? `${agentName} is archived: it takes no new messages.` : undefined;

  async function send(message: string): Promise<boolean> {
    const turn = await sending.run(() => submitTurn(id, message));
    if (turn) chat.addTurn(turn);
    return Boolean(turn);
  }
  async function cancel() {
    if (!active) return;
    const turnId = active.id;
    await cancelling.run(() => ok(client.POST('/v1/agent_turns/{id}:cancel', { params: { path: { id: turnId } } })));
  }

  return (
    <Page
      title={sessionTitle(s)}
      subtitle={
        <>
          Chat with <a href={`/agents/${s.agent_id}`}>{agentName}</a> · <StateBadge state={shown} label={STATE_WORDS[shown]} />
        </>
      }
      breadcrumb={['Chats', '/agent_sessions']}
    >
      <div class="visually-hidden" role="status" aria-live="polite" aria-atomic="true">
        {chat.said.text && <p key={chat.said.n}>{chat.said.text}</p>}
      </div>
      <ErrorNotice error={chat.error} title="The conversation could not be followed." />
      {chat.conversation.turns.length === 0 && chat.link !== 'loading' && <p class="muted">No messages yet. Ask {agentName} something about the workspace.</p>}
      <Conversation conversation={chat.conversation} viewer={{ meId: me.id, mine, admin: roleAtLeast(ws.role, 'admin'), person: mine ? 'You' : 'Member', agentName }} />
      {mine ? (
        <Composer
          agentName={agentName}
          busy={active ? busyWords(active.state, agentName) : null}
          closed={closed}
          sending={sending.busy}
          error={sending.error ?? cancelling.error}
          onSend={send}
          onCancel={active ? () => void cancel() : undefined}
          cancelling={cancelling.busy}
        />
      ) : (
        <p class="notice">This chat was started by someone else: you can read it; only they can write in it.</p>
      )}
      <p class="small muted chat-foot">
        <span>This chat: {usageWords(s.usage_summary).join(' · ')}</span> · <span>{LINK_WORDS[chat.link]}</span>
      </p>
    </Page>
  );
}

export function NewChat(props: { id?: string; path?: string }) {
  const agentId = props.id!;
  const agent = useRecord(agentId, () => ok(client.GET('/v1/agents/{id}', { params: { path: { id: agentId } } })));
  const action = useAction();
  const { route } = useLocation();
  // The session made by a first try, reused if its message was refused (no second empty session).
  const [sessionId, setSessionId] = useState<string | null>(null);

  if (agent.error) {
    return (
      <Page title="New chat" breadcrumb={['Agents', '/agents']}>
        <ErrorNotice error={agent.error} title="The agent could not be loaded." />
      </Page>
    );
  }
  const a = agent.data;
  if (!a) return <p aria-busy="true">Loading…</p>;

  async function send(message: string): Promise<boolean> {
    const started = await action.run(async () => {
      const sid = sessionId ?? (await ok(client.POST('/v1/agent_sessions', { params: { header: { 'idempotency-key': idempotencyKey() } }, body: { agent_id: agentId, title: titleFrom(message) } }))).id;
      setSessionId(sid);
      await submitTurn(sid, message);
      return sid;
    });
    if (started) route(`/agent_sessions/${started}`, true);
    return Boolean(started);
  }

  return (
    <Page title={`New chat with ${a.name}`} breadcrumb={[a.name, `/agents/${a.id}`]}>
      {a.description && <p class="muted">{a.description}</p>}
      <Composer
        agentName={a.name}
        busy={null}
        closed={a.state === 'ARCHIVED' ? `${a.name} is archived: restore it to chat with it.` : undefined}
        sending={action.busy}
        error={action.error}
        onSend={send}
      />
    </Page>
  );
}
