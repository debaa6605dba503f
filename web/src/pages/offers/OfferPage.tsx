// An offer's page (its html_url, /offers/{id}): its facts, the customer's link with Copy, its
// status and uses, its drafts (GET /v1/order_drafts?offer=) and orders, the edit form while no
// draft used it (PATCH with if-match; a 409 reloads it and offers to apply again), and Archive /
// Restore (DELETE and :undelete, with if-match).
import { useState } from 'preact/hooks';
import { client, ok } from '../../lib/api.ts';
import { useRecord } from '../../lib/useRecord.ts';
import { useSession } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { PHASE_WORDS, priceWords, type AnyDraft, type Offer } from '../../lib/commerce.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { CopyValue } from '../../components/CopyValue.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { useAction } from '../../components/Form.tsx';
import { ListView } from '../../components/ListView.tsx';
import { OrdersTable } from '../orders/Orders.tsx';
import { EditOffer } from './EditOffer.tsx';

type Lifecycle = 'archive' | 'restore';

function lifecycle(what: Lifecycle, o: Offer): Promise<Offer> {
  const params = { path: { id: o.id }, header: { 'if-match': o.etag } };
  return what === 'archive' ? ok(client.DELETE('/v1/offers/{id}', { params })) : ok(client.POST('/v1/offers/{id}:undelete', { params }));
}

function Drafts(props: { offerId: string }) {
  return (
    <ListView<AnyDraft>
      label="Order drafts"
      deps={[props.offerId]}
      load={(cursor, limit) => ok(client.GET('/v1/order_drafts', { params: { query: { cursor, limit, offer: props.offerId } } }))}
      rowKey={(d) => d.id}
      columns={[
        { label: 'Draft', cell: (d) => <a href={`/order_drafts/${d.id}`}>{d.customer_email ?? d.id}</a> },
        { label: 'Phase', cell: (d) => PHASE_WORDS[d.status] },
        { label: 'Started', cell: (d) => <Time at={d.created_at} /> },
      ]}
      empty={<p>Nobody has started an order yet.</p>}
    />
  );
}

export function OfferPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const offer = useRecord(id, () => ok(client.GET('/v1/offers/{id}', { params: { path: { id } } })));
  const admin = roleAtLeast(useSession().workspace?.role, 'admin');
  const action = useAction();
  const [last, setLast] = useState<Lifecycle | null>(null);
  const [confirming, setConfirming] = useState(false);
  const o = offer.data;
  if (offer.error) {
    return (
      <Page title="Offer" breadcrumb={['Offers', '/offers']}>
        <ErrorNotice error={offer.error} title="The offer could not be loaded." />
      </Page>
    );
  }
  if (!o) return <p aria-busy="true">Loading…</p>;

  async function act(what: Lifecycle, current: Offer) {
    setConfirming(false);
    setLast(what);
    const done = await action.run(() => lifecycle(what, current));
    if (done) offer.set(done);
  }

  const archived = o.status === 'archived';
  const values = Object.entries(o.field_values);
  return (
    <Page
      title={o.title}
      subtitle={<>Offer · <StateBadge state={o.status} /></>}
      breadcrumb={['Offers', '/offers']}
      actions={
        admin &&
        (archived ? (
          <button type="button" class="primary" disabled={action.busy} onClick={() => void act('restore', o)}>
            Restore
          </button>
        ) : (
          <button type="button" class="danger" disabled={action.busy} onClick={() => setConfirming(true)}>
            Archive
          </button>
        ))
      }
    >
      <Conflict error={action.error} what="The offer" onReload={() => offer.reload()} onReapply={() => last && void act(last, o)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} />}
      {!archived && (
        <CopyValue label="Customer link" value={o.url}>
          <p>Send this link to the customer: it shows the offer and lets them order.</p>
        </CopyValue>
      )}
      <Section title="Details">
        <Fields
          rows={[
            ['Status', <StateBadge state={o.status} />],
            ['Price', priceWords(o.pricing, o.commercial_mode === 'non_billable_test')],
            ['Payment', o.commercial_mode === 'paid' ? 'Paid at checkout' : 'Test: nothing is charged'],
            ['Where it runs', o.compute.mode === 'platform' ? 'A cluster the service prepares' : 'The customer’s own server'],
            ['Package', o.package_version_id ? <a href={`/packages/${o.package_id}/versions/${o.package_version_id}`}>An exact version</a> : <a href={`/packages/${o.package_id}`}>Its latest release</a>],
            ['Uses', `${o.uses} of ${o.max_uses ?? 'unlimited'}`],
            ['Orders', String(o.orders_count)],
            ['For', o.customer?.display_name ?? 'Anyone with the link'],
            ['Allowed emails', o.allowed_emails ? o.allowed_emails.join(', ') : 'Anyone'],
            ['Order time limit', `${o.order_ttl_minutes} minutes`],
            ['Link works until', <Time at={o.expires_at} empty="No end" until />],
            ['Notes for the customer', o.notes ?? undefined],
            ['Internal note', o.internal_note ?? undefined],
            ['Created', <Time at={o.created_at} />],
            ['Archived', o.archived_at ? <Time at={o.archived_at} /> : undefined],
          ]}
        />
        {values.length > 0 && (
          <>
            <h3>Configuration</h3>
            <Fields rows={values.map(([k, v]) => [k, <>{typeof v.value === 'string' ? v.value : <Code>{JSON.stringify(v.value)}</Code>} <span class="muted small">{v.locked ? 'locked' : 'pre-filled'}</span></>])} />
          </>
        )}
      </Section>
      {admin && o.uses === 0 && o.orders_count === 0 && !archived && (
        <Section title="Edit">
          <details>
            <summary>Change the offer</summary>
            <EditOffer offer={o} reload={offer.reload} onSaved={offer.set} />
          </details>
        </Section>
      )}
      <Section title="Order drafts">
        <Drafts offerId={o.id} />
      </Section>
      <Section title="Orders">
        <OrdersTable offerId={o.id} />
      </Section>
      <Confirm open={confirming} title={`Archive ${o.title}?`} confirmLabel="Archive offer" danger onConfirm={() => void act('archive', o)} onCancel={() => setConfirming(false)}>
        <p>Its link stops working and unpaid orders of it end. Paid orders are delivered as before. You can restore it later.</p>
      </Confirm>
    </Page>
  );
}
