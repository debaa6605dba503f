// Creating a workspace: its name (the slug is made from it by the API), then the app switches to it.
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { useSession } from '../../lib/session.tsx';
import { TextField, useAction, violationOf } from '../../components/Form.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { Page } from '../../components/Page.tsx';

export function NewWorkspace(_props: { path?: string }) {
  const { refreshWorkspaces, switchTo, workspaces } = useSession();
  const { route } = useLocation();
  const [name, setName] = useState('');
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const ws = await action.run(() => ok(client.POST('/v1/workspaces', { body: { name } })));
    if (!ws) return;
    await refreshWorkspaces();
    switchTo(ws.id);
    route('/');
  }

  return (
    <Page title={workspaces.length === 0 ? 'Create your first workspace' : 'New workspace'} subtitle="A workspace holds clusters, installs, secrets and snippets, and the people who share them.">
      <form class="card form" onSubmit={submit}>
        <ErrorNotice error={action.error} shownFields={['body.name']} title="The workspace was not created." />
        <TextField label="Name" required maxLength={100} value={name} onValue={setName} error={violationOf(action.error, 'body.name')} />
        <button class="primary" type="submit" disabled={action.busy}>
          Create workspace
        </button>
      </form>
    </Page>
  );
}
