// The machines' periodic work, run by the workers of every instance every heartbeat interval:
// ACTIVE machines whose agent missed 3 heartbeats become UNREACHABLE (owners and admins are told);
// machines nearing their expires_at announce it 72 h and 24 h before (once each); expired ones
// start machine.delete. Safe on several instances at once: each change is one conditional
// statement and each notice has a unique key.
import type { Db } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { recordAuditEvent } from '../audit/audit.js';
import { clusterNamesById, syncClusterNodes } from '../clusters/clusters.service.js';
import { machineExpiry, machineUnreachable } from '../notifications/sources.js';
import { SYSTEM_ACTOR, type OperationService } from '../operations/operations.service.js';
import * as repo from './machines.repo.js';
import { startMachineDeletion } from './machines.workflows.js';

export interface MachineSweepResult {
  unreachable: number;
  expiry_notices: number;
  expired: number;
}

const HOUR = 3600;
/** expiring machines looked at per run; the rest wait for the next run */
const BATCH = 500;

/** How a notice names a machine: its name (or its node's), what it is, and its cluster's name (read once per batch). */
function noticeNames(row: repo.MachineRow, clusterNames: Map<string, string>) {
  return { name: row.name ?? row.node_name, provider: row.provider, instanceType: row.instance_type, clusterName: clusterNames.get(row.cluster_id) ?? 'its cluster' };
}

export async function sweepMachines(deps: { db: Db; operations: Pick<OperationService, 'start'>; heartbeatSeconds: number }): Promise<MachineSweepResult> {
  const { db } = deps;
  const out: MachineSweepResult = { unreachable: 0, expiry_notices: 0, expired: 0 };
  const now = clock.now();
  await db.transaction().execute(async (tx) => {
    const silent = await repo.markUnreachable(tx, now - 3 * deps.heartbeatSeconds, now);
    const clusterNames = await clusterNamesById(tx, silent.map((r) => r.cluster_id));
    for (const row of silent) {
      await machineUnreachable(tx, { ...noticeNames(row, clusterNames), workspaceId: row.workspace_id, machineId: row.id, lastHeartbeatAt: row.last_heartbeat_at });
    }
    for (const clusterId of new Set(silent.map((r) => r.cluster_id))) await syncClusterNodes(tx, clusterId);
    out.unreachable = silent.length;
  });
  const expiring = await repo.expiringMachines(db, now + 72 * HOUR, BATCH);
  const expiringClusters = await clusterNamesById(db, expiring.map((r) => r.cluster_id));
  for (const row of expiring) {
    const expiresAt = row.expires_at!;
    await db.transaction().execute(async (tx) => {
      if (expiresAt > now) {
        const notice = expiresAt - now <= 24 * HOUR ? '24h' : '72h';
        out.expiry_notices += await machineExpiry(tx, { ...noticeNames(row, expiringClusters), workspaceId: row.workspace_id, machineId: row.id, expiresAt, notice });
        return;
      }
      const marked = await repo.markExpiredDeleting(tx, row.id, expiresAt, now);
      if (!marked) return;
      await recordAuditEvent(tx, { workspaceId: row.workspace_id, actor: { type: 'system', id: 'machine-expiry' }, requestId: null }, {
        action: 'machine.delete', resourceType: 'machine', resourceId: row.id, metadata: { reason: 'expired', expires_at: String(expiresAt) },
      });
      await startMachineDeletion(deps.operations, tx, marked, SYSTEM_ACTOR, 'expired');
      out.expired++;
    });
  }
  return out;
}
