// An install's renders (one per create or update that got past its render step), newest first,
// the current one marked, and the rendered manifest of any of them on request (the list omits it).
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { ListView } from '../../components/ListView.tsx';
import { Time } from '../../components/Time.tsx';
import { Code } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';

type Render = Schemas['InstallRender'];

/**
 * A render id as a page lists it: its prefix and last characters (an id begins with its creation
 * time, so renders made close together share their first characters and differ at the end).
 */
export const short = (id: string) => (id.length > 16 ? `${id.slice(0, id.indexOf('_') + 1)}…${id.slice(-8)}` : id);

function RenderManifest(props: { installId: string; renderId: string }) {
  const detail = useApi(
    () => ok(client.GET('/v1/installs/{id}/renders/{render_id}', { params: { path: { id: props.installId, render_id: props.renderId } } })),
    [props.installId, props.renderId],
  );
  if (detail.error) return <ErrorNotice error={detail.error} title="The render could not be loaded." />;
  if (!detail.data) return <p aria-busy="true">Loading…</p>;
  return <pre class="json" tabIndex={0}>{JSON.stringify(detail.data.manifest, null, 2)}</pre>;
}

export function Renders(props: { installId: string; reloadKey: unknown }) {
  const [shown, setShown] = useState<string | null>(null);
  return (
    <>
      <ListView<Render>
        label="Renders"
        deps={[props.installId, props.reloadKey]}
        load={(cursor, limit) => ok(client.GET('/v1/installs/{id}/renders', { params: { path: { id: props.installId }, query: { cursor, limit } } }))}
        rowKey={(r) => r.id}
        columns={[
          { label: 'Render', cell: (r) => <Code>{short(r.id)}</Code> },
          { label: 'Version', cell: (r) => r.semver },
          { label: 'Status', cell: (r) => (r.current ? <span class="badge badge-good">Current</span> : r.replaced_at ? <>Replaced <Time at={r.replaced_at} /></> : <span class="muted">Never current</span>) },
          { label: 'Created', cell: (r) => <Time at={r.created_at} /> },
          {
            label: 'Manifest',
            cell: (r) => (
              <button type="button" aria-expanded={shown === r.id} onClick={() => setShown(shown === r.id ? null : r.id)}>
                {shown === r.id ? 'Hide' : 'Show'}
                <span class="visually-hidden"> the manifest of render {r.id}</span>
              </button>
            ),
          },
        ]}
        empty={<p class="muted">No render yet: the first appears once the install's operation renders it.</p>}
      />
      {shown && (
        <>
          <h3>
            Rendered manifest of <Code>{short(shown)}</Code>
          </h3>
          <RenderManifest installId={props.installId} renderId={shown} />
        </>
      )}
    </>
  );
}
