// A session's events (API.md 8.6): appended in the transaction of the step they report, numbered
// 1, 2, 3... per session under the session's row lock, so sequences are gap-free and commit in
// order (a reader that saw N has seen every event up to N). The commit announces the session on
// the notifier (pg_notify inside the transaction on PostgreSQL, delivered only if it commits), so
// followers on every instance wake and read what is new from the database: a stream never relies
// on what one process holds in memory, which is what makes resuming exact across instances.
import type { Db, Executor } from '../../db/database.js';
import { RESYNC, type Notifier } from '../../jobs/notifier.js';
import { clock } from '../../platform/clock.js';
import { newId } from '../../platform/ids.js';
import type { Role } from '../../platform/auth.js';
import { readsSecretValues } from '../secrets/secret-readers.js';
import * as repo from './agent-events.repo.js';
import type { EventRow } from './agent-events.repo.js';
import type { AgentEventT, AgentEventType } from './agents.schemas.js';

export interface EventInput {
  type: AgentEventType;
  data: Record<string, unknown>;
}

/** The turn an event belongs to. */
export interface EventOwner {
  workspace_id: string;
  agent_id: string;
  session_id: string;
  id: string;
}

export function toEvent(row: EventRow): AgentEventT {
  const sequence = Number(row.sequence);
  return {
    id: row.id, workspace_id: row.workspace_id, agent_id: row.agent_id, session_id: row.session_id, turn_id: row.turn_id,
    sequence, cursor: String(sequence), type: row.type as AgentEventType, data: JSON.parse(row.data) as Record<string, unknown>, created_at: row.created_at,
  };
}

/**
 * An event as `reader` may see it: the result of a tool call that read a secret value
 * (`secret_derived`) only for roles that may read secret values; others get `result` null and
 * `result_withheld` true (masking cannot catch a value split, reversed or re-encoded).
 */
export function eventForReader(event: AgentEventT, reader: Role): AgentEventT {
  if (event.type !== 'tool.completed' || event.data.secret_derived !== true || readsSecretValues(reader)) return event;
  return { ...event, data: { ...event.data, result: null, result_withheld: true } };
}

export interface EventQuery {
  sessionId: string;
  /** only this turn's events */
  turnId?: string | undefined;
  /** events after this sequence */
  after: number;
  limit: number;
}

export function createEventLog(deps: { db: Db; notifier: Notifier }) {
  const { db, notifier } = deps;

  /**
   * Appends events of `turn` in the caller's transaction. Takes the session's row lock (the update
   * of its counter), which the transaction holds to its commit: concurrent writers of one session
   * (the worker running a turn, a person's :cancel) queue there, so sequences commit in order.
   */
  async function append(tx: Executor, turn: EventOwner, events: EventInput[]): Promise<AgentEventT[]> {
    if (events.length === 0) return [];
    const last = await repo.bumpEventSeq(tx, turn.session_id, events.length);
    const now = clock.now();
    const rows: EventRow[] = events.map((e, i) => ({
      id: newId('agentEvent'), workspace_id: turn.workspace_id, agent_id: turn.agent_id, session_id: turn.session_id, turn_id: turn.id,
      sequence: last - events.length + 1 + i, type: e.type, data: JSON.stringify(e.data), created_at: now,
    }));
    await repo.insertEvents(tx, rows);
    await notifier.publish(tx, 'svc_agent_events', turn.session_id);
    return rows.map(toEvent);
  }

  async function list(q: EventQuery, executor: Executor = db): Promise<AgentEventT[]> {
    const rows = await repo.listEvents(executor, q.sessionId, q.turnId, q.after, q.limit);
    return rows.map(toEvent);
  }

  /** Wakes `listener` whenever the session may have new events (its own announcement, or a resync after a lost connection). */
  function watch(sessionId: string, listener: () => void): () => void {
    return notifier.subscribe('svc_agent_events', (payload) => {
      if (payload === sessionId || payload === RESYNC) listener();
    });
  }

  return { append, list, watch };
}

export type EventLog = ReturnType<typeof createEventLog>;
