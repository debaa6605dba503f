// A model that answers from a script, for the turn runner's tests in one process: the script is
// chosen by the turn's message, and the n-th model call of the turn gets the script's n-th answer
// (n counted from the assistant messages already in the conversation, so a resumed turn continues
// where it was). It records every request, so tests can read what the model was told. The real
// providers are tested against stand-in servers of their protocols; the built-in `local` model by
// its own tests and by the README walk.
import { ModelProviderError, type ModelMessage, type ModelProvider, type ModelRequest, type ModelStreamEvent, type ToolCall } from '../src/drivers/models/driver.js';

export interface ScriptedAnswer {
  text?: string;
  tool_calls?: { name: string; arguments: Record<string, unknown> }[];
  /** wait (abortably) before the first piece of text */
  waitMs?: number;
  /** fail with this kind instead */
  error?: ConstructorParameters<typeof ModelProviderError>[0];
  /** fail this many times before answering */
  failTimes?: number;
  usage?: { input_tokens: number; output_tokens: number };
}

export class ScriptedModel implements ModelProvider {
  readonly name = 'local' as const;
  readonly scripts = new Map<string, ScriptedAnswer[] | ((messages: ModelMessage[]) => ScriptedAnswer)>();
  readonly requests: ModelRequest[] = [];
  private readonly failures = new Map<string, number>();

  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    this.requests.push(request);
    const userAt = request.messages.map((m) => m.role).lastIndexOf('user');
    const message = request.messages[userAt]!.content;
    const script = this.scripts.get(message);
    if (!script) throw new ModelProviderError('bad_request', `no script for "${message}"`);
    const n = request.messages.slice(userAt).filter((m) => m.role === 'assistant').length;
    const answer = typeof script === 'function' ? script(request.messages) : script[Math.min(n, script.length - 1)]!;
    const key = `${message}#${n}`;
    if (answer.failTimes && (this.failures.get(key) ?? 0) < answer.failTimes) {
      this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
      throw new ModelProviderError(answer.error ?? 'unavailable', 'the scripted model is unavailable', { retryAfterMs: 1 });
    }
    if (answer.error && !answer.failTimes) throw new ModelProviderError(answer.error, `scripted ${answer.error}`);
    if (answer.waitMs) await sleep(answer.waitMs, request.signal);
    const text = answer.text ?? '';
    for (const piece of text.match(/.{1,8}/gs) ?? []) {
      if (request.signal.aborted) throw new ModelProviderError('aborted', 'aborted');
      await new Promise((r) => setImmediate(r));
      yield { type: 'text', text: piece };
    }
    const calls: ToolCall[] = (answer.tool_calls ?? []).map((c, i) => ({ id: `call_${n}_${i}`, name: c.name, arguments: c.arguments }));
    for (const call of calls) yield { type: 'tool_call', call };
    yield { type: 'done', usage: answer.usage ?? { input_tokens: 1000, output_tokens: 100 }, stop_reason: calls.length ? 'tool_calls' : 'end' };
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new ModelProviderError('aborted', 'aborted'));
    }, { once: true });
  });
}
