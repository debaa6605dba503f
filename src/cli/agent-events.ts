// Following agent events (API.md 8.6): `GET /v1/agent_events:stream` read as Server-Sent Events
// over the client's own transport and credential, resumed after a dropped connection from the
// last event seen (Last-Event-ID), with events already handed out skipped by their sequence, so a
// cut shows neither a gap nor a duplicate. Used by `svc chat` and `svc agent-events stream`.
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError, EXIT } from './errors.js';
import type { Api } from './http.js';
import { sseMessages } from './sse.js';
import { eventLine, TERMINAL_EVENTS, type AgentEvent } from './agent-view.js';
import type { buildRequest, Invocation } from './execute.js';
import type { Output } from './output.js';

/** The server writes a comment every 15 s: three missed mean the connection is dead. */
const IDLE_MS = 45_000;
/** Reconnections in a row that bring no new event before giving up. */
const MAX_FAILURES = 8;
const backoffMs = (failures: number) => Math.min(5_000, 200 * 2 ** Math.max(0, failures - 1));

export interface FollowOptions {
  /** session_id or turn_id; `after`: start after this cursor */
  query: { session_id?: string; turn_id?: string; after?: string };
  /** svc-context, when the command was given one */
  header?: Record<string, string>;
  signal: AbortSignal;
  /** each new event, in order, awaited before the next; `raw` is its JSON as received. true: stop following */
  onEvent(event: AgentEvent, raw: string): Promise<boolean | void> | boolean | void;
  /** the connection dropped (why) and is being resumed */
  onResume?(why: string): void;
}

/** Follows events until onEvent says stop, the server ends a stream for good, or `signal` aborts (rethrown as the abort). */
export async function followEvents(api: Api, opts: FollowOptions): Promise<void> {
  const { after, ...filter } = opts.query;
  let lastId: string | null = after ?? null;
  let lastSeq = after ? Number(after) : 0;
  let failures = 0;
  for (;;) {
    let why = 'the server ended the stream';
    let progressed = false;
    // what the handler throws (a refused answer, Ctrl-C at a prompt) is the command's failure, not a cut stream
    let handling = false;
    try {
      const res = await api.open('GET', '/v1/agent_events:stream', {
        query: filter,
        header: { ...opts.header, accept: 'text/event-stream', ...(lastId !== null ? { 'last-event-id': lastId } : {}) },
        auth: 'workspace',
        signal: opts.signal,
      });
      if (!res.body) throw new Error('the event stream has no body');
      for await (const m of sseMessages(res.body, IDLE_MS)) {
        let event: AgentEvent;
        try {
          event = JSON.parse(m.data) as AgentEvent;
        } catch {
          throw new CliError(`the event stream sent data that is not an event: ${m.data.slice(0, 80)}`, EXIT.ERROR);
        }
        if (typeof event.sequence !== 'number' || event.sequence <= lastSeq) continue;
        lastSeq = event.sequence;
        lastId = m.id ?? event.cursor;
        progressed = true;
        handling = true;
        if (await opts.onEvent(event, m.data)) return;
        handling = false;
      }
    } catch (err) {
      if (opts.signal.aborted || handling) throw err;
      // a refusal (404, 403, 401) will not change by asking again
      if (err instanceof CliError && err.exitCode !== EXIT.RETRYABLE) throw err;
      why = err instanceof Error ? err.message : String(err);
    }
    failures = progressed ? 0 : failures + 1;
    if (failures > MAX_FAILURES) throw new CliError(`the event stream keeps failing (${why}); events so far are shown, the turn goes on on the server`, EXIT.RETRYABLE);
    opts.onResume?.(why);
    await sleep(backoffMs(failures), undefined, { signal: opts.signal });
  }
}

/** `svc agent-events stream`: the events as lines as they come (JSON lines with --json), until Ctrl-C or a followed turn ends. */
export async function streamEventsCommand(api: Api, o: Output, inv: Invocation, req: ReturnType<typeof buildRequest>): Promise<number> {
  const abort = new AbortController();
  const onSigint = () => abort.abort();
  process.once('SIGINT', onSigint);
  // --last-event-id is --after by another name: the follower sends it again on every reconnection
  const { 'last-event-id': lastEventId, ...header } = req.header;
  const q = { ...(req.query as FollowOptions['query']) };
  if (lastEventId && q.after === undefined) q.after = lastEventId;
  try {
    await followEvents(api, {
      query: q,
      header,
      signal: abort.signal,
      onEvent: (event, raw) => {
        if (inv.common.json) o.out.write(`${raw}\n`);
        else o.out.write(`${eventLine(o, event)}\n`);
        return Boolean(q.turn_id) && TERMINAL_EVENTS.has(event.type);
      },
      onResume: (why) => o.err.write(`${o.errColor.dim(`stream interrupted (${why}); resuming`)}\n`),
    });
  } catch (err) {
    if (abort.signal.aborted) return EXIT.INTERRUPTED;
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  return EXIT.OK;
}
