// Quota entries (spec 2.11, endpoint 17).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { METRIC_KEYS, METRICS } from '../plans/metrics.js';

export const QuotaEntry = Type.Object(
  {
    metric: StringEnum(METRIC_KEYS, {
      description: `<group>/<name>: ${METRICS.map((m) => `\`${m.key}\` (${m.counts})`).join('; ')}`,
    }),
    type: StringEnum(['allocation', 'rate', 'concurrency'], {
      description: 'allocation (things that exist), rate (uses per UTC day; see resets_at) or concurrency (running at once, per cluster)',
    }),
    display_name: Type.String({ description: 'a name for people' }),
    unit: Type.String({ description: 'what usage and limit count, e.g. `count`' }),
    limit: Type.Integer({ minimum: 0, description: 'what the plan allows (summed over the workspaces in the user-wide view)' }),
    usage: Type.Integer({ minimum: 0, description: 'what is used now; may exceed the limit after a plan change, never through a create' }),
    remaining: Type.Integer({ minimum: 0, description: 'limit minus usage, at least 0' }),
    resets_at: Type.Optional(Type.Integer({ minimum: 0, description: 'rate metrics only: when the window ends and usage restarts at 0 (Unix seconds)' })),
    cluster_id: Type.Optional(Type.String({ description: 'concurrency metrics only: the cluster the entry counts' })),
    tier: Type.Optional(Type.String({
      description: 'the plan whose limits give `limit`: the workspace\'s plan; for `workspaces/owned`, a limit of the person rather than ' +
        'of one workspace, the best plan among the workspaces the caller owns (the default plan when none), so a person who owns a pro ' +
        'workspace may own the pro number of workspaces whatever plan this one is on. Absent for workspace metrics in the user-wide ' +
        'view, whose limits are sums over the plans of the workspaces',
    })),
  },
  {
    $id: 'QuotaEntry',
    description: 'One metric\'s limit and usage. Creates past the limit are refused with 429 RESOURCE_EXHAUSTED (reason QUOTA_EXCEEDED).',
    examples: [
      { metric: 'compute/clusters', type: 'allocation', display_name: 'Clusters', unit: 'count', limit: 3, usage: 1, remaining: 2, tier: 'free' },
      { metric: 'workspaces/owned', type: 'allocation', display_name: 'Workspaces owned', unit: 'count', limit: 50, usage: 4, remaining: 46, tier: 'pro' },
      { metric: 'snippets/runs', type: 'rate', display_name: 'Snippet runs per day', unit: 'count', limit: 1000, usage: 12, remaining: 988, resets_at: 1767312000, tier: 'free' },
    ],
  },
);
export type QuotaEntryT = Static<typeof QuotaEntry>;
export const QuotaEntryRef = Type.Unsafe<QuotaEntryT>({ $ref: 'QuotaEntry#' });

export const ListQuotasQuery = Type.Object(
  {
    cluster_id: Type.Optional(Type.String({
      minLength: 1, maxLength: 54,
      description: 'adds the concurrency quota (operations/running) of this cluster (clu_...); a cluster the caller cannot see is 404',
    })),
  },
  { additionalProperties: false },
);
export type ListQuotasQueryT = Static<typeof ListQuotasQuery>;
