// Usage and budgets (API.md 8.6): a turn's usage is summed from its steps' reports (the provider's
// tokens priced by the operator's table, the sandbox's CPU time, platform.request calls); a session's
// and an agent's are sums over their turns, each turn's cost rounded up to whole cents on its own.
// Budgets are checked before every model call against what has been spent plus an estimate of the
// call about to be made, so a turn stops before the call that would pass a budget.
import type { ModelPrice } from '../../config-agents.js';
import type { ModelProvider, ModelUsage } from '../../drivers/models/driver.js';
import type { BudgetPeriod, UsageSummaryT } from './agents.schemas.js';
import type { TurnRow, UsageSums } from './agents.repo.js';

const MICRO = 1_000_000;

export const ZERO_USAGE: UsageSummaryT = {
  provider_cost_cents: 0, provider_token_count: 0, runtime_compute_seconds: 0, runtime_storage_gb_hours: 0, mcp_call_count: 0, api_call_count: 0, ambient_trigger_count: 0,
};

/** whole cents of an amount in millionths of a cent, rounded up */
export const centsOf = (microcents: number): number => Math.ceil(microcents / MICRO);

export function turnUsage(row: Pick<TurnRow, 'cost_microcents' | 'token_count' | 'compute_ms' | 'api_call_count'>): UsageSummaryT {
  return {
    ...ZERO_USAGE,
    provider_cost_cents: centsOf(Number(row.cost_microcents)),
    provider_token_count: Number(row.token_count),
    runtime_compute_seconds: Math.ceil(Number(row.compute_ms) / 1000),
    api_call_count: Number(row.api_call_count),
  };
}

export function summedUsage(sums: UsageSums | undefined): UsageSummaryT {
  if (!sums) return ZERO_USAGE;
  return {
    ...ZERO_USAGE,
    provider_cost_cents: Number(sums.cost_cents ?? 0),
    provider_token_count: Number(sums.tokens ?? 0),
    runtime_compute_seconds: Math.ceil(Number(sums.compute_ms ?? 0) / 1000),
    api_call_count: Number(sums.api_calls ?? 0),
  };
}

/** What a model's calls cost: nothing for a free provider (the local model), else the operator's table's price. */
export function priceOf(prices: Record<string, ModelPrice>, model: string, provider?: Pick<ModelProvider, 'free'>): ModelPrice {
  if (provider?.free) return { input: 0, output: 0 };
  return prices[model] ?? prices['*'] ?? { input: 0, output: 0 };
}

/** What a call's reported usage cost, in millionths of a cent (prices are cents per million tokens). */
export function costMicrocents(price: ModelPrice, usage: ModelUsage): number {
  return Math.ceil(usage.input_tokens * price.input + usage.output_tokens * price.output);
}

/** Tokens of a conversation, estimated (kept with the model drivers, which estimate what a provider does not report). */
export { estimateTokens } from '../../drivers/models/token-estimate.js';

/** The start (Unix seconds, UTC) of the budget period containing `now`: the day, the ISO week (Monday), the month. */
export function periodStart(period: BudgetPeriod, now: number): number {
  const d = new Date(now * 1000);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) / 1000;
  if (period === 'DAY') return day;
  if (period === 'WEEK') return day - ((d.getUTCDay() + 6) % 7) * 86_400;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
}
