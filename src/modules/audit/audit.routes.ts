import { scopeOf } from '../../platform/auth.js';
import { bearerSecurity, requestHeaders, responses, type App } from '../../platform/http.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { AuditEvent, ListAuditEventsQuery } from './audit.schemas.js';

export function auditRoutes(app: App, s: Pick<Services, 'audit'>): void {
  app.addSchema(AuditEvent);

  app.get('/v1/audit_events', {
    config: { auth: 'workspace' },
    schema: {
      tags: ['audit events'], security: bearerSecurity, operationId: 'listAuditEvents', summary: 'List audit events',
      description:
        'The workspace\'s audit log, newest first: who (user, API token, OAuth client, or the service itself) did what to which ' +
        'resource, with the request id. Recorded: secret creation, change, deletion, restore and purge; every version creation and ' +
        'state change; every read of a secret value (`:access`, and each deploy that resolved a secret for an install); API token ' +
        'creation and revocation; OAuth client creation and deletion; member additions, role changes and removals; workspace ' +
        'deletion; cluster registration, renaming, deletion and capability refreshes; package and package version publishing; ' +
        'install creation, redeploys (updates) and deletion. Each event names the actor and the resource as people know them ' +
        '(the actor\'s name and e-mail, the resource\'s name), as they were when it was recorded. An event is written in the same transaction as what it records, is never changed or removed through the API, ' +
        'and never holds a secret value. Filters: `resource_id`, `action` (the cursor is bound to them). `resource_id=sec_...` lists the ' +
        'secret\'s events and those of all its versions together, newest first (each event names its own resource: `secret` or ' +
        '`secret_version`, with `metadata.secret_id`); `resource_id=secv_...` lists one version\'s. Both are read from an index by ' +
        'resource, so their cost follows the events listed, not the size of the workspace\'s log. Needs the admin or owner role.',
      headers: requestHeaders(), querystring: ListAuditEventsQuery,
      response: responses({ 200: pageOf(AuditEvent, 'A page of audit events') }, [400, 403]),
    },
  }, async (request) => s.audit.listEvents(scopeOf(request), request.query));
}
