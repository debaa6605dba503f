// The form of a snippet's inputs, made from its declarations (lib/snippet-inputs.ts turns them into
// a JSON Schema; components/SchemaForm shows it), with the button that runs it. Errors show at
// their field: the form's own checks first, then the API's (`body.inputs.<key>`).
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import type { ApiError } from '../../lib/api.ts';
import { collect, fieldsOf, initialText, violationsUnder } from '../../lib/schema-form.ts';
import { inputsSchema, type InputDeclaration } from '../../lib/snippet-inputs.ts';
import { SchemaFields } from '../../components/SchemaForm.tsx';

export function InputsForm(props: {
  declarations: InputDeclaration[];
  submitLabel: string;
  busy: boolean;
  error: ApiError | undefined;
  onRun: (inputs: Record<string, unknown>) => void;
  disabled?: string;
  label: string;
  children?: ComponentChildren;
}) {
  const fields = useMemo(() => fieldsOf(inputsSchema(props.declarations)), [props.declarations]);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  // A field keeps what the person typed; a field the declarations just gained starts at its default.
  const shown = Object.fromEntries(fields.map((f) => [f.name, texts[f.name] ?? initialText(f)]));
  const apiErrors = props.error ? violationsUnder(props.error.violations(), 'body.inputs') : {};

  function submit(e: Event) {
    e.preventDefault();
    const { value, errors: found } = collect(fields, shown);
    setErrors(found);
    if (Object.keys(found).length === 0) props.onRun(value);
  }

  return (
    <form class="form" onSubmit={submit} aria-label={props.label} noValidate>
      <SchemaFields fields={fields} texts={shown} errors={{ ...apiErrors, ...errors }} onText={(name, text) => setTexts({ ...texts, [name]: text })} />
      {props.disabled && <p class="muted">{props.disabled}</p>}
      <div class="actions">
        <button class="primary" type="submit" disabled={props.busy || Boolean(props.disabled)}>
          {props.busy ? 'Running…' : props.submitLabel}
        </button>
        {props.children}
      </div>
    </form>
  );
}
