// Making an account (POST /v1/users), then signing in as the sign-in form does: from an offer's link
// (the offer's short hash goes with it, which the service takes whatever SVC_SIGNUP says: the person
// stays on the offer's page), or from the sign-in page when the operator opened sign-up.
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { NewPasswordField, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';

export function SignUpForm(props: { onSignedIn: () => Promise<void>; offer?: string }) {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    const done = await action.run(async () => {
      await ok(client.POST('/v1/users', { body: { email, password, ...(name.trim() ? { name: name.trim() } : {}), ...(props.offer ? { offer: props.offer } : {}) } }));
      return ok(client.POST('/v1/auth/browser_session', { body: { email, password } }));
    });
    if (done) await props.onSignedIn();
  }

  return (
    <form class="card" onSubmit={submit} aria-labelledby="signup-title">
      <h2 id="signup-title">Create an account</h2>
      <ErrorNotice error={action.error} shownFields={['body.email', 'body.password']} title="The account was not created." />
      <TextField label="Your name" autoComplete="name" maxLength={200} value={name} onValue={setName} />
      <TextField label="Email" type="email" autoComplete="email" required value={email} onValue={setEmail} error={violationOf(action.error, 'body.email')} />
      <NewPasswordField label="Password" value={password} onValue={setPassword} error={violationOf(action.error, 'body.password')} />
      <button class="primary" type="submit" disabled={action.busy}>
        {action.busy ? 'Creating your account…' : 'Create account and continue'}
      </button>
    </form>
  );
}
