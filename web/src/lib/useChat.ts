// A session's conversation, live: its stored events read page by page (GET /v1/agent_events), then
// followed on GET /v1/agent_events:stream from the last one, with the session cookie and the
// svc-context header (which an EventSource could not send; see sse.ts). A cut connection is
// resumed with Last-Event-ID, as an EventSource does, so no event is missed or shown twice (the
// conversation also skips any sequence it already has). Live events, not replayed ones, give the
// page its announcements.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { client, ok, type ApiError } from './api.ts';
import { toApiError } from './useApi.ts';
import { announcement, applyEvents, EMPTY, withTurn, type AgentEvent, type Conversation, type TurnState } from './chat.ts';
import { reconnectDelay, SseParser } from './sse.ts';

export type Link = 'loading' | 'live' | 'reconnecting' | 'closed';

export interface Chat {
  conversation: Conversation;
  link: Link;
  error: ApiError | undefined;
  /** the latest thing to say to screen readers, with a counter so a repeat is said again */
  said: { text: string; n: number };
  /** shows a turn the page just submitted before its first event arrives */
  addTurn: (turn: { id: string; state: TurnState; input: { content: string } }) => void;
}

const PAGE = 100;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

export function useChat(sessionId: string, workspaceId: string | undefined, onTurnEnded?: () => void): Chat {
  const [conversation, setConversation] = useState<Conversation>(EMPTY);
  const [link, setLink] = useState<Link>('loading');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [said, setSaid] = useState({ text: '', n: 0 });
  // The conversation as events are applied (state updates land later than the stream reads).
  const current = useRef<Conversation>(EMPTY);
  const ended = useRef(onTurnEnded);
  ended.current = onTurnEnded;

  const apply = useCallback((events: AgentEvent[], live: boolean) => {
    for (const e of events) {
      if (e.sequence <= current.current.last) continue;
      const text = live ? announcement(e, current.current) : undefined;
      current.current = applyEvents(current.current, [e]);
      if (text) setSaid((s) => ({ text, n: s.n + 1 }));
      if (live && (e.type === 'turn.completed' || e.type === 'turn.failed' || e.type === 'turn.cancelled')) ended.current?.();
    }
    setConversation(current.current);
  }, []);

  useEffect(() => {
    current.current = EMPTY;
    setConversation(EMPTY);
    setLink('loading');
    setError(undefined);
    const abort = new AbortController();
    const signal = abort.signal;
    (async () => {
      try {
        let after: string | undefined;
        for (;;) {
          const page = await ok(client.GET('/v1/agent_events', { params: { query: { session_id: sessionId, after, limit: PAGE } }, signal }));
          apply(page.data as AgentEvent[], false);
          after = page.next_cursor ?? after;
          if (!page.has_more) break;
        }
        await follow(sessionId, () => current.current.last, (events) => apply(events, true), setLink, signal);
      } catch (err) {
        if (!signal.aborted) {
          setError(toApiError(err));
          setLink('closed');
        }
      }
    })();
    return () => abort.abort();
  }, [sessionId, workspaceId, apply]);

  const addTurn = useCallback((turn: { id: string; state: TurnState; input: { content: string } }) => {
    current.current = withTurn(current.current, turn);
    setConversation(current.current);
  }, []);

  return { conversation, link, error, said, addTurn };
}

/** Follows the stream until the signal aborts; throws on an answer that will not get better by retrying (404, 403). */
async function follow(sessionId: string, lastSeen: () => number, deliver: (events: AgentEvent[]) => void, setLink: (l: Link) => void, signal: AbortSignal): Promise<void> {
  let failures = 0;
  let retryMs: number | undefined;
  while (!signal.aborted) {
    const last = lastSeen();
    const parser = new SseParser();
    try {
      const answer = await client.GET('/v1/agent_events:stream', {
        params: { query: { session_id: sessionId }, header: last > 0 ? { 'last-event-id': String(last) } : {} },
        parseAs: 'stream',
        signal,
      });
      if (!answer.response.ok) {
        const status = answer.response.status;
        if (status >= 400 && status < 500 && status !== 429) return void (await ok(Promise.resolve(answer)));
        throw new Error(`the event stream answered ${status}`);
      }
      setLink('live');
      failures = 0;
      const reader = (answer.data as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const messages = parser.feed(decoder.decode(value, { stream: true }));
        retryMs = parser.retryMs ?? retryMs;
        const events = messages.filter((m) => m.event !== 'message').map((m) => JSON.parse(m.data) as AgentEvent);
        if (events.length) deliver(events);
      }
    } catch (err) {
      if (signal.aborted) return;
      if ((err as { status?: number }).status !== undefined) throw err;
      failures++;
    }
    if (signal.aborted) return;
    // The server ends a connection after a while (SVC_AGENT_STREAM_MAX_S) or at shutdown: resume.
    setLink('reconnecting');
    await sleep(reconnectDelay(retryMs, failures), signal);
  }
}
