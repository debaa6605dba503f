// The app's one way to call the API (API.md 8.8): openapi-fetch typed by the document the server
// serves (src/cli/generated/api.ts, the CLI's generation, checked for drift by cli-generated.test).
// The browser's HttpOnly session cookie authenticates; every method but GET and HEAD carries the
// x-svc-csrf header, which a cross-site form cannot send; workspace-scoped calls carry svc-context.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../../../src/cli/generated/api.ts';

export type Schemas = components['schemas'];
export type ErrorBody = Schemas['Error']['error'];

/** An answer other than 2xx, with the API's one error shape (API.md section 2). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(body.message);
  }
  get code(): ErrorBody['code'] {
    return this.body.code;
  }
  get reason(): string | undefined {
    return this.body.reason;
  }
  /** The field violations, keyed by field (`body.name`), for forms to show at their field. */
  violations(): Map<string, string> {
    return new Map((this.body.field_violations ?? []).map((v) => [v.field, v.description]));
  }
}

/** Paths that name their workspace themselves or act as the user: never given svc-context. */
const UNSCOPED = /^\/v1\/(me|auth\/|workspaces(\/|$)|lookup\/|plans$|openapi\.json$)/;

let currentWorkspace: string | null = null;
/** The workspace every scoped call acts in (the switcher sets it). */
export function setApiWorkspace(id: string | null): void {
  currentWorkspace = id;
}

/** Called when a call answers 401: the session ended (signed out elsewhere, expired, revoked). */
let onUnauthenticated: () => void = () => {};
export function setUnauthenticatedHandler(fn: () => void): void {
  onUnauthenticated = fn;
}

/** Every call: x-svc-csrf on writes, and a 401 ends the signed-in app. */
const csrf: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD') request.headers.set('x-svc-csrf', '1');
    return request;
  },
  onResponse({ response, request }) {
    if (response.status === 401 && !new URL(request.url).pathname.startsWith('/v1/auth/')) onUnauthenticated();
    return response;
  },
};

/** Workspace-scoped calls: svc-context of the current workspace unless the call names one. */
const scope: Middleware = {
  onRequest({ request }) {
    const path = new URL(request.url).pathname;
    if (currentWorkspace && !UNSCOPED.test(path) && !request.headers.has('svc-context')) request.headers.set('svc-context', currentWorkspace);
    return request;
  },
};

export const client = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
client.use(csrf, scope);

/**
 * Calls made as the person themselves, never with svc-context: the customer of an order draft
 * (API.md 8.7: a user credential without svc-context is the customer; with the seller's workspace
 * it is the seller's view), and the public offer link.
 */
export const personalClient = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });
personalClient.use(csrf);

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

function asError(status: number, error: unknown, requestId: string | null): ApiError {
  const body = (error as { error?: ErrorBody } | undefined)?.error;
  if (body && typeof body.message === 'string') return new ApiError(status, body);
  return new ApiError(status, {
    code: status >= 500 ? 'UNAVAILABLE' : 'INTERNAL',
    message: `the server answered ${status} without an error body`,
    request_id: requestId ?? '',
  });
}

/**
 * The data of a call, or throws ApiError. Usage: `await ok(client.GET('/v1/clusters', {}))`.
 * A network failure becomes UNAVAILABLE, so pages show one kind of error.
 */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch (err) {
    throw new ApiError(0, { code: 'UNAVAILABLE', message: `the server could not be reached (${(err as Error).message})`, request_id: '' });
  }
  if (answer.error !== undefined || !answer.response.ok) throw asError(answer.response.status, answer.error, answer.response.headers.get('x-request-id'));
  return answer.data as T;
}

/** A list page as every list route answers it (API.md section 3: keyset cursors, newest first). */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}
