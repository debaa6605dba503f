// The one source of time. Tests may shift it with `clock.offsetMs` to cross expiry boundaries.
export const clock = {
  offsetMs: 0,
  nowMs(): number {
    return Date.now() + this.offsetMs;
  },
  /** Unix time in whole seconds, the unit of every timestamp on the wire. */
  now(): number {
    return Math.floor(this.nowMs() / 1000);
  },
};

export function isoFromSeconds(seconds: number): string {
  return new Date(seconds * 1000).toISOString();
}
