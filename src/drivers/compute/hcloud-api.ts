// One request to Hetzner Cloud's API (https://docs.hetzner.cloud/) and what its failures mean for
// a workflow step: Node's fetch, a deadline per request, the caller's abort signal, and Hetzner's
// error body `{error: {code, message, details}}` mapped onto ComputeProviderError (retryable when
// waiting may help, with the wait a 429 asks for). The API token goes into the Authorization header
// and nowhere else: no message built here quotes it, and Hetzner's messages are scrubbed of it.
import { clock } from '../../platform/clock.js';
import { retryAfterMs as parseRetryAfter } from '../../platform/retry-after.js';
import { ComputeProviderError, type ComputeCallContext } from './driver.js';

export interface HcloudAnswer {
  status: number;
  headers: Headers;
  /** the parsed JSON body; null when there is none or it is not JSON */
  body: any;
}

/** Hetzner's answers are a few KB; a larger one is not Hetzner Cloud (or is broken). */
const MAX_BODY_BYTES = 1024 * 1024;
/** Longest wait taken from a Retry-After or RateLimit-Reset header: a bogus header must not park a step for days. */
const MAX_RETRY_AFTER_MS = 3600_000;
/** Error codes Hetzner documents as "try again": another action holds the server, a concurrent change, maintenance. */
const RETRYABLE_CODES = new Set(['locked', 'conflict', 'maintenance', 'resource_unavailable', 'robot_unavailable', 'timeout', 'bad_gateway', 'rate_limit_exceeded']);

export class HcloudApi {
  constructor(
    private readonly endpoint: string,
    private readonly token: string,
    private readonly timeoutMs: number,
  ) {}

  /**
   * Sends one request and returns its answer, whatever its status; throws only when there is no
   * answer (network error, deadline, abort). The deadline covers reading the body too. A plain
   * timer, not AbortSignal.timeout(): on Node 20 a garbage collection can drop that signal before
   * it fires (see drivers/cluster/kubernetes.ts).
   */
  async request(method: string, path: string, body: unknown, what: string, ctx: ComputeCallContext): Promise<HcloudAnswer> {
    if (ctx.signal.aborted) throw new ComputeProviderError(`${what}: aborted`, true);
    const controller = new AbortController();
    const onAbort = () => controller.abort(ctx.signal.reason);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException('request timed out', 'TimeoutError'));
    }, this.timeoutMs);
    try {
      const res = await fetch(`${this.endpoint}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: controller.signal,
        // A redirect would carry the token to wherever it points.
        redirect: 'error',
      });
      const text = await readCapped(res, controller);
      let parsed: any = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      return { status: res.status, headers: res.headers, body: parsed };
    } catch (err) {
      if (err instanceof ComputeProviderError) throw err;
      if (ctx.signal.aborted) throw new ComputeProviderError(`${what}: aborted`, true);
      if (timedOut) throw new ComputeProviderError(`${what}: Hetzner Cloud did not answer within ${Math.round(this.timeoutMs / 100) / 10} s`, true);
      throw new ComputeProviderError(`${what}: could not reach Hetzner Cloud at ${new URL(this.endpoint).host} (${networkCode(err)})`, true);
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
    }
  }

  /** The ComputeProviderError an unsuccessful answer stands for. */
  failure(what: string, res: HcloudAnswer): ComputeProviderError {
    const code = typeof res.body?.error?.code === 'string' ? res.body.error.code.slice(0, 64) : '';
    const message = typeof res.body?.error?.message === 'string' ? this.scrub(res.body.error.message.slice(0, 300)) : '';
    const said = message ? `${message} (${code || 'no code'}, HTTP ${res.status})` : `HTTP ${res.status}${code ? ` ${code}` : ''}`;
    if (res.status === 401) {
      return new ComputeProviderError(`${what}: Hetzner Cloud rejected the API token (SVC_HCLOUD_TOKEN is invalid or was revoked): ${said}`, false);
    }
    if (res.status === 403 && (code === 'forbidden' || code === 'token_readonly')) {
      return new ComputeProviderError(`${what}: the API token may not do this (SVC_HCLOUD_TOKEN needs Read & Write permission): ${said}`, false);
    }
    if (res.status === 429) return new ComputeProviderError(`${what}: rate limited by Hetzner Cloud: ${said}`, true, retryAfterMs(res.headers) ?? null);
    if (res.status >= 500 || RETRYABLE_CODES.has(code)) {
      return new ComputeProviderError(`${what}: Hetzner Cloud answered ${said}`, true, retryAfterMs(res.headers, false) ?? null);
    }
    return new ComputeProviderError(`${what}: Hetzner Cloud refused: ${said}`, false);
  }

  private scrub(text: string): string {
    return this.token ? text.split(this.token).join('[token]') : text;
  }
}

/** The body as text, at most MAX_BODY_BYTES (more aborts the request: not an answer of Hetzner's). */
async function readCapped(res: Response, controller: AbortController): Promise<string> {
  if (!res.body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) {
      controller.abort();
      throw new ComputeProviderError(`Hetzner Cloud's answer exceeded ${MAX_BODY_BYTES} bytes (HTTP ${res.status})`, false);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * How long the answer asks us to wait: Retry-After (seconds or an HTTP date), else, when
 * `rateLimitReset`, Hetzner's RateLimit-Reset (the UNIX time at which the budget is full again;
 * a small number is read as seconds from now). Undefined when neither says.
 */
export function retryAfterMs(headers: Headers, rateLimitReset = true): number | undefined {
  const clamp = (ms: number) => Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.ceil(ms)));
  const retryAfter = parseRetryAfter(headers.get('retry-after'), clock.nowMs());
  if (retryAfter !== null) return clamp(retryAfter);
  const reset = rateLimitReset ? headers.get('ratelimit-reset')?.trim() : undefined;
  if (reset && /^\d+$/.test(reset)) {
    const n = Number(reset);
    return clamp(n > 1e9 ? n * 1000 - clock.nowMs() : n * 1000);
  }
  return undefined;
}

/** A short name for why fetch failed (ECONNREFUSED, ENOTFOUND, ...), never its whole cause chain. */
function networkCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message.slice(0, 120);
  return err instanceof Error ? err.message.slice(0, 120) : String(err);
}
