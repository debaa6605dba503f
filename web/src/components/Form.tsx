// Form plumbing shared by every page: an action's busy state and error, and labelled inputs that
// show the API's field violation for their field (aria-invalid, aria-describedby).
import type { ComponentChildren } from 'preact';
import { useId, useState } from 'preact/hooks';
import type { ApiError } from '../lib/api.ts';
import { toApiError } from '../lib/useApi.ts';

export interface Action {
  busy: boolean;
  error: ApiError | undefined;
  /** Runs fn once at a time; its error is kept for the page to show; resolves undefined on error. */
  run: <T>(fn: () => Promise<T>) => Promise<T | undefined>;
  clear: () => void;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  async function run<T>(fn: () => Promise<T>): Promise<T | undefined> {
    if (busy) return undefined;
    setBusy(true);
    setError(undefined);
    try {
      return await fn();
    } catch (err) {
      setError(toApiError(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, run, clear: () => setError(undefined) };
}

/** The violation the API reported for a field (`body.name`), if any. */
export function violationOf(error: ApiError | undefined, field: string): string | undefined {
  return error?.violations().get(field);
}

interface FieldProps {
  label: string;
  hint?: ComponentChildren;
  error?: string;
  required?: boolean;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ComponentChildren;
}

/** A label, the control, a hint and the field's error, wired together for assistive technology. */
export function Field(props: FieldProps) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  const errorId = props.error ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field${props.error ? ' field-invalid' : ''}`}>
      <label for={id}>
        {props.label}
        {props.required && <span class="muted"> (required)</span>}
      </label>
      {props.children({ id, describedBy, invalid: Boolean(props.error) })}
      {props.hint && (
        <p id={hintId} class="hint">
          {props.hint}
        </p>
      )}
      {props.error && (
        <p id={errorId} class="field-error">
          {props.error}
        </p>
      )}
    </div>
  );
}

/** The input attributes pages use (a closed list: the DOM's full union does not spread cleanly). */
interface InputAttributes {
  type?: 'text' | 'email' | 'password' | 'number' | 'url' | 'search' | 'datetime-local';
  required?: boolean;
  maxLength?: number;
  minLength?: number;
  pattern?: string;
  placeholder?: string;
  autoComplete?: string;
  step?: number | 'any';
  min?: number;
  max?: number;
  readOnly?: boolean;
  /** the on-screen keyboard to offer (`numeric` for codes) */
  inputMode?: 'text' | 'numeric';
}

type InputProps = InputAttributes & {
  label: string;
  value: string;
  onValue: (v: string) => void;
  hint?: ComponentChildren;
  error?: string;
};

export function TextField({ label, value, onValue, hint, error, ...rest }: InputProps) {
  return (
    <Field label={label} hint={hint} error={error} required={Boolean(rest.required)}>
      {({ id, describedBy, invalid }) => (
        <input id={id} {...rest} type={(rest.type ?? 'text') as 'text'} value={value} aria-describedby={describedBy} aria-invalid={invalid || undefined} onInput={(e) => onValue(e.currentTarget.value)} />
      )}
    </Field>
  );
}

/** A password a person chooses: the one rule (8-256 characters) in the field, and the browser told it is a new one. */
export function NewPasswordField(props: { label: string; value: string; onValue: (v: string) => void; hint?: string; error?: string | undefined }) {
  return (
    <TextField
      label={props.label}
      type="password"
      autoComplete="new-password"
      required
      minLength={8}
      maxLength={256}
      value={props.value}
      onValue={props.onValue}
      hint={props.hint ?? 'At least 8 characters.'}
      error={props.error}
    />
  );
}

/** The new password a second time; `mismatch` when the two differ (checked by the form before it sends). */
export function RepeatPasswordField(props: { label: string; value: string; onValue: (v: string) => void; mismatch: boolean }) {
  return (
    <TextField
      label={props.label}
      type="password"
      autoComplete="new-password"
      required
      maxLength={256}
      value={props.value}
      onValue={props.onValue}
      error={props.mismatch ? 'The two passwords differ.' : undefined}
    />
  );
}

export function TextArea(props: { label: string; value: string; onValue: (v: string) => void; rows?: number; hint?: ComponentChildren; error?: string; required?: boolean; code?: boolean }) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <textarea
          id={id}
          rows={props.rows ?? 6}
          class={props.code ? 'code' : undefined}
          spellcheck={!props.code}
          required={props.required}
          value={props.value}
          aria-describedby={describedBy}
          aria-invalid={invalid || undefined}
          onInput={(e) => props.onValue(e.currentTarget.value)}
        />
      )}
    </Field>
  );
}

export function SelectField(props: { label: string; value: string; onValue: (v: string) => void; options: [value: string, label: string][]; hint?: ComponentChildren; error?: string; required?: boolean }) {
  return (
    <Field label={props.label} hint={props.hint} error={props.error} required={props.required}>
      {({ id, describedBy, invalid }) => (
        <select id={id} value={props.value} required={props.required} aria-describedby={describedBy} aria-invalid={invalid || undefined} onChange={(e) => props.onValue(e.currentTarget.value)}>
          {props.options.map(([v, l]) => (
            <option key={v} value={v}>
              {l}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

export function CheckboxField(props: { label: string; checked: boolean; onValue: (v: boolean) => void; hint?: ComponentChildren; error?: string }) {
  const id = useId();
  return (
    <div class="field field-check">
      <input id={id} type="checkbox" checked={props.checked} aria-invalid={props.error ? true : undefined} onChange={(e) => props.onValue(e.currentTarget.checked)} />
      <label for={id}>{props.label}</label>
      {props.hint && <p class="hint">{props.hint}</p>}
      {props.error && <p class="field-error">{props.error}</p>}
    </div>
  );
}
