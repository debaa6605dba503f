// SQL of quota figures that belong to no other module: rate counters (usage_counters), the
// workspaces a user owns, and the running operations of a cluster.
import { sql, type Expression } from 'kysely';
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';

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
