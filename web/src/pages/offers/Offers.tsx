// Offers (API.md 8.7): the workspace's list (filter: status) and "New offer" (owners and admins):
// a package (its latest release, or an exact version), the form of OfferForm, and the field values
// made from that version's input schema. Created with an idempotency-key, then its page opens.
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { idempotencyKey } from '../../lib/idempotency.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { chosenVersion, LATEST, versionOptions } from '../../lib/install-form.ts';
import { createBodyOf, NEW_OFFER, OFFER_STATUSES, priceWords, type Offer } from '../../lib/commerce.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField, useAction, violationOf } from '../../components/Form.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { useDeployNames } from '../installs/Installs.tsx';
import { OFFER_FIELDS, useOfferForm } from './OfferForm.tsx';

export function OfferList(_props: { path?: string }) {
  const [status, setStatus] = useState('');
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  return (
    <Page
      title="Offers"
      subtitle="Priced links that let a customer order one of your packages and receive it installed in their own workspace."
      actions={admin ? <a class="button primary" href="/offers/new">New offer</a> : <span class="muted small">Making offers needs the admin or owner role.</span>}
    >
      <div class="filters">
        <SelectField label="Status" value={status} onValue={setStatus} options={OFFER_STATUSES} />
      </div>
      <ListView<Offer>
        label="Offers"
        deps={[status]}
        load={(cursor, limit) => ok(client.GET('/v1/offers', { params: { query: { cursor, limit, status: (status || undefined) as Offer['status'] | undefined } } }))}
        rowKey={(o) => o.id}
        columns={[
          { label: 'Title', cell: (o) => <a href={`/offers/${o.id}`}>{o.title}</a> },
          { label: 'Price', cell: (o) => priceWords(o.pricing, o.commercial_mode === 'non_billable_test') },
          { label: 'Status', cell: (o) => <StateBadge state={o.status} /> },
          { label: 'Uses', cell: (o) => `${o.uses} of ${o.max_uses ?? 'unlimited'}` },
          { label: 'For', cell: (o) => o.customer?.display_name ?? <span class="muted">Anyone with the link</span> },
        ]}
        empty={status ? <p>No offer has this status.</p> : <p>No offers yet.{admin && <> <a href="/offers/new">Make one</a> to sell a package.</>}</p>}
      />
    </Page>
  );
}

export function NewOffer(_props: { path?: string }) {
  const names = useDeployNames();
  const { route } = useLocation();
  const [packageId, setPackageId] = useState('');
  const [choice, setChoice] = useState(LATEST);
  const [key] = useState(idempotencyKey);
  const action = useAction();
  const sellable = names.packages.filter((p) => p.latest_version !== null);
  useEffect(() => {
    if (!packageId && sellable[0]) setPackageId(sellable[0].id);
  }, [names.packages]);
  const pkg = names.packages.find((p) => p.id === packageId);
  const versions = useApi(
    () => (packageId ? ok(client.GET('/v1/packages/{id}/versions', { params: { path: { id: packageId }, query: { limit: 100 } } })).then((p) => p.data) : Promise.resolve([])),
    [packageId],
  );
  const version = chosenVersion(versions.data ?? [], choice, pkg?.latest_version ?? null);
  const form = useOfferForm(() => NEW_OFFER, version?.input_schema, undefined, version?.id);

  async function submit(e: Event) {
    e.preventDefault();
    action.clear();
    const checked = form.check();
    if (!checked || !version) return;
    const which = choice === LATEST ? { package_id: packageId } : { package_version_id: version.id };
    const body = { ...createBodyOf(checked.fields), ...which, ...(Object.keys(checked.values).length ? { field_values: checked.values } : {}) };
    const made = await action.run(() => ok(client.POST('/v1/offers', { body, params: { header: { 'idempotency-key': key } } })));
    if (made) route(`/offers/${made.id}`);
  }

  const loading = !names.error && !names.loaded;
  return (
    <Page title="New offer" breadcrumb={['Offers', '/offers']}>
      <NeedsRole need="admin" what="make offers">
        <ErrorNotice error={names.error ?? versions.error} title="The packages could not be loaded." />
        {loading ? (
          <p aria-busy="true">Loading…</p>
        ) : sellable.length === 0 ? (
          <p class="card">
            No package has a released version yet. <a href="/packages">Publish a version of a package</a> first.
          </p>
        ) : (
          <form class="form" onSubmit={submit} noValidate>
            <ErrorNotice error={action.error} shownFields={[...OFFER_FIELDS, 'body.package_id', 'body.package_version_id']} title="The offer was not made." />
            <Section title="Package">
              <div class="form">
                <SelectField label="Package" required value={packageId} onValue={setPackageId} options={sellable.map((p) => [p.id, p.name])} error={violationOf(action.error, 'body.package_id')} />
                <SelectField
                  label="Version"
                  value={choice}
                  onValue={setChoice}
                  options={versionOptions(versions.data ?? [], pkg?.latest_version ?? null)}
                  hint="The latest release: the version released when the customer orders. A version number: exactly that one."
                  error={violationOf(action.error, 'body.package_version_id')}
                />
              </div>
            </Section>
            {form.view(action.error, Boolean(version))}
            <button class="primary" type="submit" disabled={action.busy || !version}>
              Make offer
            </button>
          </form>
        )}
      </NeedsRole>
    </Page>
  );
}
