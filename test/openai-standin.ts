// A local stand-in for the OpenAI-compatible Chat Completions API (POST /v1/chat/completions with
// stream: true), as OpenAI, Ollama, vLLM, llama.cpp server and OpenRouter speak it: `data: <chunk
// JSON>` frames of chat.completion.chunk objects (a role chunk, content deltas, tool call
// fragments by index with the id and name in the first, a chunk with finish_reason, the usage
// chunk with no choices when stream_options.include_usage asks for it), then `data: [DONE]`.
// Errors are OpenAI's body `{error: {message, type, param, code}}`. Scripted replies choose the
// text chunks, the tool calls and how their arguments are split, and the servers' differences
// (no usage, no ids, whole calls without index, finish_reason "stop" with tool calls); faults: 429 with
// retry-after / retry-after-ms, 500, a context-length 400 (OpenAI's or llama.cpp's), a refused key
// (401, quoting the key masked as OpenAI does), an error inside the stream (OpenRouter), a stream
// cut or ended before its final chunk, a hang.
import type { IncomingHttpHeaders } from 'node:http';
import { ssePlan, startModelStandin, type ModelStandin, type Plan, type StreamShape } from './model-standin.js';

export const OPENAI_STANDIN_KEY = 'sk-proj-Standin0123456789abcdefghijKLMNOPQRSTuvwxyz';

export interface ScriptedCall {
  /** the call's id; null sends none (some llama.cpp and Ollama builds) */
  id?: string | null;
  name: string;
  /** the arguments' JSON text as the fragments it is streamed in */
  fragments: string[];
}

export interface OpenAiAnswer extends StreamShape {
  text?: string[];
  calls?: ScriptedCall[];
  /** default: tool_calls when there are calls, else stop */
  finish?: string;
  /** null: no usage chunk even when asked (Ollama, llama.cpp) */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  /** every tool call whole in one chunk, without `index` (Ollama before 0.5): fragments are joined */
  wholeCalls?: boolean;
  /** after the content, an error object inside the stream instead of the finish (OpenRouter) */
  streamError?: { code?: number | string; message: string; type?: string };
}

export type OpenAiReply =
  | OpenAiAnswer
  | { fault: 'rate_limited'; retryAfter?: string; retryAfterMs?: string }
  | { fault: 'server_error' }
  | { fault: 'context_too_long'; server?: 'openai' | 'llamacpp' }
  | { fault: 'bad_request'; message: string }
  | { fault: 'hang' };

export type OpenAiStandin = ModelStandin<OpenAiReply>;

const error = (status: number, message: string, type: string, code: string | number | null, headers: Record<string, string> = {}): Plan => ({
  kind: 'json', status, headers: { 'x-request-id': 'req_standin0001', ...headers }, body: { error: { message, type, param: null, code } },
});

/** OpenAI quotes a refused key masked: its start, asterisks, its last four characters. */
const masked = (key: string) => `${key.slice(0, 8)}${'*'.repeat(24)}${key.slice(-4)}`;

function answerPlan(a: OpenAiAnswer, body: any): Plan {
  const base = { id: 'chatcmpl-standin42', object: 'chat.completion.chunk', created: 1_764_000_000, model: String(body?.model ?? 'model'), system_fingerprint: 'fp_standin' };
  const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const frames: string[] = [chunk({ role: 'assistant', content: '' })];
  for (const t of a.text ?? []) frames.push(chunk({ content: t }));
  const id = (c: ScriptedCall, index: number) => (c.id === null ? {} : { id: c.id ?? `call_standin${index}` });
  if (a.wholeCalls && a.calls?.length) {
    frames.push(chunk({ tool_calls: a.calls.map((c, index) => ({ ...id(c, index), type: 'function', function: { name: c.name, arguments: c.fragments.join('') } })) }));
  } else {
    (a.calls ?? []).forEach((c, index) => {
      frames.push(chunk({ tool_calls: [{ index, ...id(c, index), type: 'function', function: { name: c.name, arguments: '' } }] }));
      for (const f of c.fragments) frames.push(chunk({ tool_calls: [{ index, function: { arguments: f } }] }));
    });
  }
  if (a.streamError) {
    frames.push(`data: ${JSON.stringify({ error: a.streamError })}\n\n`);
  } else {
    frames.push(chunk({}, a.finish ?? (a.calls?.length ? 'tool_calls' : 'stop')));
    const usage = a.usage === undefined ? { prompt_tokens: 321, completion_tokens: 17 } : a.usage;
    if (usage && body?.stream_options?.include_usage) {
      frames.push(`data: ${JSON.stringify({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })}\n\n`);
    }
    frames.push('data: [DONE]\n\n');
  }
  return ssePlan(frames, a, { 'x-request-id': 'req_standin0001' });
}

function plan(reply: OpenAiReply, body: any): Plan {
  if (!('fault' in reply)) return answerPlan(reply, body);
  switch (reply.fault) {
    case 'rate_limited':
      return error(429, 'Rate limit reached for gpt-4o-mini in organization org-standin on tokens per min (TPM): Limit 200000, Used 199800, Requested 1200.', 'tokens', 'rate_limit_exceeded', {
        ...(reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter }),
        ...(reply.retryAfterMs === undefined ? {} : { 'retry-after-ms': reply.retryAfterMs }),
      });
    case 'server_error':
      return error(500, 'The server had an error while processing your request. Sorry about that!', 'server_error', null);
    case 'context_too_long':
      return reply.server === 'llamacpp'
        ? { kind: 'json', status: 400, body: { error: { code: 400, message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error', n_prompt_tokens: 9000, n_ctx: 8192 } } }
        : error(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.", 'invalid_request_error', 'context_length_exceeded');
    case 'bad_request':
      return error(400, reply.message, 'invalid_request_error', null);
    case 'hang':
      return { kind: 'hang' };
  }
}

function checkKey(headers: IncomingHttpHeaders, key: string | null): Plan | null {
  if (key === null) return null;
  const sent = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1] ?? '';
  if (sent === key) return null;
  return error(401, `Incorrect API key provided: ${masked(sent)}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', 'invalid_api_key');
}

export async function startOpenAiStandin(): Promise<OpenAiStandin> {
  const standin = await startModelStandin<OpenAiReply>(
    { path: '/v1/chat/completions', baseUrl: (origin) => `${origin}/v1`, checkKey, plan },
    { text: ['Hello', ' there'] },
  );
  standin.key = OPENAI_STANDIN_KEY;
  return standin;
}
