import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { bearerSecurity, NoContent, requestHeaders, responses, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { ApiTokenItem, CreateApiTokenBody, CreatedApiToken } from './tokens.schemas.js';

const tags = ['api tokens'];

export function apiTokenRoutes(app: App, s: Pick<Services, 'apiTokens'>): void {
  app.get('/v1/api_tokens', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listApiTokens', summary: 'List API tokens',
      description: 'Tokens of the workspace, newest first. The token value is never part of a list item.',
      headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(ApiTokenItem, 'A page of API tokens') }),
    },
  }, async (request) => s.apiTokens.listTokens(scopeOf(request), request.query));

  app.post('/v1/api_tokens', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createApiToken', summary: 'Create an API token',
      description:
        'Needs the owner or admin role. The full token is in this response only. ' +
        '`expires_at` is Unix seconds and must be in the future. ' +
        'No idempotency-key: a replay could not show the secret again. 422 WORKSPACE_DELETING once the workspace\'s deletion started.',
      headers: requestHeaders(), body: CreateApiTokenBody,
      response: responses({ 201: CreatedApiToken }, [400, 403, 422]),
    },
  }, async (request, reply) => {
    const created = await s.apiTokens.createToken(scopeOf(request), request.body);
    reply.header('location', `/v1/api_tokens/${created.id}`).header('cache-control', 'no-store');
    return reply.code(201).send(created);
  });

  app.delete('/v1/api_tokens/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'revokeApiToken', summary: 'Revoke an API token',
      description: 'Needs the owner or admin role. The token is deleted at once and stops working on every instance; it cannot be recovered.',
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 53, description: 'tok_ id' }) }),
      headers: requestHeaders(),
      response: responses({ 204: NoContent }),
    },
  }, async (request, reply) => {
    await s.apiTokens.revokeToken(scopeOf(request), request.params.id);
    return reply.code(204).send();
  });
}
