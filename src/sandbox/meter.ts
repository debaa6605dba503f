// The clock of one run: wall time since the worker took it, and CPU time of the worker thread since
// the snippet's code began (read from the kernel where it can be, else the time spent inside the
// interpreter, an upper bound). Durations only, so performance.now() rather than the wall clock.
import { threadCpuMs } from './quickjs.js';
import type { RunStats } from './types.js';

/** CPU is read from the kernel at most this often while the interpreter runs (~20 us a read). */
const CPU_POLL_MS = 10;

export class RunMeter {
  private readonly startedAt = performance.now();
  private readonly wallDeadline: number;
  private cpuStart: number | null = null;
  private interpreterMs = 0;
  private nextCpuPoll = 0;

  constructor(
    wallMs: number,
    private readonly cpuLimitMs: number,
  ) {
    this.wallDeadline = this.startedAt + wallMs;
  }

  /** From here on CPU counts against the run (building its context is the engine's time). */
  startCpu(): void {
    this.cpuStart = threadCpuMs();
  }

  /** Runs `enter` (a call into the interpreter), counting its duration as interpreter time. */
  inside<T>(enter: () => T): T {
    const started = performance.now();
    try {
      return enter();
    } finally {
      this.interpreterMs += performance.now() - started;
    }
  }

  /** For the interrupt handler: which limit the run is past, if any. Cheap enough to call often. */
  exceeded(): 'wall' | 'cpu' | null {
    const now = performance.now();
    if (now >= this.wallDeadline) return 'wall';
    if (now < this.nextCpuPoll) return null;
    this.nextCpuPoll = now + CPU_POLL_MS;
    return this.cpuMs() > this.cpuLimitMs ? 'cpu' : null;
  }

  cpuMs(): number {
    if (this.cpuStart === null) return this.interpreterMs;
    return (threadCpuMs() ?? this.cpuStart) - this.cpuStart;
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.startedAt);
  }

  stats(heapUsedBytes: number, requestCount: number): RunStats {
    return { cpu_time_ms: Math.round(this.cpuMs()), wall_time_ms: this.elapsedMs(), heap_used_bytes: heapUsedBytes, request_count: requestCount };
  }
}
