// A machine as GET /v1/machines/{id} returns it: the API's answers and the events that report a
// machine's changes (API.md 8.11) carry the same shape.
import { etagOf } from '../../platform/etag.js';
import type { MachineRow } from './machines.repo.js';
import type { MachineFactsT, MachineState, MachineT } from './machines.schemas.js';

export function machineView(row: MachineRow, publicUrl: string): MachineT {
  return {
    id: row.id, workspace_id: row.workspace_id, cluster_id: row.cluster_id, name: row.name,
    origin: row.origin as MachineT['origin'], provider: row.provider as MachineT['provider'], instance_type: row.instance_type,
    state: row.state as MachineState, node_name: row.node_name, facts: row.facts ? (JSON.parse(row.facts) as MachineFactsT) : null,
    last_heartbeat_at: row.last_heartbeat_at, expires_at: row.expires_at, reconciling: row.reconciling === 1,
    html_url: `${publicUrl}/machines/${row.id}`, created_at: row.created_at, updated_at: row.updated_at, etag: etagOf(row.revision),
  };
}
