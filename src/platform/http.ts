// Route-schema building blocks shared by every module, so each route declares its headers,
// parameters and every response status (success and errors) the same way, and the OpenAPI
// document lists them all.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static, type TSchema } from 'typebox';
import { SvcContextHeader } from './auth.js';
import { IfMatchHeader } from './etag.js';
import { IdempotencyKeyHeader } from './idempotency.js';

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  import('fastify').FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export const ErrorRef = Type.Unsafe<{ error: { code: string; message: string; request_id: string } }>({ $ref: 'Error#' });

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'INVALID_ARGUMENT: the request failed validation (see field_violations), a bad cursor or limit, a missing required header, or a body that is not UTF-8 (INVALID_ENCODING) or nests deeper than 128 levels (NESTING_TOO_DEEP)',
  401: 'UNAUTHENTICATED: missing, malformed, unknown, expired or revoked token',
  403: 'PERMISSION_DENIED: svc-context missing or naming another workspace, not a member, or role too low',
  404: 'NOT_FOUND: no such resource in the caller\'s workspace',
  413: 'INVALID_ARGUMENT (reason BODY_TOO_LARGE): the body is larger than the server accepts (SVC_BODY_LIMIT)',
  409: 'ABORTED (etag mismatch, `metadata.etag` holds the current etag; idempotency key in flight) or ALREADY_EXISTS',
  422: 'FAILED_PRECONDITION: the resource\'s state forbids this, or the idempotency key was used with another request',
  429: 'RESOURCE_EXHAUSTED: throttled; see retry-after',
  503: 'UNAVAILABLE: the service is shutting down or a dependency is down; see retry-after',
};

/** A response header as @fastify/swagger documents it (`headers` beside a response schema; the serializer ignores it). */
const header = (description: string, schema: Record<string, unknown> = { type: 'string' }) => ({ ...schema, description });

/**
 * The response headers the platform sends, declared once here so every route documents them the
 * same way (x-request-id and idempotent-replayed are added per route by the OpenAPI transform).
 */
export const RESPONSE_HEADERS = {
  etag: header('the resource\'s etag, quoted (`"3"`); send it back in if-match'),
  location: header('the URL path of the created resource; on 202 the operation (`/v1/operations/{id}`)'),
  wwwAuthenticate: header('the RFC 6750 challenge of the bearer scheme (`Bearer ...`)'),
  wwwAuthenticateBasic: header('`Basic realm="svc"`: the client authentication (HTTP Basic or body credentials) failed'),
  retryAfter: header('seconds to wait before retrying', { type: 'integer', minimum: 0 }),
  retryAfterConflict: header('seconds to wait before retrying, when the conflict is transient (idempotency key in flight, workspace being deleted)', { type: 'integer', minimum: 0 }),
};

const ERROR_HEADERS: Record<number, Record<string, unknown>> = {
  401: { 'WWW-Authenticate': RESPONSE_HEADERS.wwwAuthenticate },
  409: { 'retry-after': RESPONSE_HEADERS.retryAfterConflict },
  429: { 'retry-after': RESPONSE_HEADERS.retryAfter },
  503: { 'retry-after': RESPONSE_HEADERS.retryAfter },
};

/** One error status of a route's `response` map: the Error schema with the status's meaning and headers. */
export function errorResponse(status: number) {
  const headers = ERROR_HEADERS[status];
  return Type.Unsafe({ $ref: 'Error#', description: ERROR_DESCRIPTIONS[status] ?? 'error', ...(headers ? { headers } : {}) });
}

/**
 * A named resource schema (a TypeBox object with `$id`, registered once with app.addSchema, see
 * src/schemas.ts) as a reference: the document shows `#/components/schemas/<$id>` wherever it
 * appears, so client generators emit one type, and the serializer compiles it once.
 */
export function refTo<T extends TSchema>(schema: T): ReturnType<typeof Type.Unsafe<Static<T>>> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('refTo needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: `${id}#` });
}

/** A schema with `$id` becomes a reference to it; any other is used as it is. */
export function named<T extends TSchema>(schema: T): T {
  return (typeof (schema as { $id?: unknown }).$id === 'string' ? refTo(schema) : schema) as T;
}

/**
 * One success status of a `response` map: named schemas referenced, and the headers that status
 * carries: ETag on a versioned resource (one with an `etag` field; withEtag sends it), Location on
 * 201 of an addressable resource (one with an `id`) and on every 202 (the operation's URL).
 */
function successResponse(status: number, schema: TSchema): TSchema {
  const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
  const headers: Record<string, unknown> = {};
  if (status < 300 && properties.etag) headers.ETag = RESPONSE_HEADERS.etag;
  if (status === 202 || (status === 201 && properties.id)) headers.Location = RESPONSE_HEADERS.location;
  const ref = named(schema);
  if (Object.keys(headers).length === 0) return ref;
  const description = (schema as { description?: string }).description;
  return { ...ref, ...(description ? { description } : {}), headers } as TSchema;
}

/** Builds a `response` map: the success schemas plus the listed error statuses, all in the one error shape. */
export function responses<S extends Record<number, TSchema>>(success: S, errors: number[] = [400, 401, 403, 404]): S & Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const [status, schema] of Object.entries(success)) out[Number(status)] = successResponse(Number(status), schema);
  for (const status of new Set([...errors, 401, 503])) out[status] = errorResponse(status);
  return out as S & Record<number, TSchema>;
}

/**
 * A closed set of strings as `{type: string, enum: [...]}`: one enum in the OpenAPI document, and
 * fast-json-stringify writes it as a plain string (a union of literals makes it test each branch).
 */
export function StringEnum<const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

export const NoContent = Type.Unsafe<void>({ type: 'null', description: 'No content' });

/** A request header's value (the first, if repeated). */
export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The common request headers of spec 4.1; pick what a route accepts. */
export function requestHeaders(opts: { context?: boolean; ifMatch?: 'required' | 'optional'; idempotency?: 'required' | 'optional' } = {}) {
  const props: Record<string, TSchema> = {};
  if (opts.context !== false) props['svc-context'] = Type.Optional(SvcContextHeader);
  if (opts.ifMatch === 'required') props['if-match'] = IfMatchHeader;
  if (opts.ifMatch === 'optional') props['if-match'] = Type.Optional(IfMatchHeader);
  if (opts.idempotency === 'required') props['idempotency-key'] = IdempotencyKeyHeader;
  if (opts.idempotency === 'optional') props['idempotency-key'] = Type.Optional(IdempotencyKeyHeader);
  return Type.Object(props);
}

export const bearerSecurity = [{ bearerAuth: [] }];

/**
 * The Fastify path of an AIP-136 custom method, `POST /v1/things/{id}:verb`. find-my-way reads
 * `::` as a literal colon, but a parameter name would swallow it (`:id::verb` is a parameter named
 * `id::verb`), so a trailing parameter gets a regex that stops at the colon. `%3A` reaches the
 * same route because the app's rewriteUrl decodes it (decodeVerbColon in app.ts).
 *   verbPath('/v1/operations/:id', 'wait')  -> '/v1/operations/:id(^[^:/]+)::wait'
 *   verbPath('/v1/installs/:id/preview_hostnames', 'bindFloating') -> '/v1/installs/:id/preview_hostnames::bindFloating'
 */
export function verbPath(resourcePath: string, verb: string): string {
  if (!/^[A-Za-z][A-Za-z0-9]*$/.test(verb)) throw new Error(`custom method name must be alphanumeric: "${verb}"`);
  const lastSegment = resourcePath.slice(resourcePath.lastIndexOf('/') + 1);
  const base = lastSegment.startsWith(':') && !lastSegment.includes('(') ? `${resourcePath}(^[^:/]+)` : resourcePath;
  return `${base}::${verb}`;
}

/** The route template as clients see it (`/v1/operations/:id:wait`), for logs and metric labels. */
export function displayRoute(fastifyPath: string): string {
  // Drops a parameter's regex (one level of nested parentheses) and unescapes `::`.
  return fastifyPath.replace(/(:[A-Za-z0-9_]+)\((?:[^()\\]|\\.|\([^()]*\))*\)/g, '$1').replace(/::/g, ':');
}

/** Sends a single versioned resource with its quoted ETag header. */
export function withEtag<T extends { etag: string }>(reply: FastifyReply, resource: T): T {
  reply.header('etag', `"${resource.etag}"`);
  return resource;
}
