// The instance's accounts, for its instance admins (/users): each with its state, admin role and
// the workspaces it owns; disable and enable, the admin role, a one-time password reset link to hand
// over, and deletion (refused by the API while the account owns a workspace), each after a
// confirmation. Below, the mail outbox: what the service e-mailed (with the local driver, the
// messages themselves). The API decides who is an instance admin on every request.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useSession } from '../../lib/session.tsx';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';

type AdminUser = Schemas['AdminUser'];
type Mail = Schemas['MailMessage'];
type Verb = 'disable' | 'enable' | 'grantAdmin' | 'revokeAdmin' | 'resetPassword' | 'delete';

const ASK: Record<Verb, { title: (u: AdminUser) => string; label: string; danger?: boolean; text: string }> = {
  disable: { title: (u) => `Disable ${u.email}?`, label: 'Disable', danger: true, text: 'They are signed out everywhere at once, and the API tokens they created stop working until you enable the account again. Their data and memberships stay.' },
  enable: { title: (u) => `Enable ${u.email}?`, label: 'Enable', text: 'They can sign in again, and the API tokens they created work again.' },
  grantAdmin: { title: (u) => `Make ${u.email} an instance admin?`, label: 'Make admin', text: 'They will see this page and may disable, enable and delete any account.' },
  revokeAdmin: { title: (u) => `Take the admin role from ${u.email}?`, label: 'Take role', danger: true, text: 'They no longer see this page. Their account stays as it is.' },
  resetPassword: { title: (u) => `Make a password reset link for ${u.email}?`, label: 'Make link', text: 'You get a link to hand over by a channel you trust; it works once, for 30 minutes. Nothing is e-mailed, and the current password works until the link is used.' },
  delete: { title: (u) => `Delete ${u.email}?`, label: 'Delete account', danger: true, text: 'The account goes with its sessions, memberships, notifications and the API tokens it created. This cannot be undone.' },
};

const MAIL_STATE: Record<Mail['state'], string> = { queued: 'Queued', sent: 'Sent', failed: 'Failed' };

function Outbox() {
  return (
    <ListView<Mail>
      label="Mail outbox"
      load={(cursor, limit) => ok(client.GET('/v1/admin/mail_messages', { params: { query: { cursor, limit } } }))}
      rowKey={(m) => m.id}
      columns={[
        { label: 'When', cell: (m) => <Time at={m.created_at} /> },
        { label: 'To', cell: (m) => m.to },
        {
          label: 'Message',
          cell: (m) =>
            m.body === null ? (
              m.subject
            ) : (
              <details>
                <summary>{m.subject}</summary>
                <pre class="mail-body">{m.body}</pre>
              </details>
            ),
        },
        { label: 'State', cell: (m) => <>{MAIL_STATE[m.state]}{m.last_error && <span class="muted small"> — {m.last_error}</span>}</> },
      ]}
      empty={<p class="muted">Nothing was e-mailed yet.</p>}
    />
  );
}

export function Users(_props: { path?: string }) {
  const { me } = useSession();
  const [listKey, setListKey] = useState(0);
  const [asking, setAsking] = useState<{ verb: Verb; user: AdminUser } | undefined>(undefined);
  const [link, setLink] = useState<Schemas['PasswordResetLink'] | undefined>(undefined);
  const [said, setSaid] = useState<string | undefined>(undefined);
  const action = useAction();

  if (!me.instance_admin) {
    return (
      <Page title="Users" subtitle="The accounts of this service.">
        <p>Only the instance&apos;s admins see this page. The operator makes admins with <code>svc admin users grant-admin</code>.</p>
      </Page>
    );
  }

  async function run() {
    const a = asking;
    setAsking(undefined);
    if (!a) return;
    setSaid(undefined);
    setLink(undefined);
    const path = { params: { path: { user_id: a.user.id } } };
    const done = await action.run(async () => {
      switch (a.verb) {
        case 'delete':
          await ok(client.DELETE('/v1/admin/users/{user_id}', path));
          return `${a.user.email} was deleted.`;
        case 'resetPassword':
          setLink(await ok(client.POST('/v1/admin/users/{user_id}:resetPassword', path)));
          return '';
        case 'disable':
          await ok(client.POST('/v1/admin/users/{user_id}:disable', path));
          return `${a.user.email} is disabled and signed out everywhere.`;
        case 'enable':
          await ok(client.POST('/v1/admin/users/{user_id}:enable', path));
          return `${a.user.email} is enabled.`;
        case 'grantAdmin':
          await ok(client.POST('/v1/admin/users/{user_id}:grantAdmin', path));
          return `${a.user.email} is an instance admin.`;
        case 'revokeAdmin':
          await ok(client.POST('/v1/admin/users/{user_id}:revokeAdmin', path));
          return `${a.user.email} is no longer an instance admin.`;
      }
    });
    if (done !== undefined) {
      if (done) setSaid(done);
      setListKey((k) => k + 1);
    }
  }

  const button = (verb: Verb, user: AdminUser, label: string) => (
    <button type="button" class={ASK[verb].danger ? 'danger' : undefined} disabled={action.busy} onClick={() => setAsking({ verb, user })}>
      {label}
      <span class="visually-hidden"> {user.email}</span>
    </button>
  );

  return (
    <Page title="Users" subtitle="Every account of this service. You see this page as an instance admin.">
      <ErrorNotice error={action.error} title="The change was not made." />
      {said && (
        <p class="notice notice-good" role="status">
          {said}
        </p>
      )}
      {link && (
        <CopyValue label="Password reset link" value={link.url} once onHide={() => setLink(undefined)}>
          <p>
            Give this link to {link.email} by a channel you trust. It works once, and expires <Time at={link.expires_at} />.
          </p>
        </CopyValue>
      )}
      <Section title="Accounts">
        <ListView<AdminUser>
          label="Accounts"
          deps={[listKey]}
          load={(cursor, limit) => ok(client.GET('/v1/admin/users', { params: { query: { cursor, limit } } }))}
          rowKey={(u) => u.id}
          columns={[
            { label: 'Account', cell: (u) => <>{u.email}{u.name && <span class="muted"> ({u.name})</span>}{u.id === me.id && <span class="muted"> (you)</span>}</> },
            {
              label: 'State',
              cell: (u) => (
                <>
                  {u.disabled_at === null ? 'Active' : <>Disabled since <Time at={u.disabled_at} /></>}
                  {u.admin_source && <span class="muted small"><br />Instance admin{u.admin_source === 'config' ? ' (SVC_ADMIN_EMAILS)' : ''}</span>}
                </>
              ),
            },
            { label: 'Owner of', cell: (u) => (u.owned_workspaces.length ? u.owned_workspaces.map((w) => w.name).join(', ') : '—') },
            { label: 'Account since', cell: (u) => <Time at={u.created_at} /> },
            {
              label: 'Actions',
              cell: (u) =>
                u.id === me.id ? (
                  <span class="muted">Yours: ask another admin</span>
                ) : (
                  <span class="actions">
                    {u.disabled_at === null ? button('disable', u, 'Disable') : button('enable', u, 'Enable')}
                    {u.admin_source === null ? button('grantAdmin', u, 'Make admin') : u.admin_source === 'granted' ? button('revokeAdmin', u, 'Take admin role') : null}
                    {button('resetPassword', u, 'Reset link')}
                    {button('delete', u, 'Delete')}
                  </span>
                ),
            },
          ]}
          empty={<p>No accounts.</p>}
        />
      </Section>
      <Section title="Mail outbox">
        <p class="muted">What this service e-mailed, newest first. With the local mail driver (the default) the messages stay here and nothing leaves the machine.</p>
        <Outbox />
      </Section>
      <Confirm
        open={asking !== undefined}
        title={asking ? ASK[asking.verb].title(asking.user) : ''}
        confirmLabel={asking ? ASK[asking.verb].label : ''}
        danger={asking ? ASK[asking.verb].danger : false}
        onConfirm={() => void run()}
        onCancel={() => setAsking(undefined)}
      >
        {asking && <p>{ASK[asking.verb].text}</p>}
      </Confirm>
    </Page>
  );
}
