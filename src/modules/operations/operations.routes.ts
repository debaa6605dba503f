import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { bearerSecurity, requestHeaders, responses, verbPath, type App } from '../../platform/http.js';
import { LONG_REQUEST_CAPS } from '../../platform/long-requests.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { ListOperationsQuery, OperationId, OperationRef, WaitQuery } from './operations.schemas.js';

const tags = ['operations'];
const IdParams = Type.Object({ id: OperationId });
const AFTER_DELETION =
  ' After a workspace is deleted, the user who requested an operation in it can still read and wait for it by sending the deleted workspace\'s id in svc-context.';

/**
 * Every 202 of the API answers with an operation: its URL goes in Location, in this one hook rather
 * than in each route, so new routes and idempotent replays carry it too.
 */
export function registerOperationLocation(app: App): void {
  app.addHook('preSerialization', (_request, reply, payload, done) => {
    if (reply.statusCode === 202) {
      const id = (payload as { id?: unknown } | null)?.id;
      if (typeof id === 'string' && id.startsWith('op_')) reply.header('location', `/v1/operations/${id}`);
    }
    done(null, payload);
  });
}

export function operationRoutes(app: App, s: Pick<Services, 'operations'>, opts: { waitSafetyPollMs: number }): void {
  app.get('/v1/operations', {
    config: { auth: 'workspace', requesterOfDeletedWorkspace: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'listOperations', summary: 'List operations',
      description: 'Operations of the workspace, newest first, optionally of one collection (owner_type), one resource (owner_id) or in one ' +
        'state (`state=RUNNING`: those under way; `state=FAILED`: those that failed); the filters combine, and a cursor is bound to ' +
        'the filters it was issued with (reused with others: 400). List items omit `steps`.' + AFTER_DELETION,
      headers: requestHeaders(), querystring: ListOperationsQuery,
      response: responses({ 200: pageOf(OperationRef, 'A page of operations') }),
    },
  }, async (request) => s.operations.list(scopeOf(request), request.query));

  app.get('/v1/operations/:id', {
    config: { auth: 'workspace', requesterOfDeletedWorkspace: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'getOperation', summary: 'Get an operation',
      description: 'The operation with its steps.' + AFTER_DELETION,
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: OperationRef }),
    },
  }, async (request) => s.operations.get(scopeOf(request), request.params.id));

  app.post(verbPath('/v1/operations/:id', 'wait'), {
    config: { auth: 'workspace', requesterOfDeletedWorkspace: true, longLived: true },
    schema: {
      tags, security: bearerSecurity, operationId: 'waitOperation', summary: 'Wait for an operation to end',
      description:
        'Returns the operation as soon as it is done (the end is pushed to every instance, not polled), or as it is when ' +
        '`timeout` seconds (1-60, default 30) pass; check `done`. No body.' + AFTER_DELETION + LONG_REQUEST_CAPS,
      params: IdParams, headers: requestHeaders(), querystring: WaitQuery,
      response: responses({ 200: OperationRef }, [400, 403, 404, 429]),
    },
  }, async (request) => s.operations.wait(scopeOf(request), request.params.id, (request.query.timeout ?? 30) * 1000, opts.waitSafetyPollMs));

  app.post(verbPath('/v1/operations/:id', 'cancel'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'cancelOperation', summary: 'Cancel an operation',
      description:
        'Asks a running operation to stop: 202 with the operation, still RUNNING; the running step drains, then the operation ' +
        'becomes CANCELLED (a step waiting for a retry is not run again). 422 FAILED_PRECONDITION when it is already done ' +
        '(reason OPERATION_DONE) or its type cannot be cancelled halfway (reason NOT_CANCELLABLE: workspace.delete, cluster.delete). ' +
        'Any member may cancel. No body.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 202: OperationRef }, [400, 403, 404, 422]),
    },
  }, async (request, reply) => {
    const op = await s.operations.cancel(scopeOf(request), request.params.id);
    return reply.code(202).send(op);
  });
}
