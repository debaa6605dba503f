// A machine as a node of its cluster: its node name, and the cluster's capabilities snapshot kept
// in step with its machines. A local cluster's stored snapshot is rewritten in the transaction of
// every change of a machine's node (joined, ready, unreachable, cordoned, removed), so
// GET /v1/clusters/{id}/capabilities shows an ACTIVE machine as a ready node at once.
import type { Executor } from '../../db/database.js';
import { localCapabilities, withMachineNodes } from '../../drivers/cluster/local.js';
import { clock } from '../../platform/clock.js';
import { findClusterById, storeCapabilities } from '../clusters/clusters.repo.js';

/** An RFC 1123 label from the host name, made unique by the end of the machine id: `build-01-3m2k7`. */
export function nodeNameOf(hostname: string, machineId: string): string {
  const base = hostname.toLowerCase().split('.')[0]!.replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'machine';
  return `${base}-${machineId.slice(-5)}`;
}

/** Rewrites the stored capabilities of a local cluster with its machines' nodes as they are now. */
export async function syncClusterNodes(tx: Executor, clusterId: string): Promise<void> {
  const cluster = await findClusterById(tx, clusterId);
  if (!cluster || cluster.provider !== 'local' || cluster.capabilities === null) return;
  const local = await tx.selectFrom('local_clusters').selectAll().where('cluster_id', '=', clusterId).executeTakeFirst();
  if (!local) return;
  const caps = await withMachineNodes(tx, localCapabilities(local.cluster_id, local.node_count, local.created_at), clusterId);
  await storeCapabilities(tx, clusterId, JSON.stringify(caps), caps.nodes.length, clock.now());
}
