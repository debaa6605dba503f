// OAuth 2.0 error responses (RFC 6749 section 5.2, RFC 8628 section 3.5). The token endpoint
// answers in the OAuth shape `{error, error_description}` rather than the API's error body,
// because OAuth clients and libraries expect exactly that.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError } from '../../platform/errors.js';

/** The response schema of an OAuth error; `codes` says which error values the endpoint uses. */
export function oauthErrorBody(codes: string) {
  return Type.Object(
    {
      error: Type.String({ description: `RFC 6749 section 5.2 error code: ${codes}` }),
      error_description: Type.Optional(Type.String()),
    },
    { description: 'OAuth error (RFC 6749 section 5.2): this endpoint answers in the OAuth shape, not the API error body.' },
  );
}

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token';

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** 400 for everything but invalid_client (401), per RFC 6749 */
    readonly status: number = error === 'invalid_client' ? 401 : 400,
  ) {
    super(description);
  }
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  [extra: string]: string | number;
}

/** The form fields of a token request, already parsed (urlencoded or JSON). */
export type TokenForm = Record<string, string | undefined>;

/** Handles one grant_type at POST /oauth/token. */
export type GrantHandler = (form: TokenForm, auth: { clientId?: string; clientSecret?: string }) => Promise<TokenResponse>;

/**
 * Route error handler of the OAuth endpoints: a body the parsers refuse (malformed JSON, a media
 * type other than form or JSON, too large) is an OAuth `invalid_request`, not the API error body
 * (400; 413 for a body over the size limit, as on every other route);
 * anything else goes on to the app's handler.
 */
export function oauthErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  // The body parsers' own refusals (nesting, encoding, size: platform/validation.ts) are ApiErrors.
  const status = error.statusCode ?? (error instanceof ApiError ? error.status : 500);
  if (status >= 500 || status === 401 || status === 403 || status === 429) throw error;
  // A body over the size limit stays 413 with its keep-alive (the parser drains the rest of the
  // body, so the client can finish sending and read the answer; `connection: close` would reset it).
  if (status === 413 && error instanceof ApiError) reply.headers(error.options.headers ?? {});
  reply.code(status === 413 ? 413 : 400).header('cache-control', 'no-store').send({ error: 'invalid_request', error_description: error.message });
}
