// A session's events (API.md 8.6): a page of them, and a Server-Sent Events stream that replays what
// is stored after the client's cursor, then follows live. The stream reads only the database (the
// notifier just says when to read), so it resumes exactly on any instance: no gap, no duplicate.
import { Type, type TSchema } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { scopeOf, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { LONG_REQUEST_CAPS } from '../../platform/long-requests.js';
import { invalidArgument, notFound } from '../../platform/errors.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { eventForReader } from './agent-events.js';
import { AgentEvent, AGENT_EVENT_TYPES, TERMINAL_EVENT_TYPES, type AgentEventT } from './agents.schemas.js';
import { followStream } from './event-stream.js';

const Cursor = Type.String({ minLength: 1, maxLength: 20, pattern: '^[0-9]+$', description: 'an event\'s cursor: the events after it' });
const Filter = {
  session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'the session\'s events (ags_ id); this or turn_id' })),
  turn_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'one turn\'s events (agtt_ id); this or session_id' })),
  after: Type.Optional(Cursor),
};
const ListEventsQuery = Type.Object(
  { ...Filter, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'events per page, 1-100' })) },
  { additionalProperties: false },
);
const StreamQuery = Type.Object(Filter, { additionalProperties: false });
const EventPage = Type.Object(
  {
    data: Type.Array(Type.Ref('AgentEvent'), { description: 'the events, oldest first' }),
    has_more: Type.Boolean({ description: 'true when more events were stored after this page' }),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'the last event\'s cursor: send it as `after` for the next page (null when the page is empty)' }),
  },
  { description: 'A page of agent events' },
);

const STREAM_DESCRIPTION =
  'Server-Sent Events (text/event-stream) of a session\'s or a turn\'s events. Each event is `id: <cursor>`, `event: <type>`, ' +
  '`data: <the AgentEvent as JSON>` and a blank line. The stream first replays the stored events after `after` or the ' +
  '`Last-Event-ID` header (which wins; an EventSource sends it when it reconnects), then follows new ones as they are appended, on ' +
  'whichever instance, with no gap and no duplicate. A `: keepalive` comment comes every SVC_AGENT_STREAM_HEARTBEAT_S seconds (15) ' +
  'while idle. A stream following a turn (`turn_id`) ends after the turn\'s terminal event (turn.completed, turn.failed, ' +
  'turn.cancelled); a session\'s stream continues. A connection ends after SVC_AGENT_STREAM_MAX_S (3600) and at shutdown; ' +
  'reconnect with the last id. Event types and their data: turn.queued {state, content}, turn.started {state, model}, message.delta ' +
  '{text} (a piece of the model\'s text as it is written; if a model call is retried after a cut, its pieces may repeat: ' +
  'message.created holds the whole text), message.created {content}, tool.started {call_id, tool, arguments}, tool.completed ' +
  '{call_id, tool, result, secret_derived} (secret_derived: the code read a secret value; then only admins and owners get the result, others ' +
  'get result null and result_withheld true, since masking cannot catch a value split, reversed or re-encoded), approval.requested {approval_request_id, kind, call_id, code, summary}, approval.resolved ' +
  '{approval_request_id, decision, reason, resolved_by}, input.requested {call_id, question, choices}, input.received {content}, ' +
  'usage.updated {usage_summary}, turn.completed {state, content}, turn.failed {state, failure}, turn.cancelled {state}.';

/** The 200 of the stream: not JSON, so described by its media type (the handler writes it itself). */
const SSE_RESPONSE = {
  description: 'the event stream',
  content: { 'text/event-stream': { schema: Type.String({ description: '`id: <cursor>`, `event: <type>`, `data: <AgentEvent JSON>`, a blank line; repeated, with `: keepalive` comments' }) } },
} as unknown as TSchema;

export interface EventFilter {
  sessionId: string;
  turnId?: string | undefined;
}

export function agentEventRoutes(app: App, s: Pick<Services, 'agentEvents' | 'agentStreams' | 'agentTurns' | 'agents' | 'config' | 'dialect'>): void {
  const tags = ['agent events'];

  /** The session (and turn) the query names, if the caller may read it; 404 otherwise. */
  async function filterOf(scope: WorkspaceScope, q: { session_id?: string | undefined; turn_id?: string | undefined }): Promise<EventFilter> {
    if ((q.session_id === undefined) === (q.turn_id === undefined)) {
      throw invalidArgument('name exactly one of session_id and turn_id', 'INVALID_ARGUMENT', [{ field: 'query.session_id', description: 'send session_id or turn_id, not both' }]);
    }
    if (q.turn_id !== undefined) {
      const turn = await s.agentTurns.getTurn(scope, q.turn_id);
      return { sessionId: turn.session_id, turnId: turn.id };
    }
    await s.agents.getSession(scope, q.session_id!).catch(() => {
      throw notFound('agent session');
    });
    return { sessionId: q.session_id! };
  }

  function afterOf(request: FastifyRequest, after: string | undefined): number {
    const last = headerOf(request, 'last-event-id');
    const raw = last !== undefined && last !== '' ? last : after;
    if (raw === undefined) return 0;
    if (!/^[0-9]{1,15}$/.test(raw)) throw invalidArgument('Last-Event-ID must be an event cursor (digits)', 'INVALID_CURSOR', [{ field: 'header.last-event-id', description: 'send the id of the last event received' }]);
    return Number(raw);
  }

  app.get('/v1/agent_events', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listAgentEvents', summary: 'List the events of a session or turn',
      description: `Oldest first, after \`after\` (a cursor; default from the start). Event types: ${AGENT_EVENT_TYPES.join(', ')}. The session must be one you may read. ` +
        'A tool.completed event whose code read a secret value (data.secret_derived) has its result withheld from members (result null, result_withheld true).',
      headers: requestHeaders(), querystring: ListEventsQuery,
      response: responses({ 200: EventPage }),
    },
  }, async (request) => {
    const filter = await filterOf(scopeOf(request), request.query);
    const limit = request.query.limit ?? 50;
    const rows = await s.agentEvents.list({ ...filter, after: afterOf(request, request.query.after), limit: limit + 1 });
    const data = rows.slice(0, limit).map((event) => eventForReader(event, scopeOf(request).role));
    return { data, has_more: rows.length > limit, next_cursor: data.length ? data[data.length - 1]!.cursor : null };
  });

  app.get(verbPath('/v1/agent_events', 'stream'), {
    config: { auth: 'workspace', longLived: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'streamAgentEvents', summary: 'Follow the events of a session or turn (SSE)',
      description: STREAM_DESCRIPTION + LONG_REQUEST_CAPS,
      headers: Type.Object({ ...requestHeaders().properties, 'last-event-id': Type.Optional(Type.String({ maxLength: 20, description: 'resume after this event (what an EventSource sends when it reconnects)' })) }),
      querystring: StreamQuery,
      response: { ...responses({}, [400, 403, 404, 429]), 200: SSE_RESPONSE },
    },
  }, async (request, reply) => {
    const filter = await filterOf(scopeOf(request), request.query);
    const after = afterOf(request, request.query.after);
    const turnEnded = async (): Promise<boolean> => filter.turnId !== undefined && ['COMPLETED', 'FAILED', 'CANCELLED'].includes((await s.agentTurns.getTurn(scopeOf(request), filter.turnId)).state);
    const ends = (event: AgentEventT) => filter.turnId !== undefined && event.turn_id === filter.turnId && TERMINAL_EVENT_TYPES.includes(event.type);
    reply.hijack();
    await followStream(request, reply.raw, {
      after, list: async (since) => (await s.agentEvents.list({ ...filter, after: since, limit: 100 })).map((event) => eventForReader(event, scopeOf(request).role)), watch: (wake) => s.agentEvents.watch(filter.sessionId, wake),
      ends, turnEnded, heartbeatMs: s.config.agents.streamHeartbeatSeconds * 1000, maxMs: s.config.agents.streamMaxSeconds * 1000,
      streams: s.agentStreams, now: () => clock.nowMs(), safetyReadMs: s.dialect === 'sqlite' ? 1000 : 30_000,
    });
  });
}
