// Sign-in with e-mail and password: POST /v1/auth/browser_session sets the HttpOnly session
// cookie (the app's scripts never see the token). The page stays at the address that was opened,
// so an html_url opened signed out shows its record once signed in.
import { useEffect, useRef, useState } from 'preact/hooks';
import { client, ok } from '../lib/api.ts';
import { TextField, useAction } from '../components/Form.tsx';
import { ErrorNotice } from '../components/ErrorNotice.tsx';

export function SignIn(props: { onSignedIn: () => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = 'Sign in · svc';
    heading.current?.focus();
  }, []);

  async function submit(e: Event) {
    e.preventDefault();
    const done = await action.run(() => ok(client.POST('/v1/auth/browser_session', { body: { email, password } })));
    if (done) await props.onSignedIn();
  }

  return (
    <main class="signin" id="main">
      <form class="card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title" ref={heading} tabIndex={-1}>
          Sign in to svc
        </h1>
        <ErrorNotice error={action.error} title="Could not sign in." />
        <TextField label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} />
        <TextField label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
        <button class="primary" type="submit" disabled={action.busy}>
          {action.busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">
          No account yet? An administrator creates one with <code>svc admin create-user</code>.
        </p>
      </form>
    </main>
  );
}
