// The quota metrics (API.md 8.2, spec endpoint 17): one closed catalog. Plans give each a limit;
// the module that owns the counted resource supplies its usage (see quotas.service.ts).

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
