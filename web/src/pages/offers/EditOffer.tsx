// Editing an offer nobody has used yet (PATCH /v1/offers/{id} with if-match): the offer form
// started from the offer, its field values from the schema of the version it sells (that exact
// version, or the package's latest release). A 409 reloads the offer, shows it and offers to apply
// the same change again; 422 OFFER_IN_USE once a draft used it.
import { useEffect, useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { changedFields, offerFields, textsOfOffer, type Offer, type OfferFieldsBody } from '../../lib/commerce.ts';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { useAction } from '../../components/Form.tsx';
import { OFFER_FIELDS, useOfferForm } from './OfferForm.tsx';
import type { OfferFieldValues } from './OfferValues.tsx';

/** The input schema of the version the offer sells now. */
async function schemaOf(o: Offer): Promise<unknown> {
  let versionId = o.package_version_id;
  if (!versionId) {
    const pkg = await ok(client.GET('/v1/packages/{id}', { params: { path: { id: o.package_id } } }));
    const list = await ok(client.GET('/v1/packages/{id}/versions', { params: { path: { id: o.package_id }, query: { limit: 100 } } }));
    return list.data.find((v) => v.semver === pkg.latest_version)?.input_schema;
  }
  const v = await ok(client.GET('/v1/packages/{id}/versions/{version_id}', { params: { path: { id: o.package_id, version_id: versionId } } }));
  return v.input_schema;
}

export function EditOffer(props: { offer: Offer; reload: () => Promise<void>; onSaved: (o: Offer) => void }) {
  const o = props.offer;
  const schema = useApi(() => schemaOf(o), [o.id]);
  const [pending, setPending] = useState<Partial<OfferFieldsBody & { field_values: OfferFieldValues }> | null>(null);
  const [unchanged, setUnchanged] = useState(false);
  const form = useOfferForm(() => textsOfOffer(o), schema.data, o.field_values as OfferFieldValues, schema.data ? 'loaded' : 'loading');
  const action = useAction();
  // A reload after a conflict shows the offer as it is now, but keeps the person's texts to apply again.
  useEffect(() => {
    if (!isConflict(action.error)) form.setTexts(textsOfOffer(o));
  }, [o.etag]);

  async function save(body: Partial<OfferFieldsBody & { field_values: OfferFieldValues }>, etag: string) {
    setPending(body);
    const saved = await action.run(() => ok(client.PATCH('/v1/offers/{id}', { params: { path: { id: o.id }, header: { 'if-match': etag } }, body })));
    if (saved) props.onSaved(saved);
  }

  async function submit(e: Event) {
    e.preventDefault();
    action.clear();
    const checked = form.check();
    if (!checked) return;
    // Compared with the offer as the form started from it: only what the person changed is sent.
    const started = offerFields(textsOfOffer(o));
    const before = { ...(started.ok ? started.body : {}), field_values: o.field_values };
    const body = changedFields(before, { ...checked.fields, field_values: checked.values });
    setUnchanged(Object.keys(body).length === 0);
    if (Object.keys(body).length) await save(body, o.etag);
  }

  return (
    <form class="form" onSubmit={submit} noValidate>
      <p class="muted">An offer can be changed until a customer starts an order with it.</p>
      <Conflict error={action.error} what="The offer" onReload={() => props.reload()} onReapply={() => pending && void save(pending, o.etag)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error ?? schema.error} shownFields={OFFER_FIELDS} title="The offer was not changed." />}
      {unchanged && <p role="status">Nothing was changed.</p>}
      {form.view(action.error, schema.data !== undefined)}
      <button class="primary" type="submit" disabled={action.busy}>
        Save changes
      </button>
    </form>
  );
}
