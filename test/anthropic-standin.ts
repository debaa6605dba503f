// A local stand-in for Anthropic's Messages API (POST /v1/messages with stream: true): named
// Server-Sent Events as Anthropic sends them (`event: message_start` with the input usage, a
// `ping`, content_block_start / content_block_delta (text_delta, input_json_delta) /
// content_block_stop per block, message_delta with the stop_reason and the output usage,
// message_stop). Errors are Anthropic's body `{type: "error", error: {type, message}}` with a
// request-id header. Scripted replies choose the text chunks and the tool calls with their JSON
// split in fragments; faults: 429 with retry-after, 500 api_error, 529 overloaded_error, a refused
// key (401), "prompt is too long" (400), an error event inside the stream, a stream cut or ended
// before message_stop, a hang.
import type { IncomingHttpHeaders } from 'node:http';
import { ssePlan, startModelStandin, type ModelStandin, type Plan, type StreamShape } from './model-standin.js';

export const ANTHROPIC_STANDIN_KEY = 'sk-ant-api03-Standin0123456789abcdefghijKLMNOPQRSTuvwxyz-AA';

export interface AnthropicAnswer extends StreamShape {
  text?: string[];
  calls?: { id?: string; name: string; fragments: string[] }[];
  /** default: tool_use when there are calls, else end_turn */
  stopReason?: string;
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number };
  /** after the content, an `event: error` instead of the end */
  streamError?: { type: string; message: string };
}

export type AnthropicReply =
  | AnthropicAnswer
  | { fault: 'rate_limited'; retryAfter?: string }
  | { fault: 'server_error' }
  | { fault: 'overloaded' }
  | { fault: 'context_too_long' }
  | { fault: 'hang' };

export type AnthropicStandin = ModelStandin<AnthropicReply>;

const error = (status: number, type: string, message: string, headers: Record<string, string> = {}): Plan => ({
  kind: 'json', status, headers: { 'request-id': 'req_011standin', ...headers }, body: { type: 'error', error: { type, message } },
});

const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

function answerPlan(a: AnthropicAnswer, body: any): Plan {
  const usage = a.usage ?? { input_tokens: 512, output_tokens: 23 };
  const frames: string[] = [
    event('message_start', {
      message: {
        id: 'msg_01Standin', type: 'message', role: 'assistant', model: String(body?.model ?? 'model'), content: [], stop_reason: null, stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cache_read_input_tokens ?? 0, output_tokens: 1 },
      },
    }),
    event('ping', {}),
  ];
  let index = 0;
  if (a.text?.length) {
    frames.push(event('content_block_start', { index, content_block: { type: 'text', text: '' } }));
    for (const t of a.text) frames.push(event('content_block_delta', { index, delta: { type: 'text_delta', text: t } }));
    frames.push(event('content_block_stop', { index }));
    index++;
  }
  for (const [n, c] of (a.calls ?? []).entries()) {
    frames.push(event('content_block_start', { index, content_block: { type: 'tool_use', id: c.id ?? `toolu_01Standin${n}`, name: c.name, input: {} } }));
    for (const f of ['', ...c.fragments]) frames.push(event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: f } }));
    frames.push(event('content_block_stop', { index }));
    index++;
  }
  if (a.streamError) {
    frames.push(event('error', { error: a.streamError }));
  } else {
    frames.push(event('message_delta', { delta: { stop_reason: a.stopReason ?? (a.calls?.length ? 'tool_use' : 'end_turn'), stop_sequence: null }, usage: { output_tokens: usage.output_tokens } }));
    frames.push(event('message_stop', {}));
  }
  return ssePlan(frames, a, { 'request-id': 'req_011standin' });
}

function plan(reply: AnthropicReply, body: any): Plan {
  if (!('fault' in reply)) return answerPlan(reply, body);
  switch (reply.fault) {
    case 'rate_limited':
      return error(429, 'rate_limit_error', 'This request would exceed the rate limit for your organization of 50,000 input tokens per minute.', {
        ...(reply.retryAfter === undefined ? {} : { 'retry-after': reply.retryAfter }),
        'anthropic-ratelimit-input-tokens-remaining': '0',
      });
    case 'server_error':
      return error(500, 'api_error', 'Internal server error');
    case 'overloaded':
      return error(529, 'overloaded_error', 'Overloaded');
    case 'context_too_long':
      return error(400, 'invalid_request_error', 'prompt is too long: 215311 tokens > 200000 maximum');
    case 'hang':
      return { kind: 'hang' };
  }
}

/** Anthropic takes the key as x-api-key; the SDK sends it as a bearer token. Either is accepted. */
function checkKey(headers: IncomingHttpHeaders, key: string | null): Plan | null {
  if (key === null) return null;
  const bearer = /^Bearer (.+)$/.exec(headers.authorization ?? '')?.[1];
  if (headers['x-api-key'] === key || bearer === key) return null;
  return error(401, 'authentication_error', 'invalid x-api-key');
}

export async function startAnthropicStandin(): Promise<AnthropicStandin> {
  const standin = await startModelStandin<AnthropicReply>(
    { path: '/v1/messages', baseUrl: (origin) => origin, checkKey, plan },
    { text: ['Hello', ' there'] },
  );
  standin.key = ANTHROPIC_STANDIN_KEY;
  return standin;
}
