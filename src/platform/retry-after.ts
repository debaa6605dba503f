// An HTTP Retry-After value (RFC 9110 10.2.3: delay seconds, or an HTTP date) as milliseconds
// from `nowMs`; null when absent or unreadable. Read where this service is the client of another
// (the machine agent, the Hetzner Cloud adapter); no import beyond this file, so the CLI may use it.
export function retryAfterMs(value: string | null | undefined, nowMs: number): number | null {
  const text = value?.trim();
  if (!text) return null;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
