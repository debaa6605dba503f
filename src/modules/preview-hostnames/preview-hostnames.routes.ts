import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { OperationRef } from '../operations/operations.schemas.js';
import { acceptOperation } from '../operations/operation-steps.js';
import {
  BindFloatingBody, BindPinnedBody, HostnameIdParam, InstallIdParam, ListPreviewHostnamesQuery, PreviewHostname,
} from './preview-hostnames.schemas.js';

const tags = ['preview hostnames'];
const InstallParams = Type.Object({ id: InstallIdParam });
const HostnameParams = Type.Object({ id: InstallIdParam, hostname_id: HostnameIdParam });
const COLLECTION = '/v1/installs/:id/preview_hostnames';

const BIND_RULES =
  'render_id must be a render of the install (else 400, field violation body.render_id) that has been deployed (else 422 ' +
  'RENDER_NOT_DEPLOYED). An install being deleted is 422 (reason INSTALL_DELETING); a hostname being released is 422 ' +
  '(reason PREVIEW_HOSTNAME_RELEASING). The operation (owner_type install; steps `check_render`, `activate`, `route`) checks ' +
  'the render again and makes the hostname active; if it fails or is cancelled before that, a hostname it was creating ' +
  'disappears and an active one keeps its binding. Its `route` step then re-applies the install\'s route objects on a ' +
  'Kubernetes cluster (the HTTPRoute or Ingress holding its hostnames; nothing on the local cluster): a cluster that refuses ' +
  'fails the operation, with the hostname active for the preview router. ' +
  'metadata: install_id, preview_hostname_id, hostname, track, render_id. response: install_id, preview_hostname_id, hostname. ' +
  'Any member may bind.';

export function previewHostnameRoutes(app: App, s: Pick<Services, 'idempotency' | 'operations' | 'previewHostnames'>): void {
  app.post(verbPath(COLLECTION, 'bindFloating'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'bindFloatingPreviewHostname', summary: 'Bind a track to a render',
      description:
        'idempotency-key is REQUIRED (400 without it). 202 with a `preview_hostname.bind_floating` operation. The first bind of ' +
        'a track creates its hostname (`<track>--<install>.<preview domain>`, state provisioning; active when the operation ' +
        'completes). Binding the track again keeps the same hostname and moves it to the new render when that operation ' +
        'completes; until then it serves the previous render. Of several binds in a row, the latest request wins, whatever ' +
        'order their operations finish in. ' + BIND_RULES,
      params: InstallParams, headers: requestHeaders({ idempotency: 'required' }), body: BindFloatingBody,
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.previewHostnames.bindFloating(scope, request.params.id, request.body, tx));
  });

  app.post(verbPath(COLLECTION, 'bindPinned'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'bindPinnedPreviewHostname', summary: 'Give one render a hostname',
      description:
        '202 with a `preview_hostname.bind_pinned` operation. The hostname (`<track>-<render>--<install>.<preview domain>`, track ' +
        'default "pinned") always serves this render. The same (track, render) again returns an operation for the existing ' +
        'hostname (an evicted one is served again). Once the render has been replaced for SVC_PREVIEW_PINNED_RETENTION seconds ' +
        '(default 7 days) the hostname is evicted, and binding the render is 422 (reason RENDER_RETIRED). ' + BIND_RULES +
        ' Accepts idempotency-key.',
      params: InstallParams, headers: requestHeaders({ idempotency: 'optional' }), body: BindPinnedBody,
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.previewHostnames.bindPinned(scope, request.params.id, request.body, tx));
  });

  app.get(COLLECTION, {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listPreviewHostnames', summary: 'List the preview hostnames of an install',
      description:
        'Newest first. Filters: binding_kind (pinned, floating), track (exact), state (provisioning, active, evicted, releasing); ' +
        'a cursor is bound to the filters it was issued with (reused with others: 400). Any member may list them.',
      params: InstallParams, headers: requestHeaders(), querystring: ListPreviewHostnamesQuery,
      response: responses({ 200: pageOf(PreviewHostname, 'A page of preview hostnames') }),
    },
  }, async (request) => s.previewHostnames.list(scopeOf(request), request.params.id, request.query));

  app.get(`${COLLECTION}/:hostname_id`, {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getPreviewHostname', summary: 'Get a preview hostname',
      description: 'Any member may read it. Sends the etag in the ETag header.',
      params: HostnameParams, headers: requestHeaders(),
      response: responses({ 200: PreviewHostname }),
    },
  }, async (request, reply) => withEtag(reply, await s.previewHostnames.get(scopeOf(request), request.params.id, request.params.hostname_id)));

  app.delete(`${COLLECTION}/:hostname_id`, {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'releasePreviewHostname', summary: 'Release a preview hostname',
      description:
        'if-match is required; a stale etag is 409 ABORTED with the current etag in error.metadata.etag. 202 with a ' +
        '`preview_hostname.release` operation: the hostname is `releasing` at once (no longer served) and is gone when the ' +
        'operation ends. While a release runs, another DELETE returns that same operation, whatever its if-match; a hostname ' +
        'released by its install\'s deletion is 422 (reason INSTALL_DELETING). Steps `remove`, then `route` (skippable): on a ' +
        'Kubernetes cluster, the install\'s route objects are re-applied without the hostname. Not cancellable. Any member may release.',
      params: HostnameParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    const op = await s.previewHostnames.release(scopeOf(request), request.params.id, request.params.hostname_id, revision);
    return reply.code(202).send(op);
  });
}
