import { Type } from 'typebox';
import { scopeOf, userOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, NoContent, requestHeaders, responses, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { OperationRef } from '../operations/operations.schemas.js';
import {
  AddMemberBody, CreateWorkspaceBody, Member, MemberPathParams, PatchMemberBody, PatchWorkspaceBody, Workspace, WorkspaceId,
} from './workspaces.schemas.js';

const tags = ['workspaces'];
const IdParams = Type.Object({ id: WorkspaceId });

export function workspaceRoutes(app: App, s: Pick<Services, 'idempotency' | 'operations' | 'workspaceDeletion' | 'workspaces'>): void {
  app.post('/v1/workspaces', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createWorkspace',
      summary: 'Create a workspace',
      description: 'Creates a workspace whose owner is the caller. Needs a user credential (session token). Accepts idempotency-key.',
      headers: requestHeaders({ context: false, idempotency: 'optional' }),
      body: CreateWorkspaceBody,
      response: responses({ 201: Workspace }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const user = userOf(request);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'), async (id) => {
      const role = await s.workspaces.memberships.roleOf(id, user.userId);
      return role ? s.workspaces.getWorkspace({ workspaceId: id, role, actorId: user.userId }) : null;
    }, async (tx) => {
      const ws = await s.workspaces.createWorkspace(user.userId, request.body, tx);
      reply.header('location', `/v1/workspaces/${ws.id}`);
      withEtag(reply, ws);
      return { status: 201, body: ws, resourceId: ws.id };
    });
  });

  app.get('/v1/workspaces', {
    config: { auth: 'user' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listWorkspaces',
      summary: "List the caller's workspaces",
      description: 'Workspaces the signed-in user is a member of, newest first, with the caller\'s role.',
      querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(Workspace, 'A page of workspaces') }, [400, 403]),
    },
  }, async (request) => s.workspaces.listWorkspaces(userOf(request).userId, request.query));

  app.get('/v1/workspaces/:id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getWorkspace', summary: 'Get a workspace',
      description: 'Members of the workspace, and its own API tokens, may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Workspace }),
    },
  }, async (request, reply) => withEtag(reply, await s.workspaces.getWorkspace(scopeOf(request))));

  app.patch('/v1/workspaces/:id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateWorkspace', summary: 'Change a workspace',
      description: 'Needs admin or owner. if-match is required; a stale etag is 409 ABORTED with the current etag in error.metadata.etag.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchWorkspaceBody,
      response: responses({ 200: Workspace }, [400, 403, 404, 409]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.workspaces.patchWorkspace(scopeOf(request), revision, request.body));
  });

  app.delete('/v1/workspaces/:id', {
    config: { auth: 'workspace-path', requesterOfDeletedWorkspace: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteWorkspace', summary: 'Delete a workspace',
      description:
        'Needs admin or owner, and if-match (a stale etag is 409 ABORTED with the current etag in error.metadata.etag). ' +
        '202 with a `workspace.delete` operation whose steps cancel the running operations, delete the clusters, revoke the API ' +
        'tokens and OAuth clients, then remove the workspace; the workspace is `state: deleting` meanwhile and refuses new work. ' +
        'A second DELETE while one runs returns that same operation (202). The requester can still read and `:wait` the ' +
        'operation after the workspace is gone (svc-context: the deleted workspace id). Accepts idempotency-key.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required', idempotency: 'optional' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      (id) => s.operations.load(scope.workspaceId, id),
      async (tx) => {
        const op = await s.workspaceDeletion.deleteWorkspace(scope, revision, tx);
        return { status: 202, body: op, resourceId: op.id };
      });
  });

  app.get('/v1/workspaces/:id/members', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listWorkspaceMembers', summary: 'List members',
      description: 'Members of the workspace, newest first, paged with cursor and limit as on every list.',
      params: IdParams, headers: requestHeaders(),
      querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(Member, 'A page of workspace members') }),
    },
  }, async (request) => s.workspaces.listMembers(scopeOf(request), request.query));

  app.post('/v1/workspaces/:id/members', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'addWorkspaceMember', summary: 'Add a member',
      description: 'Adds an existing user by email or user_id. Needs admin or owner; only an owner may add an owner. Accepts idempotency-key.',
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }), body: AddMemberBody,
      response: responses({ 201: Member }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      (memberId) => s.workspaces.loadMemberById(scope.workspaceId, memberId),
      async (tx) => {
        const member = await s.workspaces.addMember(scope, request.body, tx);
        reply.header('location', `/v1/workspaces/${scope.workspaceId}/members/${member.user_id}`);
        return { status: 201, body: member, resourceId: member.id };
      });
  });

  app.get('/v1/workspaces/:id/members/:user_id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getWorkspaceMember', summary: 'Get a member',
      description: 'One member of the workspace by user id (usr_...); any member, or the workspace\'s own API token, may read it.',
      params: MemberPathParams, headers: requestHeaders(),
      response: responses({ 200: Member }),
    },
  }, async (request) => s.workspaces.getMember(scopeOf(request), request.params.user_id));

  app.patch('/v1/workspaces/:id/members/:user_id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateWorkspaceMember', summary: "Change a member's role",
      description: 'Needs admin or owner; only an owner may change an owner or grant the owner role; the last owner cannot be demoted (422).',
      params: MemberPathParams, headers: requestHeaders(), body: PatchMemberBody,
      response: responses({ 200: Member }, [400, 403, 404, 422]),
    },
  }, async (request) => s.workspaces.changeMemberRole(scopeOf(request), request.params.user_id, request.body.role));

  app.delete('/v1/workspaces/:id/members/:user_id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'removeWorkspaceMember', summary: 'Remove a member',
      description: 'Needs admin or owner; only an owner may remove an owner; the last owner cannot be removed (422).',
      params: MemberPathParams, headers: requestHeaders(),
      response: responses({ 204: NoContent }, [400, 403, 404, 422]),
    },
  }, async (request, reply) => {
    await s.workspaces.removeMember(scopeOf(request), request.params.user_id);
    return reply.code(204).send();
  });
}
