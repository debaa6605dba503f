// Monthly billing periods, anchored at the workspace's creation (UTC calendar months; an anchor on
// the 31st ends February's period on its last day, as Stripe does).

function addMonths(anchor: Date, months: number): number {
  const target = new Date(Date.UTC(anchor.getUTCFullYear(), anchor.getUTCMonth() + months, 1,
    anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds()));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(anchor.getUTCDate(), lastDay));
  return Math.floor(target.getTime() / 1000);
}

/** The period containing `now` (Unix seconds): it starts at or before `now` and ends after it. */
export function billingPeriod(anchor: number, now: number): { start: number; end: number } {
  const a = new Date(anchor * 1000);
  if (now < anchor) return { start: anchor, end: addMonths(a, 1) };
  const nowDate = new Date(now * 1000);
  let k = (nowDate.getUTCFullYear() - a.getUTCFullYear()) * 12 + (nowDate.getUTCMonth() - a.getUTCMonth());
  while (k > 0 && addMonths(a, k) > now) k--;
  while (addMonths(a, k + 1) <= now) k++;
  return { start: addMonths(a, k), end: addMonths(a, k + 1) };
}
