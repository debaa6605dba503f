// The "Machines" section of a cluster's page: its machines (each linked to its page), its worker
// bootstraps (status, expiry, the machine that used one; an active one can be revoked with its
// etag after a confirmation), and, for owners and admins, "Add a server" (AddServer's dialog) and
// "Provision a machine" (its machine.create operation followed live here). Machines join local
// clusters only: a Kubernetes cluster's section says so.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { formatDate } from '../../lib/format.ts';
import type { WorkerBootstrap } from '../../lib/machines.ts';
import { Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { RemovableList } from '../../components/RemovableList.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { MachinesTable } from '../machines/Machines.tsx';
import { ProvisionMachine } from '../machines/ProvisionMachine.tsx';
import { AddServerDialog } from './AddServer.tsx';

type Cluster = Schemas['Cluster'];
type Operation = Schemas['Operation'];

export function ClusterMachines(props: { cluster: Cluster }) {
  const c = props.cluster;
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const [adding, setAdding] = useState(false);
  const [provisioning, setProvisioning] = useState(false);
  const [op, setOp] = useState<Operation | undefined>(undefined);
  // Bumped when a server may have joined or a machine changed: both lists read again.
  const [changed, setChanged] = useState(0);
  const bump = () => setChanged((n) => n + 1);
  const takesMachines = c.provider === 'local';

  const buttons = takesMachines && (
    <NeedsRole need="admin" what="add servers or provision machines">
      <div class="actions">
      <button type="button" class="primary" onClick={() => setAdding(true)}>
        Add a server
      </button>
      <button type="button" aria-expanded={provisioning} onClick={() => setProvisioning(!provisioning)}>
        Provision a machine
      </button>
      </div>
    </NeedsRole>
  );
  return (
    <Section title="Machines" actions={buttons}>
      {!takesMachines && <p class="muted">Machines join local clusters; a Kubernetes cluster brings its own nodes.</p>}
      {provisioning && (
        <ProvisionMachine
          clusterId={c.id}
          onCancel={() => setProvisioning(false)}
          onStarted={(started) => {
            setProvisioning(false);
            setOp(started);
            bump();
          }}
        />
      )}
      {op && (
        <>
          <OperationLive key={op.id} id={op.id} initial={op} title="Provisioning" onDone={bump} />
          <p>
            <a href={`/machines/${op.owner_id}`}>Open the new machine</a>
          </p>
        </>
      )}
      <MachinesTable clusterId={c.id} reloadKey={changed} empty={<p class="muted">No machines in this cluster yet.</p>} />
      <h3>Worker bootstraps</h3>
      <p class="muted small">One-time tokens that let a server join this cluster. Their tokens are never shown again after they are made.</p>
      <RemovableList<WorkerBootstrap>
        label="Worker bootstraps"
        reloadKey={changed}
        load={(cursor, limit) => ok(client.GET('/v1/clusters/{id}/worker_bootstraps', { params: { path: { id: c.id }, query: { cursor, limit } } }))}
        rowKey={(b) => b.id}
        nameOf={(b) => `made ${formatDate(b.created_at)}`}
        columns={[
          { label: 'Status', cell: (b) => <StateBadge state={b.status} /> },
          { label: 'Made', cell: (b) => <Time at={b.created_at} /> },
          { label: 'Expires', cell: (b) => <Time at={b.expires_at} /> },
          { label: 'Used by', cell: (b) => (b.used_by_machine_id ? <a href={`/machines/${b.used_by_machine_id}`}>{b.used_by_machine_id}</a> : <span class="muted">—</span>) },
        ]}
        empty={<p class="muted">No worker bootstraps yet.</p>}
        mayRemove={admin}
        removable={(b) => b.status === 'active'}
        verb="Revoke"
        noun="bootstrap"
        consequence={<p>Its token joins nothing from now on. A server that already joined with it stays.</p>}
        current={(b) => ok(client.GET('/v1/clusters/{id}/worker_bootstraps/{bootstrap_id}', { params: { path: { id: c.id, bootstrap_id: b.id } } }))}
        remove={async (b) => {
          await ok(client.POST('/v1/clusters/{id}/worker_bootstraps/{bootstrap_id}:revoke', { params: { path: { id: c.id, bootstrap_id: b.id }, header: { 'if-match': b.etag } } }));
        }}
      />
      <AddServerDialog
        open={adding}
        clusterId={c.id}
        clusterName={c.name}
        onClose={() => {
          setAdding(false);
          bump();
        }}
      />
    </Section>
  );
}
