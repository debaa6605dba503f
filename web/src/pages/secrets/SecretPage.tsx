// A secret's page: its metadata, its versions (SecretVersions: add, reveal, disable, enable,
// destroy) and the secret's own lifecycle as the API has it: delete (soft, restorable until
// purge_at), restore, and destroy for good (every version crypto-shredded, then removed). Every
// write sends the etag last read; a 409 reloads the secret and offers to apply the change again.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { useWorkspace } from '../../lib/session.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { ADMIN_ONLY, canManageSecrets, kindLabel, type Secret } from './Secrets.tsx';
import { SecretVersions } from './SecretVersions.tsx';

type SecretAction = 'delete' | 'undelete' | 'purge';

const CONFIRM: Record<'delete' | 'purge', { title: (name: string) => string; label: string; body: string }> = {
  delete: {
    title: (name) => `Delete the secret ${name}?`,
    label: 'Delete secret',
    body: 'Its values can no longer be read, and installs that reference it stop deploying. You can restore it until it is purged; after that it is destroyed for good.',
  },
  purge: {
    title: (name) => `Destroy the secret ${name} now?`,
    label: 'Destroy for good',
    body: 'Every version is destroyed at once and the secret is removed. This cannot be undone.',
  },
};

function entries(map: Record<string, string | number>, render: (k: string, v: string | number) => string): string | null {
  const list = Object.entries(map);
  return list.length ? list.map(([k, v]) => render(k, v)).join(', ') : null;
}

export function SecretPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const secret = useRecord(id, () => ok(client.GET('/v1/secrets/{id}', { params: { path: { id } } })));
  const admin = canManageSecrets(useWorkspace().role);
  const action = useAction();
  const [last, setLast] = useState<SecretAction | null>(null);
  const [confirming, setConfirming] = useState<'delete' | 'purge' | null>(null);
  const { route } = useLocation();

  if (secret.error) {
    return (
      <Page title="Secret" breadcrumb={['Secrets', '/secrets']}>
        <ErrorNotice error={secret.error} title="The secret could not be loaded." />
      </Page>
    );
  }
  const s = secret.data;
  if (!s) return <p aria-busy="true">Loading…</p>;

  async function apply(what: SecretAction, current: Secret) {
    setConfirming(null);
    setLast(what);
    const params = { path: { id: current.id }, header: { 'if-match': current.etag } };
    if (what === 'purge') {
      const done = await action.run(() => ok(client.DELETE('/v1/secrets/{id}', { params: { ...params, query: { force: true } } })).then(() => true));
      if (done) route('/secrets');
      return;
    }
    const next = await action.run(() => (what === 'delete' ? ok(client.DELETE('/v1/secrets/{id}', { params })) : ok(client.POST('/v1/secrets/{id}:undelete', { params }))));
    if (next) secret.set(next as Secret);
  }

  const deleted = s.state === 'soft_deleted';
  const dialog = confirming ? CONFIRM[confirming] : null;
  return (
    <Page
      title={s.name}
      subtitle={
        <>
          Secret · {kindLabel(s.kind)} · <StateBadge state={s.state} />
        </>
      }
      breadcrumb={['Secrets', '/secrets']}
      actions={
        deleted ? (
          <>
            <button type="button" class="primary" disabled={!admin || action.busy} onClick={() => void apply('undelete', s)}>
              Restore
            </button>
            <button type="button" class="danger" disabled={!admin || action.busy} onClick={() => setConfirming('purge')}>
              Destroy now
            </button>
          </>
        ) : (
          <button type="button" class="danger" disabled={!admin || action.busy} onClick={() => setConfirming('delete')}>
            Delete
          </button>
        )
      }
    >
      {!admin && (
        <p class="notice notice-warn" role="note">
          {ADMIN_ONLY}
        </p>
      )}
      {deleted && (
        <div class="notice notice-warn" role="status">
          <p>
            <strong>Deleted <Time at={s.deleted_at} />.</strong> Its values cannot be read or changed. It is destroyed for good <Time at={s.purge_at} /> unless it is restored before.
          </p>
        </div>
      )}
      <Conflict error={action.error} what="The secret" onReload={secret.reload} onReapply={() => last && void apply(last, s)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} />}
      <Section title="Details">
        <Fields
          rows={[
            ['Name', s.name],
            ['ID', <Code>{s.id}</Code>],
            ['Kind', kindLabel(s.kind)],
            ['Description', s.description],
            ['Labels', entries(s.labels, (k, v) => `${k}=${v}`)],
            ['State', <StateBadge state={s.state} />],
            ['Versions', `${s.enabled_version_count} enabled of ${s.version_count}`],
            ['Aliases', entries(s.version_aliases, (k, v) => `${k} → version ${v}`)],
            ['Created', <Time at={s.created_at} />],
            ['Updated', <Time at={s.updated_at} />],
            ['Deleted', deleted ? <Time at={s.deleted_at} /> : undefined],
            ['Destroyed for good', deleted ? <Time at={s.purge_at} /> : undefined],
          ]}
        />
      </Section>
      <SecretVersions key={s.id} secret={s} admin={admin} onChanged={secret.reload} />
      <Confirm open={dialog !== null} title={dialog?.title(s.name) ?? ''} confirmLabel={dialog?.label ?? ''} danger onConfirm={() => confirming && void apply(confirming, s)} onCancel={() => setConfirming(null)}>
        <p>{dialog?.body}</p>
      </Confirm>
    </Page>
  );
}
