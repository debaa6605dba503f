// Writing a snippet (new, or editing one): name, description, how its output is shown, purpose,
// the code in a monospace text area, and its declared inputs as JSON (a parse error shows at the
// field before anything is sent; the API's checks of the declarations show there too). Below it,
// "Try it": the code as it stands in the form, run once without saving (POST /v1/snippets:execute)
// with its inputs as a form, the output shown as the chosen display type says.
import { useState } from 'preact/hooks';
import { client, ok, type ApiError, type Schemas } from '../../lib/api.ts';
import { humanState } from '../../lib/format.ts';
import { DISPLAY_TYPES, type DisplayType } from '../../lib/snippet-output.ts';
import { declarationsText, declarationsViolation, parseDeclarations, type InputDeclaration } from '../../lib/snippet-inputs.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, TextArea, TextField, useAction, violationOf } from '../../components/Form.tsx';
import { Section } from '../../components/Page.tsx';
import { SnippetOutput } from '../../components/SnippetOutput.tsx';
import { InputsForm } from './InputsForm.tsx';

export type Snippet = Schemas['Snippet'];
type Purpose = Snippet['purpose'];

/** What the form writes: the fields of POST /v1/snippets a person sets (agents set the others). */
export interface SnippetFields {
  name: string;
  description: string | null;
  display_type: DisplayType;
  purpose: Purpose;
  code: string;
  inputs: InputDeclaration[];
}

const PURPOSES: Purpose[] = ['general', 'widget', 'reactive_read', 'prepared_action'];

export const EXAMPLE_CODE = `// \`inputs\` holds this run's inputs; platform.request calls the API as you.
const res = await platform.request({ method: 'GET', path: '/v1/clusters' });
return res.body.data.map((c) => ({ name: c.name, state: c.state }));
`;

export function fieldsOfSnippet(s: Snippet | undefined): SnippetFields {
  if (!s) return { name: '', description: null, display_type: 'table', purpose: 'general', code: EXAMPLE_CODE, inputs: [] };
  return { name: s.name, description: s.description, display_type: s.display_type, purpose: s.purpose, code: s.code, inputs: s.inputs };
}

/** The fields that differ from `base`: what a PATCH sends (code and inputs only when changed). */
export function changesFrom(base: SnippetFields, next: SnippetFields): Partial<SnippetFields> {
  const out: Partial<SnippetFields> = {};
  for (const key of Object.keys(next) as (keyof SnippetFields)[]) {
    if (JSON.stringify(next[key]) !== JSON.stringify(base[key])) (out as Record<string, unknown>)[key] = next[key];
  }
  return out;
}

const SHOWN = ['body.name', 'body.description', 'body.display_type', 'body.purpose', 'body.code'];

export function SnippetForm(props: { initial: SnippetFields; submitLabel: string; busy: boolean; error: ApiError | undefined; onSave: (fields: SnippetFields) => void; onCancel?: () => void }) {
  const init = props.initial;
  const [name, setName] = useState(init.name);
  const [description, setDescription] = useState(init.description ?? '');
  const [displayType, setDisplayType] = useState<DisplayType>(init.display_type);
  const [purpose, setPurpose] = useState<Purpose>(init.purpose);
  const [code, setCode] = useState(init.code);
  const [inputsText, setInputsText] = useState(declarationsText(init.inputs));
  const [inputsError, setInputsError] = useState<string | undefined>(undefined);
  const parsed = parseDeclarations(inputsText);

  function submit(e: Event) {
    e.preventDefault();
    if (!parsed.ok) {
      setInputsError(parsed.error);
      return;
    }
    setInputsError(undefined);
    props.onSave({ name, description: description.trim() === '' ? null : description, display_type: displayType, purpose, code, inputs: parsed.value });
  }

  const violations = props.error?.violations() ?? new Map<string, string>();
  const shown = [...SHOWN, ...[...violations.keys()].filter((f) => f.startsWith('body.inputs'))];
  return (
    <>
      <form class="card form" onSubmit={submit} noValidate>
        <ErrorNotice error={props.error} shownFields={shown} title="The snippet was not saved." />
        <TextField label="Name" required maxLength={100} value={name} onValue={setName} error={violationOf(props.error, 'body.name')} />
        <TextArea label="Description" rows={2} value={description} onValue={setDescription} hint="Optional, at most 500 characters." error={violationOf(props.error, 'body.description')} />
        <SelectField
          label="Display as"
          value={displayType}
          onValue={(v) => setDisplayType(v as DisplayType)}
          options={DISPLAY_TYPES}
          hint="Table: a list of objects, one row each. Stat: one value, or {value, label}. JSON: any value. Logs: the console lines."
          error={violationOf(props.error, 'body.display_type')}
        />
        <SelectField label="Purpose" value={purpose} onValue={(v) => setPurpose(v as Purpose)} options={PURPOSES.map((p) => [p, humanState(p)])} error={violationOf(props.error, 'body.purpose')} />
        <TextArea
          label="Code"
          code
          required
          rows={12}
          value={code}
          onValue={setCode}
          hint="The body of an async JavaScript function: read inputs.<key>, log with console, call the API with await platform.request({method, path, query, body}); what it returns is the output."
          error={violationOf(props.error, 'body.code')}
        />
        <TextArea
          label="Inputs"
          code
          rows={6}
          value={inputsText}
          onValue={(v) => {
            setInputsText(v);
            setInputsError(undefined);
          }}
          hint={'JSON: a list of {"key", "label", "kind"} (kind: text, number, boolean, enum with "options", time_range, resource with "resource_type"), each with optional "description", "required", "default", "min", "max". [] for none.'}
          error={inputsError ?? declarationsViolation(violations)}
        />
        <div class="actions">
          <button class="primary" type="submit" disabled={props.busy}>
            {props.submitLabel}
          </button>
          {props.onCancel && (
            <button type="button" onClick={props.onCancel}>
              Cancel
            </button>
          )}
        </div>
      </form>
      <TryCode code={code} declarations={parsed.ok ? parsed.value : []} displayType={displayType} />
    </>
  );
}

/** The form's code run once as it stands, nothing saved: what "Try it" shows. */
function TryCode(props: { code: string; declarations: InputDeclaration[]; displayType: DisplayType }) {
  const action = useAction();
  const [result, setResult] = useState<Schemas['SnippetExecuteResult'] | null>(null);
  async function run(inputs: Record<string, unknown>) {
    const got = await action.run(() => ok(client.POST('/v1/snippets:execute', { body: { code: props.code, inputs } })));
    if (got) setResult(got);
  }
  return (
    <Section title="Try it">
      <p class="muted">Runs the code above once with these inputs, without saving anything. It acts with your rights and counts against the daily run quota.</p>
      <ErrorNotice error={action.error} shownFields={props.declarations.map((d) => `body.inputs.${d.key}`)} title="The code did not run." />
      <InputsForm label="Try it" declarations={props.declarations} submitLabel="Run without saving" busy={action.busy} error={action.error} onRun={(inputs) => void run(inputs)} disabled={props.code.trim() === '' ? 'Write some code first.' : undefined} />
      {result && (
        <div aria-live="polite">
          <h3>Output</h3>
          <SnippetOutput displayType={props.displayType} output={result.output} logs={result.logs} error={result.error} label="Output of the try" />
        </div>
      )}
    </Section>
  );
}
