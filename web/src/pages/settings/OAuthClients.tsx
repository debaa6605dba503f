// OAuth clients of the workspace (client-credentials grant): the list, registering one (its secret
// shown once, copyable, with how to exchange it for a token), and deleting one after a
// confirmation. Owners and admins register and delete; any member sees the list.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useWorkspace } from '../../lib/session.tsx';
import { grantable, roleAtLeast, ROLE_WORDS } from '../../lib/roles.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { Code } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { RemovableList } from '../../components/RemovableList.tsx';

type OAuthClient = Schemas['OAuthClient'];
type Created = Schemas['CreatedOAuthClient'];
type ClientRole = OAuthClient['role'];

function CreateClient(props: { onCreated: (c: Created) => void }) {
  const ws = useWorkspace();
  const [name, setName] = useState('');
  const [role, setRole] = useState<ClientRole>('member');
  const action = useAction();
  async function submit(e: Event) {
    e.preventDefault();
    const created = await action.run(() => ok(client.POST('/v1/oauth_clients', { body: { name, role } })));
    if (!created) return;
    setName('');
    props.onCreated(created);
  }
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNotice error={action.error} shownFields={['body.name']} title="The client was not registered." />
      <TextField label="Name" required maxLength={100} value={name} onValue={setName} hint="What uses it, e.g. deployer." error={violationOf(action.error, 'body.name')} />
      <SelectField label="Role" value={role} onValue={(v) => setRole(v as ClientRole)} options={grantable(ws.role, ['member', 'admin'] as const)} hint="What its tokens may do; never above your role." />
      <button class="primary" type="submit" disabled={action.busy}>
        Register client
      </button>
    </form>
  );
}

export function OAuthClients(_props: { path?: string }) {
  const ws = useWorkspace();
  const [created, setCreated] = useState<Created | undefined>(undefined);
  return (
    <Page title="OAuth clients" subtitle={<>Services that exchange a client ID and secret at <code>POST /oauth/token</code> (client credentials) for a one-hour token acting on {ws.name}.</>}>
      <Section title="Register a client">
        <NeedsRole need="admin" what="register and delete OAuth clients">
          {created && (
            <>
              <CopyValue label={`Client ID of ${created.name}`} value={created.client_id} />
              <CopyValue label={`Client secret of ${created.name}`} value={created.client_secret} once />
            </>
          )}
          <CreateClient onCreated={setCreated} />
        </NeedsRole>
      </Section>
      <Section title="Clients">
        <RemovableList<OAuthClient>
          label="OAuth clients"
          reloadKey={`${ws.id}:${created?.id ?? ''}`}
          load={(cursor, limit) => ok(client.GET('/v1/oauth_clients', { params: { query: { cursor, limit } } }))}
          rowKey={(c) => c.id}
          nameOf={(c) => c.name}
          columns={[
            { label: 'Name', cell: (c) => c.name },
            { label: 'Client ID', cell: (c) => <Code>{c.client_id}</Code> },
            { label: 'Role', cell: (c) => ROLE_WORDS[c.role] },
            { label: 'Last token', cell: (c) => <Time at={c.last_used_at} empty="Never" /> },
            { label: 'Created', cell: (c) => <Time at={c.created_at} /> },
          ]}
          empty={<p>No OAuth clients yet.</p>}
          mayRemove={roleAtLeast(ws.role, 'admin')}
          verb="Delete"
          noun="client"
          consequence={<p>Its secret and every token issued to it stop working at once. This cannot be undone.</p>}
          remove={async (c) => {
            await ok(client.DELETE('/v1/oauth_clients/{id}', { params: { path: { id: c.id } } }));
            if (created?.id === c.id) setCreated(undefined);
          }}
        />
      </Section>
    </Page>
  );
}
