// Domain events (API.md 8.11): `{id evt_, type, workspace_id, data, created_at}`, where `data` is
// the resource as its GET returns it (never a secret value). One function records one inside the
// transaction of the change it reports, so none is lost and none exists for a change that rolled
// back; in the same transaction it enqueues one job per subscriber of the type (subscribers.ts),
// which runs after commit, survives a crash and commits its effect together with the job's end.
// The outgoing webhooks deliver these same events to customers' endpoints.
import type { Executor } from '../db/database.js';
import { enqueueJob } from '../jobs/queue.js';
import { clock } from '../platform/clock.js';
import { newId } from '../platform/ids.js';
import { insertEvent } from './events.repo.js';
import { eventJobKind, subscribersOf } from './subscribers.js';

/** Every event type (past tense, dotted): a closed set, as webhook endpoints filter on them. */
export const EVENT_TYPES = [
  'operation.succeeded', 'operation.failed', 'operation.cancelled',
  'install.created', 'install.updated', 'install.deleted',
  'machine.created', 'machine.joined', 'machine.active', 'machine.unreachable', 'machine.deleted',
  'agent_turn.completed', 'agent_turn.failed', 'agent_turn.cancelled', 'agent_turn.waiting',
  'order.created', 'order.delivered', 'order.delivery_failed', 'order_draft.terminated',
  'secret.version_created', 'secret.version_destroyed',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface DomainEvent {
  id: string;
  type: EventType;
  workspace_id: string;
  /** the resource as its GET returns it */
  data: unknown;
  created_at: number;
}

/** Records the event in `tx` (the caller's transaction) and enqueues its subscribers' jobs; answers its id. */
export async function recordEvent(tx: Executor, event: { type: EventType; workspace_id: string; data: object }): Promise<string> {
  const id = newId('event');
  await insertEvent(tx, { id, type: event.type, workspace_id: event.workspace_id, data: JSON.stringify(event.data), created_at: clock.now() });
  for (const subscriber of subscribersOf(event.type)) await enqueueJob(tx, { kind: eventJobKind(subscriber), operationId: null, eventId: id });
  return id;
}
