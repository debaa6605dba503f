// Packages: publish one, publish immutable versions of it (semver, input schema, manifest), read
// and list them. Publishing needs the admin or owner role; any member may read.
import semver from 'semver';
import type { Db, Executor } from '../../db/database.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, invalidArgument, notFound } from '../../platform/errors.js';
import { etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { compileInputSchema } from './input-schema.js';
import { checkManifest, type StoredManifest } from './package-manifest.js';
import * as repo from './packages.repo.js';
import { recordAuditEvent } from '../audit/audit.js';
import type { CreatePackageBodyT, CreateVersionBodyT, PackageT, PackageVersionT } from './packages.schemas.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findPackage, findVersion, resolveVersion } from './packages.repo.js';

export interface PackageServiceDeps {
  db: Db;
  cursors: CursorCodec;
}

const SORT_KEY_DIGITS = 10;

function semverViolation(description: string): ApiError {
  return invalidArgument(`semver is invalid: ${description}`, 'SEMVER_INVALID', [{ field: 'body.semver', description }]);
}

/**
 * Parses a strict SemVer 2.0 string. The `semver` package accepts `v1.2.3` and `=1.2.3` and
 * normalises them; we refuse anything that is not already its own normal form, so one version has
 * one spelling. Build metadata is refused: it carries no precedence (SemVer 2.0 §10), so
 * `1.0.0+a` and `1.0.0+b` would be two versions that neither `latest` nor a pin could tell apart.
 */
export function parseSemver(value: string): { version: string; sortKey: string; prerelease: boolean } {
  const parsed = semver.parse(value);
  if (!parsed) throw semverViolation('must be a SemVer 2.0 version such as 1.2.3 or 1.2.3-rc.1');
  if (parsed.build.length) throw semverViolation('build metadata (+...) is not accepted: it has no precedence');
  if (parsed.version !== value) {
    throw semverViolation(/^[vV=]/.test(value) ? `no "${value[0]}" prefix: write "${parsed.version}"` : `write "${parsed.version}"`);
  }
  const parts = [parsed.major, parsed.minor, parsed.patch];
  if (parts.some((n) => String(n).length > SORT_KEY_DIGITS)) throw semverViolation(`major, minor and patch have at most ${SORT_KEY_DIGITS} digits`);
  return {
    version: parsed.version,
    sortKey: parts.map((n) => String(n).padStart(SORT_KEY_DIGITS, '0')).join('.'),
    prerelease: parsed.prerelease.length > 0,
  };
}

/** The release a sort_key stands for (releases have no prerelease or build part). */
const versionOfSortKey = (key: string) => key.split('.').map((n) => String(Number(n))).join('.');

export function createPackageService(deps: PackageServiceDeps) {
  const { db, cursors } = deps;

  function toPackage(row: repo.PackageRow, latestSortKey: string | undefined): PackageT {
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      name: row.name,
      description: row.description,
      latest_version: latestSortKey === undefined ? null : versionOfSortKey(latestSortKey),
      created_at: row.created_at,
      updated_at: row.updated_at,
      etag: etagOf(row.revision),
    };
  }

  function toVersion(row: repo.PackageVersionRow): PackageVersionT {
    const manifest = JSON.parse(row.manifest) as StoredManifest;
    return {
      id: row.id,
      package_id: row.package_id,
      workspace_id: row.workspace_id,
      semver: row.semver,
      prerelease: row.prerelease === 1,
      input_schema: JSON.parse(row.input_schema),
      manifest: { routes: manifest.routes, resources: manifest.resources },
      created_at: row.created_at,
    };
  }

  async function withLatest(executor: Executor, row: repo.PackageRow): Promise<PackageT> {
    const keys = await repo.latestReleaseKeys(executor, [row.id]);
    return toPackage(row, keys.get(row.id));
  }

  async function packageOr404(executor: Executor, workspaceId: string, id: string): Promise<repo.PackageRow> {
    const row = isId('package', id) ? await repo.findPackage(executor, workspaceId, id) : undefined;
    if (!row) throw notFound('package');
    return row;
  }

  async function createPackage(scope: WorkspaceScope, body: CreatePackageBodyT, tx: Executor): Promise<PackageT> {
    requireRole(scope, 'admin');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const now = clock.now();
    const row: repo.PackageRow = {
      id: newId('package'),
      workspace_id: scope.workspaceId,
      name: body.name,
      description: body.description ?? '',
      created_at: now,
      updated_at: now,
      revision: 1,
    };
    if (!(await repo.insertPackageIfNameFree(tx, row))) {
      throw new ApiError('ALREADY_EXISTS', `a package named "${body.name}" already exists in the workspace`, { reason: 'PACKAGE_NAME_TAKEN' });
    }
    await recordAuditEvent(tx, scope, { action: 'package.create', resourceType: 'package', resourceId: row.id, resourceName: row.name });
    return toPackage(row, undefined);
  }

  /** For idempotent replays: the package's current representation, or null when it is gone. */
  async function loadPackage(workspaceId: string, id: string): Promise<PackageT | null> {
    const row = await repo.findPackage(db, workspaceId, id);
    return row ? withLatest(db, row) : null;
  }

  async function getPackage(scope: WorkspaceScope, id: string): Promise<PackageT> {
    return withLatest(db, await packageOr404(db, scope.workspaceId, id));
  }

  /** Two statements per page: the packages, then the latest release of all of them at once. */
  async function listPackages(scope: WorkspaceScope, query: PageQueryT): Promise<Page<PackageT>> {
    const page = cursors.request(query, scope.workspaceId);
    const rows = await repo.listPackages(db, scope.workspaceId, page);
    const latest = await repo.latestReleaseKeys(db, rows.slice(0, page.limit).map((r) => r.id));
    return cursors.page(rows, page, scope.workspaceId, {}, (row) => toPackage(row, latest.get(row.id)));
  }

  /**
   * Publishes a version, in the caller's transaction: the package must exist (404 before anything
   * about the body), then the semver, input schema and manifest are checked (400), then the
   * version is written (409 when the semver exists) and the package's etag moves.
   */
  async function createVersion(scope: WorkspaceScope, packageId: string, body: CreateVersionBodyT, tx: Executor): Promise<PackageVersionT> {
    requireRole(scope, 'admin');
    const pkg = await packageOr404(tx, scope.workspaceId, packageId);
    await assertWorkspaceActive(tx, scope.workspaceId);
    const version = parseSemver(body.semver);
    compileInputSchema(body.input_schema);
    const manifest = checkManifest(body.manifest);
    const now = clock.now();
    const row: repo.PackageVersionRow = {
      id: newId('packageVersion'),
      package_id: pkg.id,
      workspace_id: scope.workspaceId,
      semver: version.version,
      sort_key: version.sortKey,
      prerelease: version.prerelease ? 1 : 0,
      input_schema: JSON.stringify(body.input_schema),
      manifest: JSON.stringify(manifest),
      created_at: now,
    };
    if (!(await repo.insertVersionIfSemverFree(tx, row))) {
      throw new ApiError('ALREADY_EXISTS', `package ${pkg.id} already has version ${version.version}; versions are immutable, publish another`, {
        reason: 'VERSION_EXISTS',
      });
    }
    await repo.touchPackage(tx, pkg.id, now);
    await recordAuditEvent(tx, scope, {
      action: 'package.version.create', resourceType: 'package_version', resourceId: row.id, resourceName: `${pkg.name} ${row.semver}`,
      metadata: { package_id: pkg.id, package_name: pkg.name, semver: row.semver },
    });
    return toVersion(row);
  }

  /** For idempotent replays. */
  async function loadVersion(workspaceId: string, versionId: string): Promise<PackageVersionT | null> {
    const row = await repo.findVersion(db, workspaceId, versionId);
    return row ? toVersion(row) : null;
  }

  async function listVersions(scope: WorkspaceScope, packageId: string, query: PageQueryT): Promise<Page<PackageVersionT>> {
    await packageOr404(db, scope.workspaceId, packageId);
    // The cursor is bound to the package: one package's cursor is 400 on another's list.
    const filters = { package_id: packageId };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listVersions(db, packageId, page);
    return cursors.page(rows, page, scope.workspaceId, filters, toVersion);
  }

  async function getVersion(scope: WorkspaceScope, packageId: string, versionId: string): Promise<PackageVersionT> {
    const row = isId('package', packageId) && isId('packageVersion', versionId) ? await repo.findVersion(db, scope.workspaceId, versionId) : undefined;
    if (!row || row.package_id !== packageId) throw notFound('package version');
    return toVersion(row);
  }

  return { createPackage, loadPackage, getPackage, listPackages, createVersion, loadVersion, listVersions, getVersion };
}

export type PackageService = ReturnType<typeof createPackageService>;
