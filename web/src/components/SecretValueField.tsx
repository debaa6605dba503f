// The input of a secret value: a password field (masked, never offered to the browser's password
// manager as a login) with a "Show value" toggle. Shown, it becomes a monospace text area, so a
// multi-line value (a kubeconfig, a PEM key) keeps its lines when pasted. The value lives only in
// the form's state: the page clears it once the write is done, and it never reaches the URL.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Field } from './Form.tsx';

export function SecretValueField(props: { label: string; value: string; onValue: (v: string) => void; hint?: ComponentChildren; error?: string; required?: boolean }) {
  const [shown, setShown] = useState(false);
  return (
    <Field label={props.label} hint={props.hint} error={props.error} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <span class="copy-row">
          {shown ? (
            <textarea id={id} rows={4} class="code" spellcheck={false} autoComplete="off" required={props.required} value={props.value} aria-describedby={describedBy} aria-invalid={invalid || undefined} onInput={(e) => props.onValue(e.currentTarget.value)} />
          ) : (
            <input id={id} type="password" autoComplete="new-password" required={props.required} value={props.value} aria-describedby={describedBy} aria-invalid={invalid || undefined} onInput={(e) => props.onValue(e.currentTarget.value)} />
          )}
          <button type="button" aria-pressed={shown} aria-controls={id} onClick={() => setShown(!shown)}>
            Show value
          </button>
        </span>
      )}
    </Field>
  );
}
