// State changes of preview hostnames that install workflows make: eviction of pinned hostnames
// whose render was replaced long enough ago, and release when the install goes away. Each is one
// statement, run in the caller's transaction.
import type { Executor } from '../../db/database.js';

/**
 * Evicts the active pinned hostnames whose render was replaced at or before `replacedBefore`
 * (Unix seconds), for one install or (installId null) every install; returns how many.
 */
export async function evictAgedPinned(db: Executor, installId: string | null, replacedBefore: number, now: number): Promise<number> {
  const res = await db
    .updateTable('preview_hostnames')
    .set((eb) => ({ state: 'evicted', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('binding_kind', '=', 'pinned')
    .where('state', '=', 'active')
    .$if(installId !== null, (q) => q.where('install_id', '=', installId!))
    .where('render_id', 'in', (eb) =>
      eb
        .selectFrom('install_renders')
        .select('install_renders.id')
        .where('install_renders.replaced_at', 'is not', null)
        .where('install_renders.replaced_at', '<=', replacedBefore)
        .$if(installId !== null, (q) => q.where('install_renders.install_id', '=', installId!)),
    )
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Every hostname of the install stops being served (`releasing`); the rows go with the install. */
export async function releaseInstallHostnames(db: Executor, installId: string, now: number): Promise<void> {
  await db
    .updateTable('preview_hostnames')
    .set((eb) => ({ state: 'releasing', updated_at: now, revision: eb('revision', '+', 1) }))
    .where('install_id', '=', installId)
    .where('state', '!=', 'releasing')
    .execute();
}
