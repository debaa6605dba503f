// SQL of secrets and secret versions. A secret's revision (its etag) moves on writes to the secret
// itself; its version counters move with the versions, in the same transaction. Every version
// write bumps the version's own revision.
import { PostgresAdapter } from 'kysely';
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import { preparedQuery } from '../../db/prepared.js';
import type { SecretVersionsTable, SecretsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';
import type { UsageCounter } from '../quotas/usage.js';

export type SecretRow = SecretsTable;
export type VersionRow = SecretVersionsTable;

// The lookups of `:access` (the hot read path) are prepared once per dialect.
const secretById = preparedQuery((db, p: { workspaceId: string; id: string }) =>
  db.selectFrom('secrets').selectAll().where('id', '=', p.id).where('workspace_id', '=', p.workspaceId));
const versionById = preparedQuery((db, p: { secretId: string; id: string }) =>
  db.selectFrom('secret_versions').selectAll().where('id', '=', p.id).where('secret_id', '=', p.secretId));
const versionByNumber = preparedQuery((db, p: { secretId: string; number: number }) =>
  db.selectFrom('secret_versions').selectAll().where('secret_id', '=', p.secretId).where('version_number', '=', p.number));
const latestEnabled = preparedQuery((db, p: { secretId: string }) =>
  db.selectFrom('secret_versions').selectAll().where('secret_id', '=', p.secretId).where('state', '=', 'enabled')
    .orderBy('version_number', 'desc').limit(1));

export async function findSecret(db: Executor, workspaceId: string, id: string): Promise<SecretRow | undefined> {
  return (await secretById(db, { workspaceId, id }))[0];
}

export async function findVersion(db: Executor, secretId: string, id: string): Promise<VersionRow | undefined> {
  return (await versionById(db, { secretId, id }))[0];
}

/**
 * The version under a row lock until the transaction ends (PostgreSQL; SQLite's `begin immediate`
 * already serializes writers): a transition decided on it cannot be overtaken by a concurrent one.
 */
export function lockVersion(db: Executor, secretId: string, id: string): Promise<VersionRow | undefined> {
  const q = db.selectFrom('secret_versions').selectAll().where('id', '=', id).where('secret_id', '=', secretId);
  return (db.getExecutor().adapter instanceof PostgresAdapter ? q.forUpdate() : q).executeTakeFirst();
}

export async function findVersionByNumber(db: Executor, secretId: string, number: number): Promise<VersionRow | undefined> {
  return (await versionByNumber(db, { secretId, number }))[0];
}

/** The highest enabled version: what `latest` names. */
export async function findLatestEnabled(db: Executor, secretId: string): Promise<VersionRow | undefined> {
  return (await latestEnabled(db, { secretId }))[0];
}

// The unfiltered list (GET /v1/secrets) is prepared too: its first page and the pages after a cursor.
const firstSecretsPage = preparedQuery((db, p: { workspaceId: string; limit: number }) =>
  db.selectFrom('secrets').selectAll().where('workspace_id', '=', p.workspaceId).orderBy('id', 'desc').limit(p.limit));
const nextSecretsPage = preparedQuery((db, p: { workspaceId: string; afterId: string; limit: number }) =>
  db.selectFrom('secrets').selectAll().where('workspace_id', '=', p.workspaceId).where('id', '<', p.afterId).orderBy('id', 'desc').limit(p.limit));

/** A page of the workspace's secrets, newest first (limit + 1 rows); filters narrow it (built per call). */
export function listSecrets(db: Executor, workspaceId: string, page: PageRequest, filters: { kind: string | null; state: string | null }): Promise<SecretRow[]> {
  if (filters.kind === null && filters.state === null) {
    return page.afterId
      ? nextSecretsPage(db, { workspaceId, afterId: page.afterId, limit: page.limit + 1 })
      : firstSecretsPage(db, { workspaceId, limit: page.limit + 1 });
  }
  const q = db.selectFrom('secrets').selectAll().where('workspace_id', '=', workspaceId)
    .$if(filters.kind !== null, (b) => b.where('kind', '=', filters.kind!))
    .$if(filters.state !== null, (b) => b.where('state', '=', filters.state!));
  return keysetPage(q, 'id', page).execute();
}

export function listVersions(db: Executor, secretId: string, page: PageRequest, state: string | null) {
  const q = db.selectFrom('secret_versions').selectAll().where('secret_id', '=', secretId)
    .$if(state !== null, (b) => b.where('state', '=', state!));
  return keysetPage(q, 'id', page).execute();
}

/** Versions with these numbers (alias targets), to check they exist. */
export function versionsByNumbers(db: Executor, secretId: string, numbers: number[]) {
  return db.selectFrom('secret_versions').select(['version_number', 'state']).where('secret_id', '=', secretId).where('version_number', 'in', numbers).execute();
}

/** Inserts unless the name is taken in the workspace; false when it is (`on conflict`: a failed statement would abort a PostgreSQL transaction). */
export async function insertSecretIfNameFree(db: Executor, row: SecretRow): Promise<boolean> {
  const res = await db.insertInto('secrets').values(row).onConflict((oc) => oc.columns(['workspace_id', 'name']).doNothing()).executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

export async function insertVersion(db: Executor, row: VersionRow): Promise<void> {
  await db.insertInto('secret_versions').values(row).execute();
}

type SecretPatch = Partial<Pick<SecretRow, 'name' | 'description' | 'labels' | 'version_aliases'>>;

/** Compare-and-set write of an active secret (revision null: `*`); undefined when it did not match. */
export function updateSecretIfRevision(db: Executor, workspaceId: string, id: string, revision: number | null, set: SecretPatch, now: number) {
  return db.updateTable('secrets')
    .set((eb) => ({ ...set, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('workspace_id', '=', workspaceId).where('state', '=', 'active')
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .returningAll().executeTakeFirst();
}

/** active -> soft_deleted, compare-and-set. */
export function softDeleteIfRevision(db: Executor, workspaceId: string, id: string, revision: number | null, now: number, purgeAt: number) {
  return db.updateTable('secrets')
    .set((eb) => ({ state: 'soft_deleted', deleted_at: now, purge_at: purgeAt, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('workspace_id', '=', workspaceId).where('state', '=', 'active')
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .returningAll().executeTakeFirst();
}

/** soft_deleted -> active while its purge time has not come, compare-and-set. */
export function undeleteIfRevision(db: Executor, workspaceId: string, id: string, revision: number | null, now: number) {
  return db.updateTable('secrets')
    .set((eb) => ({ state: 'active', deleted_at: null, purge_at: null, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('workspace_id', '=', workspaceId).where('state', '=', 'soft_deleted').where('purge_at', '>', now)
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .returningAll().executeTakeFirst();
}

/**
 * Hands out the next version number of an active secret: one statement on the secret row, which
 * also serializes concurrent adds (the row lock on PostgreSQL; SQLite's write transaction).
 * Undefined when the secret is not there or not active.
 */
export async function takeNextVersionNumber(db: Executor, workspaceId: string, id: string): Promise<number | undefined> {
  const row = await db.updateTable('secrets')
    .set((eb) => ({ version_count: eb('version_count', '+', 1), enabled_version_count: eb('enabled_version_count', '+', 1) }))
    .where('id', '=', id).where('workspace_id', '=', workspaceId).where('state', '=', 'active')
    .returning('version_count').executeTakeFirst();
  return row?.version_count;
}

export async function adjustEnabledCount(db: Executor, secretId: string, delta: number): Promise<void> {
  await db.updateTable('secrets').set((eb) => ({ enabled_version_count: eb('enabled_version_count', '+', delta) })).where('id', '=', secretId).execute();
}

/** Moves a version from one of `from` to `to` (compare-and-set on its revision); undefined when nothing matched. */
export function setVersionStateIfRevision(db: Executor, secretId: string, id: string, revision: number | null, from: string, to: string, now: number) {
  return db.updateTable('secret_versions')
    .set((eb) => ({ state: to, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('secret_id', '=', secretId).where('state', '=', from)
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .returningAll().executeTakeFirst();
}

/** Crypto-shredding: the version becomes destroyed and its key id, wrapped key and ciphertext are gone. */
export function destroyVersionIfRevision(db: Executor, secretId: string, id: string, revision: number | null, now: number) {
  return db.updateTable('secret_versions')
    .set((eb) => ({ state: 'destroyed', destroyed_at: now, key_id: null, wrapped_key: null, ciphertext: null, updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id).where('secret_id', '=', secretId).where('state', '!=', 'destroyed')
    .$if(revision !== null, (q) => q.where('revision', '=', revision!))
    .returningAll().executeTakeFirst();
}

/** Removes a secret and (by cascade) its versions; the row as it was, or undefined. */
export function deleteSecret(db: Executor, workspaceId: string, id: string) {
  return db.deleteFrom('secrets').where('id', '=', id).where('workspace_id', '=', workspaceId).returningAll().executeTakeFirst();
}

/** Soft-deleted secrets whose purge time has come, oldest first. */
export function purgeCandidates(db: Executor, now: number, limit: number) {
  return db.selectFrom('secrets').select('id').where('purge_at', '<=', now).where('state', '=', 'soft_deleted').orderBy('purge_at').limit(limit).execute();
}

/** Removes the secret if it is still due for purge: one statement, so of several sweeps exactly one removes it. */
export function purgeIfDue(db: Executor, id: string, now: number) {
  return db.deleteFrom('secrets').where('id', '=', id).where('state', '=', 'soft_deleted').where('purge_at', '<=', now).returningAll().executeTakeFirst();
}

/** secrets/secrets: the secrets of the workspaces in question, soft-deleted ones included until purged (unique (workspace_id, name) counts them). */
export const secretUsage: UsageCounter = (db, inWorkspaces) =>
  db.selectFrom('secrets').select((eb) => eb.fn.countAll().as('n')).where(inWorkspaces('secrets.workspace_id')).$asScalar();
