// The machines that joined a simulated (local) cluster, as nodes of its capabilities: a machine
// is a node once its agent joined; ACTIVE and SUSPENDED (cordoned) nodes are ready, an
// UNREACHABLE one is not (its kubelet stopped posting status). Built from the machine rows alone.
import type { Executor } from '../../db/database.js';
import type { MachinesTable } from '../../db/schema.js';
import type { ClusterCapabilitiesT } from './driver.js';

type Node = ClusterCapabilitiesT['nodes'][number];
type MachineNodeRow = Pick<MachinesTable, 'node_name' | 'state' | 'facts' | 'created_at'>;

const ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x' };

const STATUS: Record<string, { ready: boolean; message: string }> = {
  ACTIVE: { ready: true, message: 'kubelet is posting ready status' },
  SUSPENDED: { ready: true, message: 'kubelet is posting ready status; SchedulingDisabled (the machine is suspended)' },
  DELETING: { ready: true, message: 'SchedulingDisabled (the machine is being deleted and drained)' },
  UNREACHABLE: { ready: false, message: 'Kubelet stopped posting node status (the machine missed 3 heartbeats)' },
};

export function machineNode(row: MachineNodeRow, version: string): Node | null {
  const status = STATUS[row.state];
  if (!row.node_name || !status) return null;
  const facts = row.facts ? (JSON.parse(row.facts) as { os?: string; kernel?: string; arch?: string; cpu_count?: number; memory_bytes?: number }) : {};
  return {
    name: row.node_name,
    version,
    cpu_capacity: String(facts.cpu_count ?? 0),
    memory_capacity: `${Math.floor((facts.memory_bytes ?? 0) / 1024)}Ki`,
    os_image: [facts.os, facts.kernel].filter(Boolean).join(' ') || 'unknown',
    architecture: ARCH[facts.arch ?? ''] ?? facts.arch ?? 'unknown',
    status_message: status.message,
    created_at: new Date(row.created_at * 1000).toISOString(),
    roles: ['worker'],
    ready: status.ready,
  };
}

/** The nodes of the machines of `clusterId`, in id order. */
export async function machineNodesOf(db: Executor, clusterId: string, version: string): Promise<Node[]> {
  const rows = await db.selectFrom('machines').select(['node_name', 'state', 'facts', 'created_at'])
    .where('cluster_id', '=', clusterId).where('node_name', 'is not', null).orderBy('id').execute();
  return rows.map((r) => machineNode(r, version)).filter((n): n is Node => n !== null);
}
