// Routes of machines (API.md 8.5): worker bootstraps under their cluster, machines, and the
// machine agent's two calls.
import { Type } from 'typebox';
import { machineOf, scopeOf } from '../../platform/auth.js';
import { parseIfMatch } from '../../platform/etag.js';
import { bearerSecurity, headerOf, requestHeaders, responses, verbPath, withEtag, type App } from '../../platform/http.js';
import { PageQuery, pageOf } from '../../platform/pagination.js';
import type { Services } from '../../services.js';
import { ClusterId } from '../clusters/clusters.schemas.js';
import { acceptOperation } from '../operations/operation-steps.js';
import { OperationRef } from '../operations/operations.schemas.js';
import {
  BootstrapId, CreatedWorkerBootstrap, CreateMachineBody, CreateWorkerBootstrapBody, ListMachinesQuery, Machine, MachineHeartbeat,
  MachineHeartbeatBody, MachineId, MachineJoin, MachineJoinBody, PatchMachineBody, WorkerBootstrap,
} from './machines.schemas.js';

const tags = ['machines'];
const ClusterParams = Type.Object({ id: ClusterId });
const BootstrapParams = Type.Object({ id: ClusterId, bootstrap_id: BootstrapId });
const IdParams = Type.Object({ id: MachineId });

export function machineRoutes(app: App, s: Pick<Services, 'computeProviders' | 'config' | 'idempotency' | 'machines' | 'operations' | 'workerBootstraps'>): void {
  // ---- worker bootstraps (`svc clusters create-worker-bootstrap` ...) ----

  app.post('/v1/clusters/:id/worker_bootstraps', {
    config: { auth: 'workspace' },
    schema: {
      tags: ['clusters'], security: bearerSecurity, operationId: 'createClusterWorkerBootstrap', summary: 'Let a server join the cluster',
      description:
        'Needs the admin or owner role. 201 with a worker bootstrap and, in this response only, its one-time `token`, the `command` ' +
        'that starts the machine agent with it (`svc machine join --server … --token …`; run it on the server) and the same as ' +
        '`cloud_init` user data (installs the agent as the `svc-machine` systemd service). The token joins one server once, until ' +
        '`expires_at` (`ttl_seconds`, 60 s to 24 h, default 1 h); it is stored only as a SHA-256 hash. The server\'s joining is ' +
        'counted against `compute/machines` then, not now. Machines join `local` clusters: a kubernetes cluster is 422 ' +
        '(CLUSTER_PROVIDER_UNSUPPORTED), a cluster being deleted 422 (CLUSTER_DELETING). Accepts idempotency-key: a replay answers ' +
        'the same token. Recorded in the audit log (`worker_bootstrap.create`).',
      params: ClusterParams, headers: requestHeaders({ idempotency: 'optional' }), body: CreateWorkerBootstrapBody,
      response: responses({ 201: CreatedWorkerBootstrap }, [400, 403, 404, 422]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    const clusterId = request.params.id;
    const located = <T extends { id: string; etag: string }>(b: T) =>
      withEtag(reply.header('location', `/v1/clusters/${clusterId}/worker_bootstraps/${b.id}`), b);
    return s.idempotency.run(request, reply, headerOf(request, 'idempotency-key'),
      async (id) => located(await s.workerBootstraps.loadCreated(scope, clusterId, id)),
      async (tx) => {
        const created = located(await s.workerBootstraps.createBootstrap(scope, clusterId, request.body.ttl_seconds ?? 3600, tx));
        return { status: 201, body: created, resourceId: created.id };
      });
  });

  app.get('/v1/clusters/:id/worker_bootstraps', {
    config: { auth: 'workspace' },
    schema: {
      tags: ['clusters'], security: bearerSecurity, operationId: 'listClusterWorkerBootstraps', summary: 'List the worker bootstraps of a cluster',
      description: 'Newest first, in every status; never the token. Any member may list them.',
      params: ClusterParams, headers: requestHeaders(), querystring: Type.Object(PageQuery, { additionalProperties: false }),
      response: responses({ 200: pageOf(WorkerBootstrap, 'A page of worker bootstraps') }),
    },
  }, async (request) => s.workerBootstraps.listBootstraps(scopeOf(request), request.params.id, request.query));

  app.get('/v1/clusters/:id/worker_bootstraps/:bootstrap_id', {
    config: { auth: 'workspace' },
    schema: {
      tags: ['clusters'], security: bearerSecurity, operationId: 'getClusterWorkerBootstrap', summary: 'Get a worker bootstrap',
      description: 'Any member may read it; never the token. Sends the etag in the ETag header.',
      params: BootstrapParams, headers: requestHeaders(),
      response: responses({ 200: WorkerBootstrap }),
    },
  }, async (request, reply) => withEtag(reply, await s.workerBootstraps.getBootstrap(scopeOf(request), request.params.id, request.params.bootstrap_id)));

  app.post(verbPath('/v1/clusters/:id/worker_bootstraps/:bootstrap_id', 'revoke'), {
    config: { auth: 'workspace' },
    schema: {
      tags: ['clusters'], security: bearerSecurity, operationId: 'revokeClusterWorkerBootstrap', summary: 'Revoke a worker bootstrap',
      description:
        'Needs the admin or owner role and if-match. Its token joins nothing from now on; a machine that already joined with it ' +
        'stays. Only an active bootstrap can be revoked: used, revoked or expired is 422 (BOOTSTRAP_NOT_ACTIVE). Recorded in the ' +
        'audit log (`worker_bootstrap.revoke`).',
      params: BootstrapParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 200: WorkerBootstrap }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.workerBootstraps.revokeBootstrap(scopeOf(request), request.params.id, request.params.bootstrap_id, revision));
  });

  // ---- machines ----

  app.post('/v1/machines', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'createMachine', summary: 'Provision a machine',
      description:
        'Needs the admin or owner role. Records the machine (PROVISIONING, counted against `compute/machines` at once: 429 past ' +
        'the limit) and starts `machine.create` in the same transaction: 202 with the operation. It creates a server through the ' +
        `service's compute provider (\`${s.config.compute.provider}\` here; \`local\` simulates servers inside the service, \`hcloud\` ` +
        'creates Hetzner Cloud servers) with cloud-init that starts the machine agent with a one-time token, waits for the server ' +
        'to run (JOINING) and for its agent to join and heartbeat (ACTIVE). A crash resumes it without a second server; if it ' +
        'fails or is cancelled, `machine.delete` releases what was made. `instance_type`: ' +
        `${(s.computeProviders.get(s.config.compute.provider)?.instanceTypes ?? []).join(', ')} (else 400). \`expires_at\`, in the future: the machine is deleted then. ` +
        'Accepts idempotency-key.',
      headers: requestHeaders({ idempotency: 'optional' }), body: CreateMachineBody,
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422, 429]),
    },
  }, async (request, reply) => {
    const scope = scopeOf(request);
    return acceptOperation(s, request, reply, scope.workspaceId, (tx) => s.machines.createMachine(scope, request.body, tx));
  });

  app.get('/v1/machines', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'listMachines', summary: 'List machines',
      description: 'Machines of the workspace, newest first, filtered by cluster and state. Any member may list them.',
      headers: requestHeaders(), querystring: Type.Object({ ...PageQuery, ...ListMachinesQuery.properties }, { additionalProperties: false }),
      response: responses({ 200: pageOf(Machine, 'A page of machines') }),
    },
  }, async (request) => s.machines.listMachines(scopeOf(request), request.query));

  app.get('/v1/machines/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'getMachine', summary: 'Get a machine',
      description: 'Any member may read it. Sends the etag in the ETag header.',
      params: IdParams, headers: requestHeaders(), response: responses({ 200: Machine }),
    },
  }, async (request, reply) => withEtag(reply, await s.machines.getMachine(scopeOf(request), request.params.id)));

  app.patch('/v1/machines/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'updateMachine', summary: 'Rename a machine or change its expiry',
      description:
        'Needs the admin or owner role and if-match. `name` (null clears it); `expires_at` in the future (null: the machine never ' +
        'expires). A changed expiry is announced again 72 h and 24 h before it. A machine being deleted is 422 (MACHINE_DELETING).',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }), body: PatchMachineBody,
      response: responses({ 200: Machine }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return withEtag(reply, await s.machines.patchMachine(scopeOf(request), request.params.id, revision, request.body));
  });

  app.delete('/v1/machines/:id', {
    config: { auth: 'workspace' },
    schema: {
      tags, security: bearerSecurity, operationId: 'deleteMachine', summary: 'Delete a machine',
      description:
        'Needs the admin or owner role and if-match. 202 with a `machine.delete` operation: the machine becomes DELETING, its other ' +
        'operations are cancelled and drained, its node is cordoned and drained, a provisioned machine\'s server is destroyed, the ' +
        'node is removed and the agent\'s credential revoked (its next heartbeat tells it to stop), then the record goes. While it ' +
        'runs, another DELETE returns that same operation. Not cancellable. Recorded in the audit log (`machine.delete`).',
      params: IdParams, headers: requestHeaders({ ifMatch: 'required' }),
      response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
    },
  }, async (request, reply) => {
    const revision = parseIfMatch(headerOf(request, 'if-match'));
    return reply.code(202).send(await s.machines.deleteMachine(scopeOf(request), request.params.id, revision));
  });

  for (const verb of ['suspend', 'resume'] as const) {
    app.post(verbPath('/v1/machines/:id', verb), {
      config: { auth: 'workspace' },
      schema: {
        tags, security: bearerSecurity, operationId: `${verb}Machine`, summary: verb === 'suspend' ? 'Suspend a machine' : 'Resume a machine',
        description: verb === 'suspend'
          ? 'Needs the admin or owner role and if-match. 202 with `machine.suspend`: the node is cordoned (SUSPENDED: no new work ' +
            'lands on it) and a provisioned machine\'s server is powered off. From ACTIVE or UNREACHABLE; other states 422 ' +
            '(MACHINE_STATE); another operation running on it 409 (OPERATION_IN_PROGRESS). Accepts idempotency-key.'
          : 'Needs the admin or owner role and if-match. 202 with `machine.resume`: a provisioned machine\'s server is powered on and ' +
            'its agent\'s next heartbeat awaited; then the node is uncordoned (ACTIVE, or UNREACHABLE if its agent is silent). From ' +
            'SUSPENDED only; other states 422 (MACHINE_STATE). Accepts idempotency-key.',
        params: IdParams, headers: requestHeaders({ ifMatch: 'required', idempotency: 'optional' }),
        response: responses({ 202: OperationRef }, [400, 403, 404, 409, 422]),
      },
    }, async (request, reply) => {
      const scope = scopeOf(request);
      const revision = parseIfMatch(headerOf(request, 'if-match'));
      const start = verb === 'suspend' ? s.machines.suspendMachine : s.machines.resumeMachine;
      return acceptOperation(s, request, reply, scope.workspaceId, (tx) => start(scope, request.params.id, revision, tx));
    });
  }

  // ---- the machine agent ----

  app.post('/v1/machine_joins', {
    config: { auth: 'none' },
    schema: {
      tags: ['machine agent'], operationId: 'joinMachine', summary: 'Trade a bootstrap token for a machine credential',
      'x-svc-cli': false,
      description:
        'Called by `svc machine join` once, with the worker bootstrap\'s token and the server\'s facts; no other authentication. ' +
        '201 with the machine (JOINING until its first heartbeat) and its credential (`svcm_…`, shown once, stored hashed), which ' +
        'authenticates the agent\'s heartbeats and no other route. A token that is unknown, used, revoked or expired is 401 ' +
        '(JOIN_TOKEN_REJECTED; the message says which); of two servers racing with one token, one joins. `compute/machines` ' +
        'full is 429 and leaves the token usable. Recorded in the audit log (`worker_bootstrap.use`, by the machine).',
      body: MachineJoinBody,
      response: responses({ 201: MachineJoin }, [400, 422, 429]),
    },
  }, async (request, reply) => {
    const joined = await s.workerBootstraps.join(request.body, request.id);
    return reply.code(201).header('location', `/v1/machines/${joined.machine_id}`).send(joined);
  });

  app.post('/v1/machine_heartbeats', {
    config: { auth: 'machine' },
    schema: {
      tags: ['machine agent'], security: bearerSecurity, operationId: 'heartbeatMachine', summary: 'Report that the machine is alive',
      'x-svc-cli': false,
      description:
        'Called by the machine agent every `heartbeat_interval_seconds` with its machine credential, optionally with fresh facts. ' +
        'A JOINING or UNREACHABLE machine becomes ACTIVE (a ready node of its cluster). `schedulable` false: the node is cordoned. ' +
        'A credential revoked because its machine was deleted is 401 MACHINE_DELETED, revoked otherwise 401 ' +
        'MACHINE_CREDENTIAL_REVOKED: the agent stops. Any other credential is 403 (MACHINE_CREDENTIAL_REQUIRED).',
      headers: Type.Object({}), body: MachineHeartbeatBody,
      response: responses({ 200: MachineHeartbeat }, [400, 403]),
    },
  }, async (request) => s.machines.heartbeat(machineOf(request), request.body.facts));
}
