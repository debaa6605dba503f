// The plan catalog (API.md 8.2): the built-in free, pro and enterprise, or an operator's JSON file
// (SVC_PLANS_FILE) that replaces it, validated when the process starts. Plans are ordered from
// the lowest to the highest: moving to a later plan is an upgrade (applied at once), to an
// earlier one a downgrade (applied at the end of the billing period).
import { METRIC_KEYS, type MetricKey } from './metrics.js';

/** What a plan costs per month when it is paid through the payment provider (SVC_BILLING=payments). */
export interface PlanPrice {
  currency: 'eur' | 'usd';
  /** cents per month, 1 to 100,000,000 */
  unit_amount: number;
}

export interface Plan {
  tier: string;
  display_name: string;
  limits: Record<MetricKey, number>;
  /**
   * Its monthly price with SVC_BILLING=payments; null: it cannot be bought (the default plan, or a
   * plan the operator gives by hand: with `payments`, raising to it stays the operator's).
   */
  price: PlanPrice | null;
}

/** Every workspace starts on this tier, and a cancelled subscription returns to it. */
export const DEFAULT_TIER = 'free';

/** The largest limit a plan may give: a 32-bit signed integer, so every client reads it exactly. */
export const MAX_LIMIT = 2_147_483_647;

/** The largest monthly price a plan may have, in cents (as an offer's). */
export const MAX_PRICE = 100_000_000;

/**
 * The built-in catalog. Prices (used only with SVC_BILLING=payments): pro 29.00 USD and enterprise
 * 499.00 USD a month; an operator's plans file sets its own. `free` lets the README's walkthroughs and a small team run: 3 clusters of
 * the simulated local driver (3 nodes each), 10 installs, 50 secrets, 1,000 snippet runs a day.
 */
export const BUILT_IN_PLANS: Plan[] = [
  {
    tier: 'free',
    display_name: 'Free',
    price: null,
    limits: {
      'workspaces/owned': 10, 'compute/clusters': 3, 'compute/machines': 9, 'installs/installs': 10,
      'secrets/secrets': 50, 'snippets/runs': 1_000, 'agents/turns': 200, 'agents/cost_cents': 500, 'operations/running': 10,
    },
  },
  {
    tier: 'pro',
    display_name: 'Pro',
    price: { currency: 'usd', unit_amount: 2_900 },
    limits: {
      'workspaces/owned': 50, 'compute/clusters': 20, 'compute/machines': 200, 'installs/installs': 200,
      'secrets/secrets': 1_000, 'snippets/runs': 50_000, 'agents/turns': 5_000, 'agents/cost_cents': 20_000, 'operations/running': 50,
    },
  },
  {
    tier: 'enterprise',
    display_name: 'Enterprise',
    price: { currency: 'usd', unit_amount: 49_900 },
    limits: {
      'workspaces/owned': 500, 'compute/clusters': 1_000, 'compute/machines': 20_000, 'installs/installs': 20_000,
      'secrets/secrets': 100_000, 'snippets/runs': 1_000_000, 'agents/turns': 100_000, 'agents/cost_cents': 1_000_000, 'operations/running': 500,
    },
  },
];

export class PlanCatalog {
  private readonly byTier: Map<string, { plan: Plan; rank: number }>;

  constructor(readonly plans: readonly Plan[]) {
    this.byTier = new Map(plans.map((plan, rank) => [plan.tier, { plan, rank }]));
  }

  get tiers(): string[] {
    return this.plans.map((p) => p.tier);
  }

  has(tier: string): boolean {
    return this.byTier.has(tier);
  }

  /**
   * The plan of a tier. A workspace whose tier an operator's file no longer lists gets the default
   * plan's limits until its subscription changes.
   */
  plan(tier: string): Plan {
    return (this.byTier.get(tier) ?? this.byTier.get(DEFAULT_TIER)!).plan;
  }

  limit(tier: string, metric: MetricKey): number {
    return this.plan(tier).limits[metric];
  }

  /** Position from the lowest plan (0); an unlisted tier ranks as the default one. */
  rank(tier: string): number {
    return (this.byTier.get(tier) ?? this.byTier.get(DEFAULT_TIER)!).rank;
  }
}

/** Why an operator's plans file is refused; the message names the place. */
export class PlansFileError extends Error {}

const TIER = /^[a-z][a-z0-9_-]{0,31}$/;

function parsePrice(raw: unknown, where: string): PlanPrice | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new PlansFileError(`${where}.price must be an object {currency, unit_amount} or null`);
  const o = raw as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!['currency', 'unit_amount'].includes(key)) throw new PlansFileError(`${where}.price has an unknown field "${key}"`);
  }
  if (o.currency !== 'eur' && o.currency !== 'usd') throw new PlansFileError(`${where}.price.currency must be eur or usd`);
  if (typeof o.unit_amount !== 'number' || !Number.isInteger(o.unit_amount) || o.unit_amount < 1 || o.unit_amount > MAX_PRICE) {
    throw new PlansFileError(`${where}.price.unit_amount must be a whole number of cents from 1 to ${MAX_PRICE}`);
  }
  return { currency: o.currency, unit_amount: o.unit_amount };
}

/**
 * Parses and validates the JSON of an operator's plans file: `[{tier, display_name, limits, price?}, ...]`;
 * `price` ({currency eur | usd, unit_amount cents per month}, or null) matters only with SVC_BILLING=payments.
 */
export function parsePlans(text: string): PlanCatalog {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new PlansFileError(`is not valid JSON (${(err as Error).message})`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new PlansFileError('must be a non-empty JSON array of {tier, display_name, limits}');
  const seen = new Set<string>();
  const plans = parsed.map((raw: unknown, i): Plan => {
    const where = `plans[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new PlansFileError(`${where} must be an object`);
    const o = raw as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (!['tier', 'display_name', 'limits', 'price'].includes(key)) throw new PlansFileError(`${where} has an unknown field "${key}"`);
    }
    if (typeof o.tier !== 'string' || !TIER.test(o.tier)) throw new PlansFileError(`${where}.tier must match ${TIER.source}`);
    if (seen.has(o.tier)) throw new PlansFileError(`${where}.tier "${o.tier}" is listed twice`);
    seen.add(o.tier);
    if (typeof o.display_name !== 'string' || o.display_name.length < 1 || o.display_name.length > 100) {
      throw new PlansFileError(`${where}.display_name must be a string of 1-100 characters`);
    }
    if (!o.limits || typeof o.limits !== 'object' || Array.isArray(o.limits)) throw new PlansFileError(`${where}.limits must be an object`);
    const limits = o.limits as Record<string, unknown>;
    for (const key of Object.keys(limits)) {
      if (!(METRIC_KEYS as readonly string[]).includes(key)) {
        throw new PlansFileError(`${where}.limits has an unknown metric "${key}" (known: ${METRIC_KEYS.join(', ')})`);
      }
    }
    for (const metric of METRIC_KEYS) {
      const value = limits[metric];
      if (value === undefined) throw new PlansFileError(`${where}.limits is missing "${metric}"`);
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_LIMIT) {
        throw new PlansFileError(`${where}.limits["${metric}"] must be an integer from 0 to ${MAX_LIMIT}`);
      }
    }
    const price = parsePrice(o.price, where);
    if (price && o.tier === DEFAULT_TIER) throw new PlansFileError(`${where}.price must be null: every workspace starts on "${DEFAULT_TIER}", which is not sold`);
    return { tier: o.tier, display_name: o.display_name, limits: limits as Record<MetricKey, number>, price };
  });
  if (!seen.has(DEFAULT_TIER)) {
    throw new PlansFileError(`must define the "${DEFAULT_TIER}" plan: every workspace starts on it and a cancelled subscription returns to it`);
  }
  return new PlanCatalog(plans);
}
