// Installs: create (202, install.create), list (spec endpoint 7), read, update (202,
// install.update), delete (202, install.delete), and read their renders. Each state change and the
// operation that acts on it are written in one transaction; `reconciling` is claimed with one
// conditional statement, so two operations never deploy an install at once (deletion excepted: it
// drains the others first).
import type { Db, Dialect, Executor } from '../../db/database.js';
import type { PackageVersionsTable } from '../../db/schema.js';
import type { DriverCallContext } from '../../drivers/cluster/driver.js';
import type { Json } from '../../jobs/workflows.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, notFound } from '../../platform/errors.js';
import { etagMismatch } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page, PageQueryT } from '../../platform/pagination.js';
import { findRunningOperation } from '../operations/operations.service.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import { checkValuesBounds, validateValues } from '../packages/input-schema.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { findPackage, resolveVersion } from '../packages/packages.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { assertRefsNotInlined, checkSecretRefs, findSecretRefs } from '../secrets/secret-refs.js';
import * as repo from './installs.repo.js';
import { installDetailIn, installView, pinOf } from './installs.view.js';
import {
  INSTALL_CREATE, INSTALL_DELETE, INSTALL_UPDATE, type CreateInstallBodyT, type InstallDetailT, type InstallT, type ListInstallsQueryT,
  type PackageVersionPinT, type PatchInstallBodyT, type RenderDetailT, type RenderT,
} from './installs.schemas.js';
import { releaseWorkspaceInstalls, syncInstallRoutes, type InstallWorkflowDeps, type ReleaseWorkspaceInstallsOptions } from './installs.workflows.js';
import { recordEvent } from '../../events/record.js';
import { recordAuditEvent, type AuditAction } from '../audit/audit.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findRenderManifest, installNames, isBeingDeleted, lockInstall, type InstallRow } from './installs.repo.js';

export interface InstallServiceDeps extends InstallWorkflowDeps {
  dialect: Dialect;
  cursors: CursorCodec;
  operations: OperationService;
  publicUrl: string;
  quotas: Pick<QuotaService, 'enforce'>;
}


/**
 * The values checked against the version's input schema, defaults applied, and their secret
 * references checked (secret-refs.ts: admins and owners only; each names a readable version).
 * Errors name the field the caller sent (`body.values...` on PATCH, `body.initial_values...` on
 * create; kept values too).
 */
async function valuesIn(
  tx: Executor, scope: WorkspaceScope, version: PackageVersionsTable, values: Record<string, Json>, field: 'initial_values' | 'values',
): Promise<Record<string, Json>> {
  checkValuesBounds(values, `body.${field}`);
  const refs = findSecretRefs(values, `body.${field}`);
  const checked = validateValues(version.id, version.input_schema, values, `body.${field}`, refs.map((r) => r.path));
  await checkSecretRefs(tx, scope, refs, `body.${field}`);
  assertRefsNotInlined(version.manifest, refs, `body.${field}`);
  return checked;
}

/** kind pinned needs a version; kind latest takes none (the schema cannot say "iff"). */
function checkPin(pin: PackageVersionPinT, field: string): void {
  if (pin.kind === 'pinned' && pin.version === undefined) throw fieldInvalid(`${field}.version`, 'version is required with kind pinned');
  if (pin.kind === 'latest' && pin.version !== undefined) throw fieldInvalid(`${field}.version`, 'version is only accepted with kind pinned');
}

export const installDeleting = (id: string) => new ApiError('FAILED_PRECONDITION', `install ${id} is being deleted`, { reason: 'INSTALL_DELETING' });

export function createInstallService(deps: InstallServiceDeps) {
  const { db, dialect, cursors, operations, publicUrl } = deps;

  /** One list item; `urls` rows are used as they are (the response schema picks the members). */
  const toInstall = (row: repo.InstallItemRow, urls: repo.UrlItemRow[]): InstallT => installView(publicUrl, row, urls);

  /** The install as GET /v1/installs/{id} returns it, read in `tx`: what its events carry (API.md 8.11). */
  const detailIn = async (tx: Executor, workspaceId: string, id: string): Promise<InstallDetailT> => (await installDetailIn(tx, publicUrl, workspaceId, id))!;

  function toRender(row: repo.RenderItemRow, currentRenderId: string | null): RenderT {
    return {
      id: row.id,
      install_id: row.install_id,
      workspace_id: row.workspace_id,
      package_version_id: row.package_version_id,
      semver: row.semver,
      content_hash: row.content_hash,
      current: row.id === currentRenderId,
      created_at: row.created_at,
      replaced_at: row.replaced_at,
    };
  }

  async function findOr404(executor: Executor, scope: WorkspaceScope, id: string): Promise<repo.InstallRow> {
    const row = isId('install', id) ? await repo.findInstall(executor, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('install');
    return row;
  }

  /** The version a pin names now; 422 VERSION_NOT_FOUND when the package has none that fits. */
  async function versionFor(executor: Executor, workspaceId: string, packageId: string, pin: PackageVersionPinT): Promise<PackageVersionsTable> {
    const version = await resolveVersion(executor, workspaceId, packageId, pin.kind === 'pinned' ? { kind: 'pinned', version: pin.version! } : { kind: 'latest' });
    if (version) return version;
    const message = pin.kind === 'pinned' ? `package ${packageId} has no version ${pin.version}` : `package ${packageId} has no released (non-prerelease) version`;
    throw new ApiError('FAILED_PRECONDITION', message, { reason: 'VERSION_NOT_FOUND' });
  }

  /**
   * install.create, .update (a redeploy) or .delete, in the transaction that started `op`: named
   * "<package> on <cluster>" as they are called now, with the version it deploys.
   */
  async function auditInstall(tx: Executor, scope: WorkspaceScope, action: AuditAction, op: OperationT, id: string, version?: { id: string; semver: string }): Promise<void> {
    const names = await repo.installNames(tx, id);
    const meta = op.metadata as { package_id?: string; cluster_id: string | null };
    await recordAuditEvent(tx, scope, {
      action, resourceType: 'install', resourceId: id, resourceName: names ? `${names.package_name} on ${names.cluster_name}` : null,
      metadata: {
        package_id: meta.package_id ?? '', package_name: names?.package_name ?? '',
        ...(version ? { package_version_id: version.id, semver: version.semver } : {}),
        cluster_id: meta.cluster_id ?? '', cluster_name: names?.cluster_name ?? '', operation_id: op.id,
      },
    });
  }

  /** 409 with the install operation that holds the install, or 422 when that is its deletion. */
  async function busy(executor: Executor, id: string): Promise<ApiError> {
    if (await repo.isBeingDeleted(executor, id)) return installDeleting(id);
    const running = (await findRunningOperation(executor, id, INSTALL_UPDATE)) ?? (await findRunningOperation(executor, id, INSTALL_CREATE));
    return new ApiError('ABORTED', `another operation is running on install ${id}; wait for it, then retry`, {
      reason: 'OPERATION_IN_PROGRESS',
      ...(running ? { metadata: { operation_id: running.id } } : {}),
    });
  }

  /**
   * Checks the package, version, values and cluster, then writes the install (pending,
   * reconciling) and starts install.create, in the caller's transaction. Any member may install.
   */
  async function createInstall(scope: WorkspaceScope, body: CreateInstallBodyT, tx: Executor): Promise<OperationT> {
    checkPin(body.package_version_pin, 'body.package_version_pin');
    const packageMissing = () => fieldInvalid('body.package_id', `package ${body.package_id} not found in the workspace`, 'PACKAGE_NOT_FOUND');
    const clusterMissing = () => fieldInvalid('body.cluster_id', `cluster ${body.cluster_id} not found in the workspace`, 'CLUSTER_NOT_FOUND');
    if (!isId('package', body.package_id)) throw packageMissing();
    if (!isId('cluster', body.cluster_id)) throw clusterMissing();
    await assertWorkspaceActive(tx, scope.workspaceId);
    const pkg = await findPackage(tx, scope.workspaceId, body.package_id);
    if (!pkg) throw packageMissing();
    const version = await versionFor(tx, scope.workspaceId, pkg.id, body.package_version_pin);
    const values = await valuesIn(tx, scope, version, (body.initial_values ?? {}) as Record<string, Json>, 'initial_values');
    return writeInstall(tx, scope, { version, pin: body.package_version_pin, values, clusterId: body.cluster_id, packageWorkspaceId: null }, clusterMissing);
  }

  /**
   * The install an order delivers (API.md 8.7): the seller's package version, in the customer's
   * workspace (scope), with the values the draft's configuration checked. Its operation finds the
   * version in the seller's workspace (`package_workspace_id`).
   */
  async function createDeliveredInstall(
    scope: WorkspaceScope, order: { version: PackageVersionsTable; values: Record<string, Json>; clusterId: string }, tx: Executor,
  ): Promise<{ operation: OperationT; installId: string }> {
    await assertWorkspaceActive(tx, scope.workspaceId);
    const values = await valuesIn(tx, scope, order.version, order.values, 'initial_values');
    const clusterMissing = () => new ApiError('FAILED_PRECONDITION', `cluster ${order.clusterId} no longer exists`, { reason: 'CLUSTER_NOT_FOUND' });
    const packageWorkspaceId = order.version.workspace_id === scope.workspaceId ? null : order.version.workspace_id;
    const operation = await writeInstall(tx, scope, {
      version: order.version, pin: { kind: 'pinned', version: order.version.semver }, values, clusterId: order.clusterId, packageWorkspaceId,
    }, clusterMissing);
    return { operation, installId: operation.owner_id };
  }

  /** Writes the install (pending, reconciling) on an active cluster and starts install.create. */
  async function writeInstall(tx: Executor, scope: WorkspaceScope, spec: {
    version: PackageVersionsTable; pin: PackageVersionPinT; values: Record<string, Json>; clusterId: string; packageWorkspaceId: string | null;
  }, clusterMissing: () => ApiError): Promise<OperationT> {
    const { version } = spec;
    // Ordered against the cluster's deletion, which refuses while installs remain.
    const cluster = await repo.lockClusterShared(tx, dialect, scope.workspaceId, spec.clusterId);
    if (!cluster) throw clusterMissing();
    if (cluster.state !== 'active') {
      throw new ApiError('FAILED_PRECONDITION', `cluster ${cluster.id} is ${cluster.state}, not active`, { reason: 'CLUSTER_NOT_ACTIVE' });
    }
    const now = clock.now();
    const row: repo.InstallRow = {
      id: newId('install'),
      workspace_id: scope.workspaceId,
      cluster_id: cluster.id,
      package_id: version.package_id,
      package_version_id: version.id,
      pin_kind: spec.pin.kind,
      pin_version: spec.pin.version ?? null,
      values: JSON.stringify(spec.values),
      state: 'pending',
      reconciling: 1,
      current_render_id: null,
      created_at: now,
      updated_at: now,
      revision: 1,
      ...(spec.packageWorkspaceId ? { package_workspace_id: spec.packageWorkspaceId } : {}),
    };
    await deps.quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'installs/installs');
    await repo.insertInstall(tx, row);
    await recordEvent(tx, { type: 'install.created', workspace_id: scope.workspaceId, data: await detailIn(tx, scope.workspaceId, row.id) });
    const op = await operations.start(tx, {
      type: INSTALL_CREATE, workspaceId: scope.workspaceId, ownerType: 'install', ownerId: row.id, clusterId: cluster.id,
      input: { package_version_id: version.id, ...(spec.packageWorkspaceId ? { package_workspace_id: spec.packageWorkspaceId } : {}) },
      metadata: { install_id: row.id, package_id: version.package_id, package_version_id: version.id, semver: version.semver },
      actor: actorOf(scope),
    });
    await auditInstall(tx, scope, 'install.create', op, row.id, version);
    return op;
  }

  /** Two statements whatever the page: the installs, then the URLs of exactly those. */
  async function listInstalls(scope: WorkspaceScope, query: ListInstallsQueryT): Promise<Page<InstallT>> {
    const filters: repo.InstallFilters = { cluster_id: query.cluster_id, package_id: query.package_id, state: query.state };
    const filtered = repo.hasFilters(filters);
    // Unfiltered cursors keep binding no filters, so those handed out before the filters existed stay valid.
    const bound = filtered ? filters : {};
    const page = cursors.request(query, scope.workspaceId, bound);
    const rows = await repo.listInstalls(db, scope.workspaceId, filters, page);
    const kept = rows.slice(0, page.limit);
    const urls = new Map<string, repo.UrlItemRow[]>();
    if (kept.length > 0) {
      const found = filtered
        ? await repo.listUrlsOfInstalls(db, kept.map((r) => r.id))
        : await repo.listUrlsOfInstallRange(db, scope.workspaceId, kept[kept.length - 1]!.id, kept[0]!.id);
      for (const url of found) {
        const list = urls.get(url.install_id);
        if (list) list.push(url);
        else urls.set(url.install_id, [url]);
      }
    }
    return cursors.page(rows, page, scope.workspaceId, bound, (row) => toInstall(row, urls.get(row.id) ?? []));
  }

  async function getInstall(scope: WorkspaceScope, id: string): Promise<InstallDetailT> {
    const row = isId('install', id) ? await repo.findInstallDetail(db, scope.workspaceId, id) : undefined;
    if (!row) throw notFound('install');
    return { ...toInstall(row, await repo.listUrlsOfInstall(db, id)), values: JSON.parse(row.values) };
  }

  /**
   * Sets the install's pin and values and starts install.update (a new render). The version is
   * resolved from the pin again (`latest` moves to the newest release), and the values, sent or
   * kept, are validated against it.
   */
  async function updateInstall(scope: WorkspaceScope, id: string, revision: number | null, body: PatchInstallBodyT): Promise<OperationT> {
    if (body.package_version_pin) checkPin(body.package_version_pin, 'body.package_version_pin');
    if (!isId('install', id)) throw notFound('install');
    return db.transaction().execute(async (tx) => {
      await assertWorkspaceActive(tx, scope.workspaceId);
      const current = await findOr404(tx, scope, id);
      if (current.state === 'deleted') throw installDeleting(id);
      if (current.reconciling === 1) throw await busy(tx, id);
      if (revision !== null && revision !== current.revision) throw etagMismatch(`install ${id}`, current.revision);
      const pin = body.package_version_pin ?? pinOf(current);
      const version = await versionFor(tx, scope.workspaceId, current.package_id, pin);
      const values = await valuesIn(tx, scope, version, (body.values ?? JSON.parse(current.values)) as Record<string, Json>, 'values');
      const claimed = await repo.claimForUpdate(tx, scope.workspaceId, id, revision, {
        package_version_id: version.id, pin_kind: pin.kind, pin_version: pin.version ?? null, values: JSON.stringify(values),
      }, clock.now());
      if (!claimed) {
        // A concurrent request changed it between the read and the claim.
        const now = await findOr404(tx, scope, id);
        if (now.reconciling === 1 || now.state === 'deleted') throw await busy(tx, id);
        throw etagMismatch(`install ${id}`, now.revision);
      }
      await recordEvent(tx, { type: 'install.updated', workspace_id: scope.workspaceId, data: await detailIn(tx, scope.workspaceId, id) });
      const op = await operations.start(tx, {
        type: INSTALL_UPDATE, workspaceId: scope.workspaceId, ownerType: 'install', ownerId: id, clusterId: claimed.cluster_id,
        input: { package_version_id: version.id },
        metadata: { install_id: id, package_id: claimed.package_id, package_version_id: version.id, semver: version.semver },
        actor: actorOf(scope),
      });
      await auditInstall(tx, scope, 'install.update', op, id, version);
      return op;
    });
  }

  /**
   * Starts install.delete; while one runs, any DELETE returns it (whatever its if-match: the
   * caller asks for what is already happening). The install row is locked first, so concurrent
   * DELETEs start one operation.
   */
  async function deleteInstall(scope: WorkspaceScope, id: string, revision: number | null): Promise<OperationT> {
    if (!isId('install', id)) throw notFound('install');
    return db.transaction().execute(async (tx) => {
      await assertWorkspaceActive(tx, scope.workspaceId);
      const row = await repo.lockInstall(tx, dialect, scope.workspaceId, id);
      if (!row) throw notFound('install');
      const running = await operations.findRunning(tx, id, INSTALL_DELETE);
      if (running) return running;
      if (revision !== null && revision !== row.revision) throw etagMismatch(`install ${id}`, row.revision);
      await repo.markReconciling(tx, id, clock.now());
      const op = await operations.start(tx, {
        type: INSTALL_DELETE, workspaceId: scope.workspaceId, ownerType: 'install', ownerId: id, clusterId: row.cluster_id,
        input: {}, metadata: { install_id: id, package_id: row.package_id }, actor: actorOf(scope),
      });
      await auditInstall(tx, scope, 'install.delete', op, id);
      return op;
    });
  }

  async function listRenders(scope: WorkspaceScope, id: string, query: PageQueryT): Promise<Page<RenderT>> {
    const install = await findOr404(db, scope, id);
    const filters = { install_id: id };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listRenders(db, scope.workspaceId, id, page);
    return cursors.page(rows, page, scope.workspaceId, filters, (row) => toRender(row, install.current_render_id));
  }

  async function getRender(scope: WorkspaceScope, id: string, renderId: string): Promise<RenderDetailT> {
    const install = await findOr404(db, scope, id);
    const row = isId('render', renderId) ? await repo.findRender(db, scope.workspaceId, id, renderId) : undefined;
    if (!row) throw notFound('render');
    return { ...toRender(row, install.current_render_id), manifest: JSON.parse(row.manifest) };
  }

  return {
    toInstall,
    createInstall,
    createDeliveredInstall,
    listInstalls,
    getInstall,
    updateInstall,
    deleteInstall,
    listRenders,
    getRender,
    /** For workspace deletion: see releaseWorkspaceInstalls in installs.workflows.ts. */
    releaseWorkspaceInstalls: (workspaceId: string, ctx: DriverCallContext, options?: ReleaseWorkspaceInstallsOptions) =>
      releaseWorkspaceInstalls(deps, workspaceId, ctx, options),
    /** For preview hostnames: see syncInstallRoutes in installs.workflows.ts (a StepError when the driver fails). */
    syncRoutes: (installId: string, ctx: DriverCallContext) => syncInstallRoutes(deps, installId, ctx),
  };
}

export type InstallService = ReturnType<typeof createInstallService>;
