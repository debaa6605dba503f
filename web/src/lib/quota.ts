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

/**
 * Limits of a person rather than of one workspace (src/modules/plans/metrics.ts, subject `user`):
 * the best plan among the workspaces the person owns sets them, which may not be this workspace's
 * plan. The quota entry names that plan (`tier`); the plan cards say the rule.
 */
export const PERSONAL_METRICS: ReadonlySet<string> = new Set(['workspaces/owned']);

/** Where a quota's limit comes from, when it is not the plan the page shows: "the Pro plan of a workspace you own". */
export function limitSource(q: { metric: string; tier?: string }, workspaceTier: string | undefined, planName: (tier: string) => string): string | null {
  if (!PERSONAL_METRICS.has(q.metric) || q.tier === undefined) return null;
  return q.tier === workspaceTier
    ? `your limit, set by the best plan among the workspaces you own: ${planName(q.tier)}, this one's`
    : `your limit, set by the best plan among the workspaces you own: ${planName(q.tier)}, not this workspace's`;
}
