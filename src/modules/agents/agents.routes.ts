// Routes of agents and agent sessions (API.md 8.6).
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, StringEnum, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { Agent, AGENT_STATES, AgentId, CreateAgentBody, CreateSessionBody, PatchAgentBody, Session, SESSION_STATES, SessionId } from './agents.schemas.js';

const AgentParams = Type.Object({ id: AgentId });
const SessionParams = Type.Object({ id: SessionId });
const ListAgentsQuery = Type.Object({ ...PageQuery, state: Type.Optional(StringEnum(AGENT_STATES, { description: 'only agents in this state' })) }, { additionalProperties: false });
const ListSessionsQuery = Type.Object(
  {
    ...PageQuery,
    agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 54, description: 'only the sessions with this agent' })),
    state: Type.Optional(StringEnum(SESSION_STATES, { description: 'only sessions in this state' })),
  },
  { additionalProperties: false },
);

/** Where a turn came from: the web app marks its requests with its CSRF header, which only it sends. */
export function originOf(request: FastifyRequest): 'DASHBOARD' | 'API' {
  return headerOf(request, 'x-svc-csrf') !== undefined ? 'DASHBOARD' : 'API';
}

export function agentRoutes(app: App, s: Pick<Services, 'agents' | 'idempotency'>): void {
  const tags = ['agents'];
  const setAgentArchived = (archive: boolean) => async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) =>
    withEtag(reply, await s.agents.setAgentArchived(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), archive));

  app.post('/v1/agents', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createAgent', summary: 'Create an agent',
      description:
        'Needs the admin or owner role. 201 with the agent. Defaults: model_policy.provider the operator\'s (SVC_AGENT_PROVIDER, ' +
        '`local` unless set), default_model the operator\'s (SVC_AGENT_MODEL), allowed_models [] (only default_model), budget_period ' +
        'MONTH, tool_policy.writes APPROVAL_REQUIRED. A credential_secret_id must name a secret of the workspace: its enabled latest ' +
        'version is the provider API key, read at each model call and never shown. Recorded in the audit log (`agent.create`). ' +
        'Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateAgentBody,
      response: responses({ 201: Agent }, [400, 403, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const located = (a: Parameters<typeof withEtag>[1] & { id: string }) => withEtag(reply.header('location', `/v1/agents/${a.id}`), a);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const agent = await s.agents.loadAgent(scope.workspaceId, id);
        return agent && located(agent);
      },
      async (tx) => {
        const agent = await s.agents.createAgent(scope, request.body, tx);
        located(agent);
        return { status: 201, body: agent, resourceId: agent.id };
      });
  });

  app.get('/v1/agents', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listAgents', summary: 'List agents',
      description: 'Newest first, with each agent\'s usage_summary (all its turns). Any member may list them.',
      headers: requestHeaders(), querystring: ListAgentsQuery,
      response: responses({ 200: pageOf(Agent, 'A page of agents') }),
    },
  }, async (request) => s.agents.listAgents(scopeOf(request), request.query));

  app.get('/v1/agents/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getAgent', summary: 'Get an agent',
      description: 'Any member may read it. Sends the etag in the ETag header.',
      params: AgentParams, headers: requestHeaders(),
      response: responses({ 200: Agent }),
    },
  }, async (request, reply) => withEtag(reply, await s.agents.getAgent(scopeOf(request), request.params.id)));

  app.patch('/v1/agents/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateAgent', summary: 'Change an agent',
      description:
        'Needs the admin or owner role and if-match (409 ABORTED with the current etag when it moved). Changes apply to the next model ' +
        'call of every turn, running ones included. model_policy and tool_policy are replaced whole (defaults fill what they omit). ' +
        'Recorded in the audit log (`agent.update`).',
      params: AgentParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchAgentBody,
      response: responses({ 200: Agent }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) =>
    withEtag(reply, await s.agents.updateAgent(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), request.body)));

  app.delete('/v1/agents/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteAgent', summary: 'Archive an agent',
      description:
        'Needs the admin or owner role and if-match. 200 with the agent ARCHIVED: it takes no new turns (they are admitted DENIED, ' +
        'AGENT_ARCHIVED); turns already running finish. Its sessions, turns and usage stay. :undelete restores it. Audited (`agent.delete`).',
      params: AgentParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Agent }, [400, 403, 404, 409]),
    },
  }, setAgentArchived(true));

  app.post(verbPath('/v1/agents/:id', 'undelete'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'undeleteAgent', summary: 'Restore an archived agent',
      description: 'Needs the admin or owner role and if-match. 200 with the agent ENABLED. Audited (`agent.undelete`).',
      params: AgentParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Agent }, [400, 403, 404, 409]),
    },
  }, setAgentArchived(false));

  // ---- sessions ----
  const sessionTags = ['agent sessions'];
  const setSessionArchived = (archive: boolean) => async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) =>
    withEtag(reply, await s.agents.setSessionArchived(scopeOf(request), request.params.id, parseIfMatch(headerOf(request, 'if-match')), archive));

  app.post('/v1/agent_sessions', {
    config: { auth: 'workspace' },
    schema: {
      tags: sessionTags, security: bearerSecurity, operationId: 'createAgentSession', summary: 'Start a session with an agent',
      description:
        'Any member may start one. 201 with the session, ACTIVE and without turns; send messages with POST /v1/agent_turns. The session ' +
        'is yours: another member gets 404 for it; owners and admins may read it but not post to it. An unknown agent is 400 ' +
        '(AGENT_NOT_FOUND), an archived one 422 (AGENT_ARCHIVED). Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateSessionBody,
      response: responses({ 201: Session }, [400, 403, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const located = <T extends { id: string; etag: string }>(x: T) => withEtag(reply.header('location', `/v1/agent_sessions/${x.id}`), x);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => {
        const session = await s.agents.loadSession(scope.workspaceId, id);
        return session && located(session);
      },
      async (tx) => {
        const session = located(await s.agents.createSession(scope, request.body, originOf(request), tx));
        return { status: 201, body: session, resourceId: session.id };
      });
  });

  app.get('/v1/agent_sessions', {
    config: { auth: 'workspace' },
    schema: {
      tags: sessionTags, security: bearerSecurity, operationId: 'listAgentSessions', summary: 'List agent sessions',
      description: 'Newest first: a member\'s own sessions; owners and admins see every session of the workspace. Filters combine.',
      headers: requestHeaders(), querystring: ListSessionsQuery,
      response: responses({ 200: pageOf(Session, 'A page of agent sessions') }),
    },
  }, async (request) => s.agents.listSessions(scopeOf(request), request.query));

  app.get('/v1/agent_sessions/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags: sessionTags, security: bearerSecurity, operationId: 'getAgentSession', summary: 'Get an agent session',
      description: 'Its creator, owners and admins may read it; another member gets 404.',
      params: SessionParams, headers: requestHeaders(),
      response: responses({ 200: Session }),
    },
  }, async (request, reply) => withEtag(reply, await s.agents.getSession(scopeOf(request), request.params.id)));

  app.delete('/v1/agent_sessions/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags: sessionTags, security: bearerSecurity, operationId: 'deleteAgentSession', summary: 'Archive an agent session',
      description: 'Only its creator, with if-match. 200 with the session ARCHIVED: it takes no new turns (admitted DENIED, SESSION_ARCHIVED). :undelete restores it.',
      params: SessionParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Session }, [400, 403, 404, 409]),
    },
  }, setSessionArchived(true));

  app.post(verbPath('/v1/agent_sessions/:id', 'undelete'), {
    config: { auth: 'workspace' },
    schema: {
      tags: sessionTags, security: bearerSecurity, operationId: 'undeleteAgentSession', summary: 'Restore an archived agent session',
      description: 'Only its creator, with if-match. 200 with the session and its latest turn\'s state.',
      params: SessionParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: Session }, [400, 403, 404, 409]),
    },
  }, setSessionArchived(false));
}
