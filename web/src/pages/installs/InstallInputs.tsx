// An install's inputs as a form made from its version's input schema (components/SchemaForm and
// lib/schema-form decide the controls): the texts, their check in the browser, and the API's
// violations under the body field that carries them (`body.initial_values` when installing,
// `body.values` when updating) shown at their field.
import type { JSX } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ApiError } from '../../lib/api.ts';
import { collect, fieldsOf, initialText, violationsUnder, type FormField, type JsonSchema } from '../../lib/schema-form.ts';
import { SchemaFields } from '../../components/SchemaForm.tsx';

export interface Inputs {
  fields: FormField[];
  /** The values the texts stand for, or undefined after showing each field's error. */
  check: () => Record<string, unknown> | undefined;
  /** The API fields this form shows at its own fields (for ErrorNotice's shownFields). */
  shown: (error: ApiError | undefined) => string[];
  view: (error: ApiError | undefined) => JSX.Element;
}

function textsOf(fields: FormField[], given: Record<string, unknown> | undefined): Record<string, string> {
  return Object.fromEntries(fields.map((f) => [f.name, initialText(f, given?.[f.name])]));
}

/** `key` starts the texts over (another version chosen, the install reloaded after a conflict). */
export function useInputs(schema: unknown, given: Record<string, unknown> | undefined, prefix: string, key: unknown): Inputs {
  const fields = useMemo(() => fieldsOf(schema as JsonSchema | undefined), [schema]);
  const [texts, setTexts] = useState<Record<string, string>>(() => textsOf(fields, given));
  const [local, setLocal] = useState<Record<string, string>>({});
  useEffect(() => {
    setTexts(textsOf(fields, given));
    setLocal({});
    // the texts follow the schema and the reset key, not every render's `given` object
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [fields, key]);

  return {
    fields,
    check() {
      const { value, errors } = collect(fields, texts);
      setLocal(errors);
      return Object.keys(errors).length ? undefined : value;
    },
    shown(error) {
      const placed = violationsUnder(error?.violations() ?? new Map(), prefix);
      return [...(error?.violations().keys() ?? [])].filter((f) => fields.some((x) => x.name in placed && (f === `${prefix}.${x.name}` || f.startsWith(`${prefix}.${x.name}.`) || f.startsWith(`${prefix}/${x.name}`))));
    },
    view: (error) => (
      <SchemaFields
        fields={fields}
        texts={texts}
        errors={{ ...violationsUnder(error?.violations() ?? new Map(), prefix), ...local }}
        onText={(name, text) => {
          setTexts({ ...texts, [name]: text });
          if (local[name]) setLocal({ ...local, [name]: '' });
        }}
      />
    ),
  };
}
