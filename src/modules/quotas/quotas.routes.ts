import { ApiError } from '../../platform/errors.js';
import { bearerSecurity, requestHeaders, responses, type App } from '../../platform/http.js';
import type { Services } from '../../services.js';
import { ListQuotasQuery, QuotaEntryRef } from './quotas.schemas.js';
import { Type } from 'typebox';

export function quotaRoutes(app: App, s: Pick<Services, 'quotas'>): void {
  app.get('/v1/quotas', {
    config: { auth: 'workspace-or-user' },
    schema: {
      tags: ['quotas'], security: bearerSecurity, operationId: 'listQuotas', summary: 'List quotas with their usage',
      description:
        'One entry per metric, in a stable order. With a workspace (an API token or OAuth client JWT, or a user credential with ' +
        'svc-context): the workspace\'s limits (its plan) and usage; `workspaces/owned` is listed for a user caller (the caller\'s ' +
        'own: workspaces they own, limited by the best plan among them). A user credential without svc-context gets the user-wide ' +
        'view: every metric over the workspaces the user owns, limits summed over their plans. `cluster_id` adds ' +
        '`operations/running` for that cluster (a cluster of the workspace; in the user-wide view, of any workspace the user ' +
        'belongs to); another cluster is 404. Any member may read them. The whole answer comes from one statement.',
      headers: requestHeaders(), querystring: ListQuotasQuery,
      response: responses({
        200: Type.Object(
          {
            data: Type.Array(QuotaEntryRef),
            has_more: Type.Boolean({ description: 'always false: every metric is on this page' }),
            next_cursor: Type.Null({ description: 'always null' }),
          },
          { description: 'Every quota of the caller\'s view' },
        ),
      }, [400, 403, 404]),
    },
  }, async (request) => {
    const { cluster_id } = request.query;
    const scope = request.scope;
    const principal = request.principal;
    if (!principal) throw new ApiError('INTERNAL', 'route is not authenticated');
    const userId = principal.kind === 'user' ? principal.userId : null;
    const data = scope
      ? await s.quotas.report({ workspaceId: scope.workspaceId, userId, ...(cluster_id !== undefined ? { clusterId: cluster_id } : {}) })
      : await s.quotas.report({ userId: userId!, ...(cluster_id !== undefined ? { clusterId: cluster_id } : {}) });
    return { data, has_more: false, next_cursor: null };
  });
}
