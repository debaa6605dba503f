// This process as other instances sharing the database see it: a row in `instances` with a
// heartbeat, renewed while the process holds something others must not take (in-flight
// idempotency keys), as a job's lease is renewed while its step runs. Another instance decides
// that the holder is gone when its row is missing, its heartbeat is stale, or, when both run on
// the same host, its pid no longer exists (a killed process is then recognised at once).
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Db } from '../db/database.js';
import { clock } from './clock.js';
import { randomString } from './crypto.js';

/** How often a holding instance renews its heartbeat. */
export const HEARTBEAT_MS = 5_000;
/** A heartbeat older than this means the instance is gone (three beats missed). */
export const STALE_HEARTBEAT_MS = 3 * HEARTBEAT_MS;

/**
 * Identifies the pid space of this process: the kernel's boot id and the pid namespace. Two
 * processes with the same one can test each other's pid; null where /proc is not available.
 */
function pidSpace(): string | null {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}|${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return null;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** this process's pid space (see pidSpace); exported for tests that stage other instances */
export const HOST = pidSpace();

export class InstanceHeartbeat {
  readonly id = `${hostname()}:${process.pid}:${randomString(6)}`;
  private holds = 0;
  private lastBeatMs = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly db: Db) {}

  private async beat(): Promise<void> {
    const now = clock.nowMs();
    await this.db
      .insertInto('instances')
      .values({ id: this.id, host: HOST, pid: process.pid, heartbeat_at: now, started_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ heartbeat_at: now }))
      .execute();
    this.lastBeatMs = now;
  }

  /**
   * Marks the start of a hold; the heartbeat is fresh when it resolves and stays fresh until the
   * matching release(). At most one write per HEARTBEAT_MS however many requests hold.
   */
  async hold(): Promise<void> {
    this.holds++;
    this.timer ??= setInterval(() => void this.beat().catch(() => undefined), HEARTBEAT_MS).unref();
    try {
      // abs: a clock moved back (tests shift it) must not leave the row with a future heartbeat.
      if (Math.abs(clock.nowMs() - this.lastBeatMs) >= HEARTBEAT_MS) await this.beat();
    } catch (err) {
      this.release();
      throw err;
    }
  }

  release(): void {
    if (--this.holds > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
  }

  /** true when instance `id` is not known to be running: no row, a stale heartbeat, or a dead pid on this host */
  async isGone(id: string): Promise<boolean> {
    if (id === this.id) return false;
    const row = await this.db.selectFrom('instances').select(['host', 'pid', 'heartbeat_at']).where('id', '=', id).executeTakeFirst();
    if (!row) return true;
    if (clock.nowMs() - Number(row.heartbeat_at) >= STALE_HEARTBEAT_MS) return true;
    return HOST !== null && row.host === HOST && !pidAlive(Number(row.pid));
  }

  /** Removes rows of instances silent for a day (a crashed process never removes its own). */
  async purgeSilent(): Promise<number> {
    const res = await this.db.deleteFrom('instances').where('heartbeat_at', '<', clock.nowMs() - 24 * 60 * 60 * 1000).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
