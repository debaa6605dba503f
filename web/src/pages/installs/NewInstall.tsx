// Installing a package: pick the package, the version (or "latest release") and the cluster, then
// fill the form made from that version's input schema; the install.create operation is then
// followed live on the page, with a link to the install. Links may preselect the choices
// (`/installs/new?package=pkg_...&version=1.2.0&cluster=clu_...`).
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { chosenVersion, initialChoice, pinOf, versionOptions } from '../../lib/install-form.ts';
import { Page, Section } from '../../components/Page.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, useAction, violationOf } from '../../components/Form.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { useDeployNames } from './Installs.tsx';
import { useInputs } from './InstallInputs.tsx';

export function NewInstall(_props: { path?: string }) {
  const { query } = useLocation();
  const names = useDeployNames();
  const [packageId, setPackageId] = useState(query.package ?? '');
  const [choice, setChoice] = useState('');
  const [clusterId, setClusterId] = useState(query.cluster ?? '');
  const [op, setOp] = useState<Schemas['Operation'] | undefined>(undefined);
  const action = useAction();

  const installable = names.packages.filter((p) => p.latest_version !== null || p.id === packageId);
  const active = names.clusters.filter((c) => c.state === 'active');
  // Defaults once the lists are known: the linked package or the first, the first active cluster.
  useEffect(() => {
    if (!packageId && installable[0]) setPackageId(installable[0].id);
    if (!clusterId && active[0]) setClusterId(active[0].id);
  }, [names.packages, names.clusters]);

  const pkg = names.packages.find((p) => p.id === packageId);
  const versions = useApi(
    () => (packageId ? ok(client.GET('/v1/packages/{id}/versions', { params: { path: { id: packageId }, query: { limit: 100 } } })).then((p) => p.data) : Promise.resolve([])),
    [packageId],
  );
  const list = versions.data ?? [];
  const latest = pkg?.latest_version ?? null;
  useEffect(() => {
    if (versions.data) setChoice(initialChoice(versions.data, latest, packageId === query.package ? query.version : undefined));
  }, [versions.data, latest]);
  const version = chosenVersion(list, choice, latest);
  const inputs = useInputs(version?.input_schema, undefined, 'body.initial_values', version?.id);

  async function submit(e: Event) {
    e.preventDefault();
    action.clear();
    const values = inputs.check();
    if (!values || !choice) return;
    const body = { package_id: packageId, package_version_pin: pinOf(choice), cluster_id: clusterId, initial_values: values };
    const started = await action.run(() => ok(client.POST('/v1/installs', { body })));
    if (started) setOp(started);
  }

  if (op) {
    return (
      <Page title={`Installing ${pkg?.name ?? 'the package'}`} breadcrumb={['Installs', '/installs']}>
        <OperationLive id={op.id} initial={op} title="Installation" />
        <p>
          <a href={`/installs/${op.owner_id}`}>Open the install</a>
        </p>
      </Page>
    );
  }

  const loading = !names.error && !names.loaded;
  return (
    <Page title="Install a package" breadcrumb={['Installs', '/installs']}>
      <ErrorNotice error={names.error ?? versions.error} title="The choices could not be loaded." />
      {loading ? (
        <p aria-busy="true">Loading…</p>
      ) : installable.length === 0 ? (
        <p class="card">
          No package has a version to install yet. <a href="/packages">Publish a version of a package</a> first.
        </p>
      ) : active.length === 0 ? (
        <p class="card">
          No cluster is active. <a href="/clusters/new">Register a cluster</a> first.
        </p>
      ) : (
        <form class="form" onSubmit={submit} noValidate>
          <ErrorNotice error={action.error} shownFields={['body.package_id', 'body.cluster_id', 'body.package_version_pin.version', ...inputs.shown(action.error)]} title="The package was not installed." />
          <Section title="What and where">
            <div class="form">
              <SelectField label="Package" required value={packageId} onValue={setPackageId} options={installable.map((p) => [p.id, p.name])} error={violationOf(action.error, 'body.package_id')} />
              <SelectField
                label="Version"
                required
                value={choice}
                onValue={setChoice}
                options={versionOptions(list, latest)}
                hint="The latest release follows new releases when the install is updated; a version number stays on that version."
                error={violationOf(action.error, 'body.package_version_pin.version')}
              />
              <SelectField label="Cluster" required value={clusterId} onValue={setClusterId} options={active.map((c) => [c.id, c.name])} error={violationOf(action.error, 'body.cluster_id')} />
            </div>
          </Section>
          <Section title="Inputs">
            <div class="form">{version ? inputs.view(action.error) : <p aria-busy="true">Loading the version…</p>}</div>
          </Section>
          <button class="primary" type="submit" disabled={action.busy || !version}>
            Install
          </button>
        </form>
      )}
    </Page>
  );
}
