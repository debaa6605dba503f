// Spend is reserved before a model call (API.md 8.6): the call's estimated cost is held, in the
// transaction that admits the call, against each limit it could pass (the turn's budget, the
// agent's budget for the period, the workspace's agents/cost_cents quota), and replaced by the
// real cost when the call returns. Checking what was spent and recording it after the call let
// concurrent turns each see room for their call and together spend many times a budget.
//
// Where a hold lives: the agent's budget sums each turn's cost plus its `reserved_microcents`
// under the agent's row lock; the workspace's quota counter takes `reserved_quota_cents` at once
// in its conditional upsert (never past the limit), the window it went to noted on the turn. The
// estimate is an upper bound on the output (the most tokens a call may answer with) and the
// conversation's size, or what the turn's last call reported when that is more (calls only grow).
// A hold is given back when the call's cost is recorded, when the turn ends (any way: completed,
// failed, cancelled), and when the turn resumes after a dead worker left one behind.
import type { Dialect, Executor } from '../../db/database.js';
import type { ModelPrice } from '../../config-agents.js';
import type { ModelMessage } from '../../drivers/models/driver.js';
import { clock } from '../../platform/clock.js';
import { ApiError } from '../../platform/errors.js';
import type { QuotaService, RateCharge } from '../quotas/quotas.service.js';
import { centsOf, costMicrocents, estimateTokens, periodStart } from './agent-usage.js';
import * as repo from './agents.repo.js';
import type { StoredModelPolicy } from './agents.service.js';

const METRIC = 'agents/cost_cents' as const;

/** The next model call does not fit a budget or the spend quota; the turn ends BUDGET_EXHAUSTED with this message. */
export class BudgetRefused extends Error {}

/** What a call may cost at most: the output at its cap, the input at the conversation's estimated size (or the last call's reported one). */
export function callEstimate(price: ModelPrice, messages: ModelMessage[], maxOutputTokens: number, last: { input_tokens: number; cost_microcents: number } | null): number {
  const input = Math.max(estimateTokens(messages), last?.input_tokens ?? 0);
  return Math.max(last?.cost_microcents ?? 0, costMicrocents(price, { input_tokens: input, output_tokens: maxOutputTokens }));
}

export function createSpendReservations(deps: { dialect: Dialect; quotas: Pick<QuotaService, 'reserve' | 'refund' | 'record'> }) {
  const { dialect, quotas } = deps;

  function heldCharge(turn: repo.TurnRow): RateCharge | null {
    const cents = Number(turn.reserved_quota_cents);
    if (cents <= 0 || turn.reserved_quota_window === null) return null;
    return { workspaceId: turn.workspace_id, metric: METRIC, windowStart: Number(turn.reserved_quota_window), adding: cents };
  }

  /** Gives back what the turn holds (if anything); returns the turn as it is now. */
  async function release(tx: Executor, turn: repo.TurnRow): Promise<repo.TurnRow> {
    if (Number(turn.reserved_microcents) === 0 && Number(turn.reserved_quota_cents) === 0) return turn;
    await quotas.refund(tx, heldCharge(turn));
    await repo.setTurnReservation(tx, turn.id, repo.NO_RESERVATION);
    return { ...turn, ...repo.NO_RESERVATION };
  }

  /**
   * Holds `estimate` (millionths of a cent) for the turn's next model call, or throws BudgetRefused.
   * Call in the transaction that records the call's step, after the session's lock (the runner's
   * fenced write): the agent's lock comes next, then the quota counter's row.
   */
  async function reserve(tx: Executor, current: repo.TurnRow, policy: StoredModelPolicy, estimate: number): Promise<void> {
    const turn = await release(tx, current);
    const spent = Number(turn.cost_microcents);
    const adding = centsOf(spent + estimate) - centsOf(spent);
    if (policy.max_turn_budget_cents !== null && centsOf(spent + estimate) > policy.max_turn_budget_cents) {
      throw new BudgetRefused(`the next model call (up to ${centsOf(estimate)} cents) would pass the turn's budget of ${policy.max_turn_budget_cents} cents (${centsOf(spent)} spent)`);
    }
    if (policy.max_budget_cents !== null) {
      await repo.lockAgent(tx, dialect, turn.agent_id);
      const committed = await repo.agentCommittedSince(tx, turn.agent_id, periodStart(policy.budget_period, clock.now()));
      if (committed + adding > policy.max_budget_cents) {
        throw new BudgetRefused(
          `the next model call (up to ${adding} cents) would pass the agent's budget of ${policy.max_budget_cents} cents this ${policy.budget_period.toLowerCase()} ` +
          `(${committed} spent or held by model calls running now)`,
        );
      }
    }
    let charge: RateCharge | null;
    try {
      charge = await quotas.reserve(tx, turn.workspace_id, METRIC, adding);
    } catch (err) {
      if (err instanceof ApiError) throw new BudgetRefused(`the next model call (up to ${adding} cents) does not fit: ${err.message} (what model calls running now hold counts)`);
      throw err;
    }
    await repo.setTurnReservation(tx, turn.id, { reserved_microcents: estimate, reserved_quota_cents: charge?.adding ?? 0, reserved_quota_window: charge?.windowStart ?? null });
  }

  /** After the call: its real cost (already added to the turn, `used`) replaces the hold `before` had. */
  async function settle(tx: Executor, before: repo.TurnRow, used: repo.TurnRow): Promise<void> {
    await release(tx, before);
    await quotas.record(tx, before.workspace_id, METRIC, centsOf(Number(used.cost_microcents)) - centsOf(Number(before.cost_microcents)));
  }

  return { reserve, release, settle };
}

export type SpendReservations = ReturnType<typeof createSpendReservations>;
