// An order draft's page, /order_drafts/{id} (its html_url; API.md 8.7). Its customer (read as the
// person, without svc-context) goes through the wizard here, one phase at a time; a member of the
// seller's workspace (read with svc-context) sees the seller's view, read-only, with Revoke. The
// page reads the draft again every second while the service moves it on (compute, install,
// cleaning up, a payment being confirmed after the checkout page sent the person back).
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { client, ok, personalClient, type ApiError } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { usePoll } from '../../lib/usePoll.ts';
import { useSession } from '../../lib/session.tsx';
import { cancellable, isCustomerView, moving, phasesOf, PHASE_WORDS, priceWords, TERMINATION_WORDS, type AnyDraft, type CustomerDraft } from '../../lib/commerce.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Fields, Code } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { useAction } from '../../components/Form.tsx';
import { CustomerStep } from './DraftSteps.tsx';

/** How often the page reads the draft while the service moves it on. */
export const DRAFT_POLL_MS = 1000;

type Loaded = { view: 'customer'; draft: CustomerDraft } | { view: 'seller'; draft: AnyDraft; workspaceId: string };

/** The customer's view when the person is its customer, else the seller's in one of their workspaces. */
async function loadDraft(id: string, current: string | undefined, others: string[]): Promise<Loaded> {
  try {
    return { view: 'customer', draft: (await ok(personalClient.GET('/v1/order_drafts/{id}', { params: { path: { id } } }))) as CustomerDraft };
  } catch (err) {
    if ((err as ApiError).code !== 'NOT_FOUND') throw err;
    let last = err;
    for (const ws of [current, ...others.filter((w) => w !== current)].filter((w): w is string => Boolean(w))) {
      try {
        return { view: 'seller', draft: await ok(client.GET('/v1/order_drafts/{id}', { params: { path: { id }, header: { 'svc-context': ws } } })), workspaceId: ws };
      } catch (e) {
        if ((e as ApiError).code !== 'NOT_FOUND') throw e;
        last = e;
      }
    }
    throw last;
  }
}

/** A write of the wizard: its busy state and error, and the last one, to apply again after a 409. */
export interface Verb {
  busy: boolean;
  error: ApiError | undefined;
  run: (fn: (etag: string) => Promise<AnyDraft | undefined>) => Promise<void>;
}

function Phases(props: { draft: AnyDraft }) {
  const d = props.draft;
  if (d.status === 'auth' || d.status === 'cleaning_up' || d.status === 'terminated') return null;
  return (
    <ol class="wizard-steps" aria-label="Steps of the order">
      {phasesOf(d).map(([status, label], i) => (
        <li key={status} aria-current={status === d.status ? 'step' : undefined}>
          {i + 1}. {label}
        </li>
      ))}
    </ol>
  );
}

export function DraftPage(props: { id?: string; path?: string }) {
  const id = props.id!;
  const { workspace, workspaces, switchTo } = useSession();
  const { query } = useLocation();
  const loaded = useApi(() => loadDraft(id, workspace?.id, workspaces.map((w) => w.id)), [id]);
  const action = useAction();
  const [last, setLast] = useState<((etag: string) => Promise<AnyDraft | undefined>) | null>(null);
  const [confirming, setConfirming] = useState(false);
  const data = loaded.data;
  const d = data?.draft;
  const confirmingPayment = query.checkout === 'returned' && d?.status === 'payment' && !d.payment_completed;
  usePoll(loaded.reload, DRAFT_POLL_MS, Boolean(d && (moving(d) || confirmingPayment)));
  // A seller's draft found in another of the person's workspaces: the app moves there.
  const sellerWs = data?.view === 'seller' ? data.workspaceId : undefined;
  useEffect(() => {
    if (sellerWs && sellerWs !== workspace?.id) switchTo(sellerWs);
  }, [sellerWs]);

  if (loaded.error) {
    return (
      <Page title="Order">
        <ErrorNotice error={loaded.error} title="The order could not be loaded." />
      </Page>
    );
  }
  if (!data || !d) return <p aria-busy="true">Loading…</p>;

  const put = (draft: AnyDraft) => loaded.set(data.view === 'customer' ? { view: 'customer', draft: draft as CustomerDraft } : { ...data, draft });
  const verb: Verb = {
    busy: action.busy,
    error: action.error,
    async run(fn) {
      setLast(() => fn);
      const next = await action.run(() => fn(d.etag));
      if (next) put(next);
    },
  };
  const cancel = (etag: string) => {
    setConfirming(false);
    const params = { path: { id }, header: { 'if-match': etag } };
    return data.view === 'customer'
      ? ok(personalClient.POST('/v1/order_drafts/{id}:cancel', { params }))
      : ok(client.POST('/v1/order_drafts/{id}:cancel', { params: { ...params, header: { ...params.header, 'svc-context': data.workspaceId } } }));
  };
  const seller = data.view === 'seller';

  return (
    <Page
      title={seller ? 'Order draft' : 'Your order'}
      subtitle={<StateBadge state={d.status === 'done' ? 'completed' : d.status === 'terminated' ? 'canceled' : 'pending'} label={PHASE_WORDS[d.status]} />}
      breadcrumb={seller ? ['Offer', `/offers/${d.offer_id}`] : undefined}
      actions={
        cancellable(d) && (
          <button type="button" class="danger" disabled={action.busy} onClick={() => setConfirming(true)}>
            {seller ? 'Revoke' : 'Cancel order'}
          </button>
        )
      }
    >
      <Phases draft={d} />
      <Conflict error={action.error} what="The order" onReload={() => loaded.reload()} onReapply={() => last && void verb.run(last)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} />}
      {(d.status === 'cleaning_up' || d.status === 'terminated') && (
        <div class="notice notice-warn" role="status">
          <p>
            <strong>{d.termination_reason ? TERMINATION_WORDS[d.termination_reason] : 'The order ended.'}</strong>
          </p>
          {d.status === 'cleaning_up' && <p>Releasing what it held…</p>}
        </div>
      )}
      {data.view === 'customer' ? <CustomerStep draft={data.draft} verb={verb} confirmingPayment={confirmingPayment} /> : <SellerFacts draft={d} />}
      <Confirm
        open={confirming}
        title={seller ? 'Revoke this order?' : 'Cancel your order?'}
        confirmLabel={seller ? 'Revoke' : 'Cancel order'}
        danger
        onConfirm={() => void verb.run(cancel)}
        onCancel={() => setConfirming(false)}
      >
        <p>Nothing has been paid yet. What was prepared for it (its cluster) is released. This cannot be undone.</p>
      </Confirm>
    </Page>
  );
}

/** What a seller's member sees of a draft: every field but the customer's values. */
function SellerFacts(props: { draft: AnyDraft }) {
  const d = props.draft;
  return (
    <Section title="Details">
      <Fields
        rows={[
          ['Phase', PHASE_WORDS[d.status]],
          ['Customer', d.customer_email ?? 'Not signed in yet'],
          ['Amount', priceWords({ unit_amount: d.amount, currency: d.currency, interval: d.interval })],
          ['Cluster ready', d.compute_mode === 'platform' ? (d.cluster_ready ? 'Yes' : 'No') : undefined],
          ['Server joined', d.compute_mode === 'bring_your_own' ? (d.server_joined ? 'Yes' : 'No') : undefined],
          ['Paid', d.payment_completed ? 'Yes' : 'No'],
          ['Order', d.order ? <a href={`/orders/${d.order.id}`}>{d.order.id}</a> : undefined],
          ['Must be done by', <Time at={d.ttl_expires_at} />],
          ['ID', <Code>{d.id}</Code>],
          ['Created', <Time at={d.created_at} />],
          ['Updated', <Time at={d.updated_at} />],
        ]}
      />
      {isCustomerView(d) ? null : <p class="muted small">The customer's configuration is theirs: it is never shown to the seller.</p>}
    </Section>
  );
}
