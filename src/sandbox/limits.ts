// Per-run limits: the defaults of API.md 8.3 and the range each may be set within.
import type { RunLimits } from './types.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * stackBytes: 256 KiB is about 1,500 frames of plain recursion. It also bounds the few native
 * operations the interrupt handler cannot stop: QuickJS's JSON.stringify checks for cycles in
 * time quadratic in the nesting depth, so a deeply nested value costs ~1.7 s before "stack overflow"
 * at 256 KiB, ~7 s at 512 KiB, ~27 s at 1 MiB (measured); the watchdog stops anything longer than
 * the wall time plus its grace.
 */
export const DEFAULT_LIMITS: Readonly<RunLimits> = Object.freeze({
  wallMs: 10_000,
  cpuMs: 10_000,
  memoryBytes: 64 * MiB,
  stackBytes: 256 * KiB,
  maxRequests: 50,
  maxOutputBytes: 1 * MiB,
  maxLogLines: 1_000,
  maxLogBytes: 64 * KiB,
});

/** [min, max] of each limit. */
const RANGES: Record<keyof RunLimits, readonly [number, number]> = {
  wallMs: [1, 10 * 60_000],
  cpuMs: [1, 10 * 60_000],
  memoryBytes: [4 * MiB, 1024 * MiB],
  stackBytes: [16 * KiB, 8 * MiB],
  maxRequests: [0, 10_000],
  maxOutputBytes: [0, 64 * MiB],
  maxLogLines: [0, 100_000],
  maxLogBytes: [0, 16 * MiB],
};

export const DEFAULT_MAX_STACK_BYTES = 1 * MiB;

/** Largest `inputs`, serialized; the inputs are copied into every run. */
export const MAX_INPUT_BYTES = 1 * MiB;
/** Deepest nesting of `inputs` accepted (its deep freeze walks it inside the sandbox). */
export const MAX_INPUT_DEPTH = 64;
/**
 * Deepest nesting of a run's output. Checked inside the sandbox while the value is serialized (one
 * look-up per value), so QuickJS's JSON.stringify, whose cycle check is quadratic in the depth,
 * never descends further, and the host never parses, stores or serves a deeper document.
 */
export const MAX_OUTPUT_DEPTH = 64;

/**
 * `overrides` on top of `base`. cpuMs defaults to wallMs when neither sets it. Throws a
 * RangeError naming the first limit out of range: a caller's bug, not the snippet's.
 */
export function resolveLimits(base: Partial<RunLimits>, overrides: Partial<RunLimits> | undefined, maxStackBytes: number): RunLimits {
  const merged = { ...DEFAULT_LIMITS, ...base, ...overrides };
  if (overrides?.cpuMs === undefined && base.cpuMs === undefined) merged.cpuMs = merged.wallMs;
  for (const key of Object.keys(RANGES) as (keyof RunLimits)[]) {
    const [min, max] = key === 'stackBytes' ? [RANGES.stackBytes[0], maxStackBytes] : RANGES[key];
    const value = merged[key];
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`sandbox limit ${key} must be an integer between ${min} and ${max}, got ${String(value)}`);
    }
  }
  return merged;
}
