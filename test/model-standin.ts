// The HTTP side shared by the stand-ins of the model providers' APIs (openai-standin.ts,
// anthropic-standin.ts): one POST path, every request recorded (headers, parsed body, and when its
// connection closed), scripted replies consumed in order, each planned by the protocol module as a
// JSON answer, a stream of Server-Sent Events frames, or a hang. A stream may pause at `hold`
// until the test calls release() (so a test can see the first pieces arrive before the rest are
// sent), end cleanly, or end with its socket destroyed (a cut in the middle). Also the readers
// of a model call's events the tests share (collect, failure, texts, calls, done).
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ModelProviderError, type ModelStreamEvent } from '../src/drivers/models/driver.js';

export interface StandinRequest {
  path: string;
  headers: IncomingHttpHeaders;
  /** the parsed JSON body */
  body: any;
  /** resolves when the request's connection or answer closed */
  closed: Promise<void>;
  /** the client closed the connection before the answer was complete (an abort) */
  closedByClient: boolean;
}

export type Plan =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  /** accepted, never answered (not even the headers) */
  | { kind: 'hang' }
  /** SSE frames as written on the wire; `hold` pauses until release(); then the end */
  | { kind: 'sse'; frames: (string | 'hold')[]; end: 'end' | 'cut'; headers?: Record<string, string> };

export interface ModelStandin<Reply> {
  /** the base URL the adapter is configured with */
  baseUrl: string;
  requests: StandinRequest[];
  /** the replies to the next requests, in order; when empty, `fallback` answers */
  replies: Reply[];
  fallback: Reply;
  /** the one key accepted; null accepts any key or none (Ollama) */
  key: string | null;
  /** lets every stream paused at a hold go on (or, when none is, the next stream to reach one) */
  release(): void;
  /** resolves once `n` requests have arrived */
  received(n: number): Promise<StandinRequest>;
  close(): Promise<void>;
}

export interface Protocol<Reply> {
  /** the path of the call, e.g. /v1/chat/completions */
  path: string;
  /** the base URL from the server's origin, e.g. http://127.0.0.1:1234/v1 */
  baseUrl(origin: string): string;
  /** the answer to a request whose key is not the accepted one, or null when the key is good */
  checkKey(headers: IncomingHttpHeaders, key: string | null): Plan | null;
  plan(reply: Reply, body: any): Plan;
}

export async function startModelStandin<Reply>(protocol: Protocol<Reply>, fallback: Reply): Promise<ModelStandin<Reply>> {
  let releases: (() => void)[] = [];
  let early = 0;
  const arrivals: (() => void)[] = [];

  const standin: ModelStandin<Reply> = {
    baseUrl: '',
    requests: [],
    replies: [],
    fallback,
    key: null,
    release() {
      const waiting = releases;
      releases = [];
      // A stream that has not reached its hold yet (the client read the frames before it) passes it.
      if (waiting.length === 0) early++;
      for (const r of waiting) r();
    },
    received(n) {
      return new Promise((resolve) => {
        const check = () => {
          if (standin.requests.length >= n) resolve(standin.requests[n - 1]!);
          else arrivals.push(check);
        };
        check();
      });
    },
    close: async () => {
      standin.release();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };

  async function answer(res: ServerResponse, plan: Plan, closed: Promise<void>): Promise<void> {
    if (plan.kind === 'hang') return closed;
    if (plan.kind === 'json') {
      res.writeHead(plan.status, { 'content-type': 'application/json', ...plan.headers });
      res.end(JSON.stringify(plan.body));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...plan.headers });
    for (const frame of plan.frames) {
      if (res.destroyed) return;
      if (frame === 'hold') {
        if (early > 0) early--;
        else await Promise.race([new Promise<void>((r) => releases.push(r)), closed]);
        continue;
      }
      res.write(frame);
      // Each frame in its own write and turn of the event loop, as a server generating tokens sends them.
      await new Promise((r) => setImmediate(r));
    }
    if (plan.end === 'cut') res.socket?.destroy();
    else res.end();
  }

  const http = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: any = null;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = null;
    }
    const record: StandinRequest = { path: new URL(req.url ?? '/', 'http://standin').pathname, headers: req.headers, body, closed: Promise.resolve(), closedByClient: false };
    record.closed = new Promise<void>((resolve) => {
      res.on('close', () => {
        record.closedByClient = !res.writableFinished;
        resolve();
      });
    });
    standin.requests.push(record);
    for (const a of arrivals.splice(0)) a();
    if (req.method !== 'POST' || record.path !== protocol.path) {
      return answer(res, { kind: 'json', status: 404, body: { error: { message: `no route ${req.method} ${record.path}` } } }, record.closed);
    }
    const refused = protocol.checkKey(req.headers, standin.key);
    if (refused) return answer(res, refused, record.closed);
    const reply = standin.replies.length ? standin.replies.shift()! : standin.fallback;
    await answer(res, protocol.plan(reply, body), record.closed);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  standin.baseUrl = protocol.baseUrl(`http://127.0.0.1:${(http.address() as AddressInfo).port}`);
  return standin;
}

/** Everything a model call yielded, and the error that ended it (null when it ended with `done`). */
export async function collect(stream: AsyncIterable<ModelStreamEvent>): Promise<{ events: ModelStreamEvent[]; error: unknown }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const e of stream) events.push(e);
    return { events, error: null };
  } catch (error) {
    return { events, error };
  }
}

/**
 * The ModelProviderError a call ends with, checked for what every failure must hold: its message
 * quotes no 8-character piece of any of `keys`, nor a key masked with asterisks.
 */
export async function failure(stream: AsyncIterable<ModelStreamEvent>, keys: string[]): Promise<ModelProviderError & { events: ModelStreamEvent[] }> {
  const { events, error } = await collect(stream);
  assert.ok(error instanceof ModelProviderError, `expected a ModelProviderError, got ${error === null ? 'success' : String(error)}`);
  for (const key of keys) {
    for (let i = 0; i + 8 <= key.length; i++) assert.ok(!error.message.includes(key.slice(i, i + 8)), `the message quotes the key: ${error.message}`);
  }
  assert.doesNotMatch(error.message, /\*\*\*/);
  return Object.assign(error, { events });
}

export const texts = (events: ModelStreamEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.text] : []));
export const calls = (events: ModelStreamEvent[]) => events.flatMap((e) => (e.type === 'tool_call' ? [e.call] : []));
/** The `done` that must end the events. */
export function done(events: ModelStreamEvent[]): Extract<ModelStreamEvent, { type: 'done' }> {
  const last = events[events.length - 1];
  assert.equal(last?.type, 'done');
  return last as Extract<ModelStreamEvent, { type: 'done' }>;
}

/** Where a scripted stream pauses or ends early, counted in frames (as both stand-ins' replies say it). */
export interface StreamShape {
  /** pause after this many frames until release() */
  holdAfter?: number;
  /** destroy the socket after this many frames */
  cutAfter?: number;
  /** end the answer cleanly after this many frames (without its final events) */
  endAfter?: number;
}

/** The plan of a stream of `frames`, paused, cut or ended early as `shape` says. */
export function ssePlan(frames: string[], shape: StreamShape, headers: Record<string, string>): Plan {
  const stop = shape.cutAfter ?? shape.endAfter;
  const sent: (string | 'hold')[] = stop === undefined ? [...frames] : frames.slice(0, stop);
  if (shape.holdAfter !== undefined) sent.splice(shape.holdAfter, 0, 'hold');
  return { kind: 'sse', frames: sent, end: shape.cutAfter !== undefined ? 'cut' : 'end', headers };
}
