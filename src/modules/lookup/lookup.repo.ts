// The lookup's queries (lookup.service.ts): one prepared statement per kind of id, by primary key:
// the resource's workspace, the caller's membership in it now, and for an operation whether its
// workspace still exists and who requested it.
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';

export interface OwnerRow {
  workspace_id: string;
  /** the user's role in the resource's workspace; null: not a member */
  role: string | null;
  /** operations only: who requested it, and the workspace's id while the workspace exists */
  requested_by_user?: string | null;
  live_workspace?: string | null;
}

/** The resource's workspace and the user's role there (null: not a member); `userId` '' for a workspace credential. */
function ownerQuery(table: 'clusters' | 'installs' | 'secrets' | 'snippets' | 'packages' | 'machines' | 'agents' | 'offers') {
  // Typed as clusters: the query reads only id and workspace_id, which every one of these tables has.
  return preparedQuery((db, p: { id: string; userId: string }) =>
    db.selectFrom(`${table} as r` as 'clusters as r')
      .leftJoin('workspace_members as m', (j) => j.onRef('m.workspace_id', '=', 'r.workspace_id').on('m.user_id', '=', p.userId))
      .select(['r.workspace_id', 'm.role'])
      .where('r.id', '=', p.id));
}

/**
 * An operation also says whether its workspace is gone and who requested it: after a workspace
 * is deleted, the user who requested an operation there may still read it (the
 * `requesterOfDeletedWorkspace` rule of GET /v1/operations/{id}, platform/auth.ts).
 */
const operationOwner = preparedQuery((db, p: { id: string; userId: string }) =>
  db.selectFrom('operations as r')
    .leftJoin('workspace_members as m', (j) => j.onRef('m.workspace_id', '=', 'r.workspace_id').on('m.user_id', '=', p.userId))
    .leftJoin('workspaces as w', 'w.id', 'r.workspace_id')
    .select(['r.workspace_id', 'm.role', 'r.requested_by_user', 'w.id as live_workspace'])
    .where('r.id', '=', p.id));

const OWNER_QUERIES = {
  operation: operationOwner,
  cluster: ownerQuery('clusters'),
  install: ownerQuery('installs'),
  secret: ownerQuery('secrets'),
  snippet: ownerQuery('snippets'),
  package: ownerQuery('packages'),
  machine: ownerQuery('machines'),
  agent: ownerQuery('agents'),
  offer: ownerQuery('offers'),
};

export type OwnedKind = keyof typeof OWNER_QUERIES;

/** The owner of the resource `id` of `kind`, with the user's role there; undefined if there is none. */
export async function findOwner(db: Executor, kind: OwnedKind, params: { id: string; userId: string }): Promise<OwnerRow | undefined> {
  const [row] = await OWNER_QUERIES[kind](db, params);
  return row;
}
