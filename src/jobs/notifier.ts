// Push, not poll: "a job is due" and "an operation ended" reach every instance at commit time.
// PostgreSQL: pg_notify inside the writing transaction (delivered only if and when it commits) and
// one LISTEN connection per process. SQLite: one process owns the database file's writer and the
// notification is emitted in-process; it is only acted on after the commit, because the single
// connection the listener's next query needs is held by the transaction until it ends.
import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import pg from 'pg';
import type { Executor } from '../db/database.js';

/**
 * svc_jobs: a job is due; svc_operations: an operation ended (payload its id); svc_agent_events:
 * a session has new events (payload the session id); svc_agent_turns: a turn ended, waits on a
 * person or was cancelled (payload the turn id).
 */
export type Channel = 'svc_jobs' | 'svc_operations' | 'svc_agent_events' | 'svc_agent_turns';
const CHANNELS: Channel[] = ['svc_jobs', 'svc_operations', 'svc_agent_events', 'svc_agent_turns'];
/** sent to every listener after a reconnect: anything may have happened meanwhile */
export const RESYNC = '*';
/** how long announcements gather before they go out as one notification */
const ANNOUNCE_BATCH_MS = 3;

export interface Notifier {
  /** Publishes from inside a transaction (or outside one); delivered after commit. */
  publish(tx: Executor, channel: Channel, payload: string): Promise<void>;
  /**
   * Publishes after the caller's commit, batched: payloads announced within a few milliseconds
   * go out as one notification (comma-separated). PostgreSQL serializes the commits of
   * transactions that NOTIFY, so the hot path (every operation's end) announces instead.
   */
  announce(channel: Channel, payload: string): void;
  subscribe(channel: Channel, listener: (payload: string) => void): () => void;
  start(): Promise<void>;
  close(): Promise<void>;
}

class LocalNotifier implements Notifier {
  protected readonly events = new EventEmitter();
  constructor() {
    // One listener per pending :wait; thousands are normal.
    this.events.setMaxListeners(0);
  }
  async publish(_tx: Executor, channel: Channel, payload: string): Promise<void> {
    setImmediate(() => this.events.emit(channel, payload));
  }
  announce(channel: Channel, payload: string): void {
    setImmediate(() => this.events.emit(channel, payload));
  }
  /** Delivers each payload of a (possibly batched) notification. */
  protected deliver(channel: Channel, payload: string): void {
    if (payload === RESYNC || !payload.includes(',')) this.events.emit(channel, payload);
    else for (const one of payload.split(',')) this.events.emit(channel, one);
  }
  subscribe(channel: Channel, listener: (payload: string) => void): () => void {
    this.events.on(channel, listener);
    return () => this.events.off(channel, listener);
  }
  async start(): Promise<void> {}
  async close(): Promise<void> {
    this.events.removeAllListeners();
  }
}

class PostgresNotifier extends LocalNotifier {
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = 250;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly batches = new Map<Channel, string[]>();
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly connectionString: string,
    private readonly db: Executor,
    private readonly onError: (err: unknown) => void,
  ) {
    super();
  }

  override async publish(tx: Executor, channel: Channel, payload: string): Promise<void> {
    await sql`select pg_notify(${channel}, ${payload})`.execute(tx);
  }

  override announce(channel: Channel, payload: string): void {
    const batch = this.batches.get(channel) ?? [];
    batch.push(payload);
    this.batches.set(channel, batch);
    this.flushTimer ??= setTimeout(() => void this.flush(), ANNOUNCE_BATCH_MS);
  }

  private async flush(): Promise<void> {
    this.flushTimer = null;
    const batches = [...this.batches.entries()];
    this.batches.clear();
    for (const [channel, payloads] of batches) {
      // NOTIFY payloads are limited to 8000 bytes: ids are ~30 characters, so 200 a notification.
      for (let i = 0; i < payloads.length; i += 200) {
        const payload = payloads.slice(i, i + 200).join(',');
        await sql`select pg_notify(${channel}, ${payload})`.execute(this.db).catch(this.onError);
      }
    }
  }

  override async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    client.on('notification', (msg) => {
      if (CHANNELS.includes(msg.channel as Channel)) this.deliver(msg.channel as Channel, msg.payload ?? '');
    });
    client.on('error', (err) => {
      this.onError(err);
      this.scheduleReconnect(client);
    });
    client.on('end', () => this.scheduleReconnect(client));
    await client.connect();
    for (const channel of CHANNELS) await client.query(`listen ${channel}`);
    this.client = client;
    this.retryMs = 250;
  }

  private scheduleReconnect(dead: pg.Client): void {
    if (this.closed || this.client !== dead || this.reconnectTimer) return;
    this.client = null;
    dead.end().catch(() => {});
    this.reconnectTimer = setTimeout(async () => {
      this.reconnectTimer = null;
      try {
        await this.connect();
        for (const channel of CHANNELS) this.events.emit(channel, RESYNC);
      } catch (err) {
        this.onError(err);
        this.retryMs = Math.min(this.retryMs * 2, 10_000);
        this.client = dead;
        this.scheduleReconnect(dead);
      }
    }, this.retryMs);
    this.reconnectTimer.unref();
  }

  override async close(): Promise<void> {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      await this.flush();
    }
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
    await super.close();
  }
}

export function createNotifier(opts: { databaseUrl: string | null; db: Executor; onError?: (err: unknown) => void }): Notifier {
  return opts.databaseUrl ? new PostgresNotifier(opts.databaseUrl, opts.db, opts.onError ?? (() => {})) : new LocalNotifier();
}
