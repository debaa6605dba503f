// The offer form's fields, shared by "New offer" and the edit form of an unused offer: title,
// price (in currency units) with currency and interval, paid or test, compute mode, the field
// values (OfferValues), allowed emails, max uses (or unlimited), the order TTL, who it is for,
// and the notes. lib/commerce.ts turns the texts into the API's body.
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import type { ApiError } from '../../lib/api.ts';
import { offerFields, type OfferFieldsBody, type OfferProblems, type OfferTexts } from '../../lib/commerce.ts';
import { useOfferValues, type OfferFieldValues } from './OfferValues.tsx';
import { CheckboxField, SelectField, TextArea, TextField, violationOf } from '../../components/Form.tsx';
import { Section } from '../../components/Page.tsx';

/** The API fields the form shows at its own fields (the rest go to the form's error notice). */
export const OFFER_FIELDS = ['body.title', 'body.pricing.unit_amount', 'body.max_uses', 'body.order_ttl_minutes', 'body.allowed_emails', 'body.notes', 'body.internal_note'];

export function OfferFormFields(props: { texts: OfferTexts; set: (t: OfferTexts) => void; problems: OfferProblems; error: ApiError | undefined; values: JSX.Element }) {
  const { texts: t, problems: p, error } = props;
  const set = <K extends keyof OfferTexts>(k: K) => (v: OfferTexts[K]) => props.set({ ...t, [k]: v });
  const bad = (field: keyof OfferProblems, api: string) => p[field] ?? violationOf(error, api);
  return (
    <>
      <Section title="What the customer sees">
        <div class="form">
          <TextField label="Title" required maxLength={200} value={t.title} onValue={set('title')} error={bad('title', 'body.title')} />
          <div class="filters">
            <TextField label="Price" required value={t.price} onValue={set('price')} hint="In currency units, such as 49.90." error={bad('price', 'body.pricing.unit_amount')} />
            <SelectField label="Currency" value={t.currency} onValue={(v) => set('currency')(v as OfferTexts['currency'])} options={[['eur', 'EUR (€)'], ['usd', 'USD ($)']]} />
            <SelectField label="Billed" value={t.interval} onValue={(v) => set('interval')(v as OfferTexts['interval'])} options={[['one_time', 'Once'], ['month', 'Every month'], ['year', 'Every year']]} />
          </div>
          <SelectField
            label="Payment"
            value={t.commercial_mode}
            onValue={(v) => set('commercial_mode')(v as OfferTexts['commercial_mode'])}
            options={[['paid', 'Paid: the customer pays at checkout'], ['non_billable_test', 'Test: nothing is charged']]}
          />
          <SelectField
            label="Where it runs"
            value={t.compute_mode}
            onValue={(v) => set('compute_mode')(v as OfferTexts['compute_mode'])}
            options={[['platform', 'A cluster the service prepares'], ['bring_your_own', 'The customer’s own server']]}
          />
          <TextArea label="Notes for the customer" rows={3} value={t.notes} onValue={set('notes')} error={violationOf(error, 'body.notes')} hint="Shown on the offer's page. At most 500 characters." />
        </div>
      </Section>
      <Section title="Configuration">
        <p class="muted">Pre-fill the package's inputs; a locked value is fixed for the customer. Leave a field empty to let the customer choose.</p>
        <div class="form">{props.values}</div>
      </Section>
      <Section title="Who and how often">
        <div class="form">
          <TextField label="For (customer name)" maxLength={200} value={t.customer_name} onValue={set('customer_name')} />
          <TextArea label="Allowed emails" rows={3} value={t.allowed_emails} onValue={set('allowed_emails')} error={violationOf(error, 'body.allowed_emails')} hint="One per line. Empty: anyone with the link may order." />
          <CheckboxField label="Unlimited uses" checked={t.unlimited} onValue={set('unlimited')} />
          {!t.unlimited && <TextField label="Max uses" type="number" min={1} max={10000} step={1} value={t.max_uses} onValue={set('max_uses')} error={bad('max_uses', 'body.max_uses')} />}
          <TextField
            label="Order time limit (minutes)"
            type="number"
            min={1}
            max={1440}
            step={1}
            value={t.order_ttl_minutes}
            onValue={set('order_ttl_minutes')}
            hint="An order not finished within this time ends."
            error={bad('order_ttl_minutes', 'body.order_ttl_minutes')}
          />
          <TextArea label="Internal note" rows={2} value={t.internal_note} onValue={set('internal_note')} error={violationOf(error, 'body.internal_note')} hint="Seen only by your workspace's members." />
        </div>
      </Section>
    </>
  );
}

export interface OfferForm {
  texts: OfferTexts;
  setTexts: (t: OfferTexts) => void;
  /** The form's fields and values, or undefined after showing what is wrong at each field. */
  check: () => { fields: OfferFieldsBody; values: OfferFieldValues } | undefined;
  /** `schemaLoaded` false: the values' part says the version is loading. */
  view: (error: ApiError | undefined, schemaLoaded: boolean) => JSX.Element;
}

/** The form's state: its texts, the field values of `schema` (`key` starts them over), the checks. */
export function useOfferForm(initial: () => OfferTexts, schema: unknown, given: OfferFieldValues | undefined, key: unknown): OfferForm {
  const [texts, setTexts] = useState<OfferTexts>(initial);
  const [problems, setProblems] = useState<OfferProblems>({});
  const values = useOfferValues(schema, given, key);
  return {
    texts,
    setTexts,
    check() {
      const fields = offerFields(texts);
      const fieldValues = values.check();
      setProblems(fields.ok ? {} : fields.problems);
      return fields.ok && fieldValues ? { fields: fields.body, values: fieldValues } : undefined;
    },
    view: (error, schemaLoaded) => (
      <OfferFormFields texts={texts} set={setTexts} problems={problems} error={error} values={schemaLoaded ? values.view(error) : <p aria-busy="true">Loading the version…</p>} />
    ),
  };
}
