// Clusters: the list, registering one (its create operation followed live on the page), and a
// cluster's page with its capabilities, nodes, machines (ClusterMachines), installs, operations and
// the actions refresh and delete.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields, type FieldRow } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextArea, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { OperationsOf } from '../operations/Operations.tsx';
import { InstallsTable } from '../installs/Installs.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { useRecord } from '../../lib/useRecord.ts';
import { ClusterMachines } from './ClusterMachines.tsx';

type Cluster = Schemas['Cluster'];

export function ClusterList(_props: { path?: string }) {
  return (
    <Page title="Clusters" subtitle="Where installs run: the built-in local cluster, or your Kubernetes clusters." actions={<a class="button primary" href="/clusters/new">Register a cluster</a>}>
      <ListView<Cluster>
        label="Clusters"
        load={(cursor, limit) => ok(client.GET('/v1/clusters', { params: { query: { cursor, limit } } }))}
        rowKey={(c) => c.id}
        columns={[
          { label: 'Name', cell: (c) => <a href={`/clusters/${c.id}`}>{c.name}</a> },
          { label: 'Provider', cell: (c) => (c.provider === 'local' ? 'Local' : 'Kubernetes') },
          { label: 'State', cell: (c) => <StateBadge state={c.state} /> },
          { label: 'Created', cell: (c) => <Time at={c.created_at} /> },
        ]}
        empty={
          <p>
            No clusters yet. <a href="/clusters/new">Register one</a> to install packages on it.
          </p>
        }
      />
    </Page>
  );
}

export function NewCluster(_props: { path?: string }) {
  const [name, setName] = useState('');
  const [provider, setProvider] = useState<'local' | 'kubernetes'>('local');
  const [kubeconfig, setKubeconfig] = useState('');
  const [gatewayUrl, setGatewayUrl] = useState('');
  const action = useAction();
  const [op, setOp] = useState<Schemas['Operation'] | undefined>(undefined);

  async function submit(e: Event) {
    e.preventDefault();
    const gateway = gatewayUrl.trim() ? { gateway_url: gatewayUrl.trim() } : {};
    const body = provider === 'kubernetes' ? { name, provider, kubeconfig, ...gateway } : { name, provider };
    const started = await action.run(() => ok(client.POST('/v1/clusters', { body })));
    if (started) setOp(started);
  }

  if (op) {
    return (
      <Page title={`Registering ${name}`} breadcrumb={['Clusters', '/clusters']}>
        <OperationLive id={op.id} initial={op} title="Registration" />
        <p>
          <a href={`/clusters/${op.owner_id}`}>Open the cluster</a>
        </p>
      </Page>
    );
  }
  return (
    <Page title="Register a cluster" breadcrumb={['Clusters', '/clusters']}>
      <form class="card form" onSubmit={submit}>
        <ErrorNotice error={action.error} shownFields={['body.name', 'body.kubeconfig', 'body.gateway_url']} title="The cluster was not registered." />
        <TextField label="Name" required value={name} onValue={setName} hint="A DNS label: lowercase letters, digits and dashes." error={violationOf(action.error, 'body.name')} />
        <SelectField label="Provider" value={provider} onValue={(v) => setProvider(v as 'local' | 'kubernetes')} options={[['local', 'Local (simulated by the service)'], ['kubernetes', 'Kubernetes (your cluster)']]} />
        {provider === 'kubernetes' && (
          <TextArea label="Kubeconfig" code required rows={10} value={kubeconfig} onValue={setKubeconfig} hint="Self-contained, with inline credentials (kubectl config view --minify --flatten). Stored encrypted, never shown again." error={violationOf(action.error, 'body.kubeconfig')} />
        )}
        {provider === 'kubernetes' && <GatewayUrlField value={gatewayUrl} onValue={setGatewayUrl} error={violationOf(action.error, 'body.gateway_url')} />}
        <button class="primary" type="submit" disabled={action.busy}>
          Register cluster
        </button>
      </form>
    </Page>
  );
}

const GATEWAY_HINT =
  'Optional. The address of the cluster\'s Gateway or ingress load balancer, such as http://203.0.113.7: the preview router sends install URLs there. ' +
  'Empty: through the Kubernetes API server\'s service proxy, fine for trying things out.';

function GatewayUrlField(props: { value: string; onValue: (v: string) => void; error?: string }) {
  return <TextField label="Gateway URL" placeholder="http://203.0.113.7" value={props.value} onValue={props.onValue} hint={GATEWAY_HINT} error={props.error} />;
}

/** Where the preview router sends a kubernetes cluster's traffic: its gateway_url, set or cleared here. */
function ClusterTraffic(props: { cluster: Cluster; onSaved: () => unknown }) {
  const c = props.cluster;
  const [value, setValue] = useState(c.gateway_url ?? '');
  const action = useAction();
  const save = (gateway: string | null) =>
    action.run(async () => {
      const saved = await ok(client.PATCH('/v1/clusters/{id}', { params: { path: { id: c.id }, header: { 'if-match': c.etag } }, body: { gateway_url: gateway } }));
      setValue(saved.gateway_url ?? '');
      await props.onSaved();
    });
  const submit = (e: Event) => {
    e.preventDefault();
    void save(value.trim() ? value.trim() : null);
  };
  return (
    <Section title="Traffic">
      <p>
        {c.gateway_url ? (
          <>The preview router sends this cluster's install URLs and preview hostnames to <Code>{c.gateway_url}</Code>, with their own Host header.</>
        ) : (
          <>The preview router reaches this cluster's workloads through the Kubernetes API server's service proxy. Give the gateway's address to send traffic there instead.</>
        )}
      </p>
      <form class="form" onSubmit={submit}>
        <Conflict error={action.error} what="The cluster" onReload={props.onSaved} onReapply={() => void save(value.trim() ? value.trim() : null)} busy={action.busy} />
        {!isConflict(action.error) && <ErrorNotice error={action.error} shownFields={['body.gateway_url']} title="The gateway was not changed." />}
        <GatewayUrlField value={value} onValue={setValue} error={violationOf(action.error, 'body.gateway_url')} />
        <div class="actions">
          <button class="primary" type="submit" disabled={action.busy}>
            Save gateway
          </button>
          {c.gateway_url && (
            <button type="button" disabled={action.busy} onClick={() => void save(null)}>
              Use the service proxy
            </button>
          )}
        </div>
      </form>
    </Section>
  );
}

export function ClusterPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const cluster = useRecord(id, () => ok(client.GET('/v1/clusters/{id}', { params: { path: { id } } })));
  const caps = useApi(() => ok(client.GET('/v1/clusters/{id}/capabilities', { params: { path: { id } } })), [id]);
  const action = useAction();
  const [op, setOp] = useState<Schemas['Operation'] | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const { route } = useLocation();

  if (cluster.error) return <Page title="Cluster" breadcrumb={['Clusters', '/clusters']}><ErrorNotice error={cluster.error} title="The cluster could not be loaded." /></Page>;
  const c = cluster.data;
  if (!c) return <p aria-busy="true">Loading…</p>;

  const refresh = () => action.run(async () => setOp(await ok(client.POST('/v1/clusters/{id}/capabilities:refresh', { params: { path: { id } } }))));
  const remove = () => {
    setConfirming(false);
    return action.run(async () => setOp(await ok(client.DELETE('/v1/clusters/{id}', { params: { path: { id }, header: { 'if-match': c.etag } } }))));
  };

  return (
    <Page
      title={c.name}
      subtitle={<>Cluster · <StateBadge state={c.state} /></>}
      breadcrumb={['Clusters', '/clusters']}
      actions={
        <>
          <button type="button" disabled={action.busy} onClick={refresh}>
            Refresh capabilities
          </button>
          <button type="button" class="danger" disabled={action.busy} onClick={() => setConfirming(true)}>
            Delete
          </button>
        </>
      }
    >
      <Conflict error={action.error} what="The cluster" onReload={cluster.reload} onReapply={remove} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} />}
      {op && <OperationLive key={op.id} id={op.id} initial={op} title={op.metadata.type === 'cluster.delete' ? 'Deletion' : 'Capabilities refresh'} onDone={(done) => (done.metadata.type === 'cluster.delete' && done.state === 'SUCCEEDED' ? route('/clusters') : void cluster.reload().then(caps.reload))} />}
      <Section title="Details">
        <Fields
          rows={[
            ['Name', c.name],
            ['ID', <Code>{c.id}</Code>],
            ['Provider', c.provider === 'local' ? 'Local (simulated)' : 'Kubernetes'],
            ...(c.provider === 'kubernetes' ? [['Gateway URL', c.gateway_url ? <Code>{c.gateway_url}</Code> : 'None: the API server\'s service proxy'] as FieldRow] : []),
            ['State', <StateBadge state={c.state} />],
            ['Reconciling', c.reconciling ? 'Yes' : 'No'],
            ['Created', <Time at={c.created_at} />],
            ['Updated', <Time at={c.updated_at} />],
          ]}
        />
      </Section>
      <Section title="Capabilities">
        {caps.error ? (
          <ErrorNotice error={caps.error} title="Capabilities are not known yet." />
        ) : !caps.data ? (
          <p aria-busy="true">Loading…</p>
        ) : (
          <>
            <Fields
              rows={[
                ['Observed', <Time at={caps.data.observed_at} />],
                ['API groups', caps.data.api_groups.length ? caps.data.api_groups.join(', ') : null],
                ['Storage classes', caps.data.storage_classes.map((s) => s.name + (s.is_default ? ' (default)' : '')).join(', ') || null],
                ['Ingress classes', caps.data.ingress_classes.join(', ') || null],
                ['Gateway classes', caps.data.gateway_classes.join(', ') || null],
              ]}
            />
            <h3>Nodes</h3>
            {caps.data.nodes.length === 0 ? (
              <p class="muted">No nodes reported.</p>
            ) : (
              <table class="table">
                <caption class="visually-hidden">Nodes</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Ready</th>
                    <th scope="col">CPU</th>
                    <th scope="col">Memory</th>
                    <th scope="col">Kubelet</th>
                  </tr>
                </thead>
                <tbody>
                  {caps.data.nodes.map((n) => (
                    <tr key={n.name}>
                      <td data-label="Name">{n.name}</td>
                      <td data-label="Ready">{n.ready ? 'Ready' : 'Not ready'}</td>
                      <td data-label="CPU">{n.cpu_capacity}</td>
                      <td data-label="Memory">{n.memory_capacity}</td>
                      <td data-label="Kubelet">{n.version}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Section>
      {c.provider === 'kubernetes' && <ClusterTraffic key={c.etag} cluster={c} onSaved={cluster.reload} />}
      <ClusterMachines cluster={c} />
      <Section title="Installs" actions={<a href={`/installs/new?cluster=${c.id}`}>Install a package here</a>}>
        <InstallsTable filters={{ cluster_id: c.id }} empty={<p class="muted">Nothing is installed on this cluster.</p>} />
      </Section>
      <Section title="Operations">
        <OperationsOf ownerType="cluster" ownerId={c.id} />
      </Section>
      <Confirm open={confirming} title={`Delete the cluster ${c.name}?`} confirmLabel="Delete cluster" danger onConfirm={remove} onCancel={() => setConfirming(false)}>
        <p>Its installs must be deleted first. This cannot be undone.</p>
      </Confirm>
    </Page>
  );
}
