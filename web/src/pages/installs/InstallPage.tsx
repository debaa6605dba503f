// An install's page: its state and health, package, version and cluster linked, its URLs as links
// (new tab), its logs live, its current render and renders, preview hostnames, operations, and the actions:
// update its inputs (the form made from its version's input schema, if-match, 409 -> apply again)
// and delete (confirm). Each update or deletion is an operation followed live on the page.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { healthOf } from '../../lib/install-form.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { OperationsOf } from '../operations/Operations.tsx';
import { loadPackage } from '../packages/Packages.tsx';
import { UrlLink } from './Installs.tsx';
import { useInputs } from './InstallInputs.tsx';
import { Renders } from './Renders.tsx';
import { PreviewHostnames } from './PreviewHostnames.tsx';
import { InstallLogs } from './InstallLogs.tsx';

type InstallDetail = Schemas['InstallDetail'];
type Operation = Schemas['Operation'];

const OP_TITLE: Record<string, string> = { 'install.update': 'Update', 'install.delete': 'Deletion' };

/** The inputs form of an install: its current values in the form of its version's schema. */
function UpdateInputs(props: { install: InstallDetail; schema: unknown; reload: () => Promise<void>; onStarted: (op: Operation) => void }) {
  const i = props.install;
  const inputs = useInputs(props.schema, i.values, 'body.values', i.package_version_id);
  const action = useAction();
  // The etag of the install as the page shows it now (after a conflict, the reloaded one).
  async function apply() {
    const values = inputs.check();
    if (!values) return;
    const started = await action.run(() => ok(client.PATCH('/v1/installs/{id}', { params: { path: { id: i.id }, header: { 'if-match': i.etag } }, body: { values } })));
    if (started) props.onStarted(started);
  }
  return (
    <form
      class="form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        void apply();
      }}
    >
      <Conflict error={action.error} what="The install" onReload={() => props.reload()} onReapply={() => void apply()} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} shownFields={inputs.shown(action.error)} title="The install was not updated." />}
      {inputs.view(action.error)}
      <button type="submit" class="primary" disabled={action.busy || i.state === 'deleted'}>
        Update install
      </button>
    </form>
  );
}

export function InstallPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const install = useRecord(id, () => ok(client.GET('/v1/installs/{id}', { params: { path: { id } } })));
  const i = install.data;
  const related = useApi(async () => {
    if (!i) return undefined;
    const [pkg, cluster, version] = await Promise.all([
      loadPackage(i.package_id),
      ok(client.GET('/v1/clusters/{id}', { params: { path: { id: i.cluster_id } } })),
      ok(client.GET('/v1/packages/{id}/versions/{version_id}', { params: { path: { id: i.package_id, version_id: i.package_version_id } } })),
    ]);
    return { pkg, cluster, version };
  }, [i?.package_id, i?.cluster_id, i?.package_version_id]);
  const [op, setOp] = useState<Operation | undefined>(undefined);
  const [reloadKey, setReloadKey] = useState(0);
  const [confirming, setConfirming] = useState(false);
  const remove = useAction();
  const { route } = useLocation();

  const finished = (done: Operation) => {
    if (done.metadata.type === 'install.delete' && done.state === 'SUCCEEDED') return route('/installs');
    setReloadKey((k) => k + 1);
    void install.reload();
  };
  const following = op && <OperationLive key={op.id} id={op.id} initial={op} title={OP_TITLE[op.metadata.type] ?? 'Operation'} onDone={finished} />;
  // A deletion removes the install before its operation ends: the page keeps following it.
  if (install.error) {
    return (
      <Page title="Install" breadcrumb={['Installs', '/installs']}>
        {following ?? <ErrorNotice error={install.error} title="The install could not be loaded." />}
      </Page>
    );
  }
  if (!i) return <p aria-busy="true">Loading…</p>;
  const r = related.data;
  const pkgName = r?.pkg.name ?? i.package_id;
  const clusterName = r?.cluster.name ?? i.cluster_id;

  const started = (next: Operation) => {
    setOp(next);
    setReloadKey((k) => k + 1);
    void install.reload();
  };
  const deleteInstall = async () => {
    setConfirming(false);
    const next = await remove.run(() => ok(client.DELETE('/v1/installs/{id}', { params: { path: { id }, header: { 'if-match': i.etag } } })));
    if (next) started(next);
  };

  return (
    <Page
      title={`${pkgName} on ${clusterName}`}
      subtitle={<>Install · <StateBadge state={i.state} /></>}
      breadcrumb={['Installs', '/installs']}
      actions={
        <button type="button" class="danger" disabled={remove.busy || i.state === 'deleted'} onClick={() => setConfirming(true)}>
          Delete
        </button>
      }
    >
      <Conflict error={remove.error} what="The install" onReload={() => install.reload()} onReapply={() => void deleteInstall()} busy={remove.busy} />
      {!isConflict(remove.error) && <ErrorNotice error={remove.error} title="The install was not deleted." />}
      <ErrorNotice error={related.error} title="Its package, version or cluster could not be loaded." />
      {following}
      <Section title="Details">
        <Fields
          rows={[
            ['State', <StateBadge state={i.state} />],
            ['Health', healthOf(i)],
            ['Package', <a href={`/packages/${i.package_id}`}>{pkgName}</a>],
            ['Version', <a href={`/packages/${i.package_id}/versions/${i.package_version_id}`}>{i.semver}</a>],
            ['Follows', i.package_version_pin.kind === 'latest' ? 'The latest release (on each update)' : `Version ${i.package_version_pin.version ?? i.semver} only`],
            ['Cluster', <a href={`/clusters/${i.cluster_id}`}>{clusterName}</a>],
            ['Current render', i.current_render_id ? <Code>{i.current_render_id}</Code> : 'None yet'],
            ['Inputs', <pre class="json" tabIndex={0}>{JSON.stringify(i.values, null, 2)}</pre>],
            ['ID', <Code>{i.id}</Code>],
            ['Created', <Time at={i.created_at} />],
            ['Updated', <Time at={i.updated_at} />],
          ]}
        />
      </Section>
      <Section title="URLs">
        {i.urls.length === 0 ? (
          <p class="muted">{i.current_render_id ? 'Its version exposes no routes.' : 'URLs appear once a render is healthy.'}</p>
        ) : (
          <ul>
            {i.urls.map((u) => (
              <li key={u.route_key}>
                <strong>{u.route_key}</strong>: {u.error ? <span class="field-error">{u.error}</span> : <UrlLink url={u.url} />}
              </li>
            ))}
          </ul>
        )}
      </Section>
      {i.state !== 'deleted' && (
        <Section title="Logs">
          <InstallLogs key={id} installId={id} />
        </Section>
      )}
      <Section title="Renders">
        <Renders installId={id} reloadKey={reloadKey} />
      </Section>
      <Section title="Preview hostnames">
        <PreviewHostnames installId={id} currentRenderId={i.current_render_id} />
      </Section>
      <Section title="Update inputs">
        {r ? <UpdateInputs install={i} schema={r.version.input_schema} reload={install.reload} onStarted={started} /> : <p aria-busy="true">Loading the input schema…</p>}
      </Section>
      <Section title="Operations">
        <OperationsOf ownerType="install" ownerId={id} reloadKey={reloadKey} />
      </Section>
      <Confirm open={confirming} title={`Delete this install of ${pkgName}?`} confirmLabel="Delete install" danger onConfirm={() => void deleteInstall()} onCancel={() => setConfirming(false)}>
        <p>Its running operations are cancelled, it is removed from {clusterName}, and its URLs and preview hostnames stop answering. This cannot be undone.</p>
      </Confirm>
    </Page>
  );
}
