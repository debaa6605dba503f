// When a new API token stops working: a few common lifetimes, or a date the person picks. The API
// takes Unix seconds in the future, at most 10 years ahead, or nothing for a token that never
// expires.

export const EXPIRY_CHOICES: [value: string, label: string][] = [
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In a year'],
  ['never', 'Never'],
  ['date', 'On a date…'],
];

const DAY = 86400;

/**
 * The expires_at to send for a choice (a number of days, 'never', or 'date' with the text of a
 * datetime-local input, read in the browser's time zone), or why the date is not usable.
 */
export function expiresAt(choice: string, dateText: string, nowMs: number): { ok: true; value: number | undefined } | { ok: false; error: string } {
  const now = Math.floor(nowMs / 1000);
  if (choice === 'never') return { ok: true, value: undefined };
  if (choice === 'date') {
    const ms = Date.parse(dateText);
    if (!dateText || Number.isNaN(ms)) return { ok: false, error: 'pick a date and time' };
    const at = Math.floor(ms / 1000);
    if (at <= now) return { ok: false, error: 'must be in the future' };
    if (at > now + 3650 * DAY) return { ok: false, error: 'at most 10 years ahead' };
    return { ok: true, value: at };
  }
  const days = Number(choice);
  if (!Number.isInteger(days) || days <= 0) return { ok: false, error: 'unknown choice' };
  return { ok: true, value: now + days * DAY };
}
