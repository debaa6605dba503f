// The signed-in person's own account (not a workspace's): who they are, and changing their password
// (POST /v1/me/password). The current password is asked for; the new one twice, checked here
// before it is sent. Once changed, every other session of the account is signed out, and the page
// says how many; this browser stays signed in.
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useSession, type Me } from '../../lib/session.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { NewPasswordField, TextField, useAction, violationOf } from '../../components/Form.tsx';

function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const [done, setDone] = useState<number | undefined>(undefined);
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    setDone(undefined);
    if (next !== again) {
      setMismatch(true);
      return;
    }
    setMismatch(false);
    const changed = await action.run(() => ok(client.POST('/v1/me/password', { body: { current_password: current, new_password: next } })));
    if (!changed) return;
    setCurrent('');
    setNext('');
    setAgain('');
    setDone(changed.revoked_sessions);
  }

  return (
    <form class="form" onSubmit={submit} aria-labelledby="change-password-title">
      <h3 id="change-password-title" class="visually-hidden">Change your password</h3>
      {done !== undefined && (
        <p role="status" class="notice notice-good">
          Your password was changed.{done ? ` ${done} other session${done === 1 ? ' was' : 's were'} signed out.` : ''}
        </p>
      )}
      <ErrorNotice error={action.error} shownFields={['body.current_password', 'body.new_password']} title="The password was not changed." />
      <TextField
        label="Current password"
        type="password"
        autoComplete="current-password"
        required
        maxLength={256}
        value={current}
        onValue={setCurrent}
        error={violationOf(action.error, 'body.current_password')}
      />
      <NewPasswordField label="New password" value={next} onValue={setNext} hint="At least 8 characters, not the current one." error={violationOf(action.error, 'body.new_password')} />
      <TextField
        label="New password again"
        type="password"
        autoComplete="new-password"
        required
        maxLength={256}
        value={again}
        onValue={setAgain}
        error={mismatch ? 'The two new passwords differ.' : undefined}
      />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Changing…' : 'Change password'}
      </button>
    </form>
  );
}

const EMAIL_CHOICES: [Me['notification_email'], string][] = [
  ['none', 'None: read them here only'],
  ['important', 'Important ones: warnings and errors (failed operations, expiring tokens, security notices)'],
  ['all', 'All of them'],
];

function NotificationEmail() {
  const { me } = useSession();
  const [choice, setChoice] = useState(me.notification_email);
  const [saved, setSaved] = useState(false);
  const action = useAction();
  async function pick(next: Me['notification_email']) {
    setChoice(next);
    setSaved(false);
    const done = await action.run(() => ok(client.PATCH('/v1/me', { body: { notification_email: next } })));
    if (done) setSaved(true);
    else setChoice(me.notification_email);
  }
  return (
    <fieldset class="choices">
      <legend>Also e-mail me these notifications, at {me.email}</legend>
      <ErrorNotice error={action.error} title="The choice was not saved." />
      {EMAIL_CHOICES.map(([value, label]) => (
        <label key={value}>
          <input type="radio" name="notification_email" value={value} checked={choice === value} disabled={action.busy} onChange={() => void pick(value)} /> {label}
        </label>
      ))}
      {saved && (
        <p role="status" class="muted small">
          Saved.
        </p>
      )}
    </fieldset>
  );
}

export function Account(_props: { path?: string }) {
  const { me } = useSession();
  return (
    <Page title="Your account" subtitle="Yours across every workspace.">
      <Section title="Who you are">
        <Fields rows={[['Email', me.email], ['Name', me.name ?? undefined], ['Account since', <Time at={me.created_at} />]]} />
      </Section>
      <Section title="Password">
        <p class="muted">Changing it signs out every other session of your account (other browsers, the CLI&apos;s logins). API tokens belong to workspaces and keep working.</p>
        <ChangePassword />
      </Section>
      <Section title="E-mail">
        <NotificationEmail />
      </Section>
    </Page>
  );
}
