// The open streams of this process (agent events, install logs): each registers how to end it,
// and the app ends them all when it starts closing, as they do not end on their own.
import type { ServerResponse } from 'node:http';

/** Starts a Server-Sent Events response: unbuffered by any proxy on the way (x-accel-buffering), never cached or transformed. */
export function writeStreamHead(res: ServerResponse, requestId: string): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': requestId,
  });
}

/** the open streams of this process, ended at shutdown */
export class StreamRegistry {
  private readonly open = new Set<() => void>();
  closing = false;
  add(end: () => void): () => void {
    this.open.add(end);
    return () => this.open.delete(end);
  }
  get size(): number {
    return this.open.size;
  }
  closeAll(): void {
    this.closing = true;
    for (const end of [...this.open]) end();
  }
}

