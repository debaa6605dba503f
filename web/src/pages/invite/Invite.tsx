// The page an invitation's link opens (/invite#<token>): the token is read from the fragment, which
// browsers never send to a server, and sent in a request body (POST /v1/invitations:resolve), so no
// log keeps it. It says which workspace invites which e-mail with which role; the person makes their
// account there (a name and a password), or, when the e-mail has an account already, gives its
// password; then the invitation is accepted, the browser signed in as that account, and the app
// opens. Reached signed out or signed in (as anyone: accepting signs this browser in as the invited
// account).
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { ROLE_WORDS } from '../../lib/roles.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { NewPasswordField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Time } from '../../components/Time.tsx';

const TOKEN = /^[A-Za-z0-9]{32}$/;

export function Invite(_props: { path?: string }) {
  const [token] = useState(() => window.location.hash.slice(1));
  const preview = useApi(async () => {
    if (!TOKEN.test(token)) return null;
    return ok(client.POST('/v1/invitations:resolve', { body: { token } }));
  }, [token]);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const p = preview.data;

  if (preview.loading && !p) return <p aria-busy="true">Loading…</p>;
  if (preview.error?.code === 'NOT_FOUND' || p === null) {
    return (
      <main class="signin" id="main">
        <div class="card">
          <h1>This invitation link does not work</h1>
          <p>It was used already, revoked, or has expired (links work for 7 days). Ask whoever invited you for a new one.</p>
        </div>
      </main>
    );
  }
  if (preview.error || !p) return <ErrorNotice error={preview.error} title="The invitation could not be read." />;

  async function submit(e: Event) {
    e.preventDefault();
    const done = await action.run(async () => {
      await ok(client.POST('/v1/invitations:accept', { body: { token, password, ...(name.trim() && !p!.account_exists ? { name: name.trim() } : {}) } }));
      return ok(client.POST('/v1/auth/browser_session', { body: { email: p!.email, password } }));
    });
    // The app starts again, signed in as the invited account, without the token in the address.
    if (done) window.location.replace('/');
  }

  const role = ROLE_WORDS[p.role].toLowerCase();
  return (
    <main class="signin" id="main">
      <form class="card" onSubmit={submit} aria-labelledby="invite-title">
        <h1 id="invite-title">Join {p.workspace_name}</h1>
        <p>
          You are invited as {role === 'admin' ? 'an' : 'a'} {role} of {p.workspace_name}, as <strong>{p.email}</strong>. The link works until{' '}
          <Time at={p.expires_at} until />.
        </p>
        <ErrorNotice error={action.error} shownFields={['body.password']} title="You have not joined yet." />
        {p.account_exists ? (
          <>
            <p class="muted">There is an account for {p.email} already: give its password to join with it.</p>
            <TextField label="Password" type="password" autoComplete="current-password" required maxLength={256} value={password} onValue={setPassword} />
          </>
        ) : (
          <>
            <TextField label="Your name" autoComplete="name" maxLength={100} value={name} onValue={setName} />
            <NewPasswordField label="Choose a password" value={password} onValue={setPassword} error={violationOf(action.error, 'body.password')} />
          </>
        )}
        <button class="primary" type="submit" disabled={action.busy}>
          {action.busy ? 'Joining…' : `Join ${p.workspace_name}`}
        </button>
      </form>
    </main>
  );
}
