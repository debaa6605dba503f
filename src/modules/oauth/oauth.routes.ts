// OAuth clients of a workspace and the service's JWKS (the client_credentials grant is served at
// POST /oauth/token: token.routes.ts dispatches on grant_type through services.grants).
import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { bearerSecurity, NoContent, requestHeaders, responses, type App, refTo } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { CreatedOAuthClient, CreateOAuthClientBody, Jwks, OAuthClientId, OAuthClientItem } from './clients.schemas.js';

const tags = ['oauth clients'];
const IdParams = Type.Object({ id: OAuthClientId });
const JWKS_MAX_AGE_SECONDS = 300;

export function oauthRoutes(app: App, s: Pick<Services, 'oauth'>): void {
  app.get('/.well-known/jwks.json', {
    config: { auth: 'none' },
    schema: {
      tags: ['oauth'], operationId: 'getJwks', summary: 'Public keys of the access-token signer',
      description:
        'The JSON Web Key Set that verifies access tokens from `POST /oauth/token` (grant client_credentials): EdDSA (Ed25519), ' +
        '`typ: at+jwt`, `iss` = this service\'s public URL, `aud` = `{iss}/v1`. Match a token\'s `kid` header to a key. Cacheable for 5 minutes.',
      response: { 200: refTo(Jwks) },
    },
  }, async (_request, reply) => {
    reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    return { keys: await s.oauth.publishedKeys() };
  });

  app.post('/v1/oauth_clients', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createOAuthClient', summary: 'Create an OAuth client',
      description:
        'Needs the owner or admin role; `role` (default member) may not exceed the caller\'s. The `client_secret` is in this response only. ' +
        'Exchange `client_id` and `client_secret` at `POST /oauth/token` with `grant_type=client_credentials` for a 1-hour JWT acting on this workspace. ' +
        'No idempotency-key: a replay could not show the secret again. 422 WORKSPACE_DELETING once the workspace\'s deletion started.',
      headers: requestHeaders(), body: CreateOAuthClientBody,
      response: responses({ 201: CreatedOAuthClient }, [400, 403, 422]),
    },
  }, async (request, reply) => {
    const created = await s.oauth.createClient(scopeOf(request), request.body);
    reply.header('location', `/v1/oauth_clients/${created.id}`).header('cache-control', 'no-store');
    return reply.code(201).send(created);
  });

  app.get('/v1/oauth_clients', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listOAuthClients', summary: 'List OAuth clients',
      description: 'Clients of the workspace, newest first. The secret is never part of a list item.',
      headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(OAuthClientItem, 'A page of OAuth clients') }),
    },
  }, async (request) => s.oauth.listClients(scopeOf(request), request.query));

  app.get('/v1/oauth_clients/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getOAuthClient', summary: 'Get an OAuth client',
      description: 'A client of the workspace, without its secret.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: OAuthClientItem }),
    },
  }, async (request) => s.oauth.getClient(scopeOf(request), request.params.id));

  app.delete('/v1/oauth_clients/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteOAuthClient', summary: 'Delete an OAuth client',
      description: 'Needs the owner or admin role. The client and every token issued to it stop working at once, on every instance.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 204: NoContent }),
    },
  }, async (request, reply) => {
    await s.oauth.deleteClient(scopeOf(request), request.params.id);
    return reply.code(204).send();
  });
}
