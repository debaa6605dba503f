// What the two HTTP model adapters (openai.ts, anthropic.ts) share: one streamed call's guard (the
// caller's abort signal plus a stall deadline, and what its end means), the mapping of failures onto
// ModelProviderError, the scrubbing of the API key out of anything a server said, the parsing of a
// tool call's streamed JSON arguments, and the usage estimated when a server reports none.
// The SDKs' own error messages are never passed on: they may quote parts of the request.
import { clock } from '../../platform/clock.js';
import { retryAfterMs as parseRetryAfter } from '../../platform/retry-after.js';
import { estimateTokens } from './token-estimate.js';
import { ModelProviderError, type ModelEndpoint, type ModelErrorKind, type ModelMessage, type ModelUsage, type ToolCall } from './driver.js';

/** Longest wait taken from a retry-after header: a bogus header must not park a turn for hours. */
const MAX_RETRY_AFTER_MS = 600_000;
/** How much of a server's error message is quoted. */
const MAX_QUOTED = 300;
/** The key the SDKs are given when there is none (Ollama, llama.cpp): both refuse to send a request without one. */
const PLACEHOLDER_KEY = 'no-key';

/**
 * The client options both SDKs take alike. Always a key: without one the openai SDK refuses to
 * send, and the Anthropic SDK looks for credentials in the environment and in profile files.
 * No retries: the turn runner retries, with its own backoff and budget checks. Logging off, so
 * OPENAI_LOG or ANTHROPIC_LOG in the environment cannot make them log requests.
 */
export function clientOptions(endpoint: ModelEndpoint, key: string | null) {
  return { apiKey: key ?? PLACEHOLDER_KEY, baseURL: endpoint.baseUrl, maxRetries: 0, timeout: endpoint.timeoutMs, logLevel: 'off' as const };
}

/**
 * Removes the key from text a server sent. Besides the key itself, providers quote keys masked in
 * part (OpenAI: "sk-proj-****...abcd"): any word with a run of asterisks, any `sk-`-style token,
 * and any 8-character piece of the key go too.
 */
export function scrub(text: string, key: string | null): string {
  let out = text;
  if (key && key !== PLACEHOLDER_KEY) {
    out = out.split(key).join('[key]');
    for (let i = 0; key.length >= 12 && i + 8 <= key.length; i++) {
      const piece = key.slice(i, i + 8);
      if (out.includes(piece)) out = out.split(piece).join('[key]');
    }
  }
  return out
    .replace(/[\w-]*\*{3,}[\w-]*/g, '[key]')
    .replace(/\b(sk|rk|pk)-[\w-]{8,}/g, '[key]');
}

/** What a failed call said, read from an SDK error by the adapter. */
export interface Failure {
  /** the HTTP status; undefined when there was no answer, or the error came inside the stream */
  status?: number;
  headers?: Headers;
  /** the server's error code or type (e.g. context_length_exceeded, overloaded_error) */
  code?: string;
  /** the server's error message (scrubbed here before it is quoted) */
  message?: string;
}

const CONTEXT_TOO_LONG = /context[_ ]length|context (size|window)|maximum context|prompt is too long|too many tokens|exceed_context_size|input is too long/i;
const RATE_LIMITED = /rate[_ ]?limit/i;

/** The retry-after-ms header (OpenAI; milliseconds), else retry-after (seconds or a date), capped. */
function retryAfter(headers: Headers | undefined): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  const wait = headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0 ? ms : parseRetryAfter(headers?.get('retry-after'), clock.nowMs());
  return wait === null || wait === undefined ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.ceil(wait));
}

/**
 * The ModelProviderError of an answer or in-stream error. `server` names who answered in messages
 * ("the OpenAI-compatible server at 127.0.0.1:11434"); the key is scrubbed out of what it said.
 */
function failureOf(server: string, f: Failure, key: string | null): ModelProviderError {
  const said = f.message ? `: ${scrub(f.message.replace(/\s+/g, ' ').trim(), key).slice(0, MAX_QUOTED)}` : '';
  const code = f.code ? ` ${scrub(f.code, key).slice(0, 64)}` : '';
  const what = f.status === undefined ? `an error in its answer${code ? ` (${code.trim()})` : ''}` : `HTTP ${f.status}${code}`;
  const make = (kind: ModelErrorKind, text: string) => {
    const retryAfterMs = retryAfter(f.headers);
    return new ModelProviderError(kind, text, { ...(f.status === undefined ? {} : { status: f.status }), ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  };
  const s = f.status;
  const text = `${f.code ?? ''} ${f.message ?? ''}`;
  if (s === 401 || s === 403 || (s === undefined && /authentication|permission/i.test(f.code ?? ''))) {
    return make('invalid_key', `${server} refused the API key (${what})${said}`);
  }
  // OpenAI answers 429 when the account has no credit left: waiting does not help.
  if (/insufficient_quota/.test(f.code ?? '')) return make('bad_request', `${server} says the account's quota is used up (${what})${said}`);
  if (s === 429 || (s === undefined && RATE_LIMITED.test(f.code ?? ''))) return make('rate_limited', `${server} is rate limiting this key (${what})${said}`);
  // 413: the request is larger than the server takes (Anthropic's request_too_large), which only a long conversation makes.
  if (s === 413 || ((s === 400 || s === 422 || s === undefined) && CONTEXT_TOO_LONG.test(text))) {
    return make('context_too_long', `the conversation is too long for the model (${what})${said}`);
  }
  // An error inside a stream of any other kind is a server failing while it answered. A code is
  // not enough beside a 4xx status: Ollama answers 404 api_error for a model it does not have.
  if (s === undefined || s >= 500 || s === 408 || s === 409) {
    return make('unavailable', `${server} failed (${what})${said}`);
  }
  return make('bad_request', `${server} refused the request (${what})${said}`);
}

/** The system error code (ECONNREFUSED, UND_ERR_SOCKET...) somewhere down an error's causes, as " (CODE)". */
function systemCode(err: unknown): string {
  for (let e = err as { code?: unknown; cause?: unknown } | null, depth = 0; e && typeof e === 'object' && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string' && /^[A-Z_]{3,40}$/.test(e.code)) return ` (${e.code})`;
  }
  return '';
}

/**
 * One streamed call to a model server, around the SDK: the SDK's abort signal (aborted when the
 * caller's aborts, and when nothing has arrived for `stallMs`: the SDKs' own timeout stops at the
 * response headers, so a server that stops mid-answer would otherwise hold the turn until it times
 * out as a whole), and what the call's end means: the ModelProviderError of whatever the SDK threw,
 * or of an iteration that ended quietly (the SDKs end it without an error when their signal aborts)
 * before the answer was complete. A plain timer, not AbortSignal.timeout(): on Node 20 a garbage
 * collection can drop that signal before it fires.
 */
export class RemoteCall {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private stalled = false;
  /** the answer's headers came: a connection lost from now on cut the answer */
  streaming = false;
  private readonly onAbort = () => this.controller.abort(this.caller.reason);

  constructor(
    private readonly caller: AbortSignal,
    private readonly stallMs: number,
    /** who answers, in messages: "the Anthropic API at api.anthropic.com" */
    private readonly server: string,
    private readonly key: string | null,
  ) {
    caller.addEventListener('abort', this.onAbort, { once: true });
    if (caller.aborted) this.controller.abort(caller.reason);
    this.touch();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Something arrived: the stall deadline starts again. */
  touch(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.stalled = true;
      this.controller.abort(new DOMException('the model server stopped sending', 'TimeoutError'));
    }, this.stallMs);
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.caller.removeEventListener('abort', this.onAbort);
  }

  /**
   * The error to throw for what the SDK threw: `answered` is what the server said when it answered
   * with an error (the adapter reads it from the SDK's error), null for a connection that failed;
   * `sdkTimedOut` when the SDK's own deadline passed.
   */
  failure(err: unknown, answered: Failure | null, sdkTimedOut: boolean): ModelProviderError {
    if (this.caller.aborted) return aborted();
    if (err instanceof ModelProviderError) return err;
    if (answered) return failureOf(this.server, answered, this.key);
    if (this.stalled || sdkTimedOut) return this.timedOut();
    const code = systemCode(err);
    if (this.streaming) return new ModelProviderError('stream_cut', `${this.server} broke off its answer before the end${code}`);
    return new ModelProviderError('unavailable', `could not reach ${this.server}${code}`);
  }

  /** Throws unless the iteration that ended quietly ended with the whole answer (`missing` names its last event). */
  assertComplete(complete: boolean, missing: string): void {
    if (this.caller.aborted) throw aborted();
    if (this.stalled) throw this.timedOut();
    if (!complete) throw new ModelProviderError('stream_cut', `${this.server} ended its answer before the end (no ${missing})`);
  }

  private timedOut(): ModelProviderError {
    const seconds = Math.round(this.stallMs / 100) / 10;
    return this.streaming
      ? new ModelProviderError('stream_cut', `${this.server} stopped sending its answer (nothing for ${seconds} s)`)
      : new ModelProviderError('unavailable', `${this.server} did not answer within ${seconds} s`);
  }
}

export function aborted(): ModelProviderError {
  return new ModelProviderError('aborted', 'the model call was cancelled');
}

/**
 * A tool call's arguments from the JSON text the model streamed. Empty text is `{}` (a call
 * without arguments). Text that is not a JSON object keeps the call, with the arguments
 * `{_invalid_arguments: "<what the model wrote, cut at 2000 characters>"}`: the tool finds none of
 * its parameters (search, execute and propose_change answer INVALID_ARGUMENTS) and the model sees
 * in its own call what it wrote, so it can correct itself on the next step instead of the turn failing.
 */
export function parseArguments(raw: string): Record<string, unknown> {
  if (raw.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON: kept below
  }
  return { _invalid_arguments: raw.slice(0, 2000) };
}

/** Who answers, for messages: the provider and the endpoint's host (never its path or a key). */
export function serverName(label: string, baseUrl: string): string {
  return `${label} at ${new URL(baseUrl).host}`;
}

/**
 * Usage when a server reports none (Ollama and llama.cpp may not, even when asked with
 * stream_options.include_usage): about four characters a token, as the turn runner estimates
 * before a call, so budgets still move.
 */
export function estimatedUsage(messages: ModelMessage[], text: string, calls: ToolCall[]): ModelUsage {
  return { input_tokens: estimateTokens(messages), output_tokens: estimateTokens([{ role: 'assistant', content: text, tool_calls: calls }]) };
}
