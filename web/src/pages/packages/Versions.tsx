// A package's versions: publishing one (semver, input schema and manifest as JSON, each checked in
// the browser first, then the API's violations shown at the text area they concern) and a
// version's page (its routes, input schema and manifest as published, and Install).
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import type { paths } from '../../../../src/cli/generated/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { parseVersionForm, STARTER, versionViolations, type VersionErrors, type VersionField, type VersionTexts } from '../../lib/package-version.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { TextArea, TextField, useAction } from '../../components/Form.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { loadPackage } from './Packages.tsx';

type PublishBody = NonNullable<paths['/v1/packages/{id}/versions']['post']['requestBody']>['content']['application/json'];

const PLACEHOLDERS = (
  <>
    Routes (each becomes a URL of every install) and the Kubernetes objects an install applies. Strings may hold <code>{'{{ values.<path> }}'}</code>, <code>{'{{ install.id }}'}</code>,{' '}
    <code>{'{{ install.namespace }}'}</code> and <code>{'{{ render.id }}'}</code>.
  </>
);

export function PublishVersion(props: { id?: string; path?: string }) {
  const id = props.id!;
  const pkg = useRecord(id, () => loadPackage(id));
  const [texts, setTexts] = useState<VersionTexts>(STARTER);
  const [local, setLocal] = useState<VersionErrors>({});
  const action = useAction();
  const { route } = useLocation();
  const set = (field: VersionField) => (text: string) => {
    setTexts({ ...texts, [field]: text });
    setLocal({ ...local, [field]: undefined });
  };

  async function submit(e: Event) {
    e.preventDefault();
    action.clear();
    const parsed = parseVersionForm(texts);
    setLocal(parsed.ok ? {} : parsed.errors);
    if (!parsed.ok) return;
    // The browser checks the JSON; the manifest's shape is the API's to judge (its violations land at the field).
    const body = parsed.body as PublishBody;
    const created = await action.run(() => ok(client.POST('/v1/packages/{id}/versions', { params: { path: { id } }, body })));
    if (created) route(`/packages/${id}/versions/${created.id}`);
  }

  const api = versionViolations(action.error?.violations() ?? new Map());
  const errorOf = (field: VersionField) => local[field] ?? api.errors[field];
  const name = pkg.data?.name ?? 'the package';
  return (
    <Page title={`Publish a version of ${name}`} breadcrumb={[pkg.data?.name ?? 'Package', `/packages/${id}`]}>
      <ErrorNotice error={pkg.error} title="The package could not be loaded." />
      <NeedsRole need="admin" what="publish versions">
        <form class="card form" onSubmit={submit} noValidate>
          <ErrorNotice error={action.error} shownFields={api.shown} title="The version was not published." />
          <TextField label="Version" required value={texts.semver} onValue={set('semver')} hint="SemVer 2.0, e.g. 1.2.0 or 1.3.0-rc.1 (a prerelease is never the latest release). Versions are immutable." error={errorOf('semver')} />
          <TextArea label="Input schema (JSON)" code required rows={10} value={texts.input_schema} onValue={set('input_schema')} hint="A JSON Schema (2020-12) of the values each install gives; its root is an object. Installs get a form made from it." error={errorOf('input_schema')} />
          <TextArea label="Manifest (JSON)" code required rows={16} value={texts.manifest} onValue={set('manifest')} hint={PLACEHOLDERS} error={errorOf('manifest')} />
          <button class="primary" type="submit" disabled={action.busy}>
            Publish version
          </button>
        </form>
      </NeedsRole>
    </Page>
  );
}

export function VersionPage(props: { id?: string; vid?: string; path?: string }) {
  const id = props.id!;
  const vid = props.vid!;
  const version = useRecord(vid, () => ok(client.GET('/v1/packages/{id}/versions/{version_id}', { params: { path: { id, version_id: vid } } })));
  const pkg = useApi(() => loadPackage(id), [id]);
  const back: [string, string] = [pkg.data?.name ?? 'Package', `/packages/${id}`];
  if (version.error) return <Page title="Version" breadcrumb={back}><ErrorNotice error={version.error} title="The version could not be loaded." /></Page>;
  const v = version.data;
  if (!v) return <p aria-busy="true">Loading…</p>;
  const kind = v.prerelease ? 'Prerelease' : v.semver === pkg.data?.latest_version ? 'Latest release' : 'Release';
  return (
    <Page
      title={`${pkg.data?.name ?? 'Package'} ${v.semver}`}
      subtitle={`${kind} · published`}
      breadcrumb={back}
      actions={
        <a class="button primary" href={`/installs/new?package=${id}&version=${v.semver}`}>
          Install this version
        </a>
      }
    >
      <Section title="Details">
        <Fields
          rows={[
            ['Version', v.semver],
            ['ID', <Code>{v.id}</Code>],
            ['Package', <a href={`/packages/${id}`}>{pkg.data?.name ?? id}</a>],
            ['Kind', kind],
            ['Published', <Time at={v.created_at} />],
          ]}
        />
      </Section>
      <Section title="Routes">
        {v.manifest.routes.length === 0 ? (
          <p class="muted">No routes: installs of this version have no URLs.</p>
        ) : (
          <ul>
            {v.manifest.routes.map((r) => (
              <li key={r.route_key}>
                <strong>{r.route_key}</strong> · {r.protocol}
                {r.service && <span class="muted"> · service {r.service.name}:{r.service.port}</span>}
              </li>
            ))}
          </ul>
        )}
      </Section>
      <Section title="Input schema">
        <pre class="json" tabIndex={0}>{JSON.stringify(v.input_schema, null, 2)}</pre>
      </Section>
      <Section title="Manifest">
        <pre class="json" tabIndex={0}>{JSON.stringify(v.manifest, null, 2)}</pre>
      </Section>
    </Page>
  );
}
