// One Server-Sent Events connection: replays stored events after the cursor, then follows. Bounded
// per connection: it reads at most 100 events a query, waits for the socket to drain before the
// next page (a slow reader holds no growing buffer), ends after `maxMs`, and ends at shutdown. It
// never holds events in memory between reads: each wake reads from the database after the last id
// written, so a notification lost or coalesced costs nothing but a read.
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { AgentEventT } from './agents.schemas.js';

import { StreamRegistry, writeStreamHead } from '../../platform/stream-registry.js';

export { StreamRegistry };

export interface FollowOptions {
  after: number;
  list(after: number): Promise<AgentEventT[]>;
  watch(wake: () => void): () => void;
  /** true for the event that ends the stream (a followed turn's terminal event) */
  ends(event: AgentEventT): boolean;
  /** true when the followed turn already ended (a stream resumed after its last event ends at once) */
  turnEnded(): Promise<boolean>;
  heartbeatMs: number;
  maxMs: number;
  /**
   * a read this often even without a notification: on PostgreSQL a safety net (the notifier
   * resyncs after reconnects anyway); on SQLite how another process's events are seen, as the
   * notifier there is in-process (operations' :wait polls the same way)
   */
  safetyReadMs: number;
  streams: StreamRegistry;
  now(): number;
}


function frame(event: AgentEventT): string {
  return `id: ${event.cursor}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

export async function followStream(request: FastifyRequest, res: ServerResponse, opts: FollowOptions): Promise<void> {
  writeStreamHead(res, request.id);
  res.write('retry: 1000\n\n');
  let last = opts.after;
  let ended = false;
  let wake: (() => void) | null = null;
  let dirty = true;
  const rouse = () => {
    dirty = true;
    wake?.();
  };
  const end = () => {
    ended = true;
    wake?.();
  };
  const unregister = opts.streams.add(end);
  const unwatch = opts.watch(rouse);
  res.on('close', end);
  const stopAt = opts.now() + opts.maxMs;
  const heartbeat = setInterval(() => {
    if (!ended && res.writable) res.write(': keepalive\n\n');
  }, opts.heartbeatMs);
  heartbeat.unref();
  try {
    if (await opts.turnEnded()) {
      const rest = await opts.list(last);
      if (rest.length === 0) return;
    }
    while (!ended && opts.now() < stopAt) {
      if (dirty) {
        dirty = false;
        const events = await opts.list(last);
        for (const event of events) {
          last = event.sequence;
          if (!res.write(frame(event))) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
          if (opts.ends(event)) return;
          if (ended) return;
        }
        // A full page: read on at once.
        if (events.length === 100) dirty = true;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          dirty = true;
          resolve();
        }, Math.min(opts.safetyReadMs, Math.max(0, stopAt - opts.now())));
        timer.unref();
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
        if (dirty || ended) wake();
      });
      wake = null;
    }
  } catch (err) {
    request.log.warn({ err }, 'agent event stream failed');
  } finally {
    clearInterval(heartbeat);
    unwatch();
    unregister();
    if (!res.writableEnded) res.end();
  }
}
