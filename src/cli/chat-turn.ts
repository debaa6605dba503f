// One turn of `svc chat` (API.md 8.6): submitted, then followed on the event stream to its end.
// The model's text goes to stdout as it is written; tool calls, prompts and the outcome go to
// stderr, so `svc chat ops "…" > answer.txt` keeps only the answer. A turn that waits on a person
// is answered here: an approval request is read (its etag) and resolved, a question is answered
// with the turn's etag. Interrupted (Ctrl-C), the turn is cancelled on the server.
import { randomUUID } from 'node:crypto';
import { CliError, EXIT } from './errors.js';
import type { Api } from './http.js';
import { terminalText, truncate, type Output } from './output.js';
import { revealInvisible } from './reveal-invisible.js';
import { shownText, transcript, type Transcript } from './chat-transcript.js';
import { codeBlock, resultText, revealedText, TERMINAL_EVENTS, toolText, usageText, type AgentEvent, type UsageSummary } from './agent-view.js';
import { followEvents } from './agent-events.js';
import type { LineInput } from './chat-input.js';

export interface TurnSettings {
  api: Api;
  o: Output;
  input: LineInput;
  /** svc-context, when given */
  header: Record<string, string>;
  /** aborted by Ctrl-C */
  signal: AbortSignal;
  json: boolean;
  /** the answer to every approval request: --approve / --reject; null: ask */
  decision: 'APPROVE' | 'REJECT' | null;
  /** prompts may read stdin (a terminal, or the conversation piped in) */
  canAsk: boolean;
  /** the agent as `svc chat` is told it, in the hint to come back to a waiting turn */
  agentRef: string;
}

export type TurnOutcome = 'COMPLETED' | 'FAILED' | 'CANCELLED' | 'INTERRUPTED';

const TERMINAL_STATE: Record<string, TurnOutcome> = { 'turn.completed': 'COMPLETED', 'turn.failed': 'FAILED', 'turn.cancelled': 'CANCELLED' };

/** Submits `message` to the session and follows the turn to its end. */
export async function runTurn(s: TurnSettings, sessionId: string, message: string): Promise<TurnOutcome> {
  const submitted = await s.api.call('POST', '/v1/agent_turns', {
    body: { session_id: sessionId, message }, header: { ...s.header, 'idempotency-key': randomUUID() }, auth: 'workspace', signal: s.signal,
  }).catch((err: unknown) => {
    // Ctrl-C before the turn's id is known: nothing to cancel that this client can name
    if (s.signal.aborted) throw new CliError('interrupted before the turn was submitted', EXIT.INTERRUPTED);
    throw err;
  });
  return followTurn(s, (submitted.body as { id: string }).id);
}

/** Shows the turn's events from its first (a turn already under way is shown from its start) to its end, answering what it asks. */
export async function followTurn(s: TurnSettings, turnId: string): Promise<TurnOutcome> {
  const { api, o, header } = s;
  const c = o.errColor;
  const t = transcript(o);
  let printed = false;
  let deltas = false;
  let openCall: unknown = null;
  let usage: UsageSummary | null = null;
  let outcome = 'FAILED' as TurnOutcome;
  const ours = new Set<string>();

  const show = async (ev: AgentEvent): Promise<void> => {
    const d = ev.data;
    switch (ev.type) {
      case 'message.delta':
        if (typeof d.text === 'string') t.text(shownText(o, d.text));
        printed = deltas = true;
        break;
      case 'message.created':
        // a provider that does not stream gives the whole text only here
        if (!deltas && typeof d.content === 'string' && d.content) {
          t.text(shownText(o, d.content));
          printed = true;
        }
        t.endText();
        deltas = false;
        break;
      case 'tool.started':
        if (d.tool === 'ask_user') break;
        // the call's summary with its invisible characters as markers, as on the approval card
        t.start(`${c.cyan('▸')} ${o.errTty ? truncate(terminalText(revealInvisible(toolText(d.tool, d.arguments))), Math.max(20, o.errWidth() - 24)) : revealInvisible(toolText(d.tool, d.arguments))}`);
        openCall = d.call_id;
        break;
      case 'tool.completed': {
        if (d.tool === 'ask_user') break;
        const r = resultText(d.tool, d.result);
        const text = o.errTty ? terminalText(r.text) : r.text.replace(/\n/g, ' ');
        if (openCall !== d.call_id) t.start(`${c.cyan('▸')} ${String(d.tool)}`);
        t.finish(`${r.ok ? c.green('✓') : c.red('✗')} ${text}`);
        openCall = null;
        break;
      }
      case 'approval.requested':
        await approval(s, t, ev, ours);
        break;
      case 'approval.resolved':
        if (!ours.has(String(d.approval_request_id))) t.line(c.dim(`  ${d.decision === 'APPROVE' ? 'approved' : 'rejected'} by ${String(d.resolved_by)}`));
        break;
      case 'input.requested':
        await answer(s, t, ev, ours);
        break;
      case 'input.received':
        // answered here (already shown), or elsewhere (the web app): then say what
        if (!ours.delete('input')) t.line(c.dim(`  ↳ ${firstLineOf(d.content)}`));
        break;
      case 'usage.updated':
        usage = d.usage_summary as UsageSummary;
        break;
      case 'turn.completed':
        if (!printed && typeof d.content === 'string') t.text(shownText(o, d.content));
        t.endText();
        break;
      case 'turn.failed': {
        const f = (d.failure ?? {}) as { code?: string; message?: string };
        t.line(`${c.red('✗')} turn failed: ${f.code ?? 'FAILED'}: ${f.message ?? ''}`);
        break;
      }
      case 'turn.cancelled':
        t.line(`${c.yellow('✗')} turn cancelled`);
        break;
      default:
    }
  };

  try {
    await followEvents(api, {
      query: { turn_id: turnId },
      header,
      signal: s.signal,
      onEvent: async (ev, raw) => {
        if (s.json) o.out.write(`${raw}\n`);
        if (!s.json || ev.type === 'approval.requested' || ev.type === 'input.requested') await show(ev);
        if (!TERMINAL_EVENTS.has(ev.type)) return false;
        outcome = TERMINAL_STATE[ev.type]!;
        return true;
      },
      onResume: (why) => {
        t.endText();
        if (!s.json) t.line(c.dim(`  (stream interrupted: ${why}; resuming)`));
      },
    });
  } catch (err) {
    if (!s.signal.aborted) throw err;
    t.endText();
    const state = await cancelTurn(api, turnId, header);
    t.line(`${c.yellow('✗')} ${state === 'CANCELLED' ? 'cancelled' : `not cancelled: it is ${state}`} ${c.dim(turnId)}`);
    return 'INTERRUPTED';
  }
  if (outcome === 'COMPLETED' && !s.json) t.line(c.dim(`✓ ${turnId}${usage ? ` · ${usageText(usage)}` : ''}`));
  return outcome;
}

/**
 * A session picked with --session whose latest turn waits on a person: that turn is shown from its
 * start and its question asked here, before anything new is said (a new turn would queue behind it).
 */
export async function attachWaiting(s: TurnSettings, sessionId: string): Promise<TurnOutcome | null> {
  const page = (await s.api.call('GET', '/v1/agent_turns', { query: { session_id: sessionId, limit: 1 }, header: s.header, auth: 'workspace' })).body as { data: { id: string; state: string }[] };
  const latest = page.data[0];
  if (!latest || !latest.state.startsWith('WAITING_')) return null;
  s.o.err.write(`${s.o.errColor.dim(`${latest.id} waits for you:`)}\n`);
  return followTurn(s, latest.id);
}

const firstLineOf = (v: unknown) => (typeof v === 'string' ? v.split('\n')[0]! : '');

/** The turn cannot go on without the person, and the command cannot ask: say how to answer later. */
function waitsFor(s: TurnSettings, what: string, answer: string, sessionId: string): CliError {
  return new CliError(`${what}, and ${s.canAsk ? 'the input has ended' : 'stdin is not a terminal'}`, EXIT.ERROR, [
    `  ${answer}`,
    `  or on a terminal: svc chat ${s.agentRef} --session ${sessionId}`,
    ...(s.canAsk ? [] : ['  (--approve or --reject decide approval requests without asking)']),
  ]);
}

async function approval(s: TurnSettings, t: Transcript, ev: AgentEvent, ours: Set<string>): Promise<void> {
  const { o } = s;
  const c = o.errColor;
  const d = ev.data;
  const id = String(d.approval_request_id);
  // A member's turn on an agent that writes freely waits for an admin, not for the member.
  if (d.kind === 'TURN') return void t.line(`${c.yellow('…')} this turn waits for an admin's approval (${id})`);
  t.line(`${c.yellow('?')} ${c.bold('approval needed')}: ${revealedText(c, o.errTty, String(d.summary ?? ''))} ${c.dim(id)}`);
  if (typeof d.code === 'string') t.line(codeBlock(c, o.errTty, d.code));
  // Shown again from the turn's start (--session), a request decided before is not asked again: approval.resolved follows.
  const first = await read(s.api, '/v1/approval_requests/{id}', id, s.header);
  if (first.state !== 'PENDING') return;
  let decision = s.decision;
  if (decision) t.line(c.dim(`  ${decision === 'APPROVE' ? 'approved (--approve)' : 'rejected (--reject)'}`));
  else {
    const line = s.canAsk ? await s.input.next('Approve? [y/N] ', s.signal) : null;
    if (line === null) throw waitsFor(s, `${id} waits for your approval`, `decide: svc approval-requests resolve ${id} --decision APPROVE (or REJECT)`, ev.session_id);
    decision = /^\s*y(es)?\s*$/i.test(line) ? 'APPROVE' : 'REJECT';
  }
  ours.add(id);
  const key = randomUUID();
  await withCurrent(s.api, '/v1/approval_requests/{id}', id, s.header, async (cur) => {
    if (cur.state !== 'PENDING') return t.line(c.dim(`  already ${cur.state.toLowerCase()}${cur.resolved_by ? ` by ${cur.resolved_by}` : ''}`));
    await s.api.call('POST', '/v1/approval_requests/{id}:resolve', {
      path: { id }, body: { decision }, header: { ...s.header, 'if-match': cur.etag, 'idempotency-key': key }, auth: 'workspace',
    });
  }, first);
}

/**
 * Whether the question of `ev` is still open: its turn waits for input and no answer came after it
 * (a turn shown from its start may have asked and been answered before, and may be waiting on a
 * later question). Resolves with the turn (its etag) when open.
 */
async function openQuestion(s: TurnSettings, ev: AgentEvent): Promise<Current | null> {
  const turn = await read(s.api, '/v1/agent_turns/{id}', ev.turn_id, s.header);
  if (turn.state !== 'WAITING_FOR_INPUT') return null;
  let after: string | null = ev.cursor;
  while (after) {
    const page = (await s.api.call('GET', '/v1/agent_events', { query: { turn_id: ev.turn_id, after, limit: 100 }, header: s.header, auth: 'workspace' })).body as { data: AgentEvent[]; has_more: boolean };
    if (page.data.some((e) => e.type === 'input.received')) return null;
    after = page.has_more ? page.data.at(-1)!.cursor : null;
  }
  return turn;
}

async function answer(s: TurnSettings, t: Transcript, ev: AgentEvent, ours: Set<string>): Promise<void> {
  const { o } = s;
  const c = o.errColor;
  const d = ev.data;
  const safe = (v: unknown) => (o.errTty ? terminalText(String(v)) : String(v));
  const choices = Array.isArray(d.choices) ? d.choices.map(String) : [];
  t.line(`${c.yellow('?')} ${safe(d.question)}`);
  if (choices.length) t.line(choices.map((ch, i) => `  ${c.bold(String(i + 1))}. ${safe(ch)}`).join('\n'));
  const first = await openQuestion(s, ev);
  if (!first) return;
  let content = '';
  while (!content) {
    const line = s.canAsk ? await s.input.next(choices.length ? `answer (1-${choices.length} or text): ` : 'answer: ', s.signal) : null;
    if (line === null) throw waitsFor(s, `${ev.turn_id} waits for your answer`, `answer: svc agent-turns respond ${ev.turn_id} --content '…'`, ev.session_id);
    const n = Number(line.trim());
    content = Number.isInteger(n) && n >= 1 && n <= choices.length ? choices[n - 1]! : line.trim();
  }
  ours.add('input');
  await withCurrent(s.api, '/v1/agent_turns/{id}', ev.turn_id, s.header, async (cur) => {
    if (cur.state !== 'WAITING_FOR_INPUT') return t.line(c.dim(`  already answered (the turn is ${cur.state})`));
    await s.api.call('POST', '/v1/agent_turns/{id}:respond', { path: { id: ev.turn_id }, body: { content }, header: { ...s.header, 'if-match': cur.etag }, auth: 'workspace' });
  }, first);
}

interface Current {
  state: string;
  etag: string;
  resolved_by?: string | null;
}

const read = async (api: Api, path: string, id: string, header: Record<string, string>) =>
  (await api.call('GET', path, { path: { id }, header, auth: 'workspace' })).body as Current;

/**
 * Acts on the resource at `path` with its etag as if-match (`first`: as just read); when it moved
 * in between (409), it is read again (three times at most).
 */
async function withCurrent<T>(api: Api, path: string, id: string, header: Record<string, string>, act: (cur: Current) => Promise<T>, first?: Current): Promise<T> {
  let cur = first ?? await read(api, path, id, header);
  for (let attempt = 0; ; attempt++) {
    try {
      return await act(cur);
    } catch (err) {
      if (!(err instanceof CliError && err.exitCode === EXIT.CONFLICT) || attempt >= 3) throw err;
    }
    cur = await read(api, path, id, header);
  }
}

/** Cancels the turn; resolves with the state it ends in (one that ended meanwhile, 422: that state). */
export async function cancelTurn(api: Api, turnId: string, header: Record<string, string>): Promise<string> {
  const at = { path: { id: turnId }, header, auth: 'workspace' };
  try {
    return ((await api.call('POST', '/v1/agent_turns/{id}:cancel', at)).body as { state: string }).state;
  } catch (err) {
    if (!(err instanceof CliError && err.exitCode === EXIT.ERROR)) throw err;
    return ((await api.call('GET', '/v1/agent_turns/{id}', at)).body as { state: string }).state;
  }
}
