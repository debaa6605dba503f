// The SSE stream of agent events across two `svc serve` processes sharing one database: a reader on
// one process sees the events another process appends; its connection is cut mid-stream and it
// resumes on the other process from Last-Event-ID with no gap and no duplicate; a stream following
// a turn ends after its terminal event; idle streams get keepalive comments; bad cursors are 400.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, DIALECT, type TestDatabase } from './harness.js';
import { dbEnv, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Agent0Stream0Bootstrap0Token0000';
const call = svcCaller(TOKEN);

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/** An SSE connection that collects frames; `next(n)` waits for n more event frames. */
function openStream(base: string, path: string, headers: Record<string, string>) {
  const frames: Frame[] = [];
  let buffer = '';
  let status = 0;
  let ended = false;
  let waiter: (() => void) | null = null;
  let req!: ClientRequest;
  const opened = new Promise<void>((resolve, reject) => {
    req = httpRequest(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', ...headers } }, (res: IncomingMessage) => {
      status = res.statusCode ?? 0;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let at;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const frame: Frame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comment = line.slice(1).trim();
            else {
              const [field, ...rest] = line.split(':');
              const value = rest.join(':').replace(/^ /, '');
              if (field === 'id' || field === 'event' || field === 'data') frame[field] = value;
            }
          }
          frames.push(frame);
        }
        waiter?.();
      });
      res.on('end', () => {
        ended = true;
        waiter?.();
      });
      resolve();
    });
    req.on('error', (err) => (ended ? undefined : reject(err)));
    req.end();
  });
  const events = () => frames.filter((f) => f.event);
  return {
    opened,
    get status() {
      return status;
    },
    get ended() {
      return ended;
    },
    frames,
    events,
    async until(pred: () => boolean, what: string) {
      const deadline = Date.now() + 60_000;
      while (!pred()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; frames: ${JSON.stringify(frames).slice(0, 500)}`);
        await new Promise<void>((resolve) => {
          waiter = resolve;
          setTimeout(resolve, 200);
        });
      }
    },
    cut() {
      req.destroy();
    },
  };
}

describe(`agent event stream across processes (${DIALECT})`, () => {
  let db: TestDatabase;
  const processes: RunningSvc[] = [];
  let ws: string;
  let session: string;
  const scope = () => ({ 'svc-context': ws });

  before(async () => {
    db = await createTestDatabase();
    const env = dbEnv(db, {
      SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN, SVC_AGENT_STREAM_HEARTBEAT_S: '1',
    });
    processes.push(await startSvc(env), await startSvc(env));
    const [a] = processes;
    ws = (await call(a!.url, 'POST', '/v1/workspaces', { body: { name: 'Stream' } })).body.id;
    const agent = await call(a!.url, 'POST', '/v1/agents', { headers: scope(), body: { name: 'a', instructions: 'x', capabilities: ['CHAT'] } });
    session = (await call(a!.url, 'POST', '/v1/agent_sessions', { headers: scope(), body: { agent_id: agent.body.id } })).body.id;
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await db?.drop();
  });

  /** A turn that admission refuses at once: two events (turn.queued, turn.failed), no model needed. */
  const refusedTurn = (url: string) => call(url, 'POST', '/v1/agent_turns', { headers: scope(), body: { session_id: session, message: 'hi', runtime_hint: 'RETAINED_RUNTIME' } });

  test('cut mid-stream and resumed on the other process from Last-Event-ID: no gap, no duplicate', { timeout: 180_000 }, async () => {
    const [a, b] = processes;
    const first = openStream(b!.url, `/v1/agent_events:stream?session_id=${session}`, scope());
    await first.opened;
    assert.equal(first.status, 200);
    for (let i = 0; i < 3; i++) await refusedTurn(a!.url);
    await first.until(() => first.events().length >= 6, 'six events on the reader of the other process');
    first.cut();
    const seen = first.events();
    const lastId = seen.at(-1)!.id!;
    // Written while nobody listens:
    for (let i = 0; i < 2; i++) await refusedTurn(b!.url);
    const second = openStream(a!.url, `/v1/agent_events:stream?session_id=${session}`, { ...scope(), 'last-event-id': lastId });
    await second.opened;
    await refusedTurn(a!.url);
    await second.until(() => second.events().length >= 6, 'the missed events and the new ones');
    const all = [...seen, ...second.events()];
    const sequences = all.map((f) => Number(f.id));
    assert.deepEqual(sequences, sequences.map((_, i) => i + 1), 'ids 1..n with no gap and no duplicate');
    for (const f of all) {
      const event = JSON.parse(f.data!);
      assert.equal(event.cursor, f.id);
      assert.equal(event.type, f.event);
      assert.equal(event.session_id, session);
    }
    assert.deepEqual(all.slice(0, 2).map((f) => f.event), ['turn.queued', 'turn.failed']);
    second.cut();
  });

  test('a stream following a turn ends after its terminal event; idle streams get keepalive comments; bad cursors are 400', { timeout: 120_000 }, async () => {
    const [a, b] = processes;
    const turn = (await refusedTurn(a!.url)).body;
    const following = openStream(b!.url, `/v1/agent_events:stream?turn_id=${turn.id}`, scope());
    await following.opened;
    await following.until(() => following.ended, 'the stream to end');
    assert.deepEqual(following.events().map((f) => f.event), ['turn.queued', 'turn.failed']);
    // Resumed after its last event, a finished turn's stream ends at once.
    const done = openStream(a!.url, `/v1/agent_events:stream?turn_id=${turn.id}`, { ...scope(), 'last-event-id': following.events().at(-1)!.id! });
    await done.opened;
    await done.until(() => done.ended, 'the resumed stream to end');
    assert.equal(done.events().length, 0);

    const idle = openStream(a!.url, `/v1/agent_events:stream?session_id=${session}&after=100000`, scope());
    await idle.opened;
    await idle.until(() => idle.frames.some((f) => f.comment === 'keepalive'), 'a keepalive comment');
    idle.cut();

    const bad = await call(a!.url, 'GET', `/v1/agent_events:stream?session_id=${session}`, { headers: { ...scope(), 'last-event-id': 'abc' } });
    assert.equal(bad.status, 400);
    const neither = await call(a!.url, 'GET', '/v1/agent_events:stream', { headers: scope() });
    assert.equal(neither.status, 400);
    const unknown = await call(a!.url, 'GET', '/v1/agent_events:stream?session_id=ags_01kaxq3m7y0c9v8t6r5p4n3m2k', { headers: scope() });
    assert.equal(unknown.status, 404);
  });
});
