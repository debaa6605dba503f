// The offer's field values: for each key of the version's input schema, an optional value and a
// "Locked" toggle (locked: the customer sees it fixed; unlocked: a pre-fill they may change).
// Fields left empty are not part of the offer. The API checks the values against the schema and
// reports violations under `body.field_values.<key>`, shown at the key's field.
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ApiError } from '../../lib/api.ts';
import { collect, fieldsOf, initialText, violationsUnder, type JsonSchema } from '../../lib/schema-form.ts';
import { SchemaFields } from '../../components/SchemaForm.tsx';
import { CheckboxField } from '../../components/Form.tsx';

export type OfferFieldValues = Record<string, { value: unknown; locked: boolean }>;

const PREFIX = 'body.field_values';

export interface OfferValues {
  check: () => OfferFieldValues | undefined;
  view: (error: ApiError | undefined) => JSX.Element;
}

/** `key` starts the texts over (another version chosen, the offer reloaded after a conflict). */
export function useOfferValues(schema: unknown, given: OfferFieldValues | undefined, key: unknown): OfferValues {
  // Nothing is required of the seller: an empty field is simply not pre-filled.
  const fields = useMemo(() => fieldsOf(schema as JsonSchema | undefined).map((f) => ({ ...f, required: false })), [schema]);
  const start = () => Object.fromEntries(fields.map((f) => [f.name, given?.[f.name] ? initialText(f, given[f.name]!.value) : '']));
  const [texts, setTexts] = useState<Record<string, string>>(start);
  const [locked, setLocked] = useState<Record<string, boolean>>({});
  const [local, setLocal] = useState<Record<string, string>>({});
  useEffect(() => {
    setTexts(start());
    setLocked(Object.fromEntries(Object.entries(given ?? {}).map(([k, v]) => [k, v.locked])));
    setLocal({});
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fields, key]);

  return {
    check() {
      const set = fields.filter((f) => (texts[f.name] ?? '') !== '');
      const { value, errors } = collect(set, texts);
      setLocal(errors);
      if (Object.keys(errors).length) return undefined;
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, { value: v, locked: Boolean(locked[k]) }]));
    },
    view(error) {
      if (fields.length === 0) return <p class="muted">The version takes no inputs.</p>;
      const errors = { ...violationsUnder(error?.violations() ?? new Map(), PREFIX), ...local };
      return (
        <>
          {fields.map((f) => (
            <fieldset key={f.name} class="offer-value">
              <legend>{f.label}</legend>
              <SchemaFields fields={[f]} texts={texts} errors={errors} onText={(name, text) => setTexts({ ...texts, [name]: text })} />
              <CheckboxField
                label={`Lock ${f.label}`}
                hint="Locked: the customer sees this value and cannot change it."
                checked={Boolean(locked[f.name])}
                onValue={(v) => setLocked({ ...locked, [f.name]: v })}
              />
            </fieldset>
          ))}
        </>
      );
    },
  };
}
