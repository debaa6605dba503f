import { Type, type TSchema } from 'typebox';
import { clock } from '../../platform/clock.js';
import { LONG_REQUEST_CAPS } from '../../platform/long-requests.js';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, refTo, requestHeaders, responses, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { followLogs } from './install-logs-stream.js';
import { OperationRef } from '../operations/operations.schemas.js';
import { acceptOperation } from '../operations/operation-steps.js';
import {
  CreateInstallBody, Install, InstallDetail, InstallId, InstallLogs, InstallLogsQuery, ListInstallsQuery, PatchInstallBody, Render, RenderDetail, RenderId,
} from './installs.schemas.js';

const tags = ['installs'];
const IdParams = Type.Object({ id: InstallId });
const RenderParams = Type.Object({ id: InstallId, render_id: RenderId });
const PageQuerystring = Type.Object(PageQuery, { additionalProperties: false });

const DEPLOY_STEPS =
  'Its steps: `resolve_version`, `render` (a new render `rnd_` with its content hash), `apply` (through the cluster\'s driver; on a ' +
  'Kubernetes cluster also one HTTPRoute or Ingress per route with a `service`, holding the install URL\'s and the active preview ' +
  'hostnames), `wait_healthy` (polls readiness for about 2 minutes; on a Kubernetes cluster the workloads are available and every ' +
  'route object is accepted, and a container in CrashLoopBackOff, ImagePullBackOff or ErrImagePull fails the step at once with ' +
  'its reason and last message) and `publish_urls` (the install\'s URLs, one per route, and the render ' +
  'becomes current). The install is `rendering`, then `syncing`, then `healthy`; `reconciling` is true until the operation ends. ' +
  'A failing driver call shows in the operation\'s `last_error` while it is retried. On success, `response` carries ' +
  '`install_id`, `render_id` and `urls` [{route_key, url}].';

const SECRET_REF_RULES =
  'Values may reference secrets (`{"$secret": "sec_...", "version": "latest" | <number> | "<alias>"}` where the input schema ' +
  'expects a string; the string\'s pattern, length and format rules are not checked against the secret). Values holding a ' +
  'reference, sent or kept, need the admin or owner role (403 SECRET_REF_FORBIDDEN: a deploy hands the value to the package); ' +
  'each must name a secret of the workspace that is active with the version it names enabled, and the package version must not ' +
  'write it as text (400 SECRET_REF_INVALID naming the field). The render records which version each reference resolved to, ' +
  'never a value; each deploy reads the value in the worker and records a `secret.version.access` audit event.';

const LOGS_DESCRIPTION =
  'The logs of the install\'s pods: on a Kubernetes cluster, every pod of the install\'s namespace (its Deployments\' pods and ' +
  'any other workload of its render), read from the API server\'s `pods/log` with timestamps; on the local (simulated) cluster, ' +
  'which runs no workload, the lines its simulated steps wrote (objects applied, each container "started", readiness checks; the ' +
  'last 500, from pod `svc-local-cluster` container `driver` and the simulated pods). Any member who may read the install may ' +
  'read them. Each line is `{time, timestamp, pod, container, line}`: `time` Unix seconds, `timestamp` RFC 3339 as the cluster ' +
  'gave it (up to nanoseconds), a line over 16384 bytes cut with ` [... cut: <size> bytes]`. `container` keeps one container name ' +
  '(exact), `since` the lines at or after a Unix time, `tail` the last N lines of each pod container (1-5000, default 200). At ' +
  'most 20 pod containers are read (by pod, then container name); more are left out and said so. ' +
  'Without `follow`: 200 `{items, truncated}`, oldest first; `truncated` is true when containers were left out or the lines ' +
  'went past 10,000 lines or 4 MiB of text (the newest are kept). ' +
  'With `follow=true`: 200 `text/event-stream`: `event: line` with the line as JSON in `data`, one per line as it arrives (first ' +
  'each container\'s tail, then new lines; each container\'s in order); `event: notice` `{message}` first when containers were ' +
  'left out; a `: keepalive` comment every 15 s; and `event: end` `{reason}` before the server closes it: `install_deleted`, `access_revoked` (the credential was revoked or ' +
  'expired, or its holder left the workspace or lost their role: rights are checked again as the stream goes), ' +
  '`streams_closed` (every container\'s log ended, e.g. its pods were replaced: reconnect with `since`), `max_duration` (an ' +
  'hour) or `shutdown`. Pods that start after the stream opened are not followed: reconnect to see them. Closing the ' +
  'connection ends the requests to the cluster. ' +
  'An install that does not exist, or is being deleted, is 404. A cluster that cannot be reached or does not answer within ' +
  '10 s is 503 (reason CLUSTER_UNREACHABLE, with retry-after); a cluster that refuses (credentials, RBAC) is 502 (reason ' +
  'CLUSTER_ERROR); with `follow`, these come as the status before the stream starts.';

/** The 200 of the logs: JSON, or with follow an event stream the handler writes itself. */
const LOGS_RESPONSE = {
  description: 'the lines (JSON), or with follow=true the event stream',
  content: {
    'application/json': { schema: refTo(InstallLogs) },
    'text/event-stream': { schema: Type.String({ description: '`event: line` / `data: <line JSON>`, `event: notice`, `event: end` / `data: {"reason": ...}`, and `: keepalive` comments' }) },
  },
} as unknown as TSchema;

/** how often a followed log checks that its install still exists */
const LOG_GONE_CHECK_MS = 2_000;
const LOG_HEARTBEAT_MS = 15_000;
const LOG_MAX_MS = 3600_000;

export function installRoutes(app: App, s: Pick<Services, 'idempotency' | 'installs' | 'installLogs' | 'logStreams' | 'operations'>): void {
  app.post('/v1/installs', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createInstall', summary: 'Install a package on a cluster',
      description:
        'Any member may install. Resolves the version from `package_version_pin` (`latest`: the highest non-prerelease version), ' +
        'validates `initial_values` against the version\'s `input_schema` (a mismatch is 400 with field violations under ' +
        '`body.initial_values`, and nothing is created), writes the install (`pending`, `reconciling` true) and starts its ' +
        '`install.create` operation in the same transaction: 202 with the operation (owner_type install, metadata.install_id, ' +
        `metadata.cluster_id). ${DEPLOY_STEPS} If it fails or is cancelled, the install is \`failed\`. ` +
        'A package or cluster that is not in the workspace is 400 (reason PACKAGE_NOT_FOUND or CLUSTER_NOT_FOUND, with the field); ' +
        'no version fitting the pin is 422 (reason VERSION_NOT_FOUND); a cluster that is not `active` 422 (CLUSTER_NOT_ACTIVE); ' +
        'a workspace being deleted 422 (WORKSPACE_DELETING). ' + SECRET_REF_RULES + ' Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateInstallBody,
      response: responses({ 202: OperationRef }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.installs.createInstall(scope, request.body, tx));
  });

  app.get('/v1/installs', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listInstalls', summary: 'List installs',
      description:
        'Installs of the workspace, newest first, each with its URL entries. `product_id` is the ' +
        'package id (this service installs packages). Filters, which combine: `cluster_id` (installs on that cluster), ' +
        '`package_id` (installs of that package) and `state` (e.g. `degraded`); an id of no install of the workspace matches ' +
        'nothing. A cursor is bound to the filters it was issued with (reused with others: 400). Any member may list them.',
      headers: requestHeaders(), querystring: ListInstallsQuery,
      response: responses({ 200: pageOf(Install, 'A page of installs') }),
    },
  }, async (request) => s.installs.listInstalls(scopeOf(request), request.query));

  app.get('/v1/installs/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getInstall', summary: 'Get an install',
      description: 'The install with its values. Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: InstallDetail }),
    },
  }, async (request, reply) => withEtag(reply, await s.installs.getInstall(scopeOf(request), request.params.id)));

  app.patch('/v1/installs/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateInstall', summary: 'Change an install\'s version or values',
      description:
        'Any member may update. if-match is required; a stale etag is 409 ABORTED with the current etag in error.metadata.etag. ' +
        'Sets the pin and/or the values (which replace the current ones as a whole), resolves the version from the pin again ' +
        '(`latest` moves to the newest release), validates the values against it (400 with field violations under `body.values`) ' +
        `and starts an \`install.update\` operation: 202. ${DEPLOY_STEPS} The previous render stays current until the new one ` +
        'is healthy (its `replaced_at` is then set); if the update fails the install is `degraded`. While another create or update ' +
        'runs: 409 ABORTED (reason OPERATION_IN_PROGRESS, metadata.operation_id); an install being deleted: 422 (INSTALL_DELETING). ' +
        SECRET_REF_RULES,
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchInstallBody,
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    const op = await s.installs.updateInstall(scopeOf(request), request.params.id, revision, request.body);
    return reply.code(202).send(op);
  });

  app.delete('/v1/installs/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteInstall', summary: 'Delete an install',
      description:
        'Any member may delete. if-match is required. 202 with an `install.delete` operation: the install\'s other operations ' +
        '(create, update, preview hostname binds) are cancelled and drained, its preview hostnames stop being served, it is ' +
        'removed from its cluster (state `deleted`; an undeploy that keeps failing is skipped) and then it is gone with its ' +
        'renders, URLs and hostnames. While a deletion runs, another DELETE returns that same operation, whatever its if-match. ' +
        'Not cancellable.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    const op = await s.installs.deleteInstall(scopeOf(request), request.params.id, revision);
    return reply.code(202).send(op);
  });

  app.get('/v1/installs/:id/renders', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listInstallRenders', summary: 'List an install\'s renders',
      description:
        'Every render of the install (one per create or update that got past its render step), newest first, without their ' +
        'manifests; `current` marks the one that runs. Any member may list them.',
      params: IdParams, headers: requestHeaders(), querystring: PageQuerystring,
      response: responses({ 200: pageOf(Render, 'A page of renders') }),
    },
  }, async (request) => s.installs.listRenders(scopeOf(request), request.params.id, request.query));

  app.get('/v1/installs/:id/renders/:render_id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getInstallRender', summary: 'Get a render',
      description: 'One render of the install with its rendered manifest (routes and Kubernetes objects). Any member may read it.',
      params: RenderParams, headers: requestHeaders(),
      response: responses({ 200: RenderDetail }),
    },
  }, async (request) => s.installs.getRender(scopeOf(request), request.params.id, request.params.render_id));

  app.get('/v1/installs/:id/logs', {
    // Only a followed log stays open (the query as sent: `true` is the one spelling validation takes).
    config: { auth: 'workspace', longLived: (request) => (request.query as { follow?: unknown }).follow === 'true' },
    schema: {
      tags, security: bearerSecurity, operationId: 'installLogs', summary: 'Read or follow an install\'s logs',
      description: LOGS_DESCRIPTION + LONG_REQUEST_CAPS,
      params: IdParams, headers: requestHeaders(), querystring: InstallLogsQuery,
      response: { ...responses({}, [400, 403, 404, 429, 502, 503]), 200: LOGS_RESPONSE },
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    // The client gone aborts the requests to the cluster, whether it waits for a page or follows.
    const upstream = new AbortController();
    reply.raw.once('close', () => upstream.abort());
    if (request.query.follow !== true) {
      const page = await s.installLogs.read(scope, request.params.id, request.query, upstream.signal);
      return reply.type('application/json').send(page);
    }
    const stream = await s.installLogs.open(scope, request.params.id, request.query, upstream.signal);
    reply.hijack();
    await followLogs(request, reply.raw, {
      stream, upstream, gone: () => s.installLogs.gone(scope.workspaceId, request.params.id), allowed: () => request.stillAllowed(),
      goneCheckMs: LOG_GONE_CHECK_MS, heartbeatMs: LOG_HEARTBEAT_MS, maxMs: LOG_MAX_MS, streams: s.logStreams,
    });
  });
}
