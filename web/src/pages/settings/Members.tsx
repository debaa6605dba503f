// Members of the workspace: the list with each role, adding a person by e-mail (one without an
// account gets an invitation, whose link is shown once, to copy and hand over), the invitations with
// their state (a pending one can be revoked), changing a role and removing someone (each after a
// confirmation). Owners and admins manage members; only an owner may grant or touch the owner
// role; the API enforces both.
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useSession, useWorkspace } from '../../lib/session.tsx';
import { grantable, roleAtLeast, ROLE_WORDS, type Role } from '../../lib/roles.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';

type Member = Schemas['WorkspaceMember'];
type Invitation = Schemas['WorkspaceInvitation'];
const INVITATION_WORDS: Record<Invitation['state'], string> = { pending: 'Pending', accepted: 'Accepted', revoked: 'Revoked', expired: 'Expired' };
const ROLES: Role[] = ['member', 'admin', 'owner'];

function AddMember(props: { onAdded: (m: Member) => void; onInvited: (i: Invitation) => void }) {
  const ws = useWorkspace();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const action = useAction();
  async function submit(e: Event) {
    e.preventDefault();
    const added = await action.run(() => ok(client.POST('/v1/workspaces/{id}/members', { params: { path: { id: ws.id } }, body: { email: email.trim(), role } })));
    if (!added) return;
    setEmail('');
    // 202: the e-mail has no account, and an invitation was made instead
    if ('state' in added) props.onInvited(added);
    else props.onAdded(added);
  }
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNotice error={action.error} shownFields={['body.email', 'body.role']} title="The member was not added." />
      <TextField label="E-mail address" type="email" required autoComplete="off" value={email} onValue={setEmail}  hint="Someone without an account on this svc gets an invitation: a link to make it, valid 7 days." error={violationOf(action.error, 'body.email')} />
      <SelectField label="Role" value={role} onValue={(v) => setRole(v as Role)} options={grantable(ws.role, ROLES)} hint="Members use the workspace; admins also manage members, tokens and the plan; owners also manage owners." error={violationOf(action.error, 'body.role')} />
      <button class="primary" type="submit" disabled={action.busy}>
        Add or invite
      </button>
    </form>
  );
}

export function Members(_props: { path?: string }) {
  const ws = useWorkspace();
  const { me, refreshWorkspaces } = useSession();
  const [listKey, setListKey] = useState(0);
  const [added, setAdded] = useState<Member | undefined>(undefined);
  const [invited, setInvited] = useState<Invitation | undefined>(undefined);
  const [revoking, setRevoking] = useState<Invitation | undefined>(undefined);
  const [invitationsKey, setInvitationsKey] = useState(0);
  const [editing, setEditing] = useState<{ member: Member; role: Role } | undefined>(undefined);
  const [removing, setRemoving] = useState<Member | undefined>(undefined);
  const action = useAction();
  const mayManage = roleAtLeast(ws.role, 'admin');

  /** After a write: the list again, and the switcher's roles when the write was about the caller. */
  function changed(m: Member) {
    setListKey((k) => k + 1);
    if (m.user_id === me.id) void refreshWorkspaces();
  }
  async function changeRole() {
    const e = editing;
    setEditing(undefined);
    if (!e) return;
    const updated = await action.run(() => ok(client.PATCH('/v1/workspaces/{id}/members/{user_id}', { params: { path: { id: ws.id, user_id: e.member.user_id } }, body: { role: e.role } })));
    if (updated) changed(updated);
  }
  async function remove() {
    const m = removing;
    setRemoving(undefined);
    if (!m) return;
    const done = await action.run(async () => {
      await ok(client.DELETE('/v1/workspaces/{id}/members/{user_id}', { params: { path: { id: ws.id, user_id: m.user_id } } }));
      return true;
    });
    if (done) changed(m);
  }

  async function revoke() {
    const i = revoking;
    setRevoking(undefined);
    if (!i) return;
    const done = await action.run(async () => {
      await ok(client.DELETE('/v1/workspaces/{id}/invitations/{invitation_id}', { params: { path: { id: ws.id, invitation_id: i.id } } }));
      return true;
    });
    if (done) {
      if (invited?.id === i.id) setInvited(undefined);
      setInvitationsKey((k) => k + 1);
    }
  }

  return (
    <Page title="Members" subtitle={`The people of ${ws.name} and their roles.`}>
      <ErrorNotice error={action.error} title="The change was not made." />
      <Section title="People">
        <ListView<Member>
          label="Members"
          deps={[ws.id, listKey]}
          load={(cursor, limit) => ok(client.GET('/v1/workspaces/{id}/members', { params: { path: { id: ws.id }, query: { cursor, limit } } }))}
          rowKey={(m) => m.id}
          columns={[
            { label: 'Member', cell: (m) => <>{m.email}{m.user_id === me.id && <span class="muted"> (you)</span>}</> },
            { label: 'Role', cell: (m) => ROLE_WORDS[m.role] },
            { label: 'Joined', cell: (m) => <Time at={m.joined_at} /> },
            // owners and admins see who has two-factor sign-in on (the API says it to them only)
            ...(mayManage ? [{ label: 'Two factors', cell: (m: Member) => (m.two_factor === undefined ? '—' : m.two_factor ? 'On' : 'Off') }] : []),
            {
              label: 'Actions',
              cell: (m) =>
                !mayManage ? (
                  <span class="muted">—</span>
                ) : m.role === 'owner' && ws.role !== 'owner' ? (
                  <span class="muted">Only an owner can change an owner</span>
                ) : (
                  <span class="actions">
                    <button type="button" disabled={action.busy} onClick={() => setEditing({ member: m, role: m.role })}>
                      Change role<span class="visually-hidden"> of {m.email}</span>
                    </button>
                    <button type="button" class="danger" disabled={action.busy} onClick={() => setRemoving(m)}>
                      Remove<span class="visually-hidden"> {m.email}</span>
                    </button>
                  </span>
                ),
            },
          ]}
          empty={<p>No members.</p>}
        />
      </Section>
      <Section title="Add a member">
        <NeedsRole need="admin" what="add members">
          {added && (
            <p class="notice notice-good" role="status">
              {added.email} is now {added.role === 'admin' ? 'an' : 'a'} {ROLE_WORDS[added.role].toLowerCase()} of {ws.name}.
            </p>
          )}
          {invited?.accept_url && (
            <CopyValue label="Invitation link" value={invited.accept_url} once onHide={() => setInvited(undefined)}>
              <p>
                {invited.email} has no account here yet: they are invited as {invited.role === 'admin' ? 'an' : 'a'} {ROLE_WORDS[invited.role].toLowerCase()}. This link
                was e-mailed to them; you may also hand it over yourself. It works once, for 7 days.
              </p>
            </CopyValue>
          )}
          <AddMember
            onAdded={(m) => {
              setInvited(undefined);
              setAdded(m);
              changed(m);
            }}
            onInvited={(i) => {
              setAdded(undefined);
              setInvited(i);
              setInvitationsKey((k) => k + 1);
            }}
          />
        </NeedsRole>
      </Section>
      {mayManage && (
        <Section title="Invitations">
          <ListView<Invitation>
            label="Invitations"
            deps={[ws.id, invitationsKey]}
            load={(cursor, limit) => ok(client.GET('/v1/workspaces/{id}/invitations', { params: { path: { id: ws.id }, query: { cursor, limit } } }))}
            rowKey={(i) => i.id}
            columns={[
              { label: 'Invited', cell: (i) => i.email },
              { label: 'Role', cell: (i) => ROLE_WORDS[i.role] },
              { label: 'State', cell: (i) => INVITATION_WORDS[i.state] },
              { label: 'Link works until', cell: (i) => (i.state === 'pending' ? <Time at={i.expires_at} until /> : '—') },
              {
                label: 'Actions',
                cell: (i) =>
                  i.state === 'pending' ? (
                    <button type="button" class="danger" disabled={action.busy} onClick={() => setRevoking(i)}>
                      Revoke<span class="visually-hidden"> the invitation of {i.email}</span>
                    </button>
                  ) : (
                    <span class="muted">—</span>
                  ),
              },
            ]}
            empty={<p class="muted">No invitations yet.</p>}
          />
        </Section>
      )}
      <Confirm open={editing !== undefined} title={`Change the role of ${editing?.member.email ?? ''}`} confirmLabel="Change role" onConfirm={changeRole} onCancel={() => setEditing(undefined)}>
        {editing && <SelectField label="New role" value={editing.role} onValue={(v) => setEditing({ ...editing, role: v as Role })} options={grantable(ws.role, ROLES)} />}
      </Confirm>
      <Confirm open={revoking !== undefined} title={`Revoke the invitation of ${revoking?.email ?? ''}?`} confirmLabel="Revoke invitation" danger onConfirm={revoke} onCancel={() => setRevoking(undefined)}>
        <p>Its link stops working at once. You can invite them again.</p>
      </Confirm>
      <Confirm open={removing !== undefined} title={`Remove ${removing?.email ?? ''} from ${ws.name}?`} confirmLabel="Remove member" danger onConfirm={remove} onCancel={() => setRemoving(undefined)}>
        <p>They lose access to everything in this workspace at once. Their account stays.</p>
      </Confirm>
    </Page>
  );
}
