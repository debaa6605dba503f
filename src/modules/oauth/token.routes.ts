// POST /oauth/token (RFC 6749 section 3.2): one endpoint, dispatching on grant_type to the
// handlers registered in `services.grants` (device_code: RFC 8628; client_credentials: RFC 6749 4.4).
import { Type } from 'typebox';
import { refTo, RESPONSE_HEADERS, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { OAuthError, oauthErrorBody, oauthErrorHandler, type TokenForm } from './oauth.errors.js';

const OAuthErrorBody = oauthErrorBody('authorization_pending, slow_down, access_denied, expired_token, invalid_grant, invalid_client, invalid_request, unsupported_grant_type');

const TokenBody = Type.Object(
  {
    grant_type: Type.String({ maxLength: 200, description: '`urn:ietf:params:oauth:grant-type:device_code` or `client_credentials`' }),
    device_code: Type.Optional(Type.String({ maxLength: 200, description: 'device_code grant: the device_code from POST /oauth/device/code' })),
    client_id: Type.Optional(Type.String({ maxLength: 200, description: 'client_credentials: the oac_ id (or send it with the secret as HTTP Basic); device_code: the client_id sent to /oauth/device/code, if any' })),
    client_secret: Type.Optional(Type.String({ maxLength: 200, description: 'client_credentials: the client secret, when not sent as HTTP Basic' })),
    scope: Type.Optional(Type.String({ maxLength: 1000, description: 'accepted and ignored: the token carries the client\'s role' })),
    audience: Type.Optional(Type.String({ maxLength: 1000, description: 'accepted and ignored: the audience is always `{public_url}/v1`' })),
  },
  {
    additionalProperties: false,
    description: 'A token request (RFC 6749 section 4.4.2 or RFC 8628 section 3.4), form-encoded or JSON.',
    examples: [
      { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS' },
      { grant_type: 'client_credentials', client_id: 'oac_01kaxq3m7y0c9v8t6r5p4n3m2k', client_secret: 'svc_cs_Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe' },
    ],
  },
);

const TokenResponse = Type.Object(
  {
    access_token: Type.String({ description: 'the token to send as `Authorization: Bearer`: a session token (device_code) or a JWT (client_credentials)' }),
    token_type: Type.Literal('Bearer', { description: 'always `Bearer`' }),
    expires_in: Type.Integer({ description: 'seconds until the token expires' }),
  },
  {
    $id: 'OAuthTokenResponse',
    additionalProperties: true,
    description: 'The access token (RFC 6749 section 5.1)',
    examples: [{ access_token: 'eyJhbGciOiJFZERTQSIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJvYWNfMDEifQ.c2ln', token_type: 'Bearer', expires_in: 3600 }],
  },
);

/** The schemas the token endpoint defines, registered as components (src/schemas.ts). */
export const TOKEN_SCHEMAS = [TokenResponse];

/** client_secret_basic (RFC 6749 2.3.1): `Authorization: Basic base64(urlencode(id):urlencode(secret))`. */
function basicCredentials(header: string | undefined): { clientId?: string; clientSecret?: string } {
  const m = header ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!m) return {};
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) throw new OAuthError('invalid_client', 'malformed Basic credentials');
  try {
    return { clientId: decodeURIComponent(decoded.slice(0, i)), clientSecret: decodeURIComponent(decoded.slice(i + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'malformed Basic credentials');
  }
}

export function tokenRoutes(app: App, s: Pick<Services, 'grants'>): void {
  app.post('/oauth/token', {
    config: { auth: 'none' },
    // OAuth clients get OAuth-shaped errors, including for validation failures.
    attachValidation: true,
    errorHandler: oauthErrorHandler,
    schema: {
      tags: ['oauth'], operationId: 'oauthToken', summary: 'OAuth 2.0 token endpoint',
      description:
        'Form-encoded (or JSON). `grant_type=urn:ietf:params:oauth:grant-type:device_code` with `device_code` (RFC 8628: the CLI polls ' +
        'until approved; errors authorization_pending, slow_down (+5 s interval), access_denied, expired_token, invalid_grant once exchanged) ' +
        'returns a 32-character session token. `grant_type=client_credentials` with client_id/client_secret (body or Basic) returns a ' +
        '1-hour JWT (`typ: at+jwt`) acting on the client\'s workspace. Responses carry `cache-control: no-store`. A body over 16 KiB is 413 `invalid_request`; the connection stays open.',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      // client_secret_basic (RFC 6749 2.3.1) for client_credentials; the device_code grant needs no credentials.
      security: [{}, { clientBasic: [] }],
      body: TokenBody,
      response: {
        200: refTo(TokenResponse),
        400: OAuthErrorBody,
        413: OAuthErrorBody,
        401: { ...OAuthErrorBody, headers: { 'WWW-Authenticate': RESPONSE_HEADERS.wwwAuthenticateBasic } },
      },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    try {
      if (request.validationError) throw new OAuthError('invalid_request', request.validationError.message);
      const form = request.body as TokenForm;
      const basic = basicCredentials(request.headers.authorization);
      const handler = s.grants.get(form.grant_type ?? '');
      if (!handler) throw new OAuthError('unsupported_grant_type', `grant_type "${form.grant_type ?? ''}" is not supported`);
      return await handler(form, basic);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      if (err.status === 401) reply.header('www-authenticate', 'Basic realm="svc"');
      return reply.code(err.status as 400 | 401).send({ error: err.error, error_description: err.description });
    }
  });
}
