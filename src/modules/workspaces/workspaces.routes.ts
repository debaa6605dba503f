import { Type } from 'typebox';
import { scopeOf, userOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, NoContent, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { OperationRef } from '../operations/operations.schemas.js';
import {
  AcceptedInvitation, AddMemberBody, CreateWorkspaceBody, Invitation, InvitationPreview, InvitationToken, Member, MemberPathParams, PatchMemberBody,
  PatchWorkspaceBody, Workspace, WorkspaceId,
} from './workspaces.schemas.js';
import { isId } from '../../platform/ids.js';
import type { InvitationT, MemberT } from './workspaces.schemas.js';

const tags = ['workspaces'];
const IdParams = Type.Object({ id: WorkspaceId });

const InvitationParams = Type.Object({ id: WorkspaceId, invitation_id: Type.String({ minLength: 1, maxLength: 53, description: 'inv_ id' }) });
const ResolveInvitationBody = Type.Object({ token: InvitationToken }, { additionalProperties: false, description: 'The token of the link.', examples: [{ token: '3kq8Xw1pL0aZ7mN2bV9cR4tY6uI5oE8s' }] });
const AcceptInvitationBody = Type.Object(
  {
    token: InvitationToken,
    password: Type.String({ minLength: 1, maxLength: 256, description: 'the new account\'s password (8-256 characters), or the password of the account the invited e-mail has already' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'how the person is called (a new account only)' })),
  },
  { additionalProperties: false, description: 'The link\'s token and a password.', examples: [{ token: '3kq8Xw1pL0aZ7mN2bV9cR4tY6uI5oE8s', password: 'correct horse battery staple', name: 'Grace' }] },
);

export function workspaceRoutes(app: App, s: Pick<Services, 'idempotency' | 'operations' | 'workspaceDeletion' | 'workspaces' | 'invitations'>): void {
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
      description:
        'Needs admin or owner. if-match is required; a stale etag is 409 ABORTED with the current etag in error.metadata.etag. ' +
        '`require_two_factor` is an owner\'s choice (an admin is 403, reason ROLE_TOO_LOW), and an owner turns it on only with ' +
        'two-factor sign-in on for their own account (422, reason OWN_TWO_FACTOR_REQUIRED). Once on, each request of a member ' +
        'without an active factor to the workspace is 403 (reason TWO_FACTOR_REQUIRED) until they set one up; nobody is removed. ' +
        'Turning it on or off is audited (`workspace.two_factor_requirement.enable` / `.disable`).',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchWorkspaceBody,
      response: responses({ 200: Workspace }, [400, 403, 404, 409, 422]),
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
      tags, security: bearerSecurity, operationId: 'addWorkspaceMember', summary: 'Add a member, or invite one',
      description:
        'Adds an existing user by email or user_id: 201 with the member. An e-mail that has no account is invited instead: 202 ' +
        'with the invitation, whose accept_url (shown in this answer only, and e-mailed to the person through the service\'s mail ' +
        'driver, SVC_MAIL; its token is stored hashed) the person opens to make ' +
        'their account and join with the role, within 7 days, whatever SVC_SIGNUP says. Inviting the same e-mail again revokes ' +
        'the older link. At most 100 pending invitations per workspace (422 reason TOO_MANY_INVITATIONS). Needs admin or owner; ' +
        'only an owner may add or invite an owner. Accepts idempotency-key (a replayed invitation comes without its accept_url).',
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }), body: AddMemberBody,
      response: responses({ 201: Member, 202: Invitation }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return s.idempotency.run<MemberT | InvitationT>(request, reply, headerOf(request, 'idempotency-key'),
      (id) => (isId('invitation', id) ? s.invitations.loadInvitation(scope.workspaceId, id) : s.workspaces.loadMemberById(scope.workspaceId, id)),
      async (tx) => {
        const added = await s.workspaces.addMember(scope, request.body, tx);
        if ('invitation' in added) {
          reply.header('location', `/v1/workspaces/${scope.workspaceId}/invitations/${added.invitation.id}`);
          return { status: 202, body: added.invitation, resourceId: added.invitation.id };
        }
        reply.header('location', `/v1/workspaces/${scope.workspaceId}/members/${added.member.user_id}`);
        return { status: 201, body: added.member, resourceId: added.member.id };
      });
  });

  app.get('/v1/workspaces/:id/invitations', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listWorkspaceInvitations', summary: 'List invitations',
      description: 'The workspace\'s invitations, newest first, in every state (an expired one reads `expired`); never their links. Needs admin or owner.',
      params: IdParams, headers: requestHeaders(),
      querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(Invitation, 'A page of invitations') }),
    },
  }, async (request) => s.invitations.listInvitations(scopeOf(request), request.query));

  app.delete('/v1/workspaces/:id/invitations/:invitation_id', {
    config: { auth: 'workspace-path' },
    schema: {
      tags, security: bearerSecurity, operationId: 'revokeWorkspaceInvitation', summary: 'Revoke an invitation',
      description: 'Its link stops working at once. Needs admin or owner. One that is not pending (accepted, revoked) is 422 (reason INVITATION_NOT_PENDING).',
      params: InvitationParams, headers: requestHeaders(),
      response: responses({ 204: NoContent }, [400, 403, 404, 422]),
    },
  }, async (request, reply) => {
    await s.invitations.revokeInvitation(scopeOf(request), request.params.invitation_id);
    return reply.code(204).send();
  });

  app.post(verbPath('/v1/invitations', 'resolve'), {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'resolveInvitation', summary: 'What an invitation link shows',
      description:
        'Needs no credential: the page the link opens sends the token (in the body, never in a URL that logs keep). Answers the ' +
        'workspace\'s name, the e-mail, the role and whether an account with that e-mail exists. A link that does not work ' +
        '(unknown, used, revoked, expired) is 404, all alike.',
      body: ResolveInvitationBody,
      response: responses({ 200: InvitationPreview }, [400, 404]),
    },
  }, async (request) => s.invitations.preview(request.body.token));

  app.post(verbPath('/v1/invitations', 'accept'), {
    config: { auth: 'none' },
    schema: {
      tags, operationId: 'acceptInvitation', summary: 'Accept an invitation',
      description:
        'Needs no credential: the token proves the invitation, the password the account. Without an account of the invited ' +
        'e-mail, one is made with this password (8-256 characters; 400 INVALID_PASSWORD) and name, whatever SVC_SIGNUP says; ' +
        'with one, this must be its password (401 INVALID_CREDENTIALS, throttled like a sign-in: 429 SIGN_IN_THROTTLED). Then ' +
        'the account joins the workspace with the invited role (a member already keeps theirs) and the link is used: 201. Sign ' +
        'in next. A link that does not work is 404, also once the one who invited is no longer an owner or admin (rights are ' +
        'decided when the link is used).',
      body: AcceptInvitationBody,
      response: responses({ 201: AcceptedInvitation }, [400, 404, 409, 429]),
    },
  }, async (request, reply) => {
    const { token, password, name } = request.body;
    return reply.code(201).send(await s.invitations.accept(token, { password, name: name ?? null }, request.ip));
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
