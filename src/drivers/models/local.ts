// The `local` model provider (API.md 8.6): the default, offline and deterministic. It is not a
// language model but a rule-based planner: it understands a documented set of requests about the
// workspace (docs/agents.md, "The local model"), plans each as code-mode tool calls (execute,
// propose_change, ask_user, search; local/plans.ts), and writes its answers from the tool results.
// It keeps nothing between calls: the same conversation always gives the same answer, in any
// process, which is what lets a turn resume elsewhere after a crash. It acts in the turn's
// workspace (ModelRequest.workspaceId), never in one a text names.
//
// Test triggers in the person's message, only with SVC_TEST_HOOKS=1 (otherwise plain text): [slow]
// waits about a second (abortably) before each piece of text, [loop] asks for another tool call
// every round, [sleep-tool] runs code that never ends by itself, [fail] fails the call as unavailable.
import { createHash } from 'node:crypto';
import { ModelProviderError, type ModelMessage, type ModelProvider, type ModelRequest, type ModelStreamEvent, type ModelUsage, type ToolCall } from './driver.js';
import { readTurn } from './local/conversation.js';
import { plan } from './local/plans.js';

/** The pause before each piece of text under [slow]: long enough for a test to cancel mid-call. */
const SLOW_PIECE_MS = 1_000;
const WORDS_PER_PIECE = 3;
/** Characters per token of the usage estimate, the usual rule of thumb for English and code. */
const CHARS_PER_TOKEN = 4;

/** `testHooks` (SVC_TEST_HOOKS): whether the bracketed test triggers act. */
export function createLocalModelProvider(options: { testHooks: boolean }): ModelProvider {
  return { name: 'local', free: true, stream: (request) => stream(request, options.testHooks) };
}

async function* stream(request: ModelRequest, testHooks: boolean): AsyncGenerator<ModelStreamEvent> {
  const { signal } = request;
  if (signal.aborted) throw aborted();
  const view = readTurn(request.messages, { workspaceId: request.workspaceId, testHooks });
  const { triggers } = view;
  if (triggers.has('fail')) throw new ModelProviderError('unavailable', 'the local model failed on purpose ([fail] in the message)');
  const step = plan(view);
  const wait = triggers.has('slow') ? SLOW_PIECE_MS : 0;
  for (const piece of piecesOf(step.text)) {
    await pause(wait, signal);
    yield { type: 'text', text: piece };
  }
  // ids unique within the turn (the runner matches results to calls by id) and the same on every replay
  const turnKey = createHash('sha256').update(view.message).digest('hex').slice(0, 8);
  const calls: ToolCall[] = step.calls.map((c, i) => ({ id: `call_${turnKey}_${view.rounds}_${i}`, name: c.name, arguments: c.arguments }));
  for (const call of calls) {
    await pause(0, signal);
    yield { type: 'tool_call', call };
  }
  await pause(0, signal);
  yield { type: 'done', usage: usageOf(request, step.text, calls), stop_reason: calls.length ? 'tool_calls' : 'end' };
}

/** The text in groups of a few words, each keeping its following whitespace, so the pieces join back exactly. */
export function piecesOf(text: string): string[] {
  const words = text.match(/\s*\S+\s*/g) ?? [];
  const pieces: string[] = [];
  for (let i = 0; i < words.length; i += WORDS_PER_PIECE) pieces.push(words.slice(i, i + WORDS_PER_PIECE).join(''));
  return pieces;
}

/** Tokens estimated from characters: what the call read (conversation and tools) and what it wrote. */
function usageOf(request: ModelRequest, text: string, calls: ToolCall[]): ModelUsage {
  const read = request.messages.reduce((n, m) => n + charsOf(m), JSON.stringify(request.tools).length);
  const written = text.length + (calls.length ? JSON.stringify(calls).length : 0);
  return { input_tokens: Math.ceil(read / CHARS_PER_TOKEN), output_tokens: Math.ceil(written / CHARS_PER_TOKEN) };
}

function charsOf(message: ModelMessage): number {
  return message.content.length + (message.role === 'assistant' && message.tool_calls ? JSON.stringify(message.tool_calls).length : 0);
}

const aborted = () => new ModelProviderError('aborted', 'the model call was cancelled');

/** Yields to the event loop (or waits `ms`), so a cancellation can land between pieces; throws once aborted. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(aborted());
    const done = () => {
      signal.removeEventListener('abort', stop);
      if (signal.aborted) reject(aborted());
      else resolve();
    };
    const timer = ms > 0 ? setTimeout(done, ms) : null;
    const immediate = ms > 0 ? null : setImmediate(done);
    const stop = () => {
      if (timer) clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      reject(aborted());
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}
