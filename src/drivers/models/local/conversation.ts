// What the local model reads from a conversation, and nothing else: it keeps no state between
// calls (a turn may resume in another process), so every decision comes from the messages. This
// turn is everything after the last user message: the model's own earlier calls and their results.
// The workspace is the turn's, given by the caller, never read from the text: an agent's
// instructions (written by an admin) or a message could name any other workspace's id.
import type { ModelMessage } from '../driver.js';
import { triggersOf, type Trigger } from './intent.js';

/** A tool result as the runner reports it (tools.ts), or what an unreadable one is taken for. */
export type ToolResult = Record<string, unknown>;

export interface PastCall {
  name: string;
  args: Record<string, unknown>;
  /** null while no result came back (the runner asks again only once every call has one) */
  result: ToolResult | null;
}

export interface TurnView {
  /** this turn's message, as the person wrote it */
  message: string;
  /** the person's earlier messages in the session, oldest first */
  earlier: string[];
  /** the workspace the turn acts in (ModelRequest.workspaceId) */
  workspaceId: string | null;
  /** the test triggers of this turn's message: none unless the service runs with SVC_TEST_HOOKS=1 */
  triggers: ReadonlySet<Trigger>;
  /** the model calls this turn has made so far (each is one assistant message) */
  rounds: number;
  /** every tool call of this turn, in order, with its result */
  calls: PastCall[];
}

/** A tool result's JSON, or an error result when it is not JSON (the runner cuts very long results). */
export function parseResult(content: string): ToolResult {
  try {
    const value: unknown = JSON.parse(content);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as ToolResult;
  } catch {
    // falls through
  }
  return { ok: false, error: { code: 'UNREADABLE_RESULT', message: 'the result was too long or not JSON, so it could not be read' } };
}

export interface TurnContext {
  /** the turn's workspace */
  workspaceId: string | null;
  /** SVC_TEST_HOOKS: whether bracketed triggers in the message act (else they are plain text) */
  testHooks: boolean;
}

export function readTurn(messages: ModelMessage[], context: TurnContext): TurnView {
  const userAt = messages.map((m) => m.role).lastIndexOf('user');
  const message = userAt >= 0 ? messages[userAt]!.content : '';
  const earlier = messages.slice(0, Math.max(userAt, 0)).filter((m) => m.role === 'user').map((m) => m.content);
  const calls: PastCall[] = [];
  const byId = new Map<string, PastCall>();
  let rounds = 0;
  for (const m of messages.slice(userAt + 1)) {
    if (m.role === 'assistant') {
      rounds++;
      for (const call of m.tool_calls ?? []) {
        const past: PastCall = { name: call.name, args: call.arguments, result: null };
        calls.push(past);
        byId.set(call.id, past);
      }
    } else if (m.role === 'tool') {
      const past = byId.get(m.tool_call_id);
      if (past) past.result = parseResult(m.content);
    }
  }
  const triggers = context.testHooks ? triggersOf(message) : new Set<Trigger>();
  return { message, earlier, workspaceId: context.workspaceId, triggers, rounds, calls };
}

/** The latest call of a tool in this turn (optionally one whose arguments pass `match`). */
export function lastCall(view: TurnView, name: string, match?: (args: Record<string, unknown>) => boolean): PastCall | undefined {
  for (let i = view.calls.length - 1; i >= 0; i--) {
    const call = view.calls[i]!;
    if (call.name === name && (!match || match(call.args))) return call;
  }
  return undefined;
}

/** The person's answer to the question that began with `prefix`, if it was asked and answered. */
export function answerTo(view: TurnView, prefix: string): string | null {
  const call = lastCall(view, 'ask_user', (args) => typeof args.question === 'string' && args.question.startsWith(prefix));
  const answer = call?.result?.answer;
  return typeof answer === 'string' && answer.trim() ? answer.trim() : null;
}

/** Whether the question that began with `prefix` was asked this turn (answered or not). */
export function asked(view: TurnView, prefix: string): boolean {
  return lastCall(view, 'ask_user', (args) => typeof args.question === 'string' && args.question.startsWith(prefix)) !== undefined;
}
