// The `anthropic` model provider (API.md 8.6): the Messages API, streamed, through the official
// `@anthropic-ai/sdk`. Our system messages become the `system` prompt, tool calls become tool_use
// blocks of the assistant and tool results tool_result blocks of the next user message (the
// results of one assistant turn together, as the API requires); streamed input_json_delta
// fragments are assembled per content block and a call is yielded when its block stops. Usage is
// read from message_start and message_delta; a stream without message_stop was cut. A client is
// made per call, so a key lives only as long as its call.
import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageCreateParamsStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import { ModelProviderError, type ModelEndpoint, type ModelMessage, type ModelProvider, type ModelRequest, type ModelStreamEvent, type ToolCall } from './driver.js';
import { AnswerScrubber, heldText } from './answer-scrub.js';
import { aborted, clientOptions, estimatedUsage, parseArguments, RemoteCall, serverName } from './remote.js';

/** Anthropic's tool_use ids match ^[a-zA-Z0-9_-]+$; ids made by another provider may not. */
const safeId = (id: string) => id.replace(/[^a-zA-Z0-9_-]/g, '_') || 'call';

/** Our conversation as the Messages API's system prompt and alternating user/assistant messages. */
export function toAnthropicMessages(messages: ModelMessage[]): { system: string; messages: MessageParam[] } {
  const system: string[] = [];
  const out: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  // Consecutive blocks of one role go in one message: the API wants the roles to alternate, and
  // every tool result of an assistant turn in the one user message that follows it.
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') system.push(m.content);
    else if (m.role === 'user') push('user', [{ type: 'text', text: m.content || '(empty message)' }]);
    else if (m.role === 'tool') push('user', [{ type: 'tool_result', tool_use_id: safeId(m.tool_call_id), content: m.content || '(no output)' }]);
    else {
      const blocks: ContentBlockParam[] = m.content ? [{ type: 'text', text: m.content }] : [];
      for (const c of m.tool_calls ?? []) blocks.push({ type: 'tool_use', id: safeId(c.id), name: c.name, input: c.arguments });
      // The API refuses an empty text block; an answer that said nothing still takes its place.
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '(no answer)' }]);
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

/** Cached prompt tokens are input too (billed at other rates, which the price table does not know). */
function inputTokens(u: { input_tokens: number | null; cache_creation_input_tokens: number | null; cache_read_input_tokens: number | null }): number {
  return (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
}

function stopReason(reason: string | null, calls: number): 'end' | 'tool_calls' | 'length' {
  if (reason === 'max_tokens' || reason === 'model_context_window_exceeded') return 'length';
  if (reason === 'tool_use' || calls > 0) return 'tool_calls';
  return 'end'; // end_turn, stop_sequence, refusal, pause_turn
}

/** Reads an SDK error's body `{type: "error", error: {type, message}}` without quoting the SDK's own message. */
function describe(err: InstanceType<typeof Anthropic.APIError>) {
  const inner = ((err.error ?? {}) as { error?: { type?: unknown; message?: unknown } }).error ?? {};
  return {
    status: err.status,
    headers: err.headers,
    code: typeof inner.type === 'string' ? inner.type : undefined,
    message: typeof inner.message === 'string' ? inner.message : undefined,
  };
}

export function createAnthropicProvider(endpoint: ModelEndpoint): ModelProvider {
  const server = serverName('the Anthropic API', endpoint.baseUrl);

  async function* stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    if (request.signal.aborted) throw aborted();
    const key = request.apiKey ?? endpoint.apiKey;
    const client = new Anthropic(clientOptions(endpoint, key));
    const { system, messages } = toAnthropicMessages(request.messages);
    const body: MessageCreateParamsStreaming = {
      model: request.model,
      max_tokens: request.maxOutputTokens,
      messages,
      stream: true,
      ...(system ? { system } : {}),
      ...(request.tools.length
        ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as { type: 'object' } })) }
        : {}),
    };

    const remote = new RemoteCall(request.signal, endpoint.timeoutMs, server, key);
    const scrubbed = new AnswerScrubber(key);
    const blocks = new Map<number, { id: string; name: string; json: string }>();
    const calls: ToolCall[] = [];
    let text = '';
    let input: number | null = null;
    let output: number | null = null;
    let reason: string | null = null;
    let stopped = false;
    try {
      const events = await client.messages.create(body, { signal: remote.signal });
      remote.streaming = true;
      for await (const event of events) {
        remote.touch();
        if (event.type === 'message_start') {
          input = inputTokens(event.message.usage);
          output = event.message.usage.output_tokens ?? null;
        } else if (event.type === 'content_block_start') {
          const block = event.content_block;
          if (block.type === 'tool_use') blocks.set(event.index, { id: block.id, name: block.name, json: '' });
        } else if (event.type === 'content_block_delta') {
          const delta = event.delta;
          if (delta.type === 'text_delta' && delta.text) {
            text += delta.text;
            const safe = scrubbed.push(delta.text);
            if (safe) yield { type: 'text', text: safe };
          } else if (delta.type === 'input_json_delta') {
            const block = blocks.get(event.index);
            if (block) block.json += delta.partial_json;
          } // thinking and signature deltas are not the answer: dropped
        } else if (event.type === 'content_block_stop') {
          const block = blocks.get(event.index);
          if (block) {
            blocks.delete(event.index);
            const made = { id: block.id, name: block.name, arguments: scrubbed.json(parseArguments(block.json)) };
            calls.push(made);
            yield { type: 'tool_call', call: made };
          }
        } else if (event.type === 'message_delta') {
          reason = event.delta.stop_reason ?? reason;
          // message_delta's counts are totals so far, not increments.
          if (typeof event.usage.output_tokens === 'number') output = event.usage.output_tokens;
          if (typeof event.usage.input_tokens === 'number') input = inputTokens(event.usage);
        } else if (event.type === 'message_stop') {
          stopped = true;
        }
      }
    } catch (err) {
      const answered = err instanceof Anthropic.APIError && !(err instanceof Anthropic.APIConnectionError) && !(err instanceof Anthropic.APIUserAbortError);
      if (!request.signal.aborted) yield* heldText(scrubbed);
      throw remote.failure(err, answered ? describe(err) : null, err instanceof Anthropic.APIConnectionTimeoutError);
    } finally {
      remote.dispose();
    }
    if (!request.signal.aborted) yield* heldText(scrubbed);
    remote.assertComplete(stopped, 'message_stop');
    const estimate = estimatedUsage(request.messages, text, calls);
    yield { type: 'done', usage: { input_tokens: input ?? estimate.input_tokens, output_tokens: output ?? estimate.output_tokens }, stop_reason: stopReason(reason, calls.length) };
  }

  return { name: 'anthropic', stream };
}
