// The catalog's plans side by side (GET /v1/plans lists them from the lowest to the highest): each
// with its limits, the current one marked, and the move to each other one for the roles that may
// change the plan. A move down waits for the period end. A move up is the operator's when the
// service's billing says so (SVC_BILLING=operator: GET /v1/auth/settings), and the card says whom to
// ask instead of offering a button that would be refused. With SVC_BILLING=payments a move up to a
// plan with a price is paid first: the card shows the price and its button opens the payment
// provider's checkout; a plan without a price stays the operator's to give.
import type { Schemas } from '../../lib/api.ts';
import { Time } from '../../components/Time.tsx';
import { priceWords } from '../../lib/commerce.ts';
import type { Change } from './Plan.tsx';
import { PERSONAL_METRICS } from '../../lib/quota.ts';

type Plan = Schemas['Plan'];

function limitName(metric: string, quotas: Schemas['QuotaEntry'][]): string {
  const known = quotas.find((q) => q.metric === metric)?.display_name;
  if (known) return known;
  // A metric this answer of /v1/quotas left out (operations/running comes only per cluster).
  const words = metric.replace(/[/_]/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function Plans(props: {
  plans: Plan[];
  subscription: Schemas['Subscription'];
  quotas: Schemas['QuotaEntry'][];
  mayChange: boolean;
  /** SVC_BILLING: operator (only the operator raises a plan) or payments (a raise is paid at the provider) */
  billing: 'operator' | 'payments';
  busy: boolean;
  onAsk: (c: Change) => void;
}) {
  const s = props.subscription;
  const current = props.plans.findIndex((p) => p.tier === s.tier);
  const scheduled = s.scheduled_change;
  const personal = Object.keys(props.plans[0]?.limits ?? {}).filter((m) => PERSONAL_METRICS.has(m));
  return (
    <>
    <ul class="grid plans">
      {props.plans.map((p, i) => {
        const up = i > current;
        const isScheduled = scheduled?.requested_tier === p.tier;
        // who raises to this plan: the operator, or the workspace by paying its price
        const operatorRaises = props.billing === 'operator' || !p.price;
        const paying = s.pending_checkout?.tier === p.tier ? s.pending_checkout : null;
        return (
          <li key={p.tier} class={`card plan${p.tier === s.tier ? ' plan-current' : ''}`}>
            <h3>{p.display_name}</h3>
            {props.billing === 'payments' && p.price && <p class="plan-price">{priceWords({ ...p.price, interval: 'month' })}</p>}
            <ul class="plan-limits">
              {Object.entries(p.limits).map(([metric, limit]) => (
                <li key={metric}>
                  {limitName(metric, props.quotas)}{PERSONAL_METRICS.has(metric) && ' per person*'}: <strong>{limit}</strong>
                </li>
              ))}
            </ul>
            {p.tier === s.tier ? (
              <p>
                <strong>Current plan</strong>
              </p>
            ) : isScheduled ? (
              <p>
                From <Time at={scheduled.effective_at} />
              </p>
            ) : up && operatorRaises ? (
              <p class="muted small">The operator of this service moves workspaces to {p.display_name}: ask them.</p>
            ) : up && paying ? (
              <p>
                Waiting for the payment. <a href={paying.checkout_url}>Continue to payment<span class="visually-hidden"> for {p.display_name}</span></a>
              </p>
            ) : (
              props.mayChange && (
                <button
                  type="button"
                  class={up ? 'primary' : undefined}
                  disabled={props.busy}
                  onClick={() =>
                    props.onAsk({
                      title: `${up ? 'Upgrade' : 'Downgrade'} to ${p.display_name}?`,
                      explain: up
                        ? props.billing === 'payments' && p.price
                          ? `You go to the payment page to pay ${priceWords({ ...p.price, interval: 'month' })}. ${p.display_name} applies as soon as the payment is confirmed; nothing changes until then.`
                          : `${p.display_name} applies at once: its limits replace the current ones now.`
                        : `${p.display_name} applies at the end of the current period. It is refused now if the usage is above its limits.`,
                      confirmLabel: up && props.billing === 'payments' ? `Go to payment for ${p.display_name}` : `${up ? 'Upgrade' : 'Downgrade'} to ${p.display_name}`,
                      call: { kind: 'changeTier', tier: p.tier },
                    })
                  }
                >
                  {up ? 'Upgrade' : 'Downgrade'} to {p.display_name}
                </button>
              )
            )}
          </li>
        );
      })}
    </ul>
    {personal.length > 0 && (
      <p class="small muted">
        * {personal.map((m) => limitName(m, props.quotas)).join(', ')}: a limit of each person, not of one workspace. The best plan among the
        workspaces a person owns sets it, so the figure under Quotas may come from another plan than this workspace's.
      </p>
    )}
    </>
  );
}
