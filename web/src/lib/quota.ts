// A quota as a person reads it: "3 of 5 installs", what is left, and where the bar turns to a
// warning (80 %, when the API notifies) and to full. Kept apart from QuotaBars for unit tests.

export interface QuotaFigures {
  display_name: string;
  limit: number;
  usage: number;
  type: string;
}

/** "3 of 5 clusters"; "0 of 0 clusters (not in this plan)"; "6 of 5 clusters (over the limit)". */
export function quotaWords(q: QuotaFigures): string {
  const what = q.display_name.charAt(0).toLowerCase() + q.display_name.slice(1);
  const base = `${q.usage} of ${q.limit} ${what}`;
  if (q.limit === 0) return `${base} (not in this plan)`;
  if (q.usage > q.limit) return `${base} (over the limit)`;
  if (q.usage === q.limit) return `${base} (the limit is reached)`;
  return base;
}

/** The <meter> bounds: max never 0 (a bar needs a range); high at 80 % of the limit. */
export function meterBounds(q: QuotaFigures): { max: number; value: number; high: number; optimum: number } {
  const max = Math.max(q.limit, 1);
  return { max, value: Math.min(q.usage, max), high: max * 0.8, optimum: 0 };
}
