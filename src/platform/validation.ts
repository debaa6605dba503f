// Request validation rules shared by every route (API.md sections 1-2: JSON bodies, wrong types
// and unknown fields are 400; every body is bounded in size, encoding and nesting before it is
// parsed or walked).
import AjvCompiler from '@fastify/ajv-compiler';
import { isUtf8 } from 'node:buffer';
import { parse as parseQuery } from 'node:querystring';
import type { FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify';
import { ApiError } from './errors.js';

type SchemaController = NonNullable<FastifyServerOptions['schemaController']>;

/**
 * Query strings, path parameters and headers are text on the wire, so they are coerced to their
 * schema's types (`?limit=10` -> 10). A JSON body already carries types: `{"name": 5}` or
 * `{"expires_at": "soon"}` is a 400, never silently stored as "5". Hence two Ajv instances, one
 * without coercion for bodies; both otherwise use the app's ajv options.
 */
export function bodyStrictValidation(): SchemaController {
  return {
    compilersFactory: {
      buildValidator(externalSchemas: Record<string, unknown>, ajvOptions: unknown) {
        const options = ajvOptions as { customOptions?: Record<string, unknown> };
        // The pool's compilers take the whole route definition ({schema, method, url, httpPart}),
        // whatever its type declarations say. Each is made on the first request that needs it:
        // the pool keys its Ajv instances by the text of every named schema, which costs as much
        // as compiling a few routes.
        type RouteCompiler = (route: { httpPart?: string }) => Validate;
        let coercing: RouteCompiler | undefined;
        let strict: RouteCompiler | undefined;
        const compilerFor = (httpPart: string | undefined): RouteCompiler => {
          if (httpPart !== 'body') return (coercing ??= AJV_POOL(externalSchemas as PoolSchemas, ajvOptions as PoolOptions) as unknown as RouteCompiler);
          return (strict ??= AJV_POOL(externalSchemas as PoolSchemas, {
            ...options,
            customOptions: { ...options.customOptions, coerceTypes: false },
          } as PoolOptions) as unknown as RouteCompiler);
        };
        return ((route: { httpPart?: string }) => lazyValidator(() => compilerFor(route.httpPart)(route))) as never;
      },
    },
  };
}

/**
 * One Ajv pool for the process: apps built with the same named schemas and options (every app a
 * test file builds) share their Ajv instances and so each compiled validator.
 */
const AJV_POOL = AjvCompiler();
type PoolSchemas = Parameters<typeof AJV_POOL>[0];
type PoolOptions = Parameters<typeof AJV_POOL>[1];

type Validate = ((data: unknown) => unknown) & { errors?: unknown };

/**
 * A route's validator compiled on its first request, not at start: compiling all of them eagerly
 * cost most of a second of CPU at every start (and in every test file's app), for routes most
 * processes never serve. Fastify reads `errors` off the function after a failed call, so the
 * compiled function's errors are copied onto the wrapper.
 */
function lazyValidator(compile: () => Validate): Validate {
  let compiled: Validate | undefined;
  const validate: Validate = (data) => {
    compiled ??= compile();
    const result = compiled(data);
    validate.errors = compiled.errors;
    return result;
  };
  return validate;
}

const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;

/**
 * Arrays and objects open at once in any JSON body (API.md sections 1-2). Above every per-feature
 * bound (install values and a manifest's Kubernetes objects: 64 levels, input schemas: 32) plus
 * the few levels of the body around them, so those bounds keep their own errors; anything deeper
 * is refused before any code walks it (400 NESTING_TOO_DEEP).
 */
export const MAX_BODY_NESTING = 128;
/**
 * After a 413 the rest of the body is read and dropped, up to this many bytes, so the client can
 * send it all and read the answer (closing while it still sends makes its kernel see a reset and
 * drop the answer); past it the connection is closed.
 */
export const BODY_DRAIN_BYTES = 8 * 1024 * 1024;

/** Whether JSON text opens more than `limit` arrays and objects at once: one pass over the text, strings skipped, no recursion. */
export function jsonNestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: brackets inside it are text
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

const nestingTooDeep = () => new ApiError('INVALID_ARGUMENT', `request body nests arrays and objects deeper than ${MAX_BODY_NESTING} levels`, {
  reason: 'NESTING_TOO_DEEP',
  fieldViolations: [{ field: 'body', description: `nests arrays and objects deeper than ${MAX_BODY_NESTING} levels` }],
});
const invalidEncoding = () => new ApiError('INVALID_ARGUMENT', 'request body is not valid UTF-8', { reason: 'INVALID_ENCODING' });
// keep-alive overrides the `connection: close` Fastify sets on a parser error: the rest of the
// body is still read (see discardRest), so the connection stays usable once it has arrived.
const bodyTooLarge = (limit: number) => new ApiError('INVALID_ARGUMENT', `request body is larger than the ${limit} bytes the server accepts`, {
  reason: 'BODY_TOO_LARGE', status: 413, headers: { connection: 'keep-alive' },
});

type Done = (err: Error | null, body?: unknown) => void;
type BodyStream = NodeJS.ReadableStream & { removeListener(event: string, fn: (...args: never[]) => void): unknown };

/** Reads and drops the rest of a refused body, up to BODY_DRAIN_BYTES; then closes the connection. */
function discardRest(request: FastifyRequest, payload: BodyStream): void {
  let dropped = 0;
  payload.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > BODY_DRAIN_BYTES) request.raw.socket?.destroy();
  });
  payload.on('error', () => {});
  payload.resume();
}

/**
 * A content-type parser over the raw bytes: the size limit (413, answered readably), strict UTF-8
 * (400 INVALID_ENCODING: a body is never silently changed into U+FFFD and stored), then `decode`
 * on the text. The byte length is counted as chunks arrive, so nothing past the limit is kept.
 */
function textBodyParser(fixedLimit: number | null, decode: (request: FastifyRequest, text: string, done: Done) => void) {
  return (request: FastifyRequest, payload: BodyStream, done: Done): void => {
    const limit = fixedLimit ?? request.routeOptions.bodyLimit;
    const declared = Number(request.headers['content-length']);
    if (declared > limit) {
      discardRest(request, payload);
      return done(bodyTooLarge(limit));
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    function onData(chunk: Buffer | string) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit) {
        stop();
        discardRest(request, payload);
        return done(bodyTooLarge(limit));
      }
      chunks.push(bytes);
    }
    function onEnd(err?: Error & { statusCode?: number }) {
      stop();
      if (err) {
        if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
        return done(err);
      }
      if (!Number.isNaN(declared) && received !== declared) {
        return done(new ApiError('INVALID_ARGUMENT', 'content-length does not match the body', { reason: 'BAD_CONTENT_LENGTH' }));
      }
      const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received);
      if (!isUtf8(bytes)) return done(invalidEncoding());
      try {
        decode(request, bytes.toString('utf8'), done);
      } catch (e) {
        done(e as Error);
      }
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
  };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A /v1 route that a server-rendered page's form posts to (application/x-www-form-urlencoded,
     * in the forms context of app.ts), with a CSRF token of its own: exempt from JSON only.
     */
    formBody?: boolean;
  }
}

/**
 * The /v1 API takes JSON bodies only. The form parser exists for the OAuth endpoints (RFC 6749
 * and 8628 use forms) and the browser pages, which live outside /v1 (but for the one form of the
 * sign-in through the OpenID provider, a route marked `formBody`); without this check a form
 * (or text/plain) body would reach /v1 handlers too. Every JSON body, of every route, passes the
 * size limit, strict UTF-8 and the nesting bound before it is parsed.
 */
export function registerJsonOnlyApi(app: FastifyInstance): void {
  // Many HTTP clients send `content-type: application/json` on every request, also on POSTs that
  // take no body (`:wait`, `:cancel`, DELETE). An empty body there means "no body"; on a route
  // that declares a body it is still malformed JSON. Non-empty bodies go to Fastify's own parser
  // (secure-json-parse: __proto__ and constructor poisoning are refused).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', textBodyParser(null, (request, text, done) => {
    if (text === '' && request.routeOptions.schema?.body === undefined) return done(null, undefined);
    if (jsonNestsDeeperThan(text, MAX_BODY_NESTING)) return done(nestingTooDeep());
    parseJson(request, text, done);
  }));
  // One hook for both checks of every request (each hook is a step on every request): the JSON
  // content type of a /v1/ body, then the text hygiene of forbiddenInRequest (same order as before).
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body !== undefined && (request.routeOptions.url ?? '').startsWith('/v1/') && !request.routeOptions.config.formBody) {
      const type = request.headers['content-type'];
      if (typeof type !== 'string' || !JSON_MEDIA_TYPE.test(type)) {
        return done(new ApiError('INVALID_ARGUMENT', 'unsupported content-type; send application/json', {
          reason: 'UNSUPPORTED_MEDIA_TYPE',
          fieldViolations: [{ field: 'header.content-type', description: 'must be application/json' }],
        }));
      }
    }
    const found = forbiddenInRequest(request);
    done(found ? forbiddenCharacters(found) : undefined);
  });
}

/**
 * application/x-www-form-urlencoded for the OAuth endpoints and the browser pages (registered in
 * their context only): the same size limit and strict UTF-8 as JSON, and a percent-encoded
 * sequence that is not UTF-8 is refused too rather than decoded to U+FFFD.
 */
export function registerFormBodies(app: FastifyInstance, bodyLimit: number): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', textBodyParser(bodyLimit, (_request, text, done) => {
    let malformed = false;
    const decodeURIComponent = (s: string) => {
      try {
        return globalThis.decodeURIComponent(s);
      } catch {
        malformed = true;
        return s;
      }
    };
    const form = parseQuery(text, '&', '=', { decodeURIComponent, maxKeys: 1000 });
    done(malformed ? invalidEncoding() : null, malformed ? undefined : form);
  }));
}

/**
 * Characters no text field of the API has a use for: C0 controls other than tab, line feed and
 * carriage return, DEL, C1 controls, and UTF-16 surrogates that are not part of a pair (lone
 * surrogates cannot be encoded as UTF-8: PostgreSQL refuses them and NUL, SQLite would store them).
 */
const FORBIDDEN_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** A node of the walk below: its value and how to name it (built only for the one string reported). */
interface WalkNode {
  value: unknown;
  key: string;
  parent: WalkNode | null;
}

const mayHoldText = (value: unknown): boolean => typeof value === 'string' || (value !== null && typeof value === 'object');

const pathOf = (node: WalkNode): string => {
  const keys: string[] = [];
  for (let n: WalkNode | null = node; n; n = n.parent) keys.push(n.key);
  return keys.reverse().join('.');
};

/**
 * The path of the first string (value or object key) holding a forbidden character, or null.
 * Iterative, and a path is spelled only for the string found: the walk is linear in the size of
 * the value (JSON bodies are bounded to MAX_BODY_NESTING levels before it runs).
 */
export function forbiddenCharacterAt(value: unknown, path: string): string | null {
  if (typeof value === 'string') return FORBIDDEN_CHARACTERS.test(value) ? path : null;
  if (value === null || typeof value !== 'object') return null;
  const stack: WalkNode[] = [{ value, key: path, parent: null }];
  while (stack.length) {
    const node = stack.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (FORBIDDEN_CHARACTERS.test(v)) return pathOf(node);
    } else if (v !== null && typeof v === 'object') {
      // Pushed in reverse, so the first offending string in document order is the one reported.
      // Numbers, booleans and null hold no text: they get no node (half the nodes of `[[0], [1], …]`).
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) if (mayHoldText(v[i])) stack.push({ value: v[i], key: String(i), parent: node });
      } else {
        const keys = Object.keys(v);
        for (const key of keys) if (FORBIDDEN_CHARACTERS.test(key)) return `${pathOf(node)}.${key.replace(FORBIDDEN_CHARACTERS, '?')}`;
        for (let i = keys.length - 1; i >= 0; i--) {
          const child = (v as Record<string, unknown>)[keys[i]!];
          if (mayHoldText(child)) stack.push({ value: child, key: keys[i]!, parent: node });
        }
      }
    }
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
 * Checked by registerJsonOnlyApi's hook; returns the field of the first such string, or null.
 */
export function forbiddenInRequest(request: FastifyRequest): string | null {
  // Walks only what can hold a string: no query string means an empty query, no body nothing to walk.
  const query = request.raw.url?.includes('?') ? forbiddenCharacterAt(request.query, 'query') : null;
  return forbiddenCharacterAt(request.params, 'path') ?? query ?? (request.body === undefined ? null : forbiddenCharacterAt(request.body, 'body'));
}

/**
 * application/json kept as the exact text received, for the payment webhooks (registered in their
 * context only): a provider signs the raw body, so it is verified before anything parses it. The
 * same size limit and strict UTF-8 as every JSON body.
 */
export function registerRawJsonBodies(app: FastifyInstance, bodyLimit: number): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', textBodyParser(bodyLimit, (_request, text, done) => done(null, text)));
}
