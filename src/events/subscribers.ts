// Who reacts to which event. A module learns of another's change by subscribing here, never by
// being called from inside it or by writing its rows: the subscriber runs after the change's commit
// from the job queue, in its own transaction, which also ends the job, so it takes effect once even
// when a process dies before, during or after it (a half-done run rolls back and runs again).
import type { Logger } from 'pino';
import type { Db, Dialect, Executor } from '../db/database.js';
import { completeJob, holdsJob, type ClaimedJob } from '../jobs/queue.js';
import type { JobHandler } from '../jobs/worker.js';
import { findEvent } from './events.repo.js';
import type { DomainEvent, EventType } from './record.js';

/**
 * Subscribers (`<module>.<reaction>`) and the event types each takes. The composition root gives
 * each its handler (services.ts), so one without a handler does not compile.
 */
export const SUBSCRIPTIONS = {
  /** a customer's own server joined the cluster of their order draft: the draft moves on (API.md 8.7) */
  'orders.server_joined': ['machine.joined'],
} as const satisfies Record<string, readonly EventType[]>;

export type SubscriberName = keyof typeof SUBSCRIPTIONS;

/** A reaction to one event, in the transaction that also ends its job. */
export type EventSubscriber = (tx: Executor, event: DomainEvent, logger: Logger) => Promise<void>;

const BY_TYPE = new Map<EventType, SubscriberName[]>();
for (const [name, types] of Object.entries(SUBSCRIPTIONS) as [SubscriberName, readonly EventType[]][]) {
  for (const type of types) BY_TYPE.set(type, [...(BY_TYPE.get(type) ?? []), name]);
}

export function subscribersOf(type: EventType): readonly SubscriberName[] {
  return BY_TYPE.get(type) ?? [];
}

/** The job kind that hands an event to `subscriber`. */
export function eventJobKind(subscriber: SubscriberName): string {
  return `event:${subscriber}`;
}

/** The worker pool's handlers of the subscribers' jobs, by kind. */
export function eventJobHandlers(deps: { db: Db; dialect: Dialect }, subscribers: Record<SubscriberName, EventSubscriber>): Map<string, JobHandler> {
  const handlers = new Map<string, JobHandler>();
  for (const name of Object.keys(SUBSCRIPTIONS) as SubscriberName[]) {
    const subscriber = subscribers[name];
    handlers.set(eventJobKind(name), (job: ClaimedJob, _signal: AbortSignal, logger: Logger) =>
      deps.db.transaction().execute(async (tx) => {
        // Another worker took the job over (this one's lease expired): it runs the subscriber.
        if (!(await holdsJob(tx, deps.dialect, job))) return;
        const row = job.eventId ? await findEvent(tx, job.eventId) : undefined;
        // An event that is gone (purged) has nothing left to react to.
        if (row) await subscriber(tx, { ...row, type: row.type as EventType, data: JSON.parse(row.data) }, logger.child({ event_id: row.id, subscriber: name }));
        await completeJob(tx, job);
      }));
  }
  return handlers;
}
