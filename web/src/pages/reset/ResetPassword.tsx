// Password reset (/reset-password). Without a token: a form for the e-mail address, answered the
// same whether an account has it or not (POST /v1/password_resets). With the link's token (in the
// fragment, which browsers never send to a server; it goes in a request body): the account it is
// for, and the new password twice; once set, every session of the account is signed out and the
// person signs in with it.
import { useEffect, useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { NewPasswordField, RepeatPasswordField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Time } from '../../components/Time.tsx';

const TOKEN = /^[A-Za-z0-9]{32}$/;

function AskForLink() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | undefined>(undefined);
  const action = useAction();
  async function submit(e: Event) {
    e.preventDefault();
    const done = await action.run(() => ok(client.POST('/v1/password_resets', { body: { email: email.trim() } })));
    if (done) setSent(email.trim());
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="reset-title">
      <h1 id="reset-title">Reset your password</h1>
      {sent ? (
        <p role="status" class="notice notice-good">
          If an account has the address {sent}, a link to choose a new password is on its way. It works once, for 30 minutes. Nothing
          arrived? Check the spam folder, or ask the operator of this service.
        </p>
      ) : (
        <p class="muted">Give the e-mail address of your account: we send it a link to choose a new password.</p>
      )}
      <ErrorNotice error={action.error} shownFields={['body.email']} title="No link was sent." />
      <TextField label="Email" type="email" autoComplete="username" required maxLength={254} value={email} onValue={setEmail} />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Sending…' : 'Send me a link'}
      </button>
      <p class="muted small">
        <a href="/">Back to sign in</a>
      </p>
    </form>
  );
}

function ChooseNewPassword(props: { token: string }) {
  const preview = useApi(() => ok(client.POST('/v1/password_resets:resolve', { body: { token: props.token } })), [props.token]);
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const [done, setDone] = useState(false);
  const action = useAction();
  if (preview.loading && !preview.data) return <p aria-busy="true">Loading…</p>;
  if (preview.error?.code === 'NOT_FOUND') {
    return (
      <div class="card">
        <h1>This reset link does not work</h1>
        <p>It was used already, replaced by a newer one, or is more than 30 minutes old.</p>
        <p>
          <a href="/reset-password">Ask for a new link</a>
        </p>
      </div>
    );
  }
  if (preview.error || !preview.data) return <ErrorNotice error={preview.error} title="The link could not be read." />;
  const p = preview.data;
  if (done) {
    return (
      <div class="card" role="status">
        <h1>Your password is set</h1>
        <p>Every session of {p.email} was signed out. Sign in with the new password.</p>
        <p>
          <a class="button primary" href="/">
            Sign in
          </a>
        </p>
      </div>
    );
  }
  async function submit(e: Event) {
    e.preventDefault();
    if (password !== again) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    const changed = await action.run(() => ok(client.POST('/v1/password_resets:complete', { body: { token: props.token, new_password: password } })));
    if (changed) setDone(true);
  }
  return (
    <form class="card" onSubmit={submit} aria-labelledby="choose-title">
      <h1 id="choose-title">Choose a new password</h1>
      <p>
        For <strong>{p.email}</strong>. The link expires <Time at={p.expires_at} />.
      </p>
      <ErrorNotice error={action.error} shownFields={['body.new_password']} title="The password was not changed." />
      <input type="email" autoComplete="username" value={p.email} hidden readOnly />
      <NewPasswordField label="New password" value={password} onValue={setPassword} error={violationOf(action.error, 'body.new_password')} />
      <RepeatPasswordField label="New password again" value={again} onValue={setAgain} mismatch={mismatch} />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Saving…' : 'Set the new password'}
      </button>
    </form>
  );
}

export function ResetPassword(_props: { path?: string }) {
  const [token, setToken] = useState(() => window.location.hash.slice(1));
  useEffect(() => {
    document.title = 'Reset your password · svc';
    // A link opened in the tab that shows this page changes only the fragment.
    const onHash = () => setToken(window.location.hash.slice(1));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  return <main class="signin" id="main">{TOKEN.test(token) ? <ChooseNewPassword token={token} /> : <AskForLink />}</main>;
}
