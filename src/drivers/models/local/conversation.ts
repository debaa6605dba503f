// What the local model reads from a conversation, and nothing else: it keeps no state between
// calls (a turn may resume in another process), so every decision comes from the messages. This
// turn is everything after the last user message: the model's own earlier calls and their results.
import type { ModelMessage } from '../driver.js';

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
  /** the workspace the system instructions name, if they do */
  workspaceId: string | null;
  /** the model calls this turn has made so far (each is one assistant message) */
  rounds: number;
  /** every tool call of this turn, in order, with its result */
  calls: PastCall[];
}

const WORKSPACE_ID = /\bws_[0-9a-z]{10,40}\b/;

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

export function readTurn(messages: ModelMessage[]): TurnView {
  const userAt = messages.map((m) => m.role).lastIndexOf('user');
  const message = userAt >= 0 ? messages[userAt]!.content : '';
  const earlier = messages.slice(0, Math.max(userAt, 0)).filter((m) => m.role === 'user').map((m) => m.content);
  const system = messages.filter((m) => m.role === 'system').map((m) => m.content).join('\n');
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
  return { message, earlier, workspaceId: WORKSPACE_ID.exec(system)?.[0] ?? null, rounds, calls };
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
