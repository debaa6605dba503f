import { Type } from 'typebox';
import { bearerSecurity, responses, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { PlanRef } from './plans.schemas.js';

export function planRoutes(app: App, s: Pick<Services, 'config'>): void {
  // The catalog is fixed for the life of the process: built once.
  const page = { data: s.config.plans.plans.map((p) => ({ tier: p.tier, display_name: p.display_name, limits: { ...p.limits }, price: p.price ? { ...p.price } : null })), has_more: false, next_cursor: null };
  app.get('/v1/plans', {
    config: { auth: 'any' },
    schema: {
      tags: ['plans'], security: bearerSecurity, operationId: 'listPlans', summary: 'List the plans',
      description:
        'Every plan of the catalog, from the lowest to the highest, with its quota limits: the built-in free, pro and enterprise, ' +
        'or the operator\'s SVC_PLANS_FILE, and each one\'s monthly price (what a raise costs with SVC_BILLING=payments). Any credential may read it.',
      response: responses({
        200: Type.Object(
          {
            data: Type.Array(PlanRef),
            has_more: Type.Boolean({ description: 'always false: the whole catalog is on this page' }),
            next_cursor: Type.Null({ description: 'always null' }),
          },
          { description: 'The plan catalog' },
        ),
      }, [403]),
    },
  }, async () => page);
}
