// The workspace's own settings: what it is called, and whether it requires two-factor sign-in of
// its members (PATCH /v1/workspaces/{id} with the etag read here). Only an owner changes the
// requirement, and only with two-factor sign-in on for their own account; the API refuses
// otherwise, and the page says so before anyone tries. On 409 (changed meanwhile) it reads the
// workspace again and the person applies the change again.
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useSession, useWorkspace } from '../../lib/session.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Fields, Code } from '../../components/Fields.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { CheckboxField, useAction } from '../../components/Form.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';

function TwoFactorRequirement(props: { required: boolean; etag: string; onSaved: () => Promise<void> }) {
  const ws = useWorkspace();
  const { me } = useSession();
  const [wanted, setWanted] = useState(props.required);
  const [saved, setSaved] = useState(false);
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    setSaved(false);
    const done = await action.run(() =>
      ok(client.PATCH('/v1/workspaces/{id}', { params: { path: { id: ws.id }, header: { 'if-match': props.etag } }, body: { require_two_factor: wanted } })),
    );
    if (done) setSaved(true);
    // A write that answered (or a 409) is followed by the current state.
    await props.onSaved();
  }

  const blocked = wanted && !props.required && !me.two_factor;
  return (
    <form class="form" onSubmit={submit} aria-labelledby="two-factor-requirement-title">
      <h3 id="two-factor-requirement-title" class="visually-hidden">Two-factor sign-in</h3>
      {saved && (
        <p role="status" class="notice notice-good">
          {props.required ? 'Members now need two-factor sign-in to work in this workspace.' : 'Two-factor sign-in is no longer required here.'}
        </p>
      )}
      <ErrorNotice error={action.error} title="The setting was not changed." />
      <CheckboxField
        label="Require two-factor sign-in of every member"
        checked={wanted}
        onValue={setWanted}
        hint="Members without it cannot open anything in this workspace until they turn it on for their account. Nobody is removed; API tokens keep working."
      />
      {blocked && (
        <p class="notice" role="status">
          Turn on two-factor sign-in for <a href="/account">your own account</a> first, so that the requirement does not shut you out.
        </p>
      )}
      <button class="primary" type="submit" disabled={action.busy || blocked || wanted === props.required}>
        Save
      </button>
    </form>
  );
}

export function WorkspaceSettings(_props: { path?: string }) {
  const ws = useWorkspace();
  const { refreshWorkspaces } = useSession();
  const current = useApi(() => ok(client.GET('/v1/workspaces/{id}', { params: { path: { id: ws.id } } })), [ws.id]);
  const w = current.data;
  return (
    <Page title="Workspace settings" subtitle={`How ${ws.name} is set up.`}>
      <ErrorNotice error={current.error} title="The workspace could not be read." />
      {w && (
        <>
          <Section title="Workspace">
            <Fields rows={[['Name', w.name], ['Slug', <Code>{w.slug}</Code>], ['Id', <Code>{w.id}</Code>]]} />
          </Section>
          <Section title="Two-factor sign-in">
            <p>
              {w.require_two_factor
                ? 'Required: every member signs in with a password and a code from an authenticator app.'
                : 'Not required: members choose for themselves.'}{' '}
              The members list shows who has it on.
            </p>
            <NeedsRole need="owner" what="change this">
              <TwoFactorRequirement
                required={w.require_two_factor}
                etag={w.etag}
                onSaved={async () => {
                  await current.reload();
                  await refreshWorkspaces();
                }}
              />
            </NeedsRole>
          </Section>
        </>
      )}
    </Page>
  );
}
