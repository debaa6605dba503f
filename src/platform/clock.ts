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

// Date#toISOString costs about a microsecond; lists format one per row (member joined_at) on
// every read, which showed up as ~5% of the CPU of GET /v1/workspaces/{id}/members in the bench.
const isoCache = new Map<number, string>();

export function isoFromSeconds(seconds: number): string {
  let iso = isoCache.get(seconds);
  if (iso === undefined) {
    if (isoCache.size >= 10_000) isoCache.clear();
    iso = new Date(seconds * 1000).toISOString();
    isoCache.set(seconds, iso);
  }
  return iso;
}
