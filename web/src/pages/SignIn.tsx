// Sign-in with e-mail and password: POST /v1/auth/browser_session sets the HttpOnly session
// cookie (the app's scripts never see the token). The page stays at the address that was opened,
// so an html_url opened signed out shows its record once signed in. The form is also part of an
// offer's public page (/i/{short_hash}), next to the sign-up form. Below it, "Sign in with {name}"
// when the operator set up single sign-on (a plain link: the browser goes to the OpenID provider
// and comes back to this same address, signed in), and how to get an account here: a sign-up form
// when the operator opened sign-up (SVC_SIGNUP=open), else who gives accounts.
// An account with two-factor sign-in on answers 401 TWO_FACTOR_CODE_REQUIRED once the password is
// right: the form then asks for the code in a second step and sends e-mail, password and code
// again (the password stays in this page's memory only).
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { client, ok } from '../lib/api.ts';
import { TextField, useAction } from '../components/Form.tsx';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { useApi } from '../lib/useApi.ts';
import { SignUpForm } from './order/SignUp.tsx';

export function SignInForm(props: { onSignedIn: () => Promise<void>; title: string; headingLevel?: 1 | 2; children?: ComponentChildren }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  /** the second step: the password was right and the account asks for a code */
  const [askCode, setAskCode] = useState(false);
  const action = useAction();
  const heading = useRef<HTMLHeadingElement>(null);
  const codeHeading = useRef<HTMLParagraphElement>(null);
  useEffect(() => {
    if (props.headingLevel !== 2) heading.current?.focus();
  }, []);
  useEffect(() => {
    if (askCode) codeHeading.current?.focus();
  }, [askCode]);

  async function submit(e: Event) {
    e.preventDefault();
    const body = askCode ? { email, password, code: code.trim() } : { email, password };
    const done = await action.run(() => ok(client.POST('/v1/auth/browser_session', { body })));
    if (done) await props.onSignedIn();
  }
  // The first answer that asks for a code moves the form to its second step (not an error to show).
  const codeAsked = action.error?.reason === 'TWO_FACTOR_CODE_REQUIRED';
  useEffect(() => {
    if (codeAsked) setAskCode(true);
  }, [codeAsked]);

  function startOver() {
    setAskCode(false);
    setCode('');
    setPassword('');
    action.clear();
  }

  const Heading = props.headingLevel === 2 ? 'h2' : 'h1';
  return (
    <form class="card" onSubmit={submit} aria-labelledby="signin-title">
      <Heading id="signin-title" ref={heading} tabIndex={-1}>
        {props.title}
      </Heading>
      {askCode ? (
        <>
          <p ref={codeHeading} tabIndex={-1}>
            <strong>Two-factor sign-in.</strong> Enter the 6-digit code from your authenticator app for {email}, or one of your recovery codes.
          </p>
          <ErrorNotice error={codeAsked ? undefined : action.error} title="Could not sign in." />
          <TextField label="Authentication code" inputMode="numeric" autoComplete="one-time-code" required maxLength={32} value={code} onValue={setCode} />
          <span class="actions">
            <button class="primary" type="submit" disabled={action.busy}>
              {action.busy ? 'Verifying…' : 'Verify'}
            </button>
            <button type="button" class="link" onClick={startOver}>
              Start again
            </button>
          </span>
        </>
      ) : (
        <>
          <ErrorNotice error={codeAsked ? undefined : action.error} title="Could not sign in." />
          <TextField label="Email" type="email" autoComplete="username" required value={email} onValue={setEmail} />
          <TextField label="Password" type="password" autoComplete="current-password" required value={password} onValue={setPassword} />
          <button class="primary" type="submit" disabled={action.busy}>
            {action.busy ? 'Signing in…' : 'Sign in'}
          </button>
          <p class="muted small">
            <a href="/reset-password">Forgot your password?</a>
          </p>
        </>
      )}
      {props.children}
    </form>
  );
}

/** How a person gets an account here, as the operator set it (SVC_SIGNUP, from GET /v1/auth/settings). */
function NoAccountYet(props: { signup: 'closed' | 'invite' | 'open' | undefined; onSignUp: () => void }) {
  if (props.signup === undefined) return null;
  if (props.signup === 'open') {
    return (
      <p class="muted small">
        No account yet?{' '}
        <button type="button" class="link" onClick={props.onSignUp}>
          Create one
        </button>
      </p>
    );
  }
  return (
    <p class="muted small">
      No account yet? Ask someone on your team to invite you (owners and admins add people by e-mail), or the operator of this
      service to make one.
    </p>
  );
}

/**
 * "Sign in with {name}" (GET /v1/auth/settings' `oidc`): a link, not a call, since the browser
 * itself goes to the provider; `next` brings it back to the address open now.
 */
function SingleSignOn(props: { oidc: { name: string; start_path: string } | null | undefined }) {
  if (!props.oidc) return null;
  const next = `${window.location.pathname}${window.location.search}`;
  return (
    <p class="sso">
      <span class="muted small">or</span>{' '}
      {/* target=_top: the router (preact-iso) leaves the click to the browser, which must load the server's route */}
      <a class="button" href={`${props.oidc.start_path}?next=${encodeURIComponent(next)}`} target="_top">
        Sign in with {props.oidc.name}
      </a>
    </p>
  );
}

export function SignIn(props: { onSignedIn: () => Promise<void> }) {
  const settings = useApi(() => ok(client.GET('/v1/auth/settings', {})), []);
  const [signingUp, setSigningUp] = useState(false);
  useEffect(() => {
    document.title = signingUp ? 'Create an account · svc' : 'Sign in · svc';
  }, [signingUp]);
  if (signingUp && settings.data?.signup === 'open') {
    return (
      <main class="signin" id="main">
        <SignUpForm onSignedIn={props.onSignedIn} />
        <p class="muted small">
          Have an account?{' '}
          <button type="button" class="link" onClick={() => setSigningUp(false)}>
            Sign in
          </button>
        </p>
      </main>
    );
  }
  return (
    <main class="signin" id="main">
      <SignInForm onSignedIn={props.onSignedIn} title="Sign in to svc">
        <SingleSignOn oidc={settings.data?.oidc} />
        <NoAccountYet signup={settings.data?.signup} onSignUp={() => setSigningUp(true)} />
      </SignInForm>
    </main>
  );
}
