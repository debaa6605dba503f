// How a module that owns a counted resource tells the quota module its usage: one indexed count
// query, declared next to the table it counts and registered once (services.ts). Each counter is
// a scalar subquery over "the workspaces in question", so GET /v1/quotas computes every metric in
// one statement, for one workspace or for all the workspaces a user owns (the condition is built
// by quotas.repo.ts' inWorkspaces).
import type { Expression, SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';

/** The workspaces a figure is about: one, or every workspace a user owns. */
export type WorkspaceSet = { workspaceId: string } | { ownerUserId: string };

/** A condition on a workspace-id column: true for the workspaces in question. */
export type InWorkspaces = (column: string) => Expression<SqlBool>;

/**
 * A usage counter: a scalar subquery (`$asScalar()`) giving the usage over the workspaces that
 * `inWorkspaces` selects, e.g.
 *   (db, inWorkspaces) => db.selectFrom('clusters').select((eb) => eb.fn.countAll().as('n'))
 *     .where(inWorkspaces('clusters.workspace_id')).$asScalar()
 */
export type UsageCounter = (db: Executor, inWorkspaces: InWorkspaces) => Expression<unknown>;
