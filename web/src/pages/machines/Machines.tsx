// Machines: the workspace's list (filters: cluster and state; keyset pages), and the table of
// machines the cluster page shows. A machine joins through its cluster's "Add a server" dialog or
// is provisioned there; its own page (MachinePage) shows it live.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { machineName, MACHINE_STATES, PROVIDER_WORDS, type Machine, type MachineState } from '../../lib/machines.ts';
import { ListView, type Column } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { SelectField } from '../../components/Form.tsx';
import { useDeployNames, type DeployNames } from '../installs/Installs.tsx';

export function MachinesTable(props: { clusterId?: string; state?: MachineState; empty: ComponentChildren; names?: DeployNames; reloadKey?: unknown }) {
  const { clusterId, state } = props;
  const columns: Column<Machine>[] = [
    { label: 'Machine', cell: (m) => <a href={`/machines/${m.id}`}>{machineName(m)}</a> },
    { label: 'State', cell: (m) => <StateBadge state={m.state} /> },
    { label: 'Provider', cell: (m) => PROVIDER_WORDS[m.provider] },
    { label: 'Last heartbeat', cell: (m) => <Time at={m.last_heartbeat_at} empty="None yet" /> },
  ];
  // The workspace-wide list says which cluster; a cluster's own page needs no such column.
  if (!clusterId && props.names) {
    const names = props.names;
    columns.splice(2, 0, { label: 'Cluster', cell: (m) => <a href={`/clusters/${m.cluster_id}`}>{names.clusterName(m.cluster_id)}</a> });
  }
  return (
    <ListView<Machine>
      label="Machines"
      deps={[clusterId, state, props.reloadKey]}
      load={(cursor, limit) => ok(client.GET('/v1/machines', { params: { query: { cursor, limit, cluster_id: clusterId, state } } }))}
      rowKey={(m) => m.id}
      columns={columns}
      empty={props.empty}
    />
  );
}

export function MachineList(_props: { path?: string }) {
  const names = useDeployNames();
  const [clusterId, setClusterId] = useState('');
  const [state, setState] = useState('');
  const filtered = Boolean(clusterId || state);
  return (
    <Page title="Machines" subtitle="Servers working as nodes of your clusters: your own, joined with a one-time token, or provisioned by the service.">
      <div class="filters">
        <SelectField label="Cluster" value={clusterId} onValue={setClusterId} options={[['', 'All clusters'], ...names.clusters.map((c) => [c.id, c.name] as [string, string])]} />
        <SelectField label="State" value={state} onValue={setState} options={[['', 'Any state'], ...MACHINE_STATES]} />
      </div>
      <MachinesTable
        clusterId={clusterId || undefined}
        state={(state || undefined) as MachineState | undefined}
        names={names}
        empty={
          filtered ? (
            <p>No machines match these filters.</p>
          ) : (
            <p>
              No machines yet. Open one of your <a href="/clusters">clusters</a> and add a server to it.
            </p>
          )
        }
      />
    </Page>
  );
}
