// How the machine agent talks to the service: one POST of JSON through a fetch-like function (the
// global fetch in `svc machine join`; an in-process transport for the local compute provider),
// each answer sorted into what the agent does with it, and the backoff between attempts.
import { retryAfterMs } from '../platform/retry-after.js';

/** The part of the global fetch the agent uses; anything that answers like it will do. */
export type AgentFetch = (
  url: string,
  init: { method: 'POST'; headers: Record<string, string>; body: string; signal?: AbortSignal },
) => Promise<{ status: number; headers: { get(name: string): string | null }; text(): Promise<string> }>;

export type Ok = { kind: 'ok'; status: number; body: Record<string, unknown> };
/** the service said no (a 4xx other than a rate limit): its error's reason and message */
export type Refused = { kind: 'refused'; status: number; reason: string | null; message: string };
/** no answer, or one that says "later": a network error, a timeout, a 5xx, a 429 that is not a full quota */
export type Unreachable = { kind: 'unreachable'; why: string; retryAfterMs: number | null };
export type Answer = Ok | Refused | Unreachable;

/** The one error shape (API.md section 2), read leniently: a proxy's HTML page is no error body. */
function errorOf(text: string): { reason: string | null; message: string | null } {
  try {
    const error = (JSON.parse(text) as { error?: { reason?: unknown; message?: unknown } }).error;
    return { reason: typeof error?.reason === 'string' ? error.reason : null, message: typeof error?.message === 'string' ? error.message : null };
  } catch {
    return { reason: null, message: null };
  }
}

/** A network failure in a few words; never the request (its body holds the token). */
function describeFailure(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  if (e.cause?.code === 'ECONNREFUSED') return 'connection refused';
  // undici says "fetch failed" and puts what happened in its cause (ENOTFOUND, ECONNRESET, bad port)
  const what = e.cause?.message ? `${e.message ?? 'fetch failed'}: ${e.cause.message}` : (e.message ?? String(err));
  return what.replace(/\s+/g, ' ').slice(0, 200);
}

export async function callService(
  fetchFn: AgentFetch,
  server: string,
  path: string,
  body: unknown,
  credential: string | undefined,
  timeoutMs: number,
): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (credential) headers.authorization = `Bearer ${credential}`;
  let status: number;
  let text: string;
  let retryAfterHeader: string | null;
  // Not the agent's stop signal: a request in flight is finished, only its own timeout cuts it. A
  // plain timer, not AbortSignal.timeout(): on Node 20 a garbage collection can drop that signal
  // before it fires, and a request the service never answers would then wait forever.
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  try {
    const res = await fetchFn(`${server.replace(/\/+$/, '')}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal: deadline.signal });
    status = res.status;
    retryAfterHeader = res.headers.get('retry-after');
    text = await res.text();
  } catch (err) {
    return { kind: 'unreachable', why: describeFailure(err, timeoutMs), retryAfterMs: null };
  } finally {
    clearTimeout(timer);
  }
  if (status >= 200 && status < 300) {
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return { kind: 'ok', status, body: parsed as Record<string, unknown> };
    } catch {
      // below
    }
    return { kind: 'unreachable', why: `${status} with a body that is not the service's JSON`, retryAfterMs: null };
  }
  const { reason, message } = errorOf(text);
  if (status >= 500 || status === 408 || (status === 429 && reason !== 'QUOTA_EXCEEDED')) {
    return { kind: 'unreachable', why: `${status}${message ? ` ${message}` : ''}`.slice(0, 300), retryAfterMs: retryAfterMs(retryAfterHeader, Date.now()) };
  }
  return { kind: 'refused', status, reason, message: message ?? `the service answered ${status}` };
}

/**
 * The wait before retry number `attempt` (1, 2, ...): `initialMs` doubling up to `maxMs`, of
 * which a random half ("equal jitter", so agents cut off together do not come back together and
 * none retries at once); at least what the service asked for in retry-after, within 5 x `maxMs`.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random: number, retryAfterMs: number | null): number {
  const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(attempt - 1, 30));
  const jittered = Math.round(ceiling / 2 + random * (ceiling / 2));
  return retryAfterMs === null ? jittered : Math.max(jittered, Math.min(retryAfterMs, 5 * maxMs));
}
