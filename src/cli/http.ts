// The typed HTTP client (openapi-fetch over the types generated from the OpenAPI document), with the
// credential and svc-context added per call, and API errors turned into one-line messages with the
// exit codes of API.md 8.4.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';
import type { Settings } from './config.js';
import { CliError, EXIT, exitCodeForStatus } from './errors.js';
import { nodeFetch } from './transport.js';

export { CliError, EXIT } from './errors.js';

interface ApiErrorBody {
  error?: { code?: string; message?: string; reason?: string; request_id?: string; field_violations?: { field: string; description: string }[] } | string;
  error_description?: string;
}

/** The error of a non-2xx response: `CODE: message (request id ...)`, field violations as detail lines. */
export function apiError(status: number, parsed: unknown, headers: Headers): CliError {
  // not JSON (a proxy's page): the status says enough
  const body: ApiErrorBody = parsed && typeof parsed === 'object' ? (parsed as ApiErrorBody) : {};
  const requestId = (typeof body.error === 'object' ? body.error.request_id : undefined) ?? headers.get('x-request-id');
  const rid = requestId ? ` (request id ${requestId})` : '';
  if (typeof body.error === 'object' && body.error) {
    const e = body.error;
    const details = (e.field_violations ?? []).map((v) => `  ${v.field}: ${v.description}`);
    return new CliError(`${e.code ?? status}: ${e.message ?? 'request failed'}${rid}`, exitCodeForStatus(status), details, e.reason);
  }
  if (typeof body.error === 'string') return new CliError(`${body.error}: ${body.error_description ?? ''}${rid}`, exitCodeForStatus(status));
  return new CliError(`HTTP ${status}${rid}`, exitCodeForStatus(status));
}

export function networkError(apiUrl: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
  return new CliError(`cannot reach ${apiUrl}: ${why} (is the server running? SVC_API_URL sets its address)`, EXIT.RETRYABLE);
}

export interface CallOptions {
  path?: Record<string, string>;
  query?: Record<string, unknown>;
  header?: Record<string, string>;
  body?: unknown;
  /** x-svc-auth of the operation: svc-context is sent on `workspace` routes */
  auth?: string;
  signal?: AbortSignal;
}

export interface ApiResult {
  status: number;
  /** the body exactly as received */
  text: string;
  /** the body parsed, when it is JSON */
  body: unknown;
  headers: Headers;
}

export interface Api {
  settings: Settings;
  typed: Client<paths>;
  /** Any operation of the document by method and path template; non-2xx throws CliError. */
  call(method: string, path: string, opts?: CallOptions): Promise<ApiResult>;
  /** The same, with the body left unread (an event stream, read as it comes). */
  open(method: string, path: string, opts?: CallOptions): Promise<Response>;
}

export function createApi(settings: Settings): Api {
  const typed = createClient<paths>({ baseUrl: settings.apiUrl, fetch: nodeFetch });
  typed.use({
    onRequest({ request }) {
      if (settings.token && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${settings.token}`);
      request.headers.set('user-agent', 'svc-cli');
      return request;
    },
  });
  const open = async (method: string, path: string, opts: CallOptions = {}): Promise<Response> => {
    const header: Record<string, string> = { ...opts.header };
    // An API token acts on its own workspace; a broad credential names one (spec 5, rules 7-8).
    if (opts.auth === 'workspace' && settings.context && settings.tokenKind !== 'api_token' && !header['svc-context']) header['svc-context'] = settings.context;
    let res: Response;
    let failure: unknown;
    try {
      const init = {
        params: { path: opts.path ?? {}, query: opts.query ?? {}, header },
        ...(opts.body !== undefined ? { body: opts.body } : {}),
        parseAs: 'stream' as const,
        ...(opts.signal ? { signal: opts.signal } : {}),
      };
      // The path is a template of the document, not a literal type: the typed methods serve the hand-written commands.
      const request = typed.request as unknown as (m: string, p: string, i: unknown) => Promise<{ response: Response; error?: unknown }>;
      ({ response: res, error: failure } = await request(method.toLowerCase(), path, init));
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      throw networkError(settings.apiUrl, err);
    }
    if (!res.ok) {
      const error = apiError(res.status, failure, res.headers);
      if (res.status === 403 && opts.auth === 'workspace' && !header['svc-context'] && settings.tokenKind !== 'api_token') {
        error.details.push('  no workspace selected: run `svc workspaces use ws_...` (or set SVC_CONTEXT)');
      }
      if (res.status === 401 && !settings.token) error.details.push('  not logged in: run `svc login`');
      throw error;
    }
    return res;
  };
  const call = async (method: string, path: string, opts: CallOptions = {}): Promise<ApiResult> => {
    const res = await open(method, path, opts);
    const text = res.status === 204 ? '' : await res.text();
    let body: unknown = undefined;
    if (text && (res.headers.get('content-type') ?? '').includes('json')) body = JSON.parse(text);
    return { status: res.status, text, body, headers: res.headers };
  };
  return { settings, typed, call, open };
}
