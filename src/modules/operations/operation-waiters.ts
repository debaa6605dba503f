// The pending `:wait` calls of this process, indexed by operation id: one notifier subscription
// serves all of them, and an "operation ended" notification wakes only the waits on that
// operation (a reconnect's resync wakes every one, since anything may have ended meanwhile).
import { RESYNC, type Channel, type Notifier } from '../../jobs/notifier.js';

export interface OperationWatch {
  /** true when a notification for the operation arrived since the last call */
  takeNotified(): boolean;
  /** resolves on the next notification for the operation, at `ms`, or at shutdown */
  sleep(ms: number): Promise<void>;
  close(): void;
}

export class OperationWaiters {
  private readonly byId = new Map<string, Set<() => void>>();
  private unsubscribe: (() => void) | null = null;
  /** set at shutdown: waits answer with the current state instead of sleeping */
  closing = false;
  /**
   * What the notifier did for this process's waits, for /metrics and for tests that prove a wait
   * was pushed rather than polled without measuring how fast: notifications received, and
   * sleeping waits a notification woke (a wait whose timer ended its sleep is not counted).
   */
  readonly counts = { received: 0, woken: 0 };

  /** `:wait` calls asleep right now, between two reads of their operation (a test waits for one before waking it) */
  sleeping = 0;

  /** `:wait` calls watching an operation right now */
  get pending(): number {
    let n = 0;
    for (const set of this.byId.values()) n += set.size;
    return n;
  }

  /** `channel` carries the ids this class watches: operations (the default) or agent turns */
  constructor(private readonly notifier: Notifier, private readonly channel: Channel = 'svc_operations') {}

  private deliver(payload: string): void {
    this.counts.received++;
    const listeners = payload === RESYNC ? [...this.byId.values()].flatMap((set) => [...set]) : [...(this.byId.get(payload) ?? [])];
    for (const listener of listeners) listener();
  }

  watch(id: string): OperationWatch {
    this.unsubscribe ??= this.notifier.subscribe(this.channel, (payload) => this.deliver(payload));
    let notified = false;
    let wake: (() => void) | null = null;
    const listener = () => {
      notified = true;
      wake?.();
    };
    const set = this.byId.get(id) ?? new Set();
    set.add(listener);
    this.byId.set(id, set);
    return {
      takeNotified: () => {
        const was = notified;
        notified = false;
        return was;
      },
      sleep: (ms) =>
        this.closing
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              const timer = setTimeout(done, ms);
              const counts = this.counts;
              const waiters = this;
              waiters.sleeping++;
              function done() {
                clearTimeout(timer);
                if (wake !== null) waiters.sleeping--;
                wake = null;
                resolve();
              }
              wake = () => {
                counts.woken++;
                done();
              };
            }),
      close: () => {
        set.delete(listener);
        if (set.size === 0 && this.byId.get(id) === set) this.byId.delete(id);
      },
    };
  }

  /** Wakes every pending wait for good (shutdown). */
  releaseAll(): void {
    this.closing = true;
    this.deliver(RESYNC);
  }
}
