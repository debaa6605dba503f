// Members of the workspace: the list with each role, adding a person who has an account (by
// e-mail), changing a role and removing someone (each after a confirmation). Owners and admins
// manage members; only an owner may grant or touch the owner role; the API enforces both.
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

type Member = Schemas['WorkspaceMember'];
const ROLES: Role[] = ['member', 'admin', 'owner'];

function AddMember(props: { onAdded: (m: Member) => void }) {
  const ws = useWorkspace();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const action = useAction();
  async function submit(e: Event) {
    e.preventDefault();
    const added = await action.run(() => ok(client.POST('/v1/workspaces/{id}/members', { params: { path: { id: ws.id } }, body: { email: email.trim(), role } })));
    if (!added) return;
    setEmail('');
    props.onAdded(added);
  }
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNotice error={action.error} shownFields={['body.email', 'body.role']} title="The member was not added." />
      <TextField label="E-mail address" type="email" required autoComplete="off" value={email} onValue={setEmail} hint="The person needs an account on this svc already (an operator creates it with svc admin create-user)." error={violationOf(action.error, 'body.email')} />
      <SelectField label="Role" value={role} onValue={(v) => setRole(v as Role)} options={grantable(ws.role, ROLES)} hint="Members use the workspace; admins also manage members, tokens and the plan; owners also manage owners." error={violationOf(action.error, 'body.role')} />
      <button class="primary" type="submit" disabled={action.busy}>
        Add member
      </button>
    </form>
  );
}

export function Members(_props: { path?: string }) {
  const ws = useWorkspace();
  const { me, refreshWorkspaces } = useSession();
  const [listKey, setListKey] = useState(0);
  const [added, setAdded] = useState<Member | undefined>(undefined);
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
          <AddMember
            onAdded={(m) => {
              setAdded(m);
              changed(m);
            }}
          />
        </NeedsRole>
      </Section>
      <Confirm open={editing !== undefined} title={`Change the role of ${editing?.member.email ?? ''}`} confirmLabel="Change role" onConfirm={changeRole} onCancel={() => setEditing(undefined)}>
        {editing && <SelectField label="New role" value={editing.role} onValue={(v) => setEditing({ ...editing, role: v as Role })} options={grantable(ws.role, ROLES)} />}
      </Confirm>
      <Confirm open={removing !== undefined} title={`Remove ${removing?.email ?? ''} from ${ws.name}?`} confirmLabel="Remove member" danger onConfirm={remove} onCancel={() => setRemoving(undefined)}>
        <p>They lose access to everything in this workspace at once. Their account stays.</p>
      </Confirm>
    </Page>
  );
}
