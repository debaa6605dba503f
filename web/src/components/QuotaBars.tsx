// A workspace's quotas as bars (the plan page, the home page): each metric a <meter> under its
// name with its figures in words ("3 of 5 installs"), so the bar is never the only signal; a rate
// metric says when it starts again at 0. Props: the answer of GET /v1/quotas as it comes.
import { useId } from 'preact/hooks';
import type { Schemas } from '../lib/api.ts';
import { limitSource, meterBounds, quotaWords } from '../lib/quota.ts';
import { Time } from './Time.tsx';

type QuotaEntry = Schemas['QuotaEntry'];

/** The workspace's plan and the names of plans: with them, a limit another plan sets says so. */
export interface PlanContext {
  tier: string | undefined;
  planName: (tier: string) => string;
}

function QuotaBar(props: { quota: QuotaEntry; plan?: PlanContext | undefined }) {
  const q = props.quota;
  const source = props.plan ? limitSource(q, props.plan.tier, props.plan.planName) : null;
  const id = useId();
  const b = meterBounds(q);
  return (
    <li class="quota">
      <label for={id} class="quota-name">
        {q.display_name}
      </label>
      <meter id={id} min={0} max={b.max} value={b.value} high={b.high} optimum={b.optimum} aria-describedby={`${id}-words`} />
      <p id={`${id}-words`} class="quota-words">
        {quotaWords(q)}
        {source && <span class="muted"> · {source}</span>}
        {q.resets_at !== undefined && (
          <span class="muted">
            {' '}
            · starts again <Time at={q.resets_at} />
          </span>
        )}
      </p>
    </li>
  );
}

export function QuotaBars(props: { quotas: { data: QuotaEntry[] }; label?: string; plan?: PlanContext }) {
  return (
    <ul class="quotas" aria-label={props.label ?? 'Quotas'}>
      {props.quotas.data.map((q) => (
        <QuotaBar key={`${q.metric}:${q.cluster_id ?? ''}`} quota={q} plan={props.plan} />
      ))}
    </ul>
  );
}
