// Packages: the list, creating one (owners and admins), and a package's page with its versions
// (newest published first) and the installs of it. Packages and their versions cannot be deleted
// through the API (a version is immutable; a fix is a new version), so the pages offer no Delete.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { TextArea, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { InstallsTable } from '../installs/Installs.tsx';

export type Package = Schemas['Package'];
export type PackageVersion = Schemas['PackageVersion'];

/** Loads a package by id (its page, its versions' pages, the install page's links). */
export function loadPackage(id: string): Promise<Package> {
  return ok(client.GET('/v1/packages/{id}', { params: { path: { id } } }));
}

export function PackageList(_props: { path?: string }) {
  return (
    <Page
      title="Packages"
      subtitle="Software you install on clusters, published as immutable versions."
      actions={
        <NeedsRole need="admin" what="create packages">
          <a class="button primary" href="/packages/new">
            Create a package
          </a>
        </NeedsRole>
      }
    >
      <ListView<Package>
        label="Packages"
        load={(cursor, limit) => ok(client.GET('/v1/packages', { params: { query: { cursor, limit } } }))}
        rowKey={(p) => p.id}
        columns={[
          { label: 'Name', cell: (p) => <a href={`/packages/${p.id}`}>{p.name}</a> },
          { label: 'Description', cell: (p) => p.description || <span class="muted">—</span> },
          { label: 'Latest release', cell: (p) => p.latest_version ?? <span class="muted">none yet</span> },
          { label: 'Updated', cell: (p) => <Time at={p.updated_at} /> },
        ]}
        empty={<p>No packages yet. Owners and admins create them; each version you publish can then be installed on a cluster.</p>}
      />
    </Page>
  );
}

export function NewPackage(_props: { path?: string }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const action = useAction();
  const { route } = useLocation();

  async function submit(e: Event) {
    e.preventDefault();
    const created = await action.run(() => ok(client.POST('/v1/packages', { body: description ? { name, description } : { name } })));
    if (created) route(`/packages/${created.id}`);
  }

  return (
    <Page title="Create a package" breadcrumb={['Packages', '/packages']}>
      <NeedsRole need="admin" what="create packages">
        <form class="card form" onSubmit={submit}>
          <ErrorNotice error={action.error} shownFields={['body.name', 'body.description']} title="The package was not created." />
          <TextField label="Name" required maxLength={100} value={name} onValue={setName} hint="Unique in the workspace, e.g. hello or shop-api." error={violationOf(action.error, 'body.name')} />
          <TextArea label="Description" rows={3} value={description} onValue={setDescription} hint="What it is, in a sentence (at most 500 characters)." error={violationOf(action.error, 'body.description')} />
          <button class="primary" type="submit" disabled={action.busy}>
            Create package
          </button>
        </form>
      </NeedsRole>
    </Page>
  );
}

export function PackagePage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const pkg = useRecord(id, () => loadPackage(id));
  if (pkg.error) return <Page title="Package" breadcrumb={['Packages', '/packages']}><ErrorNotice error={pkg.error} title="The package could not be loaded." /></Page>;
  const p = pkg.data;
  if (!p) return <p aria-busy="true">Loading…</p>;
  return (
    <Page
      title={p.name}
      subtitle={p.description || 'Package'}
      breadcrumb={['Packages', '/packages']}
      actions={
        <>
          {p.latest_version && (
            <a class="button primary" href={`/installs/new?package=${p.id}`}>
              Install
            </a>
          )}
          <NeedsRole need="admin" what="publish versions">
            <a class="button" href={`/packages/${p.id}/versions/new`}>
              Publish a version
            </a>
          </NeedsRole>
        </>
      }
    >
      <Section title="Details">
        <Fields
          rows={[
            ['Name', p.name],
            ['ID', <Code>{p.id}</Code>],
            ['Description', p.description],
            ['Latest release', p.latest_version ?? 'None yet: installs pinned to the latest release need one (prereleases never count)'],
            ['Created', <Time at={p.created_at} />],
            ['Updated', <Time at={p.updated_at} />],
          ]}
        />
      </Section>
      <Section title="Versions">
        <ListView<PackageVersion>
          label="Versions"
          load={(cursor, limit) => ok(client.GET('/v1/packages/{id}/versions', { params: { path: { id }, query: { cursor, limit } } }))}
          rowKey={(v) => v.id}
          columns={[
            { label: 'Version', cell: (v) => <a href={`/packages/${id}/versions/${v.id}`}>{v.semver}</a> },
            { label: 'Kind', cell: (v) => (v.prerelease ? 'Prerelease' : v.semver === p.latest_version ? 'Latest release' : 'Release') },
            { label: 'Routes', cell: (v) => v.manifest.routes.map((r) => r.route_key).join(', ') || <span class="muted">none</span> },
            { label: 'Published', cell: (v) => <Time at={v.created_at} /> },
          ]}
          empty={<p class="muted">No versions yet: publish one to install the package.</p>}
        />
      </Section>
      <Section title="Installs">
        <InstallsTable filters={{ package_id: id }} empty={<p class="muted">Not installed anywhere yet.</p>} />
      </Section>
    </Page>
  );
}
