// A followed install log as Server-Sent Events: `event: line` per log line, a `: keepalive`
// comment while idle, and `event: end` with why it ended. Bounded per connection like the agent
// event stream: it waits for the socket to drain before reading the next line (a slow reader holds
// no growing buffer and slows the reads from the cluster instead), ends after `maxMs` and at
// shutdown, and the client going away aborts every request to the cluster.
import type { ServerResponse } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { LOG_MAX_CONTAINERS, type LogStream } from '../../drivers/cluster/driver.js';
import { writeStreamHead, type StreamRegistry } from '../../platform/stream-registry.js';

export type LogEndReason = 'install_deleted' | 'access_revoked' | 'streams_closed' | 'max_duration' | 'shutdown';

export interface LogFollowOptions {
  stream: LogStream;
  /** aborts the driver's requests (the lines then end) */
  upstream: AbortController;
  /** true once the install is gone or being deleted */
  gone(): Promise<boolean>;
  /** false once the reader may no longer read it (credential revoked, removed from the workspace): request.stillAllowed */
  allowed(): Promise<boolean>;
  goneCheckMs: number;
  heartbeatMs: number;
  maxMs: number;
  streams: StreamRegistry;
}

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export async function followLogs(request: FastifyRequest, res: ServerResponse, opts: LogFollowOptions): Promise<void> {
  writeStreamHead(res, request.id);
  let reason: LogEndReason | undefined;
  const end = (why: LogEndReason) => {
    reason ??= why;
    opts.upstream.abort();
  };
  const clientGone = () => opts.upstream.abort();
  res.on('close', clientGone);
  const unregister = opts.streams.add(() => end('shutdown'));
  const timers = [
    setTimeout(() => end('max_duration'), opts.maxMs),
    setInterval(() => {
      if (res.writable) res.write(': keepalive\n\n');
    }, opts.heartbeatMs),
    setInterval(() => {
      // Rights are decided as the stream goes, not copied from its start.
      Promise.all([opts.gone(), opts.allowed()]).then(
        ([gone, allowed]) => (gone ? end('install_deleted') : !allowed && end('access_revoked')),
        (err: unknown) => request.log.warn({ err }, 'install log stream: reading the install failed'),
      );
    }, opts.goneCheckMs),
  ];
  for (const t of timers) t.unref();
  try {
    if (opts.stream.leftOut > 0) {
      res.write(frame('notice', { message: `the install has ${opts.stream.containers + opts.stream.leftOut} pod containers; following the first ${LOG_MAX_CONTAINERS} (filter with container=)` }));
    }
    for await (const line of opts.stream.lines) {
      if (!res.writable) break;
      if (!res.write(frame('line', line))) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
    }
  } catch (err) {
    request.log.warn({ err }, 'install log stream failed');
  } finally {
    for (const t of timers) clearTimeout(t);
    unregister();
    opts.upstream.abort();
    res.off('close', clientGone);
    if (res.writable) res.write(frame('end', { reason: reason ?? 'streams_closed' }));
    if (!res.writableEnded) res.end();
  }
}
