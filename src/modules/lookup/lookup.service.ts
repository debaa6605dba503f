// GET /v1/lookup/{id}: which workspace an id belongs to and its page, for a caller who may read it.
// The web app follows an html_url of another workspace than the one it shows through this, then
// switches. Anything the caller may not read is the same 404 as an unknown or malformed id, so
// the answer tells nothing about other tenants (no existence oracle).
//
// One prepared statement per lookup, by primary key: the resource's workspace, the caller's
// membership in it now (rights are decided when they are used), and for an operation whether
// its workspace still exists and who requested it.
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { Principal } from '../../platform/auth.js';
import { notFound } from '../../platform/errors.js';
import { ID_PREFIXES, isId, type IdKind } from '../../platform/ids.js';

/** The kinds an id is looked up for: the API's noun, its table, and the web app's collection of its html_url (null: no page). */
const KINDS = {
  operation: { table: 'operations', page: 'operations' },
  cluster: { table: 'clusters', page: 'clusters' },
  install: { table: 'installs', page: 'installs' },
  secret: { table: 'secrets', page: 'secrets' },
  snippet: { table: 'snippets', page: 'snippets' },
  package: { table: 'packages', page: null },
  machine: { table: 'machines', page: 'machines' },
  agent: { table: 'agents', page: 'agents' },
  offer: { table: 'offers', page: 'offers' },
} as const satisfies Partial<Record<IdKind, { table: string; page: string | null }>>;

export type LookupType = keyof typeof KINDS;
export const LOOKUP_TYPES = Object.keys(KINDS) as LookupType[];

const BY_PREFIX = new Map(LOOKUP_TYPES.map((type) => [ID_PREFIXES[type], type]));

export interface LookupResult {
  id: string;
  type: LookupType;
  workspace_id: string;
  html_url: string | null;
}

interface Row {
  workspace_id: string;
  role: string | null;
}

/** The resource's workspace and the user's role there (null: not a member); `userId` '' for a workspace credential. */
function ownerQuery(table: Exclude<(typeof KINDS)[LookupType]['table'], 'operations'>) {
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

const QUERIES = {
  cluster: ownerQuery('clusters'),
  install: ownerQuery('installs'),
  secret: ownerQuery('secrets'),
  snippet: ownerQuery('snippets'),
  package: ownerQuery('packages'),
  machine: ownerQuery('machines'),
  agent: ownerQuery('agents'),
  offer: ownerQuery('offers'),
};

/** The lookup type of a well-formed id of a kind this route knows, else null. */
function typeOf(id: string): LookupType | null {
  const type = BY_PREFIX.get(id.slice(0, id.indexOf('_')) as (typeof ID_PREFIXES)[LookupType]);
  return type && isId(type, id) ? type : null;
}

/** Whether `principal` may read a resource of `row`'s workspace now. */
function mayRead(principal: Principal, row: Row & { requested_by_user?: string | null; live_workspace?: string | null }): boolean {
  if (principal.kind === 'workspace') return row.workspace_id === principal.workspaceId;
  if (principal.kind === 'machine') return false;
  if (row.role !== null) return true;
  return row.live_workspace === null && row.requested_by_user === principal.userId;
}

export function createLookupService(deps: { db: Executor; publicUrl: string }) {
  const { db, publicUrl } = deps;

  async function lookup(principal: Principal, id: string): Promise<LookupResult> {
    const type = typeOf(id);
    if (!type) throw notFound('resource');
    const params = { id, userId: principal.kind === 'user' ? principal.userId : '' };
    const [row] = type === 'operation' ? await operationOwner(db, params) : await QUERIES[type](db, params);
    if (!row || !mayRead(principal, row)) throw notFound('resource');
    const page = KINDS[type].page;
    return { id, type, workspace_id: row.workspace_id, html_url: page ? `${publicUrl}/${page}/${id}` : null };
  }

  return { lookup };
}
