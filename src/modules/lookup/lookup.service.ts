// GET /v1/lookup/{id}: which workspace an id belongs to and its page, for a caller who may read it.
// The web app follows an html_url of another workspace than the one it shows through this, then
// switches. Anything the caller may not read is the same 404 as an unknown or malformed id, so
// the answer tells nothing about other tenants (no existence oracle).
//
// One prepared statement per lookup, by primary key (lookup.repo.ts): the resource's workspace,
// the caller's membership in it now (rights are decided when they are used), and for an operation
// whether its workspace still exists and who requested it.
import type { Executor } from '../../db/database.js';
import type { Principal } from '../../platform/auth.js';
import { notFound } from '../../platform/errors.js';
import { ID_PREFIXES, isId, type IdKind } from '../../platform/ids.js';
import { findOwner, type OwnedKind, type OwnerRow } from './lookup.repo.js';

/** The kinds an id is looked up for (the API's noun; its table is in lookup.repo.ts) and the web app's collection of its html_url (null: no page). */
const KINDS = {
  operation: { page: 'operations' },
  cluster: { page: 'clusters' },
  install: { page: 'installs' },
  secret: { page: 'secrets' },
  snippet: { page: 'snippets' },
  package: { page: null },
  machine: { page: 'machines' },
  agent: { page: 'agents' },
  offer: { page: 'offers' },
} as const satisfies Partial<Record<IdKind, unknown>> & Record<OwnedKind, { page: string | null }>;

export type LookupType = keyof typeof KINDS;
export const LOOKUP_TYPES = Object.keys(KINDS) as LookupType[];

const BY_PREFIX = new Map(LOOKUP_TYPES.map((type) => [ID_PREFIXES[type], type]));

export interface LookupResult {
  id: string;
  type: LookupType;
  workspace_id: string;
  html_url: string | null;
}

/** The lookup type of a well-formed id of a kind this route knows, else null. */
function typeOf(id: string): LookupType | null {
  const type = BY_PREFIX.get(id.slice(0, id.indexOf('_')) as (typeof ID_PREFIXES)[LookupType]);
  return type && isId(type, id) ? type : null;
}

/** Whether `principal` may read a resource of `row`'s workspace now. */
function mayRead(principal: Principal, row: OwnerRow): boolean {
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
    const row = await findOwner(db, type, params);
    if (!row || !mayRead(principal, row)) throw notFound('resource');
    const page = KINDS[type].page;
    return { id, type, workspace_id: row.workspace_id, html_url: page ? `${publicUrl}/${page}/${id}` : null };
  }

  return { lookup };
}
