// Plans (API.md 8.2).
import { Type, type Static } from 'typebox';
import { StringEnum } from '../../platform/http.js';
import { METRIC_KEYS } from './metrics.js';

export const PlanSchema = Type.Object(
  {
    tier: Type.String({ description: 'the plan\'s name, e.g. free, pro, enterprise' }),
    display_name: Type.String({ description: 'a name for people' }),
    limits: Type.Object(
      Object.fromEntries(METRIC_KEYS.map((key) => [key, Type.Integer({ minimum: 0, description: `the limit of ${key}` })])),
      { description: 'the quota limit of every metric (see GET /v1/quotas)' },
    ),
    price: Type.Union([
      Type.Object({
        currency: StringEnum(['eur', 'usd'], { description: 'ISO 4217 code, lowercase' }),
        unit_amount: Type.Integer({ minimum: 1, maximum: 100_000_000, description: 'cents per month' }),
      }, { description: 'the monthly price' }),
      Type.Null(),
    ], { description: 'what the plan costs per month when SVC_BILLING=payments (a raise to it is paid through the payment provider); null: not sold (the default plan, or one the operator gives)' }),
  },
  {
    $id: 'Plan',
    description: 'A plan of the catalog. Plans are listed from the lowest to the highest: a move to a later one is an upgrade.',
    examples: [{
      tier: 'free', display_name: 'Free', price: null,
      limits: {
        'workspaces/owned': 10, 'compute/clusters': 3, 'compute/machines': 9, 'installs/installs': 10,
        'secrets/secrets': 50, 'snippets/runs': 1000, 'agents/turns': 200, 'agents/cost_cents': 500, 'operations/running': 10,
      },
    }],
  },
);
export type PlanT = Static<typeof PlanSchema>;
export const PlanRef = Type.Unsafe<PlanT>({ $ref: 'Plan#' });
