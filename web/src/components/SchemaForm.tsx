// A form made from a JSON Schema (lib/schema-form.ts decides the controls): the fields of an
// object schema, each under its title or name, with its description as the hint and the error the
// browser-side check or the API reported for it.
import { CheckboxField, SelectField, TextArea, TextField } from './Form.tsx';
import type { FormField } from '../lib/schema-form.ts';

export function SchemaFields(props: { fields: FormField[]; texts: Record<string, string>; errors: Record<string, string>; onText: (name: string, text: string) => void }) {
  if (props.fields.length === 0) return <p class="muted">This takes no inputs.</p>;
  return (
    <>
      {props.fields.map((f) => {
        const common = { label: f.label, hint: f.description, error: props.errors[f.name], required: f.required };
        const text = props.texts[f.name] ?? '';
        const set = (v: string) => props.onText(f.name, v);
        switch (f.control) {
          case 'boolean':
            return <CheckboxField key={f.name} label={f.label} hint={f.description} error={props.errors[f.name]} checked={text === 'true'} onValue={(v) => set(String(v))} />;
          case 'select':
            return <SelectField key={f.name} {...common} value={text} onValue={set} options={[...(f.required ? [] : [['', '—'] as [string, string]]), ...(f.options ?? []).map((o) => [o, o] as [string, string])]} />;
          case 'json':
            return <TextArea key={f.name} {...common} code rows={4} value={text} onValue={set} hint={f.description ?? 'JSON'} />;
          default:
            return (
              <TextField
                key={f.name}
                {...common}
                value={text}
                onValue={set}
                type={f.control === 'secret' ? 'password' : f.control === 'text' ? 'text' : 'number'}
                step={f.control === 'integer' ? 1 : f.control === 'number' ? 'any' : undefined}
                autoComplete="off"
              />
            );
        }
      })}
    </>
  );
}
