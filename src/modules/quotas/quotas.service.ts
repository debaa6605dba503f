// The quota module (API.md 8.2): one function, `enforce(tx, subject, metric, adding)`, that every
// service creating a counted resource calls inside its transaction, and the figures of GET
// /v1/quotas. Allocation and concurrency checks count and compare under the workspace's row lock
// (the user's for workspaces/owned), so concurrent creates never overshoot; rate metrics add to a
// per-day counter in one conditional upsert. Usage of allocation metrics comes from counters the
// owning modules register (usage.ts); reaching 80 % and 100 % notifies the people concerned.
import type { Db, Executor } from '../../db/database.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import { DEFAULT_TIER, type PlanCatalog } from '../plans/plans.js';
import { quotaThresholdReached } from '../notifications/sources.js';
import { dayWindow, METRICS, metricOf, monthWindow, rateWindow, type MetricDefinition, type MetricKey } from '../plans/metrics.js';
import * as repo from './quotas.repo.js';
import type { QuotaEntryT } from './quotas.schemas.js';
import type { UsageCounter } from './usage.js';

/** Whom a check is for: a workspace (and, for operations/running, one of its clusters), or a user (workspaces/owned). */
export type QuotaSubject = { workspaceId: string; clusterId?: string | null } | { userId: string };

/** A rate use `enforce` counted, which `refund` can give back. */
export interface RateCharge {
  workspaceId: string;
  metric: MetricKey;
  windowStart: number;
  adding: number;
}

/** Thresholds that notify, in percent of the limit (the highest one reached is sent). */
const THRESHOLDS = [100, 80];

export interface QuotaServiceDeps {
  db: Db;
  plans: PlanCatalog;
  /** false only in benchmarks (SVC_QUOTAS_ENFORCED): checks pass without counting */
  enforced: boolean;
  /**
   * Takes the workspace's row lock in the caller's transaction and returns its plan tier (the
   * workspaces module's, passed in by the composition root: quotas sit below workspaces, which
   * admit through them); undefined when the workspace is gone.
   */
  lockWorkspace(tx: Executor, workspaceId: string): Promise<{ plan_tier: string } | undefined>;
}

/** What GET /v1/quotas reports on: a workspace, or the workspaces a user owns; optionally one cluster's concurrency. */
export type QuotaView = { workspaceId: string; userId: string | null; clusterId?: string } | { userId: string; clusterId?: string };

export function quotaExceeded(def: MetricDefinition, limit: number, usage: number, extra: { clusterId?: string; retryAfter?: number } = {}): ApiError {
  const where = extra.clusterId ? ` on cluster ${extra.clusterId}` : '';
  return new ApiError('RESOURCE_EXHAUSTED', `quota ${def.key} exceeded${where}: ${usage} of ${limit} in use; free some up or upgrade the plan`, {
    reason: 'QUOTA_EXCEEDED',
    metadata: { metric: def.key, limit: String(limit), usage: String(usage), ...(extra.clusterId ? { cluster_id: extra.clusterId } : {}) },
    ...(extra.retryAfter !== undefined ? { headers: { 'retry-after': String(extra.retryAfter) } } : {}),
  });
}

const RATE_METRICS = METRICS.filter((m) => m.type === 'rate');

export function createQuotaService(deps: QuotaServiceDeps) {
  const { db, plans, enforced, lockWorkspace } = deps;
  const counters = new Map<MetricKey, UsageCounter>();
  /** built on first use, once every counter is registered */
  let figures: Record<string, ReturnType<typeof repo.figuresQuery>> | null = null;
  const single = new Map<MetricKey, (db: Executor, p: { workspaceId: string }) => Promise<{ n: number | string }[]>>();

  /** For the module that owns the resource a metric counts; once per metric, before the first request. */
  function registerUsage(metric: MetricKey, counter: UsageCounter): void {
    const def = metricOf(metric);
    if (def.type !== 'allocation' || def.subject !== 'workspace') throw new Error(`${metric} is not counted by a registered counter`);
    if (counters.has(metric)) throw new Error(`a usage counter for ${metric} is registered twice`);
    if (figures) throw new Error(`usage counter for ${metric} registered after the first quota query`);
    counters.set(metric, counter);
  }

  /** Workspace allocation metrics whose owning module has not registered a counter (they report 0). */
  function unregisteredMetrics(): MetricKey[] {
    return METRICS.filter((m) => m.type === 'allocation' && m.subject === 'workspace' && !counters.has(m.key)).map((m) => m.key);
  }

  async function usageOf(tx: Executor, metric: MetricKey, workspaceId: string): Promise<number> {
    const counter = counters.get(metric);
    if (!counter) throw new Error(`no usage counter is registered for ${metric}`);
    let query = single.get(metric);
    if (!query) {
      query = repo.usageQuery(counter);
      single.set(metric, query);
    }
    const [row] = await query(tx, { workspaceId });
    return Number(row?.n ?? 0);
  }

  /** Notifies when going from `before` to `after` reaches a threshold (the highest one crossed). */
  async function crossed(tx: Executor, def: MetricDefinition, subject: QuotaSubject, tier: string, limit: number, before: number, after: number): Promise<void> {
    if (limit <= 0 || def.type === 'concurrency') return;
    const percent = THRESHOLDS.find((p) => {
      const mark = Math.ceil((limit * p) / 100);
      return before < mark && after >= mark;
    });
    if (percent === undefined) return;
    const workspaceId = 'workspaceId' in subject ? subject.workspaceId : null;
    await quotaThresholdReached(tx, {
      to: workspaceId ? { adminsOf: workspaceId } : { users: [(subject as { userId: string }).userId] },
      workspaceId, subjectId: workspaceId ?? (subject as { userId: string }).userId, metric: def.key, displayName: def.display_name,
      limit, usage: after, percent, tier, window: rateWindow(def, clock.now()).start,
    });
  }

  /** Adds `adding` to the rate counter of the current window unless that passes the limit (one conditional upsert); throws quotaExceeded. */
  async function chargeRate(tx: Executor, workspaceId: string, metric: MetricKey, adding: number) {
    const def = metricOf(metric);
    const tier = (await repo.workspaceTier(tx, workspaceId)) ?? DEFAULT_TIER;
    const limit = plans.limit(tier, metric);
    const now = clock.now();
    const window = rateWindow(def, now);
    const after = await repo.incrementWithin(tx, workspaceId, metric, window.start, adding, limit);
    if (after === null) throw quotaExceeded(def, limit, await repo.counterValue(tx, workspaceId, metric, window.start), { retryAfter: window.end - now });
    const charge: RateCharge = { workspaceId, metric, windowStart: window.start, adding };
    return { charge, tier, limit, after };
  }

  /**
   * Holds `adding` of a rate metric before the use it pays for happens (a model call's estimated
   * cost): counted at once, under the same conditional upsert as `enforce`, so concurrent holders
   * never pass the limit together. The holder gives the charge back (`refund`) and `record`s what
   * the use really came to once it is known. A hold notifies no threshold (it may be given back).
   */
  async function reserve(tx: Executor, workspaceId: string, metric: MetricKey, adding: number): Promise<RateCharge | null> {
    if (!enforced || adding <= 0) return null;
    if (metricOf(metric).type !== 'rate') throw new Error(`${metric} is not a rate metric`);
    return (await chargeRate(tx, workspaceId, metric, adding)).charge;
  }

  /**
   * Refuses with 429 RESOURCE_EXHAUSTED (reason QUOTA_EXCEEDED, metadata metric, limit, usage)
   * when `adding` more of `metric` would pass the subject's limit; otherwise returns, having
   * counted rate uses. Call it in the transaction that creates the resource, before the insert:
   * it takes the workspace's (or user's) row lock, which that transaction then holds to its commit.
   */
  async function enforce(tx: Executor, subject: QuotaSubject, metric: MetricKey, adding = 1): Promise<RateCharge | null> {
    if (!enforced || adding <= 0) return null;
    const def = metricOf(metric);
    if (def.subject === 'user') {
      if (!('userId' in subject)) throw new Error(`${metric} is checked for a user`);
      await repo.lockUser(tx, subject.userId);
      const owned = await ownedFigures(tx, subject.userId);
      if (owned.usage + adding > owned.limit) throw quotaExceeded(def, owned.limit, owned.usage);
      await crossed(tx, def, subject, owned.tier, owned.limit, owned.usage, owned.usage + adding);
      return null;
    }
    if (!('workspaceId' in subject)) throw new Error(`${metric} is checked for a workspace`);
    if (def.type === 'rate') {
      const { charge, tier, limit, after } = await chargeRate(tx, subject.workspaceId, metric, adding);
      await crossed(tx, def, subject, tier, limit, after - adding, after);
      return charge;
    }
    const locked = await lockWorkspace(tx, subject.workspaceId);
    const tier = locked?.plan_tier ?? DEFAULT_TIER;
    const limit = plans.limit(tier, metric);
    if (def.type === 'concurrency') {
      if (!subject.clusterId) throw new Error(`${metric} is checked for a cluster`);
      const usage = await repo.runningOnCluster(tx, subject.clusterId);
      if (usage + adding > limit) throw quotaExceeded(def, limit, usage, { clusterId: subject.clusterId });
      return null;
    }
    const usage = await usageOf(tx, metric, subject.workspaceId);
    if (usage + adding > limit) throw quotaExceeded(def, limit, usage);
    await crossed(tx, def, subject, tier, limit, usage, usage + adding);
    return null;
  }

  /**
   * Gives back a rate use counted by `enforce` whose work did not happen after all (a snippet run
   * the sandbox refused): the day it was counted in gets it back, never below zero.
   */
  async function refund(executor: Executor, charge: RateCharge | null): Promise<void> {
    if (charge) await repo.decrementCounter(executor, charge.workspaceId, charge.metric, charge.windowStart, charge.adding);
  }

  /**
   * The operations/running check, for every operation that starts on a cluster (OperationService's
   * admission): removals (`admittedOverQuota`) always start, so a quota never blocks deleting.
   */
  async function admitOperation(tx: Executor, spec: { workspaceId: string; clusterId: string | null }, workflow: { admittedOverQuota?: boolean }): Promise<void> {
    if (spec.clusterId === null || workflow.admittedOverQuota) return;
    await enforce(tx, { workspaceId: spec.workspaceId, clusterId: spec.clusterId }, 'operations/running');
  }

  /** workspaces/owned of a user: owned count, and the limit of the best plan among them (free's without any). */
  async function ownedFigures(executor: Executor, userId: string): Promise<{ usage: number; limit: number; tier: string; byTier: Map<string, number> }> {
    const byTier = new Map<string, number>();
    for (const row of await repo.ownedWorkspacesByTier(executor, userId)) byTier.set(row.plan_tier, Number(row.n));
    let tier = DEFAULT_TIER;
    for (const t of byTier.keys()) if (plans.rank(t) > plans.rank(tier)) tier = plans.plan(t).tier;
    const usage = [...byTier.values()].reduce((a, b) => a + b, 0);
    return { usage, limit: plans.limit(tier, 'workspaces/owned'), tier, byTier };
  }

  /**
   * The first workspace allocation metric whose usage is above the tier's limit (a downgrade to
   * it would leave the workspace over its quota), or null. Call under the workspace lock.
   */
  async function firstOverLimit(tx: Executor, workspaceId: string, tier: string): Promise<{ metric: MetricKey; limit: number; usage: number } | null> {
    for (const metric of counters.keys()) {
      const limit = plans.limit(tier, metric);
      const usage = await usageOf(tx, metric, workspaceId);
      if (usage > limit) return { metric, limit, usage };
    }
    return null;
  }

  function entry(def: MetricDefinition, limit: number, usage: number, extra: Partial<QuotaEntryT> = {}): QuotaEntryT {
    return {
      metric: def.key as MetricKey, type: def.type, display_name: def.display_name, unit: def.unit,
      limit, usage, remaining: Math.max(0, limit - usage), ...extra,
    };
  }

  /** GET /v1/quotas: one entry per metric, every usage from one statement (two in the user-wide view). */
  async function report(view: QuotaView): Promise<QuotaEntryT[]> {
    if (view.clusterId !== undefined && !isId('cluster', view.clusterId)) throw notFound('cluster');
    figures ??= buildFiguresQueries();
    const now = clock.now();
    const window = dayWindow(now);
    const month = monthWindow(now);
    const byWorkspace = 'workspaceId' in view;
    const withUser = view.userId !== null;
    const withCluster = byWorkspace && view.clusterId !== undefined;
    const query = figures[`${byWorkspace ? 'workspace' : 'owner'}${withUser ? '+user' : ''}${withCluster ? '+cluster' : ''}`]!;
    const [row] = await query(db, {
      workspaceId: byWorkspace ? view.workspaceId : '', userId: view.userId ?? '', clusterId: view.clusterId ?? '', windowStart: window.start, monthStart: month.start,
    });
    const figure = (name: string) => Number((row as Record<string, unknown> | undefined)?.[name] ?? 0);

    // Limits: the workspace's plan; in the user-wide view, summed over the workspaces the user owns.
    let limitOf: (metric: MetricKey) => number;
    let owned: { usage: number; limit: number; tier: string } | null = null;
    /** the plan of the workspace metrics' limits; null in the user-wide view (sums over plans) */
    let workspaceTier: string | null = null;
    if (byWorkspace) {
      const tier = String((row as { tier?: unknown } | undefined)?.tier ?? DEFAULT_TIER);
      workspaceTier = tier;
      limitOf = (metric) => plans.limit(tier, metric);
      if (withUser) {
        // The same rule as ownedFigures (and the check at creation): the best plan among the workspaces owned.
        const best = figure('owned') > 0 ? plans.plans[figure('owned_rank')]!.tier : plans.plan(DEFAULT_TIER).tier;
        owned = { usage: figure('owned'), limit: plans.limit(best, 'workspaces/owned'), tier: best };
      }
    } else {
      const mine = await ownedFigures(db, view.userId!);
      owned = mine;
      limitOf = (metric) => [...mine.byTier].reduce((sum, [tier, n]) => sum + n * plans.limit(tier, metric), 0);
    }
    const ofTier = workspaceTier === null ? {} : { tier: workspaceTier };
    let clusterLimit: number | null = null;
    let clusterTier: string | null = workspaceTier;
    if (view.clusterId !== undefined) {
      if (byWorkspace) {
        if (figure('cluster_found') === 0) throw notFound('cluster');
        clusterLimit = limitOf('operations/running');
      } else {
        const tier = await repo.clusterTier(db, view.clusterId, null, view.userId!);
        if (tier === undefined) throw notFound('cluster');
        clusterLimit = plans.limit(tier, 'operations/running');
        clusterTier = plans.plan(tier).tier;
      }
    }

    const out: QuotaEntryT[] = [];
    for (const def of METRICS) {
      if (def.subject === 'user') {
        if (owned) out.push(entry(def, owned.limit, owned.usage, { tier: owned.tier }));
      } else if (def.type === 'concurrency') {
        if (clusterLimit !== null) {
          const usage = byWorkspace ? figure('running') : await repo.runningOnCluster(db, view.clusterId!);
          out.push(entry(def, clusterLimit, usage, { cluster_id: view.clusterId!, ...(clusterTier === null ? {} : { tier: clusterTier }) }));
        }
      } else if (def.type === 'rate') {
        const resets = (def as MetricDefinition).window === 'month' ? month.end : window.end;
        out.push(entry(def, limitOf(def.key), figure(`rate_${RATE_METRICS.indexOf(def as (typeof RATE_METRICS)[number])}`), { resets_at: resets, ...ofTier }));
      } else {
        out.push(entry(def, limitOf(def.key), counters.has(def.key) ? figure(`usage_${[...counters.keys()].indexOf(def.key)}`) : 0, ofTier));
      }
    }
    return out;
  }

  /**
   * The figures statements of GET /v1/quotas, one per shape (a workspace or the workspaces a user
   * owns; with the caller's own workspaces/owned; with a cluster's running operations), each
   * prepared once: the plan tier, every registered counter and every rate counter as scalar subqueries.
   */
  function buildFiguresQueries() {
    const usage = [...counters.values()];
    const rates = RATE_METRICS.map((m) => ({ metric: m.key as string, monthly: (m as MetricDefinition).window === 'month' }));
    const ranks = { tiers: plans.plans.map((p) => p.tier), otherwise: plans.rank(DEFAULT_TIER) };
    const out: Record<string, ReturnType<typeof repo.figuresQuery>> = {};
    for (const byWorkspace of [true, false]) {
      for (const withUser of [true, false]) {
        for (const withCluster of byWorkspace ? [true, false] : [false]) {
          out[`${byWorkspace ? 'workspace' : 'owner'}${withUser ? '+user' : ''}${withCluster ? '+cluster' : ''}`] = repo.figuresQuery({ byWorkspace, withUser, withCluster }, usage, rates, ranks);
        }
      }
    }
    return out;
  }

  /** Rate counters of windows that ended more than a day ago (a month's counters once their month ended). */
  async function purgeCounters(): Promise<number> {
    const now = clock.now();
    const monthly = RATE_METRICS.filter((m) => (m as MetricDefinition).window === 'month').map((m) => m.key as string);
    return (await repo.purgeCountersBefore(db, dayWindow(now).start - 86_400, monthly)) + (await repo.purgeCountersBefore(db, monthWindow(now).start, [], monthly));
  }

  /** counters are 32-bit integer columns */
  const COUNTER_MAX = 2_000_000_000;

  /**
   * Adds to a rate counter without a limit: use that already happened (what a model call cost) is
   * counted, and the next check refuses once the counter passes the limit.
   */
  async function record(tx: Executor, workspaceId: string, metric: MetricKey, adding: number): Promise<void> {
    if (adding <= 0) return;
    const def = metricOf(metric);
    await repo.incrementWithin(tx, workspaceId, metric, rateWindow(def, clock.now()).start, adding, COUNTER_MAX);
  }

  /** Refuses (429 QUOTA_EXCEEDED) when a rate counter has reached its limit, or `adding` would pass it; counts nothing. */
  async function check(executor: Executor, workspaceId: string, metric: MetricKey, adding = 0): Promise<void> {
    if (!enforced) return;
    const def = metricOf(metric);
    const tier = (await repo.workspaceTier(executor, workspaceId)) ?? DEFAULT_TIER;
    const limit = plans.limit(tier, metric);
    const now = clock.now();
    const window = rateWindow(def, now);
    const usage = await repo.counterValue(executor, workspaceId, metric, window.start);
    if (usage >= limit || usage + adding > limit) throw quotaExceeded(def, limit, usage, { retryAfter: window.end - now });
  }

  return { registerUsage, unregisteredMetrics, enforce, reserve, refund, record, check, admitOperation, firstOverLimit, report, purgeCounters, plans };
}

export type QuotaService = ReturnType<typeof createQuotaService>;
