// The signed-in person's own account (not a workspace's): who they are, and changing their password
// (POST /v1/me/password). The current password is asked for; the new one twice, checked here
// before it is sent. Once changed, every other session of the account is signed out, and the page
// says how many; this browser stays signed in. Two-factor sign-in (TOTP): set up with an
// authenticator app (the otpauth:// URI and the base32 secret shown as text: the app has no QR
// code library), confirmed with a code, then recovery codes shown once; the count of those left,
// new ones, and turning it off (each with the password or a code).
import { useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { CopyValue } from '../../components/CopyValue.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { useSession, type Me } from '../../lib/session.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { NewPasswordField, RepeatPasswordField, TextField, useAction, violationOf } from '../../components/Form.tsx';

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
      <RepeatPasswordField label="New password again" value={again} onValue={setAgain} mismatch={mismatch} />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Changing…' : 'Change password'}
      </button>
    </form>
  );
}

type Enrollment = Schemas['TotpEnrollment'];
type Status = Schemas['TwoFactorStatus'];

/** Recovery codes, shown once, one a line, to copy or write down. */
function RecoveryCodesShown(props: { codes: string[]; onHide: () => void }) {
  return (
    <CopyValue label="Recovery codes" value={props.codes.join('\n')} rows={props.codes.length} once onHide={props.onHide}>
      <p>
        Each of these signs in once in place of a code from your app, if you lose your phone. Keep them somewhere safe, apart from your
        password.
      </p>
    </CopyValue>
  );
}

/** The password or a code, whichever the person gives: proof for new recovery codes and for turning it off. */
function ProofFields(props: { password: string; code: string; onPassword: (v: string) => void; onCode: (v: string) => void; error: ReturnType<typeof useAction>['error'] }) {
  return (
    <>
      <TextField label="Current password" type="password" autoComplete="current-password" maxLength={256} value={props.password} onValue={props.onPassword} error={violationOf(props.error, 'body.password')} />
      <TextField
        label="Or a code from your app"
        inputMode="numeric"
        autoComplete="one-time-code"
        maxLength={32}
        value={props.code}
        onValue={props.onCode}
        hint="Give one of the two. A recovery code works too (it is used up)."
        error={violationOf(props.error, 'body.code')}
      />
    </>
  );
}

function proofOf(password: string, code: string): { password?: string; code?: string } {
  return code.trim() && !password ? { code: code.trim() } : { password };
}

function SetUp(props: { onEnabled: (codes: string[]) => void }) {
  const [enrollment, setEnrollment] = useState<Enrollment | undefined>(undefined);
  const [code, setCode] = useState('');
  const start = useAction();
  const confirm = useAction();

  async function begin() {
    const e = await start.run(() => ok(client.POST('/v1/me/two_factor:enroll', {})));
    if (e) setEnrollment(e);
  }
  async function submit(ev: Event) {
    ev.preventDefault();
    const done = await confirm.run(() => ok(client.POST('/v1/me/two_factor:confirm', { body: { code } })));
    if (done) props.onEnabled(done.recovery_codes);
  }

  if (!enrollment) {
    return (
      <div class="form">
        <ErrorNotice error={start.error} title="Two-factor sign-in could not be set up." />
        <button type="button" class="primary" disabled={start.busy} onClick={begin}>
          Set up an authenticator app
        </button>
      </div>
    );
  }
  return (
    <form class="form" onSubmit={submit} aria-labelledby="two-factor-setup-title">
      <h3 id="two-factor-setup-title">Add svc to your authenticator app</h3>
      <p>
        In an authenticator app (Google Authenticator, 1Password, Aegis, Microsoft Authenticator…), add an account from this setup key or
        paste the link. Then type the 6-digit code the app shows.
      </p>
      <CopyValue label="Setup key" value={enrollment.secret} once />
      <CopyValue label="Link for the app (otpauth)" value={enrollment.otpauth_uri} />
      <p class="muted small">
        Account {enrollment.account}, issuer {enrollment.issuer}; time-based, {enrollment.digits} digits, every {enrollment.period} seconds.
      </p>
      <ErrorNotice error={confirm.error} shownFields={['body.code']} title="Two-factor sign-in is not on yet." />
      <TextField
        label="Code from the app"
        inputMode="numeric"
        autoComplete="one-time-code"
        required
        maxLength={32}
        value={code}
        onValue={setCode}
        error={violationOf(confirm.error, 'body.code')}
      />
      <button class="primary" type="submit" disabled={confirm.busy}>
        Turn on two-factor sign-in
      </button>
    </form>
  );
}

function Enabled(props: { status: Status; onCodes: (codes: string[]) => void; onDisabled: () => void }) {
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const [removing, setRemoving] = useState(false);
  const action = useAction();

  async function regenerate(e: Event) {
    e.preventDefault();
    const done = await action.run(() => ok(client.POST('/v1/me/two_factor/recovery_codes:regenerate', { body: proofOf(password, code) })));
    if (!done) return;
    setPassword('');
    setCode('');
    props.onCodes(done.recovery_codes);
  }
  async function remove() {
    setRemoving(false);
    const done = await action.run(() => ok(client.POST('/v1/me/two_factor:disable', { body: proofOf(password, code) })));
    if (!done) return;
    setPassword('');
    setCode('');
    props.onDisabled();
  }

  const left = props.status.recovery_codes_remaining;
  return (
    <form class="form" onSubmit={regenerate} aria-labelledby="two-factor-manage-title">
      <h3 id="two-factor-manage-title" class="visually-hidden">Manage two-factor sign-in</h3>
      <Fields
        rows={[
          ['Two-factor sign-in', <>On{props.status.enabled_at !== null && <> since <Time at={props.status.enabled_at} /></>}</>],
          ['Recovery codes left', `${left} of 10${left <= 3 ? ': make new ones soon' : ''}`],
        ]}
      />
      <ErrorNotice error={action.error} shownFields={['body.password', 'body.code']} title="Nothing was changed." />
      <ProofFields password={password} code={code} onPassword={setPassword} onCode={setCode} error={action.error} />
      <span class="actions">
        <button type="submit" disabled={action.busy || (!password && !code.trim())}>
          Make new recovery codes
        </button>
        <button type="button" class="danger" disabled={action.busy || (!password && !code.trim())} onClick={() => setRemoving(true)}>
          Turn off two-factor sign-in
        </button>
      </span>
      <Confirm open={removing} title="Turn off two-factor sign-in?" confirmLabel="Turn off" danger onConfirm={remove} onCancel={() => setRemoving(false)}>
        <p>Signing in will ask for your password only. Workspaces that require two factors will not let you in until you set it up again.</p>
      </Confirm>
    </form>
  );
}

function TwoFactor() {
  const { refreshMe } = useSession();
  const status = useApi(() => ok(client.GET('/v1/me/two_factor', {})), []);
  const [codes, setCodes] = useState<string[] | undefined>(undefined);
  const [off, setOff] = useState(false);
  const s = status.data;

  async function changed() {
    await status.reload();
    await refreshMe();
  }

  return (
    <>
      <ErrorNotice error={status.error} title="Could not read your two-factor sign-in." />
      {codes && <RecoveryCodesShown codes={codes} onHide={() => setCodes(undefined)} />}
      {off && (
        <p role="status" class="notice notice-good">
          Two-factor sign-in is off.
        </p>
      )}
      {s && !s.enabled && (
        <>
          <p class="muted">
            Off{s.pending ? ' (a setup was started and not finished: start again)' : ''}. With it on, signing in asks for a code from an app on
            your phone after the password, so a stolen password is not enough.
          </p>
          <SetUp
            key={String(off)}
            onEnabled={(c) => {
              setOff(false);
              setCodes(c);
              void changed();
            }}
          />
        </>
      )}
      {s?.enabled && (
        <Enabled
          status={s}
          onCodes={(c) => {
            setCodes(c);
            void status.reload();
          }}
          onDisabled={() => {
            setCodes(undefined);
            setOff(true);
            void changed();
          }}
        />
      )}
    </>
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
      <Section title="Two-factor sign-in">
        <TwoFactor />
      </Section>
      <Section title="E-mail">
        <NotificationEmail />
      </Section>
    </Page>
  );
}
