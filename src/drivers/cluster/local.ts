// The `local` cluster driver (the default): a simulated cluster, so the service works on a laptop
// with nothing else. "Existing" means a row in `local_clusters`, so every instance sharing the
// database agrees on what exists. Its capabilities are a realistic snapshot derived from the
// cluster id (the same cluster always reports the same nodes and addresses). Faults set at
// creation make an action wait and fail its first attempts, so retries can be seen; they are a test
// hook, applied only while the service runs with SVC_TEST_HOOKS=1 (faults stored while it did are
// ignored once it does not). A deploy's
// secret values are not kept: only an HMAC of them, which shows what was applied and when it changed.
import { createHash, createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import {
  ClusterDriverError,
  type ClusterCapabilitiesT,
  type ClusterDriver,
  type ClusterTarget,
  type DeploymentSecret,
  type DriverCallContext,
  type LocalFault,
} from './driver.js';
import { machineNodesOf } from './local-machines.js';
import { LOCAL_DRIVER_CONTAINER, LOCAL_DRIVER_POD, clearLocalLog, deployLines, readLocalLogs, writeLocalLog } from './local-logs.js';

const NODE_COUNT = 3;

/** What a kubeadm cluster with Gateway API CRDs installed serves, core group first. */
const API_GROUPS = [
  'v1',
  'admissionregistration.k8s.io/v1',
  'apiextensions.k8s.io/v1',
  'apiregistration.k8s.io/v1',
  'apps/v1',
  'authentication.k8s.io/v1',
  'authorization.k8s.io/v1',
  'autoscaling/v1',
  'autoscaling/v2',
  'batch/v1',
  'certificates.k8s.io/v1',
  'coordination.k8s.io/v1',
  'discovery.k8s.io/v1',
  'events.k8s.io/v1',
  'flowcontrol.apiserver.k8s.io/v1',
  'gateway.networking.k8s.io/v1',
  'gateway.networking.k8s.io/v1beta1',
  'networking.k8s.io/v1',
  'node.k8s.io/v1',
  'policy/v1',
  'rbac.authorization.k8s.io/v1',
  'scheduling.k8s.io/v1',
  'storage.k8s.io/v1',
];

/** Waits the latency of the target's fault for this action (cut short when the step is aborted); returns the fault. */
async function faultLatency(faults: readonly LocalFault[], action: LocalFault['action'], ctx: DriverCallContext): Promise<LocalFault | undefined> {
  const fault = faults.find((f) => f.action === action);
  if (fault?.latency_ms) {
    try {
      await sleep(fault.latency_ms, undefined, { signal: ctx.signal });
    } catch {
      throw new ClusterDriverError(`${action}: aborted while waiting for the simulated cluster`, true);
    }
  }
  return fault;
}

/** Applies the target's fault for this action: its latency, then a failure while the calling step's attempt is within `fail_times`. */
async function injectFault(faults: readonly LocalFault[], action: LocalFault['action'], ctx: DriverCallContext): Promise<void> {
  const fault = await faultLatency(faults, action, ctx);
  if (fault && ctx.attempt <= (fault.fail_times ?? 0)) {
    throw new ClusterDriverError(`injected fault: ${action} failed on attempt ${ctx.attempt} of the simulated cluster`, true);
  }
}

/** The snapshot of one simulated cluster; everything derives from its id and creation time. */
export function localCapabilities(clusterId: string, nodeCount: number, createdAt: number): ClusterCapabilitiesT {
  const h = createHash('sha256').update(clusterId).digest();
  const short = clusterId.slice(-8);
  const version = `v1.30.${h[0]! % 10}`;
  const createdIso = new Date(createdAt * 1000).toISOString();
  const nodes = Array.from({ length: nodeCount }, (_, i) => {
    const controlPlane = i === 0;
    return {
      name: controlPlane ? `${short}-control-plane` : `${short}-worker-${i}`,
      version,
      cpu_capacity: '4',
      memory_capacity: '16Gi',
      os_image: 'Ubuntu 22.04.4 LTS',
      architecture: 'amd64',
      status_message: 'kubelet is posting ready status',
      created_at: createdIso,
      roles: controlPlane ? ['control-plane'] : ['worker'],
      ready: true,
    };
  });
  return {
    api_groups: [...API_GROUPS],
    storage_classes: [
      { name: 'local-path', provisioner: 'rancher.io/local-path', reclaim_policy: 'Delete', volume_binding_mode: 'WaitForFirstConsumer', is_default: true },
      { name: 'local-retain', provisioner: 'rancher.io/local-path', reclaim_policy: 'Retain', volume_binding_mode: 'WaitForFirstConsumer', is_default: false },
    ],
    gateway_classes: ['svc-local'],
    gateways: [
      {
        namespace: 'svc-system',
        name: 'svc-gateway',
        gateway_class_name: 'svc-local',
        status_message: 'Programmed',
        listeners: [
          { name: 'http', protocol: 'HTTP', hostname: `*.${short}.local.svc`, port: 80 },
          { name: 'https', protocol: 'HTTPS', hostname: `*.${short}.local.svc`, port: 443 },
        ],
        addresses: [{ type: 'IPAddress', value: `10.96.${h[1]!}.${(h[2]! % 254) + 1}` }],
      },
    ],
    ingress_classes: ['nginx'],
    nodes,
  };
}

/** The snapshot with the nodes of the machines that joined the cluster after its own. */
export async function withMachineNodes(db: Executor, caps: ClusterCapabilitiesT, clusterId: string): Promise<ClusterCapabilitiesT> {
  const version = caps.nodes[0]?.version ?? 'v1.30.0';
  return { ...caps, nodes: [...caps.nodes, ...(await machineNodesOf(db, clusterId, version))] };
}

/**
 * The simulated cluster's capabilities as they are now (its own nodes and its machines'), read in
 * `db` (the caller's transaction when it changes a machine's node); undefined when it was never
 * provisioned or is destroyed.
 */
export async function localClusterCapabilities(db: Executor, clusterId: string): Promise<ClusterCapabilitiesT | undefined> {
  const row = await db.selectFrom('local_clusters').selectAll().where('cluster_id', '=', clusterId).executeTakeFirst();
  if (!row) return undefined;
  return withMachineNodes(db, localCapabilities(row.cluster_id, row.node_count, row.created_at), row.cluster_id);
}

/** HMAC-SHA256 (hex) of a deploy's secret: name and key/value pairs, in key order. */
export function secretDigest(key: Buffer, secret: DeploymentSecret): string {
  const mac = createHmac('sha256', key).update(secret.name);
  for (const k of Object.keys(secret.data).sort()) mac.update(`\n${k}\n`).update(secret.data[k]!);
  return mac.digest('hex');
}

/**
 * `secretDigestKey` keys the HMAC of deployed secrets (a plain hash of a weak value could be tested
 * against guesses); `testHooks` (SVC_TEST_HOOKS) applies the faults stored with a cluster.
 */
export function createLocalDriver(deps: { db: Executor; secretDigestKey: Buffer; testHooks: boolean }): ClusterDriver {
  const { db } = deps;
  const faultsOf = (target: ClusterTarget): readonly LocalFault[] => (deps.testHooks ? target.faults : []);
  return {
    provider: 'local',

    async provision(target, ctx) {
      await injectFault(faultsOf(target), 'provision', ctx);
      await db
        .insertInto('local_clusters')
        .values({ cluster_id: target.clusterId, node_count: NODE_COUNT, created_at: clock.now() })
        .onConflict((oc) => oc.column('cluster_id').doNothing())
        .execute();
    },

    async capabilities(target, ctx) {
      await injectFault(faultsOf(target), 'capabilities', ctx);
      const caps = await localClusterCapabilities(db, target.clusterId);
      // No retry can make it appear: only provisioning does.
      if (!caps) throw new ClusterDriverError('the simulated cluster is not provisioned', false);
      return caps;
    },

    async destroy(target, ctx) {
      await injectFault(faultsOf(target), 'destroy', ctx);
      await db.deleteFrom('local_clusters').where('cluster_id', '=', target.clusterId).execute();
    },

    // A deployment is a row naming the render that runs; deploying another render replaces it,
    // as applying new objects over old ones does on a real cluster.
    async deploy(target, spec, ctx) {
      await injectFault(faultsOf(target), 'deploy', ctx);
      const cluster = await db.selectFrom('local_clusters').select('cluster_id').where('cluster_id', '=', target.clusterId).executeTakeFirst();
      if (!cluster) throw new ClusterDriverError('the simulated cluster is not provisioned', false);
      const now = clock.now();
      const set = {
        render_id: spec.renderId, resource_count: spec.resources.length, deployed_at: now,
        secret_digest: spec.secret ? secretDigest(deps.secretDigestKey, spec.secret) : null,
      };
      await db
        .insertInto('local_deployments')
        .values({ cluster_id: target.clusterId, install_id: spec.installId, ...set })
        .onConflict((oc) => oc.columns(['cluster_id', 'install_id']).doUpdateSet(set))
        .execute();
      await writeLocalLog(db, target.clusterId, spec.installId, deployLines(spec));
    },

    async deploymentStatus(target, spec, ctx) {
      // A health fault is "not ready yet" on the first checks, not a failure of the call.
      const fault = await faultLatency(faultsOf(target), 'health', ctx);
      const row = await db
        .selectFrom('local_deployments')
        .select(['render_id', 'resource_count'])
        .where('cluster_id', '=', target.clusterId)
        .where('install_id', '=', spec.installId)
        .executeTakeFirst();
      if (!row || row.render_id !== spec.renderId) return { ready: false, message: `render ${spec.renderId} is not deployed` };
      const log = (line: string) => writeLocalLog(db, target.clusterId, spec.installId, [{ pod: LOCAL_DRIVER_POD, container: LOCAL_DRIVER_CONTAINER, line }]);
      if (ctx.attempt <= (fault?.fail_times ?? 0)) {
        const message = `injected fault: ${row.resource_count} object(s) not ready on check ${ctx.attempt} of the simulated cluster`;
        await log(`render ${spec.renderId} not ready: ${message}`);
        return { ready: false, message };
      }
      await log(`render ${spec.renderId} ready: ${row.resource_count} object(s) ready`);
      return { ready: true, message: `${row.resource_count} object(s) ready` };
    },

    async undeploy(target, deployment, ctx) {
      await injectFault(faultsOf(target), 'undeploy', ctx);
      await db.deleteFrom('local_deployments').where('cluster_id', '=', target.clusterId).where('install_id', '=', deployment.installId).execute();
      // Its pods are gone, and their logs with them (as a deleted namespace's are).
      await clearLocalLog(db, target.clusterId, deployment.installId);
    },

    async logs(target, deployment, options, ctx) {
      return readLocalLogs(db, target.clusterId, deployment, options, ctx);
    },
  };
}
