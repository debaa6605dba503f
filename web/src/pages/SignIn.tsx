// Sign-in with e-mail and password: POST /v1/auth/browser_session sets the HttpOnly session
// cookie (the app's scripts never see the token). The page stays at the address that was opened,
// so an html_url opened signed out shows its record once signed in. The form is also part of an
// offer's public page (/i/{short_hash}), next to the sign-up form.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { client, ok } from '../lib/api.ts';
import { TextField, useAction } from '../components/Form.tsx';
import { ErrorNotice } from '../components/ErrorNotice.tsx';

export function SignInForm(props: { onSignedIn: () => Promise<void>; title: string; headingLevel?: 1 | 2; children?: ComponentChildren }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (props.headingLevel !== 2) heading.current?.focus();
  }, []);

  async function submit(e: Event) {
    e.preventDefault();
    const done = await action.run(() => ok(client.POST('/v1/auth/browser_session', { body: { email, password } })));
    if (done) await props.onSignedIn();
  }

  const Heading = props.headingLevel === 2 ? 'h2' : 'h1';
  return (
    <form class="card" onSubmit={submit} aria-labelledby="signin-title">
      <Heading id="signin-title" ref={heading} tabIndex={-1}>
        {props.title}
      </Heading>
      <ErrorNotice error={action.error} title="Could not sign in." />
      <TextField label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} />
      <TextField label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Signing in…' : 'Sign in'}
      </button>
      {props.children}
    </form>
  );
}

export function SignIn(props: { onSignedIn: () => Promise<void> }) {
  useEffect(() => {
    document.title = 'Sign in · svc';
  }, []);
  return (
    <main class="signin" id="main">
      <SignInForm onSignedIn={props.onSignedIn} title="Sign in to svc">
        <p class="muted small">
          No account yet? An administrator creates one with <code>svc admin create-user</code>.
        </p>
      </SignInForm>
    </main>
  );
}
