// Plans (API.md 8.2).
import { Type, type Static } from 'typebox';
import { METRIC_KEYS } from './metrics.js';

export const PlanSchema = Type.Object(
  {
    tier: Type.String({ description: 'the plan\'s name, e.g. free, pro, enterprise' }),
    display_name: Type.String({ description: 'a name for people' }),
    limits: Type.Object(
      Object.fromEntries(METRIC_KEYS.map((key) => [key, Type.Integer({ minimum: 0, description: `the limit of ${key}` })])),
      { description: 'the quota limit of every metric (see GET /v1/quotas)' },
    ),
  },
  {
    $id: 'Plan',
    description: 'A plan of the catalog. Plans are listed from the lowest to the highest: a move to a later one is an upgrade.',
    examples: [{
      tier: 'free', display_name: 'Free',
      limits: {
        'workspaces/owned': 10, 'compute/clusters': 3, 'compute/machines': 9, 'installs/installs': 10,
        'secrets/secrets': 50, 'snippets/runs': 1000, 'agents/turns': 200, 'agents/cost_cents': 500, 'operations/running': 10,
      },
    }],
  },
);
export type PlanT = Static<typeof PlanSchema>;
export const PlanRef = Type.Unsafe<PlanT>({ $ref: 'Plan#' });
