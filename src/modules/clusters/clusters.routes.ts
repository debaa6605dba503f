import { Type } from 'typebox';
import { scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { OperationRef } from '../operations/operations.schemas.js';
import { acceptOperation } from '../operations/operation-steps.js';
import { Cluster, ClusterCapabilitiesView, ClusterId, CreateClusterBody, PatchClusterBody } from './clusters.schemas.js';

const tags = ['clusters'];
const IdParams = Type.Object({ id: ClusterId });

export function clusterRoutes(app: App, s: Pick<Services, 'clusters' | 'idempotency' | 'operations'>): void {
  app.post('/v1/clusters', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createCluster', summary: 'Register a cluster',
      description:
        'Needs the admin or owner role. Registers a cluster (state `pending`, `reconciling` true) and starts its `cluster.create` ' +
        'operation in the same transaction: 202 with the operation (owner_type cluster, metadata.cluster_id the new clu_ id). ' +
        'The operation provisions the cluster (local) or checks it answers with the kubeconfig (kubernetes), reads its ' +
        'capabilities and makes it `active`; if it fails or is cancelled the cluster is `suspended`. ' +
        '`kubeconfig` is required with provider kubernetes and refused otherwise, as is `gateway_url` (optional: where the preview router ' +
        'sends the traffic of install URLs and preview hostnames; without it, through the API server\'s service proxy); `local` only with provider local, and its ' +
        '`faults` (a test hook) only when the service runs with SVC_TEST_HOOKS=1, else 400. ' +
        'A taken name is 409 ALREADY_EXISTS; a workspace being deleted is 422 (reason WORKSPACE_DELETING). Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateClusterBody,
      response: responses({ 202: OperationRef }, [400, 403, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.clusters.createCluster(scope, request.body, tx));
  });

  app.get('/v1/clusters', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listClusters', summary: 'List clusters',
      description: 'Clusters of the workspace, newest first, also those being created or deleted. Any member may list them.',
      headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(Cluster, 'A page of clusters') }),
    },
  }, async (request) => s.clusters.listClusters(scopeOf(request), request.query));

  app.get('/v1/clusters/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getCluster', summary: 'Get a cluster',
      description: 'Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: Cluster }),
    },
  }, async (request, reply) => withEtag(reply, await s.clusters.getCluster(scopeOf(request), request.params.id)));

  app.patch('/v1/clusters/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateCluster', summary: 'Rename a cluster or set its gateway address',
      description:
        'Needs the admin or owner role. if-match is required; a stale etag is 409 ABORTED with the current etag in error.metadata.etag. ' +
        '`gateway_url` (kubernetes clusters only; null removes it) is where the preview router sends the traffic of the cluster\'s ' +
        'install URLs and preview hostnames; the router uses a change within seconds. ' +
        'A taken name is 409 ALREADY_EXISTS; a cluster being deleted is 422 (reason CLUSTER_DELETING).',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchClusterBody,
      response: responses({ 200: Cluster }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.clusters.updateCluster(scopeOf(request), request.params.id, revision, request.body));
  });

  app.delete('/v1/clusters/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteCluster', summary: 'Delete a cluster',
      description:
        'Needs the admin or owner role. if-match is required. 202 with a `cluster.delete` operation: the cluster becomes `deleting`, ' +
        'the operations running on it are cancelled and drained, the cluster is released through its driver (a kubernetes cluster ' +
        'is only unregistered: nothing was created on it; a release that keeps failing is skipped) and then removed. ' +
        'While a deletion runs, another DELETE returns that same operation, whatever its if-match. Not cancellable. ' +
        'A cluster with installs (in any state) is 422 (reason CLUSTER_HAS_INSTALLS), one with machines 422 (CLUSTER_HAS_MACHINES): delete them first.',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    const op = await s.clusters.deleteCluster(scopeOf(request), request.params.id, revision);
    return reply.code(202).send(op);
  });

  app.get('/v1/clusters/:id/capabilities', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getClusterCapabilities', summary: 'Get cluster capabilities',
      description:
        'The capabilities last observed on the cluster (by its cluster.create or a cluster.capabilities.refresh operation), with ' +
        '`observed_at`. Node `created_at` is an ISO 8601 string. Before any observation: 422 FAILED_PRECONDITION ' +
        '(reason CAPABILITIES_NOT_OBSERVED). Any member may read them.',
      params: IdParams, headers: requestHeaders(),
      response: responses({ 200: ClusterCapabilitiesView }, [400, 403, 404, 422]),
    },
  }, async (request) => s.clusters.getCapabilities(scopeOf(request), request.params.id));

  app.post(verbPath('/v1/clusters/:id/capabilities', 'refresh'), {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'refreshClusterCapabilities', summary: 'Read the capabilities again',
      description:
        '202 with a `cluster.capabilities.refresh` operation that reads the capabilities from the cluster and stores them; a ' +
        'suspended cluster that answers becomes active, one that does not is suspended. Any member may refresh. ' +
        'While another operation runs on the cluster: 409 ABORTED (reason OPERATION_IN_PROGRESS, metadata.operation_id); ' +
        'a cluster being deleted: 422 (reason CLUSTER_DELETING). No body. Accepts idempotency-key.',
      params: IdParams, headers: requestHeaders({ idempotency: 'optional' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.clusters.refreshCapabilities(scope, request.params.id, tx));
  });
}
