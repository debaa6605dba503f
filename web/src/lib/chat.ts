// A session's conversation as the chat page shows it, built from its events (API.md 8.6) in
// sequence order: each turn is the person's message, then the agent's text as it is written, its
// tool calls (an ask_user call is a question to answer, a propose_change waiting for approval is a
// card with its code), its usage and how it ended. The same events give what the page announces
// to screen readers: whole messages, questions, approvals and endings, never each delta. Free of
// the DOM for unit tests (test/web/agents-lib.test.ts).
import type { Schemas } from './api.ts';

export type AgentEvent = Pick<Schemas['AgentEvent'], 'sequence' | 'turn_id' | 'type' | 'data'>;
export type TurnState = Schemas['AgentTurn']['state'];
export type UsageSummary = Schemas['UsageSummary'];

export interface Approval {
  id: string;
  kind: 'CHANGE' | 'TURN';
  code: string | null;
  summary: string;
  decision?: 'APPROVE' | 'REJECT';
  reason?: string | null;
  resolvedBy?: string;
}

export interface Question {
  question: string;
  choices: string[];
  answer?: string;
}

export type Item =
  | { kind: 'text'; key: string; content: string; streaming: boolean }
  | { kind: 'tool'; key: string; callId: string; tool: string; arguments: Record<string, unknown>; result?: unknown; done: boolean; approval?: Approval; question?: Question }
  /** an approval that belongs to no tool call: a member's turn waiting for an admin (kind TURN) */
  | { kind: 'approval'; key: string; approval: Approval };

export interface ChatTurn {
  id: string;
  message: string;
  state: TurnState;
  items: Item[];
  usage?: UsageSummary;
  failure?: { code: string; message: string };
  model?: string;
}

export interface Conversation {
  turns: ChatTurn[];
  /** the sequence of the last event applied: later events only are applied */
  last: number;
}

export const EMPTY: Conversation = { turns: [], last: 0 };

export const TERMINAL: readonly TurnState[] = ['COMPLETED', 'FAILED', 'CANCELLED'];
export const isTerminal = (state: TurnState): boolean => TERMINAL.includes(state);

const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The turn the conversation shows for a turn record (a turn just submitted, before its events arrive). */
export function withTurn(c: Conversation, turn: { id: string; state: TurnState; input: { content: string } }): Conversation {
  if (c.turns.some((t) => t.id === turn.id)) return c;
  return { ...c, turns: [...c.turns, { id: turn.id, message: turn.input.content, state: turn.state, items: [] }] };
}

/** Applies events in order; an event at or before `last` (a replay overlapping what was read) is skipped. */
export function applyEvents(c: Conversation, events: AgentEvent[]): Conversation {
  let out = c;
  for (const e of events) {
    if (e.sequence <= out.last) continue;
    out = { turns: applyOne(out.turns, e), last: e.sequence };
  }
  return out;
}

function applyOne(turns: ChatTurn[], e: AgentEvent): ChatTurn[] {
  const d = e.data;
  const at = turns.findIndex((t) => t.id === e.turn_id);
  if (at < 0) {
    const fresh: ChatTurn = { id: e.turn_id, message: str(d.content), state: 'QUEUED', items: [] };
    return [...turns, applyToTurn(fresh, e)];
  }
  const next = turns.slice();
  next[at] = applyToTurn(turns[at]!, e);
  return next;
}

/** The last item of the turn if it is still-streaming text (the model call that is being written). */
function openText(items: Item[]): number {
  const i = items.length - 1;
  const last = items[i];
  return last?.kind === 'text' && last.streaming ? i : -1;
}

function updateTool(t: ChatTurn, callId: string, change: (item: Extract<Item, { kind: 'tool' }>) => Item): ChatTurn {
  return { ...t, items: t.items.map((it) => (it.kind === 'tool' && it.callId === callId ? change(it) : it)) };
}

function approvalOf(d: Record<string, unknown>): Approval {
  return { id: str(d.approval_request_id), kind: d.kind === 'TURN' ? 'TURN' : 'CHANGE', code: typeof d.code === 'string' ? d.code : null, summary: str(d.summary) };
}

function applyToTurn(t: ChatTurn, e: AgentEvent): ChatTurn {
  const d = e.data;
  const key = `e${e.sequence}`;
  switch (e.type) {
    case 'turn.queued':
      return { ...t, message: str(d.content, t.message), state: t.state === 'QUEUED' ? 'QUEUED' : t.state };
    case 'turn.started':
      return { ...t, state: 'RUNNING', model: str(d.model) || t.model };
    case 'message.delta': {
      const i = openText(t.items);
      const text = str(d.text);
      if (i < 0) return { ...t, items: [...t.items, { kind: 'text', key, content: text, streaming: true }] };
      const items = t.items.slice();
      const open = items[i] as Extract<Item, { kind: 'text' }>;
      items[i] = { ...open, content: open.content + text };
      return { ...t, items };
    }
    case 'message.created': {
      // The whole text of the call: it replaces the pieces (which may repeat after a retried call).
      const i = openText(t.items);
      const done: Item = { kind: 'text', key: i < 0 ? key : t.items[i]!.key, content: str(d.content), streaming: false };
      return { ...t, items: i < 0 ? [...t.items, done] : [...t.items.slice(0, i), done] };
    }
    case 'tool.started':
      return { ...t, items: [...closeText(t.items), { kind: 'tool', key, callId: str(d.call_id), tool: str(d.tool), arguments: obj(d.arguments), done: false }] };
    case 'tool.completed':
      return updateTool(t, str(d.call_id), (it) => ({ ...it, result: d.result, done: true }));
    case 'approval.requested': {
      const approval = approvalOf(d);
      const waiting = { ...t, state: 'WAITING_FOR_PERMISSION' as const };
      if (typeof d.call_id === 'string' && t.items.some((it) => it.kind === 'tool' && it.callId === d.call_id)) {
        return updateTool(waiting, d.call_id, (it) => ({ ...it, approval }));
      }
      return { ...waiting, items: [...t.items, { kind: 'approval', key, approval }] };
    }
    case 'approval.resolved': {
      const id = str(d.approval_request_id);
      const decide = (a: Approval): Approval => ({ ...a, decision: d.decision === 'REJECT' ? 'REJECT' : 'APPROVE', reason: typeof d.reason === 'string' ? d.reason : null, resolvedBy: str(d.resolved_by) });
      const items = t.items.map((it): Item => {
        if (it.kind === 'tool' && it.approval?.id === id) return { ...it, approval: decide(it.approval) };
        if (it.kind === 'approval' && it.approval.id === id) return { ...it, approval: decide(it.approval) };
        return it;
      });
      // A TURN approval queues the turn again; a CHANGE one lets it run on.
      const kind = items.find((it) => it.kind === 'approval' && it.approval.id === id) ? 'TURN' : 'CHANGE';
      return { ...t, items, state: isTerminal(t.state) ? t.state : kind === 'TURN' ? 'QUEUED' : 'RUNNING' };
    }
    case 'input.requested': {
      const question: Question = { question: str(d.question), choices: Array.isArray(d.choices) ? d.choices.filter((c): c is string => typeof c === 'string') : [] };
      const waiting = { ...t, state: 'WAITING_FOR_INPUT' as const };
      const callId = str(d.call_id);
      if (t.items.some((it) => it.kind === 'tool' && it.callId === callId)) return updateTool(waiting, callId, (it) => ({ ...it, question }));
      return { ...waiting, items: [...t.items, { kind: 'tool', key, callId, tool: 'ask_user', arguments: {}, done: false, question }] };
    }
    case 'input.received': {
      const items = t.items.slice();
      let i = items.length - 1;
      while (i >= 0 && !unanswered(items[i]!)) i--;
      if (i >= 0) {
        const it = items[i] as Extract<Item, { kind: 'tool' }>;
        items[i] = { ...it, question: { ...it.question!, answer: str(d.content) } };
      }
      return { ...t, items, state: 'RUNNING' };
    }
    case 'usage.updated':
      return { ...t, usage: obj(d.usage_summary) as unknown as UsageSummary };
    case 'turn.completed': {
      const content = str(d.content);
      const items = closeText(t.items);
      // The answer is the last message already shown; it is added only when no text showed it.
      const shown = items.some((it) => it.kind === 'text' && it.content === content);
      return { ...t, state: 'COMPLETED', items: content && !shown ? [...items, { kind: 'text', key, content, streaming: false }] : items };
    }
    case 'turn.failed': {
      const f = obj(d.failure);
      return { ...t, state: 'FAILED', items: closeText(t.items), failure: { code: str(f.code), message: str(f.message) } };
    }
    case 'turn.cancelled':
      return { ...t, state: 'CANCELLED', items: closeText(t.items) };
    default:
      return t;
  }
}

const unanswered = (it: Item): boolean => it.kind === 'tool' && it.question !== undefined && it.question.answer === undefined;

/** Text still marked as being written is final once a tool starts or the turn ends. */
function closeText(items: Item[]): Item[] {
  const i = openText(items);
  if (i < 0) return items;
  const next = items.slice();
  next[i] = { ...(items[i] as Extract<Item, { kind: 'text' }>), streaming: false };
  return next;
}

/** The turn that has not ended yet (a session runs one at a time), if any. */
export function activeTurn(c: Conversation): ChatTurn | undefined {
  return c.turns.find((t) => !isTerminal(t.state));
}

/**
 * What a screen reader hears for a live event: a whole message when it is written, the agent's
 * question, an approval asked for, how the turn ended. Deltas and tool rows stay silent.
 */
export function announcement(e: AgentEvent, before: Conversation): string | undefined {
  const d = e.data;
  switch (e.type) {
    case 'message.created':
      return `The agent says: ${str(d.content)}`;
    case 'turn.completed': {
      const turn = before.turns.find((t) => t.id === e.turn_id);
      const said = turn?.items.some((it) => it.kind === 'text' && !it.streaming && it.content === str(d.content));
      return said || !str(d.content) ? 'The agent is done.' : `The agent says: ${str(d.content)}`;
    }
    case 'input.requested': {
      const choices = Array.isArray(d.choices) && d.choices.length ? ` Choices: ${d.choices.join(', ')}.` : '';
      return `The agent asks: ${str(d.question)}${choices}`;
    }
    case 'approval.requested':
      return d.kind === 'TURN' ? 'This turn waits for an owner or admin to approve it.' : `Approval needed: ${str(d.summary)}. The code is shown with Approve and Reject.`;
    case 'turn.failed':
      return `The turn failed: ${str(obj(d.failure).message, 'no reason given')}`;
    case 'turn.cancelled':
      return 'The turn was cancelled.';
    default:
      return undefined;
  }
}

/** What a tool row says in one line: the call's own summary, else what it did. */
export function toolLine(item: { tool: string; arguments: Record<string, unknown> }): string {
  const summary = str(item.arguments.summary);
  if (item.tool === 'search') return `Searched the API for “${str(item.arguments.query)}”`;
  if (item.tool === 'execute') return summary ? `Read: ${summary}` : 'Ran read-only code';
  if (item.tool === 'propose_change') return summary ? `Change: ${summary}` : 'Proposed a change';
  if (item.tool === 'ask_user') return 'Asked you a question';
  return `Called ${item.tool}`;
}

/** Whether a tool result says it failed (tools.ts: `{ok: false, ...}`), and why in words. */
export function toolOutcome(result: unknown): { ok: boolean; words: string } {
  const r = typeof result === 'string' ? safeParse(result) : result;
  const o = obj(r);
  if (o.ok !== false) return { ok: true, words: 'Done' };
  if (o.rejected) return { ok: false, words: `Rejected: ${str(o.reason, 'no reason given')}` };
  if (o.denied) return { ok: false, words: 'Refused: this agent may not make changes' };
  if (o.outcome_unknown) return { ok: false, words: 'Outcome unknown: the worker stopped while it ran' };
  const err = obj(o.error);
  return { ok: false, words: `Failed${err.code ? ` (${str(err.code)})` : ''}${err.message ? `: ${str(err.message)}` : ''}` };
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
