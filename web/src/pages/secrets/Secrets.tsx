// Secrets (API.md 8.1): the list (filtered by kind and state, as the API offers) and creating a
// secret with its first value. Values are written here and never read back: the list and the
// record carry metadata only. Creating needs the admin or owner role; members read metadata.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useWorkspace } from '../../lib/session.tsx';
import { ListView } from '../../components/ListView.tsx';
import { Page } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextArea, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { SecretValueField } from '../../components/SecretValueField.tsx';

export type Secret = Schemas['Secret'];
type Kind = Secret['kind'];

export const KINDS: [Kind, string][] = [
  ['generic', 'Generic'],
  ['api_key', 'API key'],
  ['oci_registry', 'OCI registry credentials'],
  ['webhook_signing', 'Webhook signing key'],
  ['kubeconfig', 'Kubeconfig'],
];

export function kindLabel(kind: string): string {
  return KINDS.find(([k]) => k === kind)?.[1] ?? kind;
}

/** Secret writes and reads of values need these roles; members may read metadata. */
export function canManageSecrets(role: string | undefined): boolean {
  return role === 'owner' || role === 'admin';
}

export const ADMIN_ONLY = 'Creating secrets, adding, revealing and changing versions need the admin or owner role; your role in this workspace is member.';

const STATES: [string, string][] = [
  ['', 'Active and deleted'],
  ['active', 'Active'],
  ['soft_deleted', 'Deleted (restorable)'],
];

export function SecretList(_props: { path?: string }) {
  const [kind, setKind] = useState('');
  const [state, setState] = useState('');
  const admin = canManageSecrets(useWorkspace().role);
  return (
    <Page
      title="Secrets"
      subtitle="Encrypted values that installs and snippets use: API keys, registry credentials, kubeconfigs. Values are never listed."
      actions={admin ? <a class="button primary" href="/secrets/new">New secret</a> : <span class="muted small">Creating secrets needs the admin or owner role.</span>}
    >
      <div class="filters">
        <SelectField label="Kind" value={kind} onValue={setKind} options={[['', 'Every kind'], ...KINDS]} />
        <SelectField label="State" value={state} onValue={setState} options={STATES} />
      </div>
      <ListView<Secret>
        label="Secrets"
        deps={[kind, state]}
        load={(cursor, limit) =>
          ok(client.GET('/v1/secrets', { params: { query: { cursor, limit, kind: (kind || undefined) as Kind | undefined, state: (state || undefined) as Secret['state'] | undefined } } }))
        }
        rowKey={(s) => s.id}
        columns={[
          { label: 'Name', cell: (s) => <a href={`/secrets/${s.id}`}>{s.name}</a> },
          { label: 'Kind', cell: (s) => kindLabel(s.kind) },
          { label: 'State', cell: (s) => <StateBadge state={s.state} /> },
          { label: 'Versions', cell: (s) => `${s.enabled_version_count} enabled of ${s.version_count}` },
          { label: 'Updated', cell: (s) => <Time at={s.updated_at} /> },
        ]}
        empty={
          kind || state ? (
            <p>No secret matches these filters.</p>
          ) : (
            <p>
              No secrets yet.{' '}
              {admin && (
                <>
                  <a href="/secrets/new">Create one</a> to keep a password or key out of your package values.
                </>
              )}
            </p>
          )
        }
      />
    </Page>
  );
}

export function NewSecret(_props: { path?: string }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('generic');
  const [description, setDescription] = useState('');
  const [value, setValue] = useState('');
  const [comment, setComment] = useState('');
  const action = useAction();
  const { route } = useLocation();
  const admin = canManageSecrets(useWorkspace().role);

  async function submit(e: Event) {
    e.preventDefault();
    const body = { name, kind, value, ...(description ? { description } : {}), ...(comment ? { comment } : {}) };
    const created = await action.run(() => ok(client.POST('/v1/secrets', { body })));
    if (!created) return;
    // The value leaves the page's memory before the secret's page opens.
    setValue('');
    route(`/secrets/${created.id}`);
  }

  const fields = ['body.name', 'body.kind', 'body.description', 'body.value', 'body.comment'];
  return (
    <Page title="New secret" breadcrumb={['Secrets', '/secrets']}>
      {!admin && (
        <p class="notice notice-warn" role="note">
          {ADMIN_ONLY}
        </p>
      )}
      <form class="card form" onSubmit={submit} autoComplete="off">
        <ErrorNotice error={action.error} shownFields={fields} title="The secret was not created." />
        <TextField label="Name" required maxLength={200} value={name} onValue={setName} hint="Unique in the workspace, e.g. registry-password." error={violationOf(action.error, 'body.name')} />
        <SelectField label="Kind" value={kind} onValue={(v) => setKind(v as Kind)} options={KINDS} hint="What the value is, for people and tools; the service treats every kind alike." error={violationOf(action.error, 'body.kind')} />
        <TextArea label="Description" rows={2} value={description} onValue={setDescription} hint="Optional, at most 500 characters." error={violationOf(action.error, 'body.description')} />
        <SecretValueField
          label="Value"
          required
          value={value}
          onValue={setValue}
          hint="Version 1, enabled. Stored encrypted, never shown in lists; reading it back is audited. For a multi-line value, show the field before pasting."
          error={violationOf(action.error, 'body.value')}
        />
        <TextField label="Comment on this version" maxLength={200} value={comment} onValue={setComment} hint="Optional, e.g. where the value came from." error={violationOf(action.error, 'body.comment')} />
        <button class="primary" type="submit" disabled={action.busy || !admin}>
          Create secret
        </button>
      </form>
    </Page>
  );
}
