// Plan and quotas: the workspace's subscription (plan, status, period, the change waiting for the
// period end), its quotas as bars, the catalog's plans with the move to each, cancel and
// reactivate, and the change requests made so far. Every change sends if-match with the
// subscription's etag and is an operation followed live; a 409 shows the current subscription and
// offers the change again. A downgrade or cancel applies at the period end; a plan is raised by the
// operator (SVC_BILLING=operator), which the plans' cards say.
import { useState } from 'preact/hooks';
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

  /** Sends the change with the etag of the subscription as the page shows it now. */
  function apply(change: Change, s: Subscription) {
    setAsking(undefined);
    setLast(change);
    const params = { path: { id: ws.id }, header: { 'if-match': s.etag } };
    return action.run(async () => {
      const c = change.call;
      const started =
        c.kind === 'changeTier'
          ? await ok(client.POST('/v1/workspaces/{id}/subscription:changeTier', { params, body: { tier: c.tier as Tier } }))
          : c.kind === 'cancel'
            ? await ok(client.POST('/v1/workspaces/{id}/subscription:cancel', { params }))
            : await ok(client.POST('/v1/workspaces/{id}/subscription:reactivate', { params }));
      setOp(started);
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
          <Plans plans={plans.data.data} subscription={s} quotas={quotas.data?.data ?? []} mayChange={mayChange} operatorRaises={settings.data.billing === 'operator'} busy={action.busy} onAsk={setAsking} />
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
