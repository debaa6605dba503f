// Installs: the list with its filters (cluster, package, state; the API's own query filters), and
// the table of installs other pages show (a package's installs).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { client, ok, type ApiError, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { humanState } from '../../lib/format.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { SelectField } from '../../components/Form.tsx';
import type { paths } from '../../../../src/cli/generated/api.ts';

export type Install = Schemas['Install'];
type ListQuery = NonNullable<paths['/v1/installs']['get']['parameters']['query']>;
export type InstallFilters = Pick<ListQuery, 'cluster_id' | 'package_id' | 'state'>;

const STATES: Install['state'][] = ['pending', 'rendering', 'syncing', 'healthy', 'degraded', 'failed'];

export interface DeployNames {
  packages: Schemas['Package'][];
  clusters: Schemas['Cluster'][];
  error: ApiError | undefined;
  /** false until both lists are read */
  loaded: boolean;
  packageName: (id: string) => string;
  clusterName: (id: string) => string;
}

/**
 * The workspace's packages and clusters by id, for names in tables and the choices of filters and
 * forms (the first 100 of each: a workspace's quota allows few clusters; past 100 packages a name
 * reads as its id). A page that already has them passes them in (`given`), and nothing is read.
 */
export function useDeployNames(given?: DeployNames): DeployNames {
  const loaded = useApi(async () => {
    if (given) return { packages: [], clusters: [] };
    const [packages, clusters] = await Promise.all([
      ok(client.GET('/v1/packages', { params: { query: { limit: 100 } } })),
      ok(client.GET('/v1/clusters', { params: { query: { limit: 100 } } })),
    ]);
    return { packages: packages.data, clusters: clusters.data };
  }, []);
  if (given) return given;
  const packages = loaded.data?.packages ?? [];
  const clusters = loaded.data?.clusters ?? [];
  return {
    packages,
    clusters,
    error: loaded.error,
    loaded: loaded.data !== undefined,
    packageName: (id: string) => packages.find((p) => p.id === id)?.name ?? id,
    clusterName: (id: string) => clusters.find((c) => c.id === id)?.name ?? id,
  };
}

/** An install's first URL as a link that opens in a new tab (the preview of what it serves). */
export function UrlLink(props: { url: string; children?: ComponentChildren }) {
  return (
    <a class="url" href={props.url} target="_blank" rel="noopener noreferrer">
      {props.children ?? props.url}
      <span class="visually-hidden"> (opens in a new tab)</span>
    </a>
  );
}


export function InstallsTable(props: { filters: InstallFilters; empty: ComponentChildren; names?: DeployNames }) {
  const names = useDeployNames(props.names);
  const f = props.filters;
  return (
    <ListView<Install>
      label="Installs"
      deps={[f.cluster_id, f.package_id, f.state]}
      load={(cursor, limit) => ok(client.GET('/v1/installs', { params: { query: { cursor, limit, ...f } } }))}
      rowKey={(i) => i.id}
      columns={[
        { label: 'Install', cell: (i) => <a href={`/installs/${i.id}`}>{`${names.packageName(i.package_id)} ${i.semver}`}</a> },
        { label: 'Cluster', cell: (i) => <a href={`/clusters/${i.cluster_id}`}>{names.clusterName(i.cluster_id)}</a> },
        { label: 'State', cell: (i) => <StateBadge state={i.state} /> },
        { label: 'URL', cell: (i) => (i.urls[0] && !i.urls[0].error ? <UrlLink url={i.urls[0].url}>{i.urls[0].route_key}</UrlLink> : <span class="muted">—</span>) },
        { label: 'Created', cell: (i) => <Time at={i.created_at} /> },
      ]}
      empty={props.empty}
    />
  );
}

export function InstallList(_props: { path?: string }) {
  const names = useDeployNames();
  const [clusterId, setClusterId] = useState('');
  const [packageId, setPackageId] = useState('');
  const [state, setState] = useState('');
  const filters: InstallFilters = {
    cluster_id: clusterId || undefined,
    package_id: packageId || undefined,
    state: (state || undefined) as InstallFilters['state'],
  };
  const filtered = Boolean(clusterId || packageId || state);
  return (
    <Page title="Installs" subtitle="Package versions running on your clusters, with their URLs." actions={<a class="button primary" href="/installs/new">Install a package</a>}>
      <div class="filters">
        <SelectField label="Cluster" value={clusterId} onValue={setClusterId} options={[['', 'All clusters'], ...names.clusters.map((c) => [c.id, c.name] as [string, string])]} />
        <SelectField label="Package" value={packageId} onValue={setPackageId} options={[['', 'All packages'], ...names.packages.map((p) => [p.id, p.name] as [string, string])]} />
        <SelectField label="State" value={state} onValue={setState} options={[['', 'Any state'], ...STATES.map((s) => [s, humanState(s)] as [string, string])]} />
      </div>
      <InstallsTable
        filters={filters}
        names={names}
        empty={
          filtered ? (
            <p>No installs match these filters.</p>
          ) : (
            <p>
              Nothing installed yet. <a href="/installs/new">Install a package</a> on one of your clusters.
            </p>
          )
        }
      />
    </Page>
  );
}
