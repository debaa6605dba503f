// API tokens of the workspace: the list (name, prefix, role, last used, expiry), creating one (its
// value shown once, copyable), and revoking one after a confirmation. Owners and admins create
// and revoke; any member sees the list. The token value is never listed by the API.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useWorkspace } from '../../lib/session.tsx';
import { grantable, roleAtLeast, ROLE_WORDS } from '../../lib/roles.ts';
import { EXPIRY_CHOICES } from '../../lib/expiry.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { Code } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { ExpiryFields, useExpiry } from '../../components/ExpiryFields.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { RemovableList } from '../../components/RemovableList.tsx';

type ApiToken = Schemas['ApiToken'];
type Created = Schemas['CreatedApiToken'];
type TokenRole = ApiToken['role'];

function CreateToken(props: { onCreated: (t: Created) => void }) {
  const ws = useWorkspace();
  const [name, setName] = useState('');
  const [role, setRole] = useState<TokenRole>('member');
  const expiry = useExpiry('90');
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const at = expiry.read();
    if (!at) return;
    const body = at.value === undefined ? { name, role } : { name, role, expires_at: at.value };
    const created = await action.run(() => ok(client.POST('/v1/api_tokens', { body })));
    if (!created) return;
    setName('');
    props.onCreated(created);
  }

  return (
    <form class="form" onSubmit={submit}>
      <ErrorNotice error={action.error} shownFields={['body.name', 'body.expires_at']} title="The token was not created." />
      <TextField label="Name" required maxLength={100} value={name} onValue={setName} hint="What uses it, e.g. ci or deploy-bot." error={violationOf(action.error, 'body.name')} />
      <SelectField label="Role" value={role} onValue={(v) => setRole(v as TokenRole)} options={grantable(ws.role, ['member', 'admin'] as const)} hint="What the token may do, as a member with that role; never above yours." />
      <ExpiryFields choices={EXPIRY_CHOICES} {...expiry.fields} dateLabel="Expiry date" dateHint="In your time zone; at most 10 years ahead." error={violationOf(action.error, 'body.expires_at')} />
      <button class="primary" type="submit" disabled={action.busy}>
        Create token
      </button>
    </form>
  );
}

export function Tokens(_props: { path?: string }) {
  const ws = useWorkspace();
  const [created, setCreated] = useState<Created | undefined>(undefined);
  return (
    <Page title="API tokens" subtitle={<>Tokens let scripts, CI and the CLI act on {ws.name}: send one as <code>Authorization: Bearer sk_svc_…</code>.</>}>
      <Section title="Create a token">
        <NeedsRole need="admin" what="create and revoke API tokens">
          {created && (
            <>
              <CopyValue label={`The token ${created.name}`} value={created.token} once />
              <p class="muted">
                It acts as a {ROLE_WORDS[created.role].toLowerCase()} of {ws.name}
                {created.expires_at ? <> until <Time at={created.expires_at} until /></> : ' and does not expire'}.
              </p>
            </>
          )}
          <CreateToken onCreated={setCreated} />
        </NeedsRole>
      </Section>
      <Section title="Tokens">
        <RemovableList<ApiToken>
          label="API tokens"
          reloadKey={`${ws.id}:${created?.id ?? ''}`}
          load={(cursor, limit) => ok(client.GET('/v1/api_tokens', { params: { query: { cursor, limit } } }))}
          rowKey={(t) => t.id}
          nameOf={(t) => t.name}
          columns={[
            { label: 'Name', cell: (t) => t.name },
            { label: 'Prefix', cell: (t) => <Code>{t.prefix}…</Code> },
            { label: 'Role', cell: (t) => ROLE_WORDS[t.role] },
            { label: 'Last used', cell: (t) => <Time at={t.last_used_at} empty="Never" /> },
            { label: 'Expires', cell: (t) => <Time at={t.expires_at} empty="Never" /> },
            { label: 'Created', cell: (t) => <Time at={t.created_at} /> },
          ]}
          empty={<p>No API tokens yet.</p>}
          mayRemove={roleAtLeast(ws.role, 'admin')}
          verb="Revoke"
          noun="token"
          consequence={<p>Anything using it is refused from now on, on every server. This cannot be undone.</p>}
          remove={async (t) => {
            await ok(client.DELETE('/v1/api_tokens/{id}', { params: { path: { id: t.id } } }));
            if (created?.id === t.id) setCreated(undefined);
          }}
        />
      </Section>
    </Page>
  );
}
