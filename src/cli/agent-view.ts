// How agents' records and events read on a terminal (API.md 8.6), shared by the derived commands'
// presenters (svc agent-turns get, svc approval-requests get, svc agent-events list|stream) and
// `svc chat`: a turn's usage in one phrase, a tool call in one line, its result in a few words.
import { printRecord, printTable } from './table.js';
import { isoTime, pick, terminalText, truncate, type Colors, type Output } from './output.js';
import { revealInvisible, revealPieces } from './reveal-invisible.js';
import type { RenderContext } from './presenters.js';

export interface AgentEvent {
  id: string;
  session_id: string;
  turn_id: string;
  sequence: number;
  cursor: string;
  type: string;
  data: Record<string, unknown>;
  created_at: number;
}

export interface UsageSummary {
  provider_cost_cents: number;
  provider_token_count: number;
  runtime_compute_seconds: number;
  api_call_count: number;
}

/** `1,840 tokens · 2¢ · 1 CPU s · 3 API calls`: what was used, members at 0 left out (tokens always said). */
export function usageText(u: UsageSummary | null | undefined): string {
  if (!u) return '';
  const parts = [`${u.provider_token_count.toLocaleString('en-US')} tokens`];
  if (u.provider_cost_cents) parts.push(`${u.provider_cost_cents}¢`);
  if (u.runtime_compute_seconds) parts.push(`${u.runtime_compute_seconds} CPU s`);
  if (u.api_call_count) parts.push(`${u.api_call_count} API call${u.api_call_count === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

const firstLine = (text: unknown) => (typeof text === 'string' ? text.split('\n').map((l) => l.trim()).find(Boolean) ?? '' : '');

/** `execute: count the installs` (the model's summary, else the first line of the code), `search: secrets`. */
export function toolText(tool: unknown, args: unknown): string {
  const a = (args ?? {}) as Record<string, unknown>;
  const what = tool === 'search' ? String(a.query ?? '')
    : tool === 'ask_user' ? firstLine(a.question)
    : firstLine(a.summary) || firstLine(a.code);
  return `${String(tool)}: ${what}`;
}

/** A tool result in a few words, and whether it went well. */
export function resultText(tool: unknown, result: unknown): { ok: boolean; text: string } {
  const r = (result ?? {}) as Record<string, unknown>;
  if (tool === 'search') {
    const n = Array.isArray(r.operations) ? r.operations.length : 0;
    return { ok: true, text: `${n} operation${n === 1 ? '' : 's'}` };
  }
  if (tool === 'ask_user') return { ok: true, text: firstLine(r.answer) };
  if (r.ok === true) return { ok: true, text: r.output === undefined ? 'done' : JSON.stringify(r.output) ?? 'done' };
  if (r.rejected) return { ok: false, text: `rejected${r.reason ? `: ${firstLine(r.reason)}` : ''}` };
  if (r.denied) return { ok: false, text: `denied: ${firstLine(r.message)}` };
  if (r.outcome_unknown) return { ok: false, text: 'outcome unknown (its worker stopped while it ran)' };
  const err = (r.error ?? {}) as { code?: string; message?: string };
  return { ok: false, text: [err.code, firstLine(err.message)].filter(Boolean).join(': ') || 'failed' };
}

/** What an event says, in one line (`svc agent-events list|stream`); the model's text as written. */
export function eventText(ev: AgentEvent): string {
  const d = ev.data;
  switch (ev.type) {
    case 'turn.queued': return firstLine(d.content);
    case 'turn.started': return `model ${String(d.model ?? '')}`;
    case 'message.delta': return JSON.stringify(d.text ?? '');
    case 'message.created': case 'turn.completed': case 'input.received': return firstLine(d.content);
    case 'tool.started': return toolText(d.tool, d.arguments);
    case 'tool.completed': {
      const r = resultText(d.tool, d.result);
      return `${String(d.tool)} ${r.ok ? '✓' : '✗'} ${r.text}`;
    }
    case 'approval.requested': return `${String(d.approval_request_id)} ${String(d.kind)}: ${firstLine(d.summary)}`;
    case 'approval.resolved': return `${String(d.approval_request_id)} ${String(d.decision)}${d.reason ? `: ${firstLine(d.reason)}` : ''}`;
    case 'input.requested': return `${firstLine(d.question)}${Array.isArray(d.choices) && d.choices.length ? ` (${d.choices.join(' | ')})` : ''}`;
    case 'usage.updated': return usageText(d.usage_summary as UsageSummary);
    case 'turn.failed': {
      const f = (d.failure ?? {}) as { code?: string; message?: string };
      return `${f.code ?? ''}: ${f.message ?? ''}`;
    }
    default: return '';
  }
}

/** The events after which a turn does nothing more. */
export const TERMINAL_EVENTS = new Set(['turn.completed', 'turn.failed', 'turn.cancelled']);

/** One event as it comes (`svc agent-events stream`): `#12 tool.started  execute: …`; piped, as a row of the list. */
export function eventLine(o: Output, ev: AgentEvent): string {
  if (!o.tty) return [ev.sequence, isoTime(ev.created_at), ev.type, ev.turn_id, eventText(ev).replace(/[\t\n]/g, ' ')].join('\t');
  return `${o.color.dim(`#${ev.sequence}`)} ${ev.type.padEnd(18)} ${truncate(terminalText(eventText(ev)), Math.max(20, o.width() - 26))}`;
}

const EVENT_COLUMNS = ['sequence', 'created_at', 'type', 'turn_id', 'text'];

/** Events as lines: `#seq time type turn text` aligned on a terminal, tab-separated when piped. */
export function printEvents(o: Output, events: AgentEvent[]): void {
  const text = (row: unknown, out: Output) => {
    const t = eventText(row as AgentEvent);
    return out.tty ? truncate(terminalText(t), 100) : t.replace(/[\t\n]/g, ' ');
  };
  printTable(o, EVENT_COLUMNS, events, { text }, { headers: { sequence: '#', created_at: 'AT', text: '' }, drop: ['turn_id', 'created_at'] });
}

/** `svc agent-events list`: the page's events (`data`, or `items` as the route may name them). */
export function renderEventPage({ body, o }: RenderContext): void {
  const events = (pick(body, 'data') ?? pick(body, 'items') ?? []) as AgentEvent[];
  printEvents(o, events);
  const more = pick(body, 'has_more') ?? Boolean(pick(body, 'next_cursor'));
  if (more) o.err.write(`${o.errColor.dim(`more events: --after ${String(events.at(-1)?.cursor ?? '')}`)}\n`);
}

/**
 * An agent, a session or a turn as a record, in the API's order but shorter: `usage` in one phrase
 * instead of seven counters, a turn's message, and its failure or admission error as `CODE:
 * message` (left out while it has none).
 */
export function renderAgentRecord({ body, o }: RenderContext): void {
  const view: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    if (key === 'usage_summary') view.usage = usageText(value as UsageSummary);
    else if (key === 'input') view.message = pick(value, 'content');
    else if (key === 'failure' || key === 'admission_error') {
      const { code, message } = (value ?? {}) as { code?: string; message?: string };
      if (code) view[key] = `${code}: ${message ?? ''}`;
    } else view[key] = value;
  }
  printRecord(o, view);
}

/**
 * Text of an approval card: each invisible character (line separators, bidirectional controls,
 * zero-width characters, controls but newline and tab) as a highlighted `⟨U+202E⟩` marker, so the
 * person sees exactly what runs; on a terminal the rest is made safe for it too.
 */
export function revealedText(c: Colors, tty: boolean, text: string): string {
  return revealPieces(text).map((p) => (p.invisible ? c.inverse(p.text) : tty ? terminalText(p.text) : p.text)).join('');
}

/** The code of a change to approve, framed so it reads as code and not as the tool's own output. */
export function codeBlock(c: Colors, tty: boolean, text: string): string {
  return text.replace(/\n+$/, '').split('\n').map((l) => `  ${c.dim('│')} ${revealedText(c, tty, l)}`).join('\n');
}

/** An approval request: the record (its summary's invisible characters shown), then the exact code that runs if it is approved. */
export function renderApproval({ body, o }: RenderContext): void {
  const { code: text, ...rest } = body as Record<string, unknown> & { code?: string | null };
  if (typeof rest.summary === 'string') rest.summary = revealInvisible(rest.summary);
  printRecord(o, rest);
  if (typeof text === 'string') o.out.write(`\n${o.color.bold('code')}\n${codeBlock(o.color, o.tty, text)}\n`);
}
