// SQL of quota figures that belong to no other module: rate counters (usage_counters), the
// workspaces a user owns, the running operations of a cluster, and the statements that put the
// registered usage counters (usage.ts) together: one metric's usage, and GET /v1/quotas' figures.
import { sql, type AliasedExpression, type Expression, type SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { InWorkspaces, UsageCounter, WorkspaceSet } from './usage.js';

/**
 * Adds `adding` uses to the window's counter unless that passes `limit`, in one statement (an
 * upsert whose update is conditional): the new count, or null when it would pass the limit.
 * Concurrent callers never overshoot, and need no lock.
 */
export async function incrementWithin(
  tx: Executor, workspaceId: string, metric: string, windowStart: number, adding: number, limit: number,
): Promise<number | null> {
  if (adding > limit) return null;
  const row = await tx
    .insertInto('usage_counters')
    .values({ workspace_id: workspaceId, metric, window_start: windowStart, count: adding })
    .onConflict((oc) => oc
      .columns(['workspace_id', 'metric', 'window_start'])
      .doUpdateSet((eb) => ({ count: eb('usage_counters.count', '+', adding) }))
      .where('usage_counters.count', '<=', limit - adding))
    .returning('count')
    .executeTakeFirst();
  return row ? Number(row.count) : null;
}

/** Takes `removing` uses off the window's counter (a refund), never below zero. */
export async function decrementCounter(tx: Executor, workspaceId: string, metric: string, windowStart: number, removing: number): Promise<void> {
  await tx
    .updateTable('usage_counters')
    .set((eb) => ({ count: eb('count', '-', removing) }))
    .where('workspace_id', '=', workspaceId)
    .where('metric', '=', metric)
    .where('window_start', '=', windowStart)
    .where('count', '>=', removing)
    .execute();
}

export async function counterValue(db: Executor, workspaceId: string, metric: string, windowStart: number): Promise<number> {
  const row = await db
    .selectFrom('usage_counters')
    .select('count')
    .where('workspace_id', '=', workspaceId)
    .where('metric', '=', metric)
    .where('window_start', '=', windowStart)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Counters of windows that started before `before` are no longer read (of every metric but `except`, or only of `only`). */
export async function purgeCountersBefore(db: Executor, before: number, except: string[], only: string[] = []): Promise<number> {
  let q = db.deleteFrom('usage_counters').where('window_start', '<', before);
  if (except.length) q = q.where('metric', 'not in', except);
  if (only.length) q = q.where('metric', 'in', only);
  const res = await q.executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** The user's row lock (PostgreSQL; SQLite's transaction holds the database): orders one user's workspace creations. */
export async function lockUser(tx: Executor, userId: string): Promise<void> {
  await tx.updateTable('users').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', userId).execute();
}

/** How many workspaces the user owns, per tier. */
export function ownedWorkspacesByTier(db: Executor, userId: string): Promise<{ plan_tier: string; n: number | string }[]> {
  return db
    .selectFrom('workspace_members as m')
    .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['w.plan_tier', (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('m.user_id', '=', userId)
    .where('m.role', '=', 'owner')
    .groupBy('w.plan_tier')
    .execute();
}

// Checked on every operation start on a cluster: prepared.
const running = preparedQuery((db, p: { clusterId: string }) =>
  db.selectFrom('operations').select((eb) => eb.fn.countAll<number | string>().as('n')).where('cluster_id', '=', p.clusterId)
    // A literal, not a parameter: the partial index operations_running_cluster_idx only matches
    // it (PostgreSQL's generic plans of prepared statements would otherwise scan).
    .where('state', '=', sql.lit('RUNNING')));

export async function runningOnCluster(db: Executor, clusterId: string): Promise<number> {
  const [row] = await running(db, { clusterId });
  return Number(row?.n ?? 0);
}

/** The tier of the workspace of a cluster, when the cluster is in that workspace (or, without one, any workspace `memberUserId` belongs to). */
export async function clusterTier(db: Executor, clusterId: string, workspaceId: string | null, memberUserId: string | null): Promise<string | undefined> {
  let q = db.selectFrom('clusters as c').innerJoin('workspaces as w', 'w.id', 'c.workspace_id').select('w.plan_tier').where('c.id', '=', clusterId);
  if (workspaceId !== null) q = q.where('c.workspace_id', '=', workspaceId);
  if (memberUserId !== null) {
    q = q.where(({ exists, selectFrom }) => exists(
      selectFrom('workspace_members as m').select('m.id').whereRef('m.workspace_id', '=', 'c.workspace_id').where('m.user_id', '=', memberUserId),
    ));
  }
  return (await q.executeTakeFirst())?.plan_tier;
}

/** `coalesce((subquery), 0)`: a counter's figure, 0 where it counts no rows. */
export function orZero(expression: Expression<unknown>) {
  return sql<number | string>`coalesce((${expression}), 0)`;
}

/** The condition on a workspace-id column that selects the workspaces of `set`. */
export function inWorkspaces(set: WorkspaceSet): InWorkspaces {
  if ('workspaceId' in set) return (column) => sql<SqlBool>`${sql.ref(column)} = ${set.workspaceId}`;
  return (column) =>
    sql<SqlBool>`${sql.ref(column)} in (select workspace_id from workspace_members where user_id = ${set.ownerUserId} and role = 'owner')`;
}

/** The workspace's plan tier; undefined when it is gone. */
export async function workspaceTier(db: Executor, workspaceId: string): Promise<string | undefined> {
  return (await db.selectFrom('workspaces').select('plan_tier').where('id', '=', workspaceId).executeTakeFirst())?.plan_tier;
}

/** One workspace's usage of the metric `counter` counts (0 when it counts no rows), prepared once per counter. */
export function usageQuery(counter: UsageCounter) {
  return preparedQuery((qdb, p: { workspaceId: string }) => qdb.selectNoFrom(orZero(counter(qdb, inWorkspaces({ workspaceId: p.workspaceId }))).as('n')));
}

/** The shapes of the figures statement of GET /v1/quotas. */
export interface FiguresShape {
  /** one workspace (else every workspace the user owns) */
  byWorkspace: boolean;
  /** with the user's own workspaces/owned (`owned`, `owned_rank`) */
  withUser: boolean;
  /** with a cluster's running operations (`cluster_found`, `running`); only by workspace */
  withCluster: boolean;
}

export type FiguresParams = { workspaceId: string; userId: string; clusterId: string; windowStart: number; monthStart: number };

/**
 * The figures statement of one shape, prepared: `usage_<i>` for each counter, `rate_<i>` for each
 * rate metric (its month's counter when `monthly`, else its day's), the plan `tier` by workspace,
 * and the columns of `shape`. `ranks` orders the plan tiers (a tier's rank is its index; others
 * rank `otherwise`) for `owned_rank`, the best rank among the workspaces the user owns.
 */
export function figuresQuery(
  shape: FiguresShape,
  counters: readonly UsageCounter[],
  rates: readonly { metric: string; monthly: boolean }[],
  ranks: { tiers: readonly string[]; otherwise: number },
) {
  const { byWorkspace, withUser, withCluster } = shape;
  const rankCase = sql`case w.plan_tier ${sql.join(ranks.tiers.map((tier, i) => sql`when ${tier} then ${sql.lit(i)}`), sql` `)} else ${sql.lit(ranks.otherwise)} end`;
  return preparedQuery((qdb, p: FiguresParams) => {
    const set: WorkspaceSet = byWorkspace ? { workspaceId: p.workspaceId } : { ownerUserId: p.userId };
    const within = inWorkspaces(set);
    const columns: AliasedExpression<unknown, string>[] = [
      ...counters.map((counter, i) => orZero(counter(qdb, within)).as(`usage_${i}`)),
      ...rates.map((m, i) => orZero(qdb.selectFrom('usage_counters').select((eb) => eb.fn.sum('count').as('n'))
        .where(within('usage_counters.workspace_id')).where('metric', '=', m.metric).where('window_start', '=', m.monthly ? p.monthStart : p.windowStart).$asScalar()).as(`rate_${i}`)),
    ];
    if (byWorkspace) columns.push(sql<number | string>`(select plan_tier from workspaces where id = ${p.workspaceId})`.as('tier'));
    if (withUser) {
      columns.push(sql<number | string>`(select count(*) from workspace_members where user_id = ${p.userId} and role = 'owner')`.as('owned'));
      columns.push(orZero(sql`select max(${rankCase}) from workspace_members m join workspaces w on w.id = m.workspace_id where m.user_id = ${p.userId} and m.role = 'owner'`).as('owned_rank'));
    }
    if (withCluster) {
      columns.push(sql<number | string>`(select count(*) from clusters where id = ${p.clusterId} and workspace_id = ${p.workspaceId})`.as('cluster_found'));
      columns.push(sql<number | string>`(select count(*) from operations where cluster_id = ${p.clusterId} and state = 'RUNNING')`.as('running'));
    }
    return qdb.selectNoFrom(columns);
  });
}
