// Request validation rules shared by every route (API.md sections 1-2: JSON bodies, wrong types
// and unknown fields are 400).
import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { ApiError } from './errors.js';

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>;

/**
 * Query strings, path parameters and headers are text on the wire, so they are coerced to their
 * schema's types (`?limit=10` -> 10). A JSON body already carries types: `{"name": 5}` or
 * `{"expires_at": "soon"}` is a 400, never silently stored as "5". Hence two Ajv instances, one
 * without coercion for bodies; both otherwise use the app's ajv options.
 */
export function bodyStrictValidation(): SchemaController {
  const pool = AjvCompiler();
  return {
    compilersFactory: {
      buildValidator(externalSchemas: Record<string, unknown>, ajvOptions: unknown) {
        const options = ajvOptions as { customOptions?: Record<string, unknown> };
        // The pool's compilers take the whole route definition ({schema, method, url, httpPart}),
        // whatever its type declarations say.
        type RouteCompiler = (route: { httpPart?: string }) => unknown;
        const coercing = pool(externalSchemas as Parameters<typeof pool>[0], ajvOptions as Parameters<typeof pool>[1]) as unknown as RouteCompiler;
        const strict = pool(externalSchemas as Parameters<typeof pool>[0], {
          ...options,
          customOptions: { ...options.customOptions, coerceTypes: false },
        } as Parameters<typeof pool>[1]) as unknown as RouteCompiler;
        return ((route: { httpPart?: string }) => (route.httpPart === 'body' ? strict : coercing)(route)) as never;
      },
    },
  };
}

const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

/**
 * The /v1 API takes JSON bodies only. The form parser exists for the OAuth endpoints (RFC 6749
 * and 8628 use forms) and the browser pages, which live outside /v1; without this check a form
 * (or text/plain) body would reach /v1 handlers too.
 */
export function registerJsonOnlyApi(app: FastifyInstance): void {
  // Many HTTP clients send `content-type: application/json` on every request, also on POSTs that
  // take no body (`:wait`, `:cancel`, DELETE). An empty body there means "no body"; on a route
  // that declares a body it is still malformed JSON. Non-empty bodies go to Fastify's own parser
  // (secure-json-parse: __proto__ and constructor poisoning are refused).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.routeOptions.schema?.body === undefined) return done(null, undefined);
    parseJson(request, body as string, done);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined || !(request.routeOptions.url ?? '').startsWith('/v1/')) return done();
    const type = request.headers['content-type'];
    if (typeof type !== 'string' || !JSON_MEDIA_TYPE.test(type)) {
      return done(new ApiError('INVALID_ARGUMENT', 'unsupported content-type; send application/json', {
        reason: 'UNSUPPORTED_MEDIA_TYPE',
        fieldViolations: [{ field: 'header.content-type', description: 'must be application/json' }],
      }));
    }
    done();
  });
}

/**
 * Characters no text field of the API has a use for: C0 controls other than tab, line feed and
 * carriage return, DEL, C1 controls, and UTF-16 surrogates that are not part of a pair (lone
 * surrogates cannot be encoded as UTF-8: PostgreSQL refuses them and NUL, SQLite would store them).
 */
const FORBIDDEN_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Nesting the walk follows; deeper input is refused elsewhere (idempotency fingerprinting, schemas). */
const WALK_DEPTH = 300;

/** The path of the first string (value or object key) holding a forbidden character, or null. */
export function forbiddenCharacterAt(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'string') return FORBIDDEN_CHARACTERS.test(value) ? path : null;
  if (value === null || typeof value !== 'object' || depth > WALK_DEPTH) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = forbiddenCharacterAt(value[i], `${path}.${i}`, depth + 1);
      if (found) return found;
    }
    return null;
  }
  for (const key in value) {
    if (FORBIDDEN_CHARACTERS.test(key)) return `${path}.${key.replace(FORBIDDEN_CHARACTERS, '?')}`;
    const found = forbiddenCharacterAt((value as Record<string, unknown>)[key], `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return null;
}

function forbiddenCharacters(field: string): ApiError {
  const description = 'contains a control character or an unpaired UTF-16 surrogate';
  return new ApiError('INVALID_ARGUMENT', `${field} ${description}`, {
    reason: 'INVALID_CHARACTERS',
    fieldViolations: [{ field, description }],
  });
}

/**
 * Refuses NUL, other control characters and lone surrogates in every path parameter, query
 * parameter and body string (JSON and forms), before validation: the same 400 on both databases.
 */
export function registerTextHygiene(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    const found = forbiddenCharacterAt(request.params, 'path') ?? forbiddenCharacterAt(request.query, 'query') ?? forbiddenCharacterAt(request.body, 'body');
    done(found ? forbiddenCharacters(found) : undefined);
  });
}
