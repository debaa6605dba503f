// Plan and quotas: the workspace's subscription (plan, status, period, the change waiting for the
// period end), its quotas as bars, the catalog's plans with the move to each, cancel and
// reactivate, and the change requests made so far. Every change sends if-match with the
// subscription's etag and is an operation followed live; a 409 shows the current subscription and
// offers the change again. A downgrade or cancel applies at the period end; a plan is raised by the
// operator (SVC_BILLING=operator), which the plans' cards say, or (SVC_BILLING=payments) by paying:
// the raise answers a plan checkout and the browser goes to its payment page; back from it
// (?checkout=pck_…) the page says whether the payment arrived, and shows a raise still waiting.
import { useEffect, useState } from 'preact/hooks';
import { client, ok, type Schemas } from '../../lib/api.ts';
import { useApi } from '../../lib/useApi.ts';
import { useSession, useWorkspace } from '../../lib/session.tsx';
import { roleAtLeast } from '../../lib/roles.ts';
import { humanState } from '../../lib/format.ts';
import { Page, Section } from '../../components/Page.tsx';
import { Fields } from '../../components/Fields.tsx';
import { Time } from '../../components/Time.tsx';
import { StateBadge } from '../../components/StateBadge.tsx';
import { ErrorNotice } from '../../components/ErrorNotice.tsx';
import { useAction } from '../../components/Form.tsx';
import { Confirm } from '../../components/Confirm.tsx';
import { Conflict, isConflict } from '../../components/Conflict.tsx';
import { OperationLive, type Operation } from '../../components/OperationLive.tsx';
import { QuotaBars } from '../../components/QuotaBars.tsx';
import { NeedsRole } from '../../components/RoleNote.tsx';
import { ListView } from '../../components/ListView.tsx';
import { Plans } from './Plans.tsx';

type Subscription = Schemas['Subscription'];
type ChangeRequest = Schemas['SubscriptionChangeRequest'];
type Tier = 'free' | 'pro' | 'enterprise';

/** A change the person asked for: what the dialog says, and the call that makes it. */
export interface Change {
  title: string;
  explain: string;
  confirmLabel: string;
  danger?: boolean;
  call: { kind: 'changeTier'; tier: string } | { kind: 'cancel' } | { kind: 'reactivate' };
}

const KIND_WORDS: Record<ChangeRequest['kind'], string> = { upgrade: 'Upgrade', downgrade: 'Downgrade', cancel: 'Cancel' };

export function PlanPage(_props: { path?: string }) {
  const ws = useWorkspace();
  const { refreshWorkspaces } = useSession();
  const sub = useApi(() => ok(client.GET('/v1/workspaces/{id}/subscription', { params: { path: { id: ws.id } } })), [ws.id]);
  const plans = useApi(() => ok(client.GET('/v1/plans', {})), []);
  const quotas = useApi(() => ok(client.GET('/v1/quotas', {})), [ws.id]);
  const settings = useApi(() => ok(client.GET('/v1/auth/settings', {})), []);
  const [asking, setAsking] = useState<Change | undefined>(undefined);
  const [last, setLast] = useState<Change | undefined>(undefined);
  const [op, setOp] = useState<Operation | undefined>(undefined);
  const [requestsKey, setRequestsKey] = useState(0);
  const action = useAction();
  const mayChange = roleAtLeast(ws.role, 'admin');
  /** back from the payment page: the plan checkout it paid (or gave up) */
  const returned = new URLSearchParams(location.search).get('checkout');
  const back = useApi(
    () => (returned?.startsWith('pck_') ? ok(client.GET('/v1/workspaces/{id}/subscription/checkouts/{checkout_id}', { params: { path: { id: ws.id, checkout_id: returned } } })) : Promise.resolve(null)),
    [ws.id, returned],
  );
  // The provider's confirmation may reach the service a moment after the browser: look again a few times.
  const [looks, setLooks] = useState(0);
  useEffect(() => {
    if (back.data?.state !== 'open' || looks >= 10) return;
    const timer = setTimeout(() => {
      setLooks((n) => n + 1);
      void back.reload();
      void sub.reload();
    }, 1000);
    return () => clearTimeout(timer);
  }, [back.data, looks]);

  /** Sends the change with the etag of the subscription as the page shows it now. */
  function apply(change: Change, s: Subscription) {
    setAsking(undefined);
    setLast(change);
    const params = { path: { id: ws.id }, header: { 'if-match': s.etag } };
    return action.run(async () => {
      const c = change.call;
      const answer =
        c.kind === 'changeTier'
          ? await ok(client.POST('/v1/workspaces/{id}/subscription:changeTier', { params, body: { tier: c.tier as Tier } }))
          : c.kind === 'cancel'
            ? await ok(client.POST('/v1/workspaces/{id}/subscription:cancel', { params }))
            : await ok(client.POST('/v1/workspaces/{id}/subscription:reactivate', { params }));
      // SVC_BILLING=payments: a raise answers a plan checkout; pay at the provider's page
      if ('checkout_url' in answer) {
        if (answer.checkout_url) location.assign(answer.checkout_url);
        return;
      }
      setOp(answer);
    });
  }
  function done() {
    void sub.reload();
    void quotas.reload();
    setRequestsKey((k) => k + 1);
    void refreshWorkspaces();
  }

  const s = sub.data;
  const planName = (tier: string) => plans.data?.data.find((p) => p.tier === tier)?.display_name ?? humanState(tier);
  const lowest = plans.data?.data[0]?.tier;

  return (
    <Page title="Plan and quotas" subtitle={`What ${ws.name} may use, and its subscription.`}>
      <Conflict error={action.error} what="The subscription" onReload={sub.reload} onReapply={() => last && s && apply(last, s)} busy={action.busy} />
      {!isConflict(action.error) && <ErrorNotice error={action.error} title="The plan was not changed." />}
      {op && <OperationLive key={op.id} id={op.id} initial={op} title="Plan change" onDone={done} />}
      {back.data && <Returned checkout={back.data} planName={planName} />}
      <Section title="Subscription">
        {sub.error ? (
          <ErrorNotice error={sub.error} title="The subscription could not be loaded." />
        ) : !s ? (
          <p aria-busy="true">Loading…</p>
        ) : (
          <>
            <Fields
              rows={[
                ['Plan', planName(s.tier)],
                ['Status', <StateBadge state={s.status} />],
                ['Current period', <>from <Time at={s.current_period_start} /> to <Time at={s.current_period_end} /></>],
                ['Billed by', s.billed_by === 'platform' ? 'The operator of this service' : 'The seller'],
                ...(s.pending_checkout
                  ? [[
                    'Waiting for payment',
                    <>
                      {planName(s.pending_checkout.tier)} until <Time at={s.pending_checkout.expires_at} until />:{' '}
                      <a href={s.pending_checkout.checkout_url}>Continue to payment</a>
                    </>,
                  ] as [string, preact.ComponentChildren]]
                  : []),
                [
                  'Waiting for the period end',
                  s.scheduled_change ? (
                    <>
                      {KIND_WORDS[s.scheduled_change.kind]} to {planName(s.scheduled_change.requested_tier)} on <Time at={s.scheduled_change.effective_at} />
                    </>
                  ) : (
                    'Nothing'
                  ),
                ],
              ]}
            />
            <NeedsRole need="admin" what="change the plan">
              <div class="actions">
                {s.scheduled_change && s.status === 'active' && (
                  <button type="button" disabled={action.busy} onClick={() => setAsking({ title: 'Withdraw the scheduled change?', explain: `${planName(s.tier)} stays after the period ends.`, confirmLabel: 'Withdraw change', call: { kind: 'changeTier', tier: s.tier } })}>
                    Withdraw the scheduled change
                  </button>
                )}
                {s.status === 'canceling' ? (
                  <button type="button" class="primary" disabled={action.busy} onClick={() => setAsking({ title: 'Reactivate the subscription?', explain: `The cancellation is withdrawn and ${planName(s.tier)} continues.`, confirmLabel: 'Reactivate', call: { kind: 'reactivate' } })}>
                    Reactivate
                  </button>
                ) : (
                  s.tier !== lowest && (
                    <button type="button" class="danger" disabled={action.busy} onClick={() => setAsking({ title: 'Cancel the subscription?', explain: `${ws.name} returns to ${planName(lowest ?? 'free')} at the end of the current period. It is refused now if the usage is above that plan's limits.`, confirmLabel: 'Cancel subscription', danger: true, call: { kind: 'cancel' } })}>
                      Cancel subscription
                    </button>
                  )
                )}
              </div>
            </NeedsRole>
          </>
        )}
      </Section>
      <Section title="Quotas">
        {quotas.error ? <ErrorNotice error={quotas.error} title="The quotas could not be loaded." /> : !quotas.data ? <p aria-busy="true">Loading…</p> : <QuotaBars quotas={quotas.data} plan={{ tier: s?.tier, planName }} />}
      </Section>
      <Section title="Plans">
        {plans.error ? (
          <ErrorNotice error={plans.error} title="The plans could not be loaded." />
        ) : !plans.data || !s || !settings.data ? (
          <p aria-busy="true">Loading…</p>
        ) : (
          <Plans plans={plans.data.data} subscription={s} quotas={quotas.data?.data ?? []} mayChange={mayChange} billing={settings.data.billing} busy={action.busy} onAsk={setAsking} />
        )}
      </Section>
      <Section title="Change requests">
        <ListView<ChangeRequest>
          label="Change requests"
          deps={[ws.id, requestsKey]}
          load={(cursor, limit) => ok(client.GET('/v1/workspaces/{id}/subscription/change_requests', { params: { path: { id: ws.id }, query: { cursor, limit } } }))}
          rowKey={(r) => r.id}
          columns={[
            { label: 'Change', cell: (r) => `${KIND_WORDS[r.kind]} from ${planName(r.previous_tier)} to ${planName(r.requested_tier)}` },
            { label: 'Status', cell: (r) => <><StateBadge state={r.status} />{r.status_reason && <span class="muted"> {r.status_reason}</span>}</> },
            { label: 'Takes effect', cell: (r) => <Time at={r.effective_at} /> },
            { label: 'Requested', cell: (r) => <Time at={r.created_at} /> },
            { label: 'Operation', cell: (r) => (r.operation_id ? <a href={`/operations/${r.operation_id}`}>Open<span class="visually-hidden"> the operation of the {r.kind} to {r.requested_tier}</span></a> : '—') },
          ]}
          empty={<p class="muted">No changes requested yet.</p>}
        />
      </Section>
      <Confirm open={asking !== undefined} title={asking?.title ?? ''} confirmLabel={asking?.confirmLabel ?? ''} danger={asking?.danger} onConfirm={() => asking && s && apply(asking, s)} onCancel={() => setAsking(undefined)}>
        <p>{asking?.explain}</p>
      </Confirm>
    </Page>
  );
}

/** What became of the plan checkout the browser returned from (SVC_BILLING=payments). */
function Returned(props: { checkout: Schemas['PlanCheckout']; planName: (tier: string) => string }) {
  const c = props.checkout;
  const name = props.planName(c.tier);
  if (c.state === 'paid') {
    return <p class="notice notice-good" role="status">Paid: the workspace is on {name} now.</p>;
  }
  if (c.state === 'open' || c.state === 'creating') {
    return (
      <p class="notice notice-warn" role="status" aria-busy="true">
        Waiting for the payment provider to confirm the payment for {name}. The plan changes as soon as it does.{' '}
        {c.checkout_url && <a href={c.checkout_url}>Back to the payment page</a>}
      </p>
    );
  }
  return (
    <p class="notice" role="status">
      The payment for {name} was not completed ({humanState(c.state)}){c.status_reason ? `: ${c.status_reason}` : ''}. Nothing changed.
    </p>
  );
}
