// What a snippet may ask of `platform.request`, checked in the worker (so a bad call throws inside
// the snippet at once) and again in the main thread before the bridge sees it (so a compromised
// worker could not widen it). The bridge authenticates the request itself: the snippet may never
// set credentials, hop-by-hop or forwarding headers, address another host or leave `/v1/`.
import { REQUEST_METHODS, type JsonValue, type PlatformRequest, type PlatformResponse, type RequestMethod } from './types.js';

export const MAX_PATH_LENGTH = 2048;
export const MAX_QUERY_PARAMS = 64;
export const MAX_QUERY_KEY_LENGTH = 128;
export const MAX_QUERY_VALUE_LENGTH = 2048;
export const MAX_HEADERS = 32;
export const MAX_HEADER_NAME_LENGTH = 64;
export const MAX_HEADER_VALUE_LENGTH = 1024;
/** The whole request as the snippet's JSON (body included). */
export const MAX_REQUEST_JSON_BYTES = 1024 * 1024;
/** The bridge's answer as JSON; a larger one is refused inside the snippet. */
export const MAX_RESPONSE_JSON_BYTES = 8 * 1024 * 1024;

/** Set by the host only: credentials, the tenant selector, hop-by-hop and framing headers. */
const FORBIDDEN_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'cookie2',
  'set-cookie',
  'svc-context',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'expect',
  'forwarded',
  'via',
  'origin',
  'referer',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-original-url',
  'x-rewrite-url',
]);
const FORBIDDEN_HEADER_PREFIXES = ['x-forwarded-', 'proxy-', 'sec-', 'x-svc-'];

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Printable characters and tab: no CR, LF, NUL or other control characters. */
const HEADER_VALUE = /^[\t\x20-\x7e\u0080-\uffff]*$/;
/** RFC 3986 path characters (pchar and "/"), percent escapes checked separately. */
const PATH_CHARS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@%/]*$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

function fail(message: string): { ok: false; message: string } {
  return { ok: false, message: `platform.request: ${message}` };
}

export function isForbiddenHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return FORBIDDEN_HEADERS.has(lower) || FORBIDDEN_HEADER_PREFIXES.some((p) => lower.startsWith(p));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks each segment once decoded: no `.`/`..`, no encoded separators or control characters. */
function checkPath(path: string): string | null {
  if (path.length > MAX_PATH_LENGTH) return `path is longer than ${MAX_PATH_LENGTH} characters`;
  if (!path.startsWith('/v1/')) return 'path must be a relative API path starting with /v1/ (no scheme, no host)';
  if (!PATH_CHARS.test(path)) return 'path has characters that must be percent-encoded';
  if (path.includes('//')) return 'path has an empty segment';
  for (const segment of path.slice(1).split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return 'path has a malformed percent-encoding';
    }
    if (decoded === '.' || decoded === '..') return 'path may not contain . or .. segments';
    if (decoded.includes('/') || decoded.includes('\\') || CONTROL.test(decoded)) {
      return 'path may not contain encoded slashes, backslashes or control characters';
    }
  }
  return null;
}

function scalar(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return null;
}

function addQuery(query: Record<string, string | string[]>, key: string, value: string): string | null {
  if (key.length === 0 || key.length > MAX_QUERY_KEY_LENGTH) return `query keys must be 1 to ${MAX_QUERY_KEY_LENGTH} characters`;
  if (value.length > MAX_QUERY_VALUE_LENGTH) return `query value of ${key} is longer than ${MAX_QUERY_VALUE_LENGTH} characters`;
  const existing = query[key];
  if (existing === undefined) query[key] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else query[key] = [existing, value];
  return null;
}

function checkQuery(raw: unknown, search: string): Checked<Record<string, string | string[]>> {
  const query: Record<string, string | string[]> = Object.create(null);
  let count = 0;
  if (search) {
    for (const [key, value] of new URLSearchParams(search)) {
      if (++count > MAX_QUERY_PARAMS) return fail(`at most ${MAX_QUERY_PARAMS} query parameters`);
      const problem = addQuery(query, key, value);
      if (problem) return fail(problem);
    }
  }
  if (raw !== undefined && raw !== null) {
    if (!isPlainObject(raw)) return fail('query must be an object of strings, numbers or booleans');
    for (const [key, value] of Object.entries(raw)) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) {
        const text = scalar(item);
        if (text === null) return fail(`query value of ${key} must be a string, a finite number, a boolean or an array of them`);
        if (++count > MAX_QUERY_PARAMS) return fail(`at most ${MAX_QUERY_PARAMS} query parameters`);
        const problem = addQuery(query, key, text);
        if (problem) return fail(problem);
      }
    }
  }
  return { ok: true, value: { ...query } };
}

function checkHeaders(raw: unknown): Checked<Record<string, string>> {
  // A Map, then Object.fromEntries: a header named __proto__ stays a plain own property.
  const headers = new Map<string, string>();
  if (raw === undefined || raw === null) return { ok: true, value: {} };
  if (!isPlainObject(raw)) return fail('headers must be an object of strings');
  const entries = Object.entries(raw);
  if (entries.length > MAX_HEADERS) return fail(`at most ${MAX_HEADERS} headers`);
  for (const [name, value] of entries) {
    if (name.length > MAX_HEADER_NAME_LENGTH || !TOKEN.test(name)) return fail(`header name ${JSON.stringify(name.slice(0, MAX_HEADER_NAME_LENGTH))} is not a valid HTTP header name of at most ${MAX_HEADER_NAME_LENGTH} characters`);
    const lower = name.toLowerCase();
    if (isForbiddenHeader(lower)) {
      return fail(`header ${lower} may not be set by sandboxed code: the platform authenticates the request as the run's principal`);
    }
    const text = scalar(value);
    if (text === null) return fail(`header ${lower} must be a string`);
    if (text.length > MAX_HEADER_VALUE_LENGTH || !HEADER_VALUE.test(text)) {
      return fail(`header ${lower} must be at most ${MAX_HEADER_VALUE_LENGTH} printable characters`);
    }
    if (headers.has(lower)) return fail(`header ${lower} is given twice`);
    headers.set(lower, text);
  }
  return { ok: true, value: Object.fromEntries(headers) };
}

/** Validates and normalizes a request as the snippet wrote it (already parsed from its JSON). */
export function checkPlatformRequest(raw: unknown): Checked<PlatformRequest> {
  if (!isPlainObject(raw)) return fail('expects an object { method, path, query?, body?, headers? }');
  for (const key of Object.keys(raw)) {
    if (!['method', 'path', 'query', 'body', 'headers'].includes(key)) return fail(`unknown field ${JSON.stringify(key.slice(0, 64))}`);
  }
  const method = raw.method === undefined ? 'GET' : typeof raw.method === 'string' ? raw.method.toUpperCase() : null;
  if (method === null || !(REQUEST_METHODS as readonly string[]).includes(method)) {
    return fail(`method must be one of ${REQUEST_METHODS.join(', ')}`);
  }
  if (typeof raw.path !== 'string') return fail('path must be a string such as /v1/installs');
  const queryAt = raw.path.indexOf('?');
  const path = queryAt === -1 ? raw.path : raw.path.slice(0, queryAt);
  if (raw.path.includes('#')) return fail('path may not contain a fragment (#)');
  const pathProblem = checkPath(path);
  if (pathProblem) return fail(pathProblem);
  const query = checkQuery(raw.query, queryAt === -1 ? '' : raw.path.slice(queryAt + 1));
  if (!query.ok) return query;
  const headers = checkHeaders(raw.headers);
  if (!headers.ok) return headers;
  const request: PlatformRequest = { method: method as RequestMethod, path, query: query.value, headers: headers.value };
  if (raw.body !== undefined) {
    if (method === 'GET') return fail('a GET request has no body');
    request.body = raw.body as JsonValue;
  }
  return { ok: true, value: request };
}

/**
 * The bridge's answer, reduced to plain JSON (it is the host's code, but a bug there must not
 * hand the sandbox anything else) and serialized for the worker.
 */
export function serializePlatformResponse(response: PlatformResponse): Checked<string> {
  if (!isPlainObject(response)) return fail('the platform returned no response');
  const status = response.status;
  if (!Number.isInteger(status) || status < 100 || status > 599) return fail('the platform returned an invalid status');
  const headers = new Map<string, string>();
  if (isPlainObject(response.headers)) {
    for (const [name, value] of Object.entries(response.headers as Record<string, unknown>)) {
      const lower = name.toLowerCase();
      // Cookies are credentials: the sandboxed code never sees them, coming or going.
      if (lower === 'set-cookie') continue;
      if (typeof value === 'string') headers.set(lower, value);
      else if (typeof value === 'number') headers.set(lower, String(value));
      else if (Array.isArray(value)) headers.set(lower, value.map(String).join(', '));
    }
  }
  let json: string;
  try {
    json = JSON.stringify({ status, headers: Object.fromEntries(headers), body: response.body === undefined ? null : response.body });
  } catch {
    return fail('the platform returned a body that is not JSON');
  }
  if (Buffer.byteLength(json) > MAX_RESPONSE_JSON_BYTES) return fail(`the response is larger than ${MAX_RESPONSE_JSON_BYTES} bytes`);
  return { ok: true, value: json };
}
