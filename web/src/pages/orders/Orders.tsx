// Orders (API.md 8.7): the seller's list (filter: delivery status; the offer page shows its own),
// and an order's page, /orders/{id} (its html_url): status, amount, customer, the delivery (the
// install's page, its URLs, the install operation) and the next renewal of a recurring order.
// The seller reads with svc-context; an order's customer, who is not a member of the seller's
// workspace, reads their own without it.
import { useState } from 'preact/hooks';
import { client, ok, personalClient, type ApiError } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useSession } from '../../lib/session.tsx';
import { ORDER_STATUS_WORDS, priceWords, type Order } from '../../lib/commerce.ts';
import { ListView } from '../../components/ListView.tsx';
import { Page, Section } from '../../components/Page.tsx';
import { Code, Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { SelectField } from '../../components/Form.tsx';
import { usePoll } from '../../lib/usePoll.ts';
import { UrlLink } from '../installs/Installs.tsx';

const TONES: Record<Order['status'], string> = { delivery_pending: 'pending', delivery_running: 'running', delivered: 'succeeded', delivery_failed: 'failed' };

const STATUS_OPTIONS: [string, string][] = [['', 'Any status'], ...(Object.entries(ORDER_STATUS_WORDS) as [string, string][])];

function OrderState(props: { order: Order }) {
  return <StateBadge state={TONES[props.order.status]} label={ORDER_STATUS_WORDS[props.order.status]} />;
}

export function OrdersTable(props: { offerId?: string; status?: Order['status'] }) {
  return (
    <ListView<Order>
      label="Orders"
      deps={[props.offerId, props.status]}
      load={(cursor, limit) => ok(client.GET('/v1/orders', { params: { query: { cursor, limit, offer: props.offerId, status: props.status } } }))}
      rowKey={(o) => o.id}
      columns={[
        { label: 'Order', cell: (o) => <a href={`/orders/${o.id}`}>{o.id}</a> },
        { label: 'Status', cell: (o) => <OrderState order={o} /> },
        { label: 'Amount', cell: (o) => priceWords({ unit_amount: o.amount, currency: o.currency, interval: o.interval }) },
        { label: 'Committed', cell: (o) => <Time at={o.committed_at} /> },
      ]}
      empty={props.status ? <p>No order has this status.</p> : <p>No orders yet.</p>}
    />
  );
}

export function OrderList(_props: { path?: string }) {
  const [status, setStatus] = useState('');
  return (
    <Page title="Orders" subtitle="What customers ordered from your offers, and the installs delivered to them.">
      <div class="filters">
        <SelectField label="Status" value={status} onValue={setStatus} options={STATUS_OPTIONS} />
      </div>
      <OrdersTable status={(status || undefined) as Order['status'] | undefined} />
    </Page>
  );
}

/** The seller's view in the current workspace, else the person's own order as its customer. */
async function loadOrder(id: string): Promise<{ order: Order; seller: boolean }> {
  try {
    return { order: await ok(client.GET('/v1/orders/{id}', { params: { path: { id } } })), seller: true };
  } catch (err) {
    if ((err as ApiError).code !== 'NOT_FOUND') throw err;
    return { order: await ok(personalClient.GET('/v1/orders/{id}', { params: { path: { id } } })), seller: false };
  }
}

export function OrderPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const { workspace } = useSession();
  const loaded = useApi(() => loadOrder(id), [id, workspace?.id]);
  const o = loaded.data?.order;
  usePoll(loaded.reload, 2000, Boolean(o && (o.status === 'delivery_pending' || o.status === 'delivery_running')));
  if (loaded.error) {
    return (
      <Page title="Order" breadcrumb={['Orders', '/orders']}>
        <ErrorNotice error={loaded.error} title="The order could not be loaded." />
      </Page>
    );
  }
  if (!o) return <p aria-busy="true">Loading…</p>;
  const seller = loaded.data!.seller;
  const d = o.delivery;
  return (
    <Page title={`Order ${o.id}`} subtitle={<OrderState order={o} />} breadcrumb={seller ? ['Orders', '/orders'] : undefined}>
      <Section title="Details">
        <Fields
          rows={[
            ['Status', <OrderState order={o} />],
            ['Amount', priceWords({ unit_amount: o.amount, currency: o.currency, interval: o.interval })],
            ['Offer', seller ? <a href={`/offers/${o.offer_id}`}>{o.offer_id}</a> : <Code>{o.offer_id}</Code>],
            ['Order draft', <a href={`/order_drafts/${o.order_draft_id}`}>{o.order_draft_id}</a>],
            ['Customer', <Code>{o.customer_user_id}</Code>],
            ['Customer workspace', <Code>{o.customer_workspace_id}</Code>],
            ['Paid through', o.payment_provider === 'none' ? 'Nothing to pay' : o.payment_provider],
            ['Committed', <Time at={o.committed_at} />],
            ['Next renewal', o.interval === 'one_time' ? undefined : <Time at={o.next_renewal_at} empty="None" />],
            ['Renewals', o.interval === 'one_time' ? undefined : String(o.renewals)],
          ]}
        />
      </Section>
      <Section title="Delivery">
        <Fields
          rows={[
            // In the customer's workspace: the seller opens them only when they are a member there too.
            ['Install', d.install_id ? <a href={`/installs/${d.install_id}`}>{d.install_id}</a> : 'Not started yet'],
            ['Operation', d.install_operation_id ? <a href={`/operations/${d.install_operation_id}`}>{d.install_operation_id}</a> : undefined],
            ['Started', <Time at={d.started_at} empty="Not yet" />],
            ['Completed', <Time at={d.completed_at} empty="Not yet" />],
          ]}
        />
        {d.urls.length > 0 && (
          <ul class="plain-list" aria-label="Delivered URLs">
            {d.urls.map((u) => (
              <li key={u.route_key}>
                <UrlLink url={u.url} />
              </li>
            ))}
          </ul>
        )}
      </Section>
    </Page>
  );
}
