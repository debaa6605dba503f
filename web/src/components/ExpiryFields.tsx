// When something stops or goes away (an API token, a machine): a choice of common lifetimes and,
// for "On a date…", a date-and-time field in the person's time zone. lib/expiry.ts turns the
// choice and the date into the expires_at to send; `error` is the API's violation for it.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { expiresAt } from '../lib/expiry.ts';
import { SelectField, TextField } from './Form.tsx';

/**
 * The state of an ExpiryFields in a form: the choice, the date, and why the date was refused.
 * `read()` gives the expires_at to send (undefined: never), or null after showing the refusal at
 * the date field.
 */
export function useExpiry(initialChoice: string) {
  const [choice, setChoice] = useState(initialChoice);
  const [date, setDate] = useState('');
  const [dateError, setDateError] = useState<string | undefined>(undefined);
  function read(): { value: number | undefined } | null {
    const at = expiresAt(choice, date, Date.now());
    setDateError(at.ok ? undefined : at.error);
    return at.ok ? { value: at.value } : null;
  }
  return { fields: { choice, onChoice: setChoice, date, onDate: setDate, dateError }, read };
}

export function ExpiryFields(props: {
  choices: [value: string, label: string][];
  choice: string;
  onChoice: (v: string) => void;
  date: string;
  onDate: (v: string) => void;
  dateLabel: string;
  hint?: ComponentChildren;
  dateHint?: ComponentChildren;
  /** the API's violation of expires_at */
  error?: string;
  /** why the picked date cannot be used, found before sending */
  dateError?: string;
}) {
  const onDate = props.choice === 'date';
  return (
    <>
      <SelectField label="Expires" value={props.choice} onValue={props.onChoice} options={props.choices} hint={props.hint} error={onDate ? undefined : props.error} />
      {onDate && <TextField label={props.dateLabel} type="datetime-local" required value={props.date} onValue={props.onDate} hint={props.dateHint ?? 'In your time zone.'} error={props.dateError ?? props.error} />}
    </>
  );
}
