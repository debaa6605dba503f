// The `openai` model provider (API.md 8.6): the OpenAI-compatible Chat Completions protocol,
// streamed, with function tools, through the official `openai` package. The same protocol reaches
// OpenAI, Ollama (http://127.0.0.1:11434/v1), vLLM, llama.cpp server and OpenRouter; what differs
// between them is handled here: a server may send no usage (estimated then), no tool call ids
// (generated), tool calls without `index` (such servers send each call whole, so its position in
// the chunk stands for it), finish_reason "stop" on an answer that calls tools (still tool_calls),
// and errors inside the stream. A client is made per call (cheap next to a model call), so a key
// lives only as long as its call.
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ModelProviderError, type ModelEndpoint, type ModelMessage, type ModelProvider, type ModelRequest, type ModelStreamEvent, type ToolCall } from './driver.js';
import { AnswerScrubber, heldText } from './answer-scrub.js';
import { aborted, clientOptions, estimatedUsage, parseArguments, RemoteCall, serverName } from './remote.js';

/** A tool call being assembled from its streamed fragments. */
interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** Our conversation as Chat Completions messages: tool calls carry their arguments as JSON text. */
export function toOpenAiMessages(messages: ModelMessage[]): ChatCompletionMessageParam[] {
  return messages.map((m): ChatCompletionMessageParam => {
    if (m.role === 'tool') return { role: 'tool', tool_call_id: m.tool_call_id, content: m.content };
    if (m.role !== 'assistant' || !m.tool_calls?.length) return { role: m.role, content: m.content };
    return {
      role: 'assistant',
      // OpenAI takes null content beside tool calls; some servers refuse an empty string there.
      content: m.content || null,
      tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
    };
  });
}

function stopReason(finish: string | null, calls: number): 'end' | 'tool_calls' | 'length' {
  if (finish === 'length') return 'length';
  // Ollama (before 0.5) and some llama.cpp builds answer "stop" on a message that calls tools.
  if (finish === 'tool_calls' || finish === 'function_call' || calls > 0) return 'tool_calls';
  return 'end';
}

/** Reads what an SDK error says (the body's `error` object) without ever quoting the SDK's own message. */
function describe(err: InstanceType<typeof OpenAI.APIError>) {
  const body = (err.error ?? {}) as { message?: unknown; code?: unknown; type?: unknown };
  // OpenRouter puts the upstream HTTP status in `code` of an error sent inside the stream.
  const status = err.status ?? (typeof body.code === 'number' && body.code >= 400 && body.code < 600 ? body.code : undefined);
  const code = typeof body.code === 'string' ? body.code : typeof body.type === 'string' ? body.type : undefined;
  return { status, headers: err.headers, code, message: typeof body.message === 'string' ? body.message : undefined };
}

export function createOpenAiProvider(endpoint: ModelEndpoint): ModelProvider {
  const server = serverName('the OpenAI-compatible server', endpoint.baseUrl);
  // OpenAI's newer models refuse max_tokens; the other servers of this protocol know only max_tokens.
  const maxParam = new URL(endpoint.baseUrl).hostname.endsWith('openai.com') ? 'max_completion_tokens' : 'max_tokens';

  async function* stream(request: ModelRequest): AsyncGenerator<ModelStreamEvent> {
    if (request.signal.aborted) throw aborted();
    const key = request.apiKey ?? endpoint.apiKey;
    // organization and project explicit, so OPENAI_ORG_ID or OPENAI_PROJECT_ID in the environment are not sent.
    const client = new OpenAI({ ...clientOptions(endpoint, key), organization: null, project: null });
    const body = {
      model: request.model,
      messages: toOpenAiMessages(request.messages),
      stream: true,
      stream_options: { include_usage: true },
      [maxParam]: request.maxOutputTokens,
      ...(request.tools.length
        ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) }
        : {}),
    } as ChatCompletionCreateParamsStreaming;

    const remote = new RemoteCall(request.signal, endpoint.timeoutMs, server, key);
    const scrubbed = new AnswerScrubber(key);
    const partials = new Map<number, PartialCall>();
    let text = '';
    let finish: string | null = null;
    let usage: { prompt_tokens?: number | null; completion_tokens?: number | null } | null = null;
    try {
      const chunks = await client.chat.completions.create(body, { signal: remote.signal });
      remote.streaming = true;
      for await (const chunk of chunks) {
        remote.touch();
        if (chunk.usage) usage = chunk.usage;
        // One choice is asked for (no `n`); a server that sends more is read for the first only.
        const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
        if (!choice) continue;
        const delta = choice.delta ?? {};
        // Reasoning text some servers stream beside the answer (delta.reasoning) is not the answer: dropped.
        if (typeof delta.content === 'string' && delta.content !== '') {
          text += delta.content;
          const safe = scrubbed.push(delta.content);
          if (safe) yield { type: 'text', text: safe };
        }
        for (const [position, part] of (delta.tool_calls ?? []).entries()) {
          const index = typeof part.index === 'number' ? part.index : position;
          let partial = partials.get(index);
          if (!partial) partials.set(index, (partial = { id: '', name: '', args: '' }));
          if (part.id) partial.id = part.id;
          const name = part.function?.name;
          if (name && partial.name !== name) partial.name += name;
          const args: unknown = part.function?.arguments;
          if (typeof args === 'string') partial.args += args;
          else if (args !== undefined && args !== null) partial.args += JSON.stringify(args); // a server that sends the object itself
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    } catch (err) {
      const answered = err instanceof OpenAI.APIError && !(err instanceof OpenAI.APIConnectionError) && !(err instanceof OpenAI.APIUserAbortError);
      if (!request.signal.aborted) yield* heldText(scrubbed);
      throw remote.failure(err, answered ? describe(err) : null, err instanceof OpenAI.APIConnectionTimeoutError);
    } finally {
      remote.dispose();
    }
    if (!request.signal.aborted) yield* heldText(scrubbed);
    remote.assertComplete(finish !== null, 'finish_reason');
    const calls: ToolCall[] = [...partials.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, p]) => ({ id: p.id || `call_${randomBytes(12).toString('hex')}`, name: p.name, arguments: scrubbed.json(parseArguments(p.args)) }));
    for (const made of calls) yield { type: 'tool_call', call: made };
    const estimate = estimatedUsage(request.messages, text, calls);
    yield {
      type: 'done',
      usage: {
        input_tokens: typeof usage?.prompt_tokens === 'number' ? usage.prompt_tokens : estimate.input_tokens,
        output_tokens: typeof usage?.completion_tokens === 'number' ? usage.completion_tokens : estimate.output_tokens,
      },
      stop_reason: stopReason(finish, calls.length),
    };
  }

  return { name: 'openai', stream };
}
