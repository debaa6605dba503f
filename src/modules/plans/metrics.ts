// The quota metrics (API.md 8.2, spec endpoint 17): one closed catalog. Plans give each a limit;
// the module that owns the counted resource supplies its usage (see quotas/quotas.service.ts).
// Kept with the plans, below the quotas that count against them, so the two folders form no cycle.

/** allocation: things that exist; rate: uses per window (a UTC day); concurrency: things running at once. */
export type MetricType = 'allocation' | 'rate' | 'concurrency';

/**
 * Who a metric is counted for: a workspace, a user (over the workspaces the user owns), or one
 * cluster of a workspace.
 */
export type MetricSubject = 'workspace' | 'user' | 'cluster';

export interface MetricDefinition {
  key: string;
  type: MetricType;
  subject: MetricSubject;
  display_name: string;
  unit: string;
  /** what is counted, for the OpenAPI document and the README */
  counts: string;
  /** rate metrics: the window they count in (a UTC day unless it says month) */
  window?: 'day' | 'month';
}

export const METRICS = [
  {
    key: 'workspaces/owned', type: 'allocation', subject: 'user', display_name: 'Workspaces owned', unit: 'count',
    counts: 'workspaces in which the user is an owner; checked when the user creates a workspace',
  },
  {
    key: 'compute/clusters', type: 'allocation', subject: 'workspace', display_name: 'Clusters', unit: 'count',
    counts: 'clusters registered in the workspace, in any state',
  },
  {
    key: 'compute/machines', type: 'allocation', subject: 'workspace', display_name: 'Machines', unit: 'count',
    counts: 'machines in the workspace, in any state (a provisioned one counts from its request on); checked where a worker bootstrap is used and where POST /v1/machines is called',
  },
  {
    key: 'installs/installs', type: 'allocation', subject: 'workspace', display_name: 'Installs', unit: 'count',
    counts: 'installs in the workspace, in any state',
  },
  {
    key: 'secrets/secrets', type: 'allocation', subject: 'workspace', display_name: 'Secrets', unit: 'count',
    counts: 'secrets in the workspace, soft-deleted ones included until they are purged',
  },
  {
    key: 'snippets/runs', type: 'rate', subject: 'workspace', display_name: 'Snippet runs per day', unit: 'count',
    counts: 'snippet runs started in the workspace during the current UTC day',
  },
  {
    key: 'agents/turns', type: 'rate', subject: 'workspace', display_name: 'Agent turns per day', unit: 'count',
    counts: 'agent turns admitted in the workspace during the current UTC day; a turn past it is refused at submit (admission_error QUOTA_EXCEEDED)',
  },
  {
    key: 'agents/cost_cents', type: 'rate', subject: 'workspace', display_name: 'Agent model spend per month', unit: 'cents', window: 'month',
    counts: 'what the model calls of agent turns cost in the workspace during the current UTC month, in cents (each turn rounded up); a model call holds its most ' +
      '(its output at the configured maximum) from before it is made until its real cost replaces it, so calls running now count and concurrent turns never pass it',
  },
  {
    key: 'operations/running', type: 'concurrency', subject: 'cluster', display_name: 'Running operations per cluster', unit: 'count',
    counts: 'operations running on one cluster at once; deletions are always admitted (a quota never blocks removing things) but count while they run',
  },
] as const satisfies readonly MetricDefinition[];

export type MetricKey = (typeof METRICS)[number]['key'];
export const METRIC_KEYS = METRICS.map((m) => m.key) as readonly MetricKey[];

const BY_KEY = new Map<string, MetricDefinition>(METRICS.map((m) => [m.key, m]));

export function metricOf(key: MetricKey): MetricDefinition {
  return BY_KEY.get(key)!;
}

export function isMetricKey(key: string): key is MetricKey {
  return BY_KEY.has(key);
}

/** Rate metrics count per UTC day: the window containing `now` (Unix seconds) and when it ends. */
export function dayWindow(now: number): { start: number; end: number } {
  const start = now - (now % 86_400);
  return { start, end: start + 86_400 };
}

/** The UTC calendar month containing `now` (Unix seconds). */
export function monthWindow(now: number): { start: number; end: number } {
  const d = new Date(now * 1000);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  const end = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
  return { start, end };
}

/** The window a rate metric counts in at `now`. */
export function rateWindow(def: MetricDefinition, now: number): { start: number; end: number } {
  return def.window === 'month' ? monthWindow(now) : dayWindow(now);
}
