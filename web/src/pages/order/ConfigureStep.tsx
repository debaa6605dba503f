// The configure step of an order draft: the offer's locked values as fixed, read-only rows, and a
// form made from the offer's input schema (GET /v1/offers:resolve: the locked keys are not in it),
// started from the draft's field_values (the offer's pre-fills). Without the offer's link at hand
// (the draft names its offer by id only), the values are edited as JSON instead.
import { useMemo, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ok, personalClient } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { offerLinkOf, type CustomerDraft } from '../../lib/commerce.ts';
import { parseJson } from '../../lib/schema-form.ts';
import { Section } from '../../components/Page.tsx';
import { Fields, Code } from '../../components/Fields.tsx';
import { TextArea } from '../../components/Form.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useInputs } from '../installs/InstallInputs.tsx';
import type { Verb } from './DraftPage.tsx';

const PREFIX = 'body.field_values';

function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function ConfigureStep(props: { draft: CustomerDraft; verb: Verb }) {
  const d = props.draft;
  const { query } = useLocation();
  const hash = query.offer ?? offerLinkOf(d.offer_id);
  const offer = useApi(() => (hash ? ok(personalClient.GET('/v1/offers:resolve', { params: { query: { short_hash: hash } } })) : Promise.resolve(undefined)), [hash]);
  const locked = new Set(d.locked_keys);
  const open = useMemo(() => Object.fromEntries(Object.entries(d.field_values).filter(([k]) => !locked.has(k))), [d.etag]);
  const inputs = useInputs(offer.data?.input_schema, open, PREFIX, d.etag);
  const [json, setJson] = useState(() => JSON.stringify(open, null, 2));
  const [jsonError, setJsonError] = useState<string | undefined>(undefined);
  const schemaKnown = Boolean(offer.data);

  async function submit(e: Event) {
    e.preventDefault();
    let values: Record<string, unknown> | undefined;
    if (schemaKnown) values = inputs.check();
    else {
      const parsed = parseJson(json);
      const ok = parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value);
      setJsonError(ok ? undefined : parsed.ok ? 'must be a JSON object ({ ... })' : parsed.error);
      if (ok) values = parsed.value as Record<string, unknown>;
    }
    if (!values) return;
    const body = { field_values: values };
    await props.verb.run((etag) => ok(personalClient.POST('/v1/order_drafts/{id}:submitConfiguration', { params: { path: { id: d.id }, header: { 'if-match': etag } }, body })));
  }

  return (
    <Section title="Configuration">
      <form class="form" onSubmit={submit} noValidate>
        {d.locked_keys.length > 0 && (
          <div>
            <h3>Set by the seller</h3>
            <Fields rows={d.locked_keys.map((k) => [k, <span class="locked-row"><Code>{show(d.field_values[k])}</Code><span class="muted small">fixed</span></span>])} />
          </div>
        )}
        <ErrorNotice error={offer.error} title="The offer's form could not be loaded." />
        {hash && !offer.data && !offer.error ? (
          <p aria-busy="true">Loading the form…</p>
        ) : schemaKnown ? (
          inputs.view(props.verb.error)
        ) : (
          <TextArea label="Your values (JSON)" code rows={8} value={json} onValue={setJson} error={jsonError} hint="The keys of the package's input schema and their values." />
        )}
        <button class="primary" type="submit" disabled={props.verb.busy}>
          Continue
        </button>
      </form>
    </Section>
  );
}
