// Routes of agent turns (spec endpoint 3) and approval requests (API.md 8.6).
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import { permissionDenied } from '../../platform/errors.js';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { LONG_REQUEST_CAPS } from '../../platform/long-requests.js';
import { bearerSecurity, headerOf, requestHeaders, responses, StringEnum, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { WaitQuery } from '../operations/operations.schemas.js';
import { writerOfRequest } from '../snippets/snippet-writer.js';
import { originOf } from './agents.routes.js';
import {
  ADMISSION_ERROR_CODES, APPROVAL_STATES, ApprovalRequest, ApprovalRequestId, CreateTurnBody, FAILURE_CODES, RespondBody, ResolveApprovalBody, Turn, TurnId,
} from './agents.schemas.js';

const TurnParams = Type.Object({ id: TurnId });
const ApprovalParams = Type.Object({ id: ApprovalRequestId });
const ListTurnsQuery = Type.Object(
  { ...PageQuery, session_id: Type.String({ minLength: 1, maxLength: 54, description: 'the session (ags_ id)' }) },
  { additionalProperties: false },
);
const ListApprovalsQuery = Type.Object(
  {
    ...PageQuery,
    state: Type.Optional(StringEnum(APPROVAL_STATES, { description: 'only requests in this state (PENDING: those waiting)' })),
    session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only the requests of this session' })),
  },
  { additionalProperties: false },
);

/** A snippet's or a tool call's own requests cannot talk to agents: a turn waiting on a turn could hold every worker. */
function refuseFromSandbox(request: FastifyRequest): void {
  const principal = request.principal;
  if (principal?.kind === 'workspace' && principal.via === 'snippet_run') throw permissionDenied('code running in the sandbox cannot submit agent turns', 'NESTED_AGENT_TURN');
}

export function agentTurnRoutes(app: App, s: Pick<Services, 'agentApprovals' | 'agentTurns' | 'dialect' | 'idempotency'>): void {
  const tags = ['agent turns'];

  app.post('/v1/agent_turns', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createAgentTurn', summary: 'Send a message to an agent',
      description:
        'Submits `message` to the session (yours: another member\'s is 404, and an owner or admin who may read it gets 403 ' +
        'SESSION_NOT_YOURS). 201 with the turn, processed asynchronously: follow it with :wait or GET /v1/agent_events:stream?turn_id=. ' +
        'Admission is decided now and recorded on the turn: `runtime_decision` ALLOWED (QUEUED: a session runs one turn at a time, ' +
        `in order), DENIED (the turn is FAILED at once, with admission_error and failure: ${ADMISSION_ERROR_CODES.join(', ')}) or ` +
        'APPROVAL_REQUIRED (WAITING_FOR_PERMISSION: a member\'s turn on an agent whose tool_policy.writes is ALLOWED waits for an owner ' +
        'or admin to resolve its approval request of kind TURN). runtime_hint AUTO resolves to CODE_MODE: the agent acts only through ' +
        'the sandbox, as you, with your rights at each call; RETAINED_RUNTIME is DENIED (RUNTIME_UNAVAILABLE) as no retained runtime ' +
        'is configured. Each admitted turn counts against the daily `agents/turns` quota. Then the turn runs: before every model call ' +
        'the budgets are checked (the turn\'s and the agent\'s max, the workspace\'s `agents/cost_cents`); the model streams text and ' +
        'asks for tools (search, execute: reads only, propose_change: writes after your approval unless the agent\'s policy says ' +
        `otherwise, ask_user); the turn ends COMPLETED, FAILED (failure.code ${FAILURE_CODES.join(', ')}) or CANCELLED. ` +
        'Accepts idempotency-key: a retry returns the same turn. Code running in the sandbox cannot submit turns (403).',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateTurnBody,
      response: responses({ 201: Turn }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    refuseFromSandbox(request);
    const scope = scopeOf(request);
    const located = <T extends { id: string; etag: string }>(x: T) => withEtag(reply.header('location', `/v1/agent_turns/${x.id}`), x);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const turn = await s.agentTurns.loadTurn(scope.workspaceId, id);
        return turn && located(turn);
      },
      async (tx) => {
        const turn = located(await s.agentTurns.submit(writerOfRequest(request, scope), request.body, originOf(request), tx));
        return { status: 201, body: turn, resourceId: turn.id };
      });
  });

  app.get('/v1/agent_turns', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listAgentTurns', summary: 'List the turns of a session',
      description: 'Newest first. The session must be one you may read (yours, or any as an owner or admin).',
      headers: requestHeaders(), querystring: ListTurnsQuery,
      response: responses({ 200: pageOf(Turn, 'A page of agent turns') }),
    },
  }, async (request) => s.agentTurns.listTurns(scopeOf(request), request.query));

  app.get('/v1/agent_turns/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getAgentTurn', summary: 'Get an agent turn',
      description: 'The turn: its state, admission, model, usage and failure. Sends the etag in the ETag header.',
      params: TurnParams, headers: requestHeaders(),
      response: responses({ 200: Turn }),
    },
  }, async (request, reply) => withEtag(reply, await s.agentTurns.getTurn(scopeOf(request), request.params.id)));

  app.post(verbPath('/v1/agent_turns/:id', 'respond'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'respondAgentTurn', summary: 'Answer the agent\'s question',
      description:
        'Only the session\'s creator, with if-match (the turn\'s etag). The turn must be WAITING_FOR_INPUT (else 422 TURN_NOT_WAITING); ' +
        '200 with the turn RUNNING again: the model gets `content` as the answer to its ask_user call.',
      params: TurnParams, headers: requestHeaders({ ifMatch: 'required' }), body: RespondBody,
      response: responses({ 200: Turn }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) =>
    withEtag(reply, await s.agentTurns.respond(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body.content)));

  app.post(verbPath('/v1/agent_turns/:id', 'cancel'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'cancelAgentTurn', summary: 'Cancel an agent turn',
      description:
        'Only the session\'s creator. 200 with the turn CANCELLED at once: a model call in progress and a sandbox run in progress are ' +
        'aborted on whichever instance runs them; what already happened stays recorded (its events, a tool call that was running is ' +
        'recorded as cancelled, its pending approval requests become CANCELLED). A turn that already ended is 422 (TURN_ENDED). The ' +
        'session\'s next queued turn starts. No body.',
      params: TurnParams, headers: requestHeaders(),
      response: responses({ 200: Turn }, [400, 403, 404, 422]),
    },
  }, async (request, reply) => withEtag(reply, await s.agentTurns.cancel(scopeOf(request), request.params.id)));

  app.post(verbPath('/v1/agent_turns/:id', 'wait'), {
    config: { auth: 'workspace', longLived: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'waitAgentTurn', summary: 'Wait for an agent turn to end or need you',
      description:
        'Returns the turn as soon as it is COMPLETED, FAILED or CANCELLED, or waits on a person (WAITING_FOR_INPUT, ' +
        'WAITING_FOR_PERMISSION) (pushed to every instance, not polled), or as it is when `timeout` seconds (1-60, default 30) pass. No body.' +
        LONG_REQUEST_CAPS,
      params: TurnParams, headers: requestHeaders(), querystring: WaitQuery,
      response: responses({ 200: Turn }, [400, 403, 404, 429]),
    },
  }, async (request) => s.agentTurns.wait(scopeOf(request), request.params.id, (request.query.timeout ?? 30) * 1000, s.dialect === 'sqlite' ? 250 : 1000));

  // ---- approval requests ----
  const approvalTags = ['approval requests'];

  app.get('/v1/approval_requests', {
    config: { auth: 'workspace' },
    schema: {
      tags: approvalTags, security: bearerSecurity, operationId: 'listApprovalRequests', summary: 'List approval requests',
      description: 'Newest first. Owners and admins see every request of the workspace; a member those of their own sessions (kind CHANGE).',
      headers: requestHeaders(), querystring: ListApprovalsQuery,
      response: responses({ 200: pageOf(ApprovalRequest, 'A page of approval requests') }),
    },
  }, async (request) => s.agentApprovals.list(scopeOf(request), request.query));

  app.get('/v1/approval_requests/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags: approvalTags, security: bearerSecurity, operationId: 'getApprovalRequest', summary: 'Get an approval request',
      description: 'With the exact code that runs if it is approved. Sends the etag in the ETag header.',
      params: ApprovalParams, headers: requestHeaders(),
      response: responses({ 200: ApprovalRequest }),
    },
  }, async (request, reply) => withEtag(reply, await s.agentApprovals.get(scopeOf(request), request.params.id)));

  app.post(verbPath('/v1/approval_requests/:id', 'resolve'), {
    config: { auth: 'workspace' },
    schema: {
      tags: approvalTags, security: bearerSecurity, operationId: 'resolveApprovalRequest', summary: 'Approve or reject',
      description:
        'With if-match (the request\'s etag). A CHANGE request is decided by the session\'s creator: APPROVE runs the exact code shown ' +
        '(with the creator\'s rights at that moment), REJECT tells the model, with the reason; either way the turn is RUNNING again. A ' +
        'TURN request is decided by an owner or admin: APPROVE queues the member\'s turn, REJECT ends it CANCELLED. Only a PENDING ' +
        'request can be resolved (else 422 APPROVAL_NOT_PENDING). Recorded in the audit log (`approval_request.approve` or `.reject`). ' +
        'Accepts idempotency-key.',
      params: ApprovalParams, headers: requestHeaders({ ifMatch: 'required', idempotency: 'optional' }), body: ResolveApprovalBody,
      response: responses({ 200: ApprovalRequest }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    refuseFromSandbox(request);
    const scope = scopeOf(request);
    const id = request.params.id;
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async () => withEtag(reply, await s.agentApprovals.get(scope, id)),
      async (tx) => {
        const resolved = await s.agentApprovals.resolve(scope, id, revision, request.body.decision, request.body.reason ?? null, tx);
        return { status: 200, body: withEtag(reply, resolved), resourceId: id };
      });
  });
}
