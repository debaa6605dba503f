// SQL of packages and their immutable versions. A version row is written once and never updated;
// publishing one bumps the package's revision (its `latest_version` may have changed).
import type { Executor } from '../../db/database.js';
import { keysetPage } from '../../db/keyset.js';
import type { PackagesTable, PackageVersionsTable } from '../../db/schema.js';
import type { PageRequest } from '../../platform/pagination.js';

export type PackageRow = PackagesTable;
export type PackageVersionRow = PackageVersionsTable;

/** Which version of a package an install asks for. */
export type VersionPin = { kind: 'latest' } | { kind: 'pinned'; version: string };

export function findPackage(db: Executor, workspaceId: string, id: string): Promise<PackageRow | undefined> {
  return db.selectFrom('packages').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

export function findVersion(db: Executor, workspaceId: string, versionId: string): Promise<PackageVersionRow | undefined> {
  return db.selectFrom('package_versions').selectAll().where('id', '=', versionId).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/**
 * The version a pin names: `latest` is the highest release by semver precedence (prereleases never
 * are); `pinned` is the exact semver string. Undefined when the package has no such version.
 */
export function resolveVersion(db: Executor, workspaceId: string, packageId: string, pin: VersionPin): Promise<PackageVersionRow | undefined> {
  const base = db.selectFrom('package_versions').selectAll().where('package_id', '=', packageId).where('workspace_id', '=', workspaceId);
  if (pin.kind === 'pinned') return base.where('semver', '=', pin.version).executeTakeFirst();
  return base.where('prerelease', '=', 0).orderBy('sort_key', 'desc').limit(1).executeTakeFirst();
}

export function listPackages(db: Executor, workspaceId: string, page: PageRequest): Promise<PackageRow[]> {
  return keysetPage(db.selectFrom('packages').selectAll().where('workspace_id', '=', workspaceId), 'id', page).execute();
}

/**
 * The highest release `sort_key` of each package, one grouped statement for a whole page (no
 * query per package). Build metadata is refused at publish, so a release's sort_key names exactly
 * one semver and the caller can turn it back into the version string.
 */
export async function latestReleaseKeys(db: Executor, packageIds: string[]): Promise<Map<string, string>> {
  if (packageIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('package_versions')
    .select((eb) => ['package_id', eb.fn.max('sort_key').as('sort_key')])
    .where('package_id', 'in', packageIds)
    .where('prerelease', '=', 0)
    .groupBy('package_id')
    .execute();
  return new Map(rows.map((r) => [r.package_id, String(r.sort_key)]));
}

export function listVersions(db: Executor, packageId: string, page: PageRequest): Promise<PackageVersionRow[]> {
  return keysetPage(db.selectFrom('package_versions').selectAll().where('package_id', '=', packageId), 'id', page).execute();
}

/**
 * Inserts unless the name is taken in the workspace; false when it is. `on conflict do nothing`
 * rather than catching the violation: on PostgreSQL a failed statement aborts the transaction.
 */
export async function insertPackageIfNameFree(db: Executor, row: PackageRow): Promise<boolean> {
  const res = await db
    .insertInto('packages')
    .values(row)
    .onConflict((oc) => oc.columns(['workspace_id', 'name']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** Inserts unless the package already has this semver; false when it has. */
export async function insertVersionIfSemverFree(db: Executor, row: PackageVersionRow): Promise<boolean> {
  const res = await db
    .insertInto('package_versions')
    .values(row)
    .onConflict((oc) => oc.columns(['package_id', 'semver']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) === 1;
}

/** A new version changes what the package reads as (latest_version): a write, so a new etag. */
export function touchPackage(db: Executor, id: string, now: number): Promise<PackageRow | undefined> {
  return db
    .updateTable('packages')
    .set((eb) => ({ updated_at: now, revision: eb('revision', '+', 1) }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}
