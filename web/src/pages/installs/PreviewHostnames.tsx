// An install's preview hostnames: the list (each URL a link that opens in a new tab), binding one
// (floating: follows a track, rebinding moves it; pinned: one render for good) and releasing one
// (confirm, if-match). Each bind or release is an operation followed live here.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { ListView } from '../../components/ListView.tsx';
import { Time } from '../../components/Time.tsx';
import { Code } from '../../components/Fields.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { OperationLive } from '../../components/OperationLive.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict } from '../../components/Conflict.tsx';
import { UrlLink } from './Installs.tsx';
import { short } from './Renders.tsx';

type Hostname = Schemas['PreviewHostname'];
type Operation = Schemas['Operation'];

function BindForm(props: { installId: string; currentRenderId: string | null; reloadKey: unknown; onStarted: (op: Operation) => void }) {
  const renders = useApi(() => ok(client.GET('/v1/installs/{id}/renders', { params: { path: { id: props.installId }, query: { limit: 100 } } })), [props.installId, props.reloadKey]);
  const [kind, setKind] = useState<'floating' | 'pinned'>('floating');
  const [track, setTrack] = useState('main');
  const [renderId, setRenderId] = useState('');
  const action = useAction();
  const chosen = renderId || props.currentRenderId || '';

  async function submit(e: Event) {
    e.preventDefault();
    const path = { id: props.installId };
    const started = await action.run(() =>
      kind === 'floating'
        ? ok(client.POST('/v1/installs/{id}/preview_hostnames:bindFloating', { params: { path, header: { 'idempotency-key': idempotencyKey() } }, body: { track, render_id: chosen } }))
        : ok(client.POST('/v1/installs/{id}/preview_hostnames:bindPinned', { params: { path }, body: track ? { render_id: chosen, track } : { render_id: chosen } })),
    );
    if (started) props.onStarted(started);
  }

  const options = (renders.data?.data ?? []).map((r) => [r.id, `${short(r.id)} · ${r.semver}${r.current ? ' (current)' : ''}`] as [string, string]);
  if (options.length === 0) return <p class="muted">A hostname serves a render: this install has none deployed yet.</p>;
  return (
    <form class="form" onSubmit={submit}>
      <h3>Bind a hostname</h3>
      <ErrorNotice error={action.error} shownFields={['body.track', 'body.render_id']} title="The hostname was not bound." />
      <SelectField
        label="Kind"
        value={kind}
        onValue={(v) => setKind(v as 'floating' | 'pinned')}
        options={[['floating', 'Floating: follows a track; binding the track again moves it'], ['pinned', 'Pinned: serves this one render']]}
      />
      <TextField label="Track" required={kind === 'floating'} maxLength={100} value={track} onValue={setTrack} hint={kind === 'floating' ? 'e.g. main or a branch name.' : 'A name for the pinned hostname; "pinned" when empty.'} error={violationOf(action.error, 'body.track')} />
      <SelectField label="Render" value={chosen} onValue={setRenderId} options={options} error={violationOf(action.error, 'body.render_id')} />
      <button type="submit" class="primary" disabled={action.busy}>
        Bind hostname
      </button>
    </form>
  );
}

export function PreviewHostnames(props: { installId: string; currentRenderId: string | null }) {
  const [op, setOp] = useState<Operation | undefined>(undefined);
  const [reloadKey, setReloadKey] = useState(0);
  /** The hostname the confirmation asks about, and the one last asked to release (for "apply again"). */
  const [asking, setAsking] = useState<Hostname | undefined>(undefined);
  const [target, setTarget] = useState<Hostname | undefined>(undefined);
  const release = useAction();
  const reload = () => setReloadKey((k) => k + 1);

  async function releaseHostname(h: Hostname) {
    setAsking(undefined);
    setTarget(h);
    const path = { id: props.installId, hostname_id: h.id };
    const started = await release.run(() => ok(client.DELETE('/v1/installs/{id}/preview_hostnames/{hostname_id}', { params: { path, header: { 'if-match': h.etag } } })));
    if (started) setOp(started);
  }
  // A 409 names the hostname's current etag: applying again releases it as it is now.
  const current = release.error?.body.metadata?.etag;
  const reapply = () => target && current !== undefined && void releaseHostname({ ...target, etag: String(current) });

  return (
    <>
      <Conflict error={release.error} what="The hostname" onReload={reload} onReapply={reapply} busy={release.busy} />
      {release.error?.reason !== 'ETAG_MISMATCH' && <ErrorNotice error={release.error} title="The hostname was not released." />}
      {op && <OperationLive key={op.id} id={op.id} initial={op} title={(op.metadata as { type: string }).type === 'preview_hostname.release' ? 'Release' : 'Binding'} onDone={reload} />}
      <ListView<Hostname>
        label="Preview hostnames"
        deps={[props.installId, reloadKey]}
        load={(cursor, limit) => ok(client.GET('/v1/installs/{id}/preview_hostnames', { params: { path: { id: props.installId }, query: { cursor, limit } } }))}
        rowKey={(h) => h.id}
        columns={[
          { label: 'Hostname', cell: (h) => (h.state === 'active' ? <UrlLink url={h.url}>{h.hostname}</UrlLink> : h.hostname) },
          { label: 'Binding', cell: (h) => `${h.binding.kind === 'floating' ? 'Floating' : 'Pinned'} · ${h.binding.track}` },
          { label: 'Render', cell: (h) => <Code>{short(h.pending_render_id ?? h.binding.render_id)}</Code> },
          { label: 'State', cell: (h) => <StateBadge state={h.state} /> },
          { label: 'Last served', cell: (h) => <Time at={h.last_seen_at} /> },
          {
            label: 'Actions',
            cell: (h) => (
              <button type="button" class="danger" disabled={h.state === 'releasing' || release.busy} onClick={() => setAsking(h)}>
                Release<span class="visually-hidden"> {h.hostname}</span>
              </button>
            ),
          },
        ]}
        empty={<p class="muted">No preview hostnames. Bind one to give a render an address of its own.</p>}
      />
      <BindForm installId={props.installId} currentRenderId={props.currentRenderId} reloadKey={reloadKey} onStarted={(started) => setOp(started)} />
      <Confirm open={asking !== undefined} title={`Release ${asking?.hostname ?? 'the hostname'}?`} confirmLabel="Release hostname" danger onConfirm={() => asking && void releaseHostname(asking)} onCancel={() => setAsking(undefined)}>
        <p>It stops being served at once and is gone when its operation ends.</p>
      </Confirm>
    </>
  );
}
