// Preview hostnames: bind a track (floating) or a render (pinned) of an install to a hostname of
// the preview domain (202, an operation makes it active), list, read and release them (202). Every
// write locks the install row first (PostgreSQL; SQLite has one writer), so binds of one install,
// releases and the install's deletion are ordered, and each request's read-then-write is safe.
import type { Db, Dialect, Executor } from '../../db/database.js';
import type { WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, invalidArgument, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { findVisibleOperation, listSteps } from '../operations/operations.service.js';
import { actorOf, type OperationService } from '../operations/operations.service.js';
import type { OperationT } from '../operations/operations.schemas.js';
import { isBeingDeleted, lockInstall, type InstallRow } from '../installs/installs.service.js';
import { installDeleting } from '../installs/installs.service.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { floatingHostname, pinnedHostname, previewUrl } from '../installs/hostnames.js';
import * as repo from './preview-hostnames.repo.js';
import type {
  BindFloatingBodyT, BindPinnedBodyT, BindingKind, HostnameState, ListPreviewHostnamesQueryT, PreviewHostnameT,
} from './preview-hostnames.schemas.js';
import { BIND_FLOATING, BIND_PINNED, RELEASE_HOSTNAME, type BindInput } from './preview-hostnames.workflows.js';

const DEFAULT_PINNED_TRACK = 'pinned';

export interface PreviewHostnameServiceDeps {
  db: Db;
  dialect: Dialect;
  cursors: CursorCodec;
  operations: OperationService;
  preview: { port: number; domain: string; pinnedRetentionSeconds: number };
}

const hostnameReleasing = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `preview hostname ${id} is being released; bind again once its release operation has ended`, {
    reason: 'PREVIEW_HOSTNAME_RELEASING',
  });

export function createPreviewHostnameService(deps: PreviewHostnameServiceDeps) {
  const { db, dialect, cursors, operations, preview } = deps;

  function toHostname(row: repo.HostnameRow): PreviewHostnameT {
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      install_id: row.install_id,
      hostname: row.hostname,
      url: previewUrl(row.hostname, preview.port),
      state: row.state as HostnameState,
      binding: {
        kind: row.binding_kind as BindingKind,
        track: row.track,
        render_id: row.render_id,
        protocol: row.protocol as PreviewHostnameT['binding']['protocol'],
        routing_mode: row.routing_mode as PreviewHostnameT['binding']['routing_mode'],
      },
      pending_render_id: row.pending_render_id,
      pending_operation_id: row.pending_operation_id,
      last_seen_at: row.last_seen_at,
      created_at: row.created_at,
      updated_at: row.updated_at,
      etag: etagOf(row.revision),
    };
  }

  /** The install, locked; 404 when absent, 422 while it is being deleted. */
  async function lockLiveInstall(tx: Executor, scope: WorkspaceScope, installId: string): Promise<InstallRow> {
    const install = isId('install', installId) ? await lockInstall(tx, dialect, scope.workspaceId, installId) : undefined;
    if (!install) throw notFound('install');
    if (install.state === 'deleted' || (await isBeingDeleted(tx, installId))) throw installDeleting(installId);
    return install;
  }

  /** A render of the install that has been deployed (current, or current once). */
  async function deployedRender(tx: Executor, install: InstallRow, renderId: string) {
    const render = isId('render', renderId) ? await repo.findRender(tx, install.id, renderId) : undefined;
    if (!render) {
      throw invalidArgument(`render ${renderId} is not a render of install ${install.id}`, 'RENDER_NOT_FOUND', [
        { field: 'body.render_id', description: 'must be a render of this install (GET /v1/installs/{id}/renders)' },
      ]);
    }
    if (render.id !== install.current_render_id && render.replaced_at === null) {
      throw new ApiError('FAILED_PRECONDITION', `render ${renderId} has not been deployed; wait for the install operation that created it`, {
        reason: 'RENDER_NOT_DEPLOYED',
      });
    }
    return render;
  }

  /**
   * Creates the hostname (provisioning) or takes the existing one, records this request as its
   * latest, and starts the bind operation; all in the caller's transaction.
   */
  async function bind(
    tx: Executor,
    scope: WorkspaceScope,
    install: InstallRow,
    existing: repo.HostnameRow | undefined,
    spec: { type: string; kind: BindingKind; track: string; hostname: string; renderId: string; protocol: string; routingMode: string },
  ): Promise<OperationT> {
    if (existing?.state === 'releasing') throw hostnameReleasing(existing.id);
    const id = existing?.id ?? newId('previewHostname');
    const hostname = existing?.hostname ?? spec.hostname;
    const input: BindInput = { preview_hostname_id: id, hostname, render_id: spec.renderId, protocol: spec.protocol, routing_mode: spec.routingMode };
    const op = await operations.start(tx, {
      type: spec.type, workspaceId: scope.workspaceId, ownerType: 'install', ownerId: install.id, clusterId: install.cluster_id,
      input, metadata: { install_id: install.id, preview_hostname_id: id, hostname, track: spec.track, render_id: spec.renderId },
      actor: actorOf(scope),
    });
    const now = clock.now();
    if (existing) {
      // Only an install deletion (which releases every hostname unlocked) can get here first.
      if (!(await repo.setPendingBind(tx, id, op.id, spec.renderId, now))) throw installDeleting(install.id);
      return op;
    }
    const inserted = await repo.insertHostname(tx, {
      id, workspace_id: scope.workspaceId, install_id: install.id, hostname, binding_kind: spec.kind, track: spec.track,
      render_id: spec.renderId, protocol: spec.protocol, routing_mode: spec.routingMode, state: 'provisioning',
      pending_operation_id: op.id, pending_render_id: spec.renderId, last_seen_at: now, created_at: now, updated_at: now, revision: 1,
    });
    if (!inserted) {
      throw new ApiError('ALREADY_EXISTS', `hostname ${hostname} is already bound by another preview hostname of the install; choose another track`, {
        reason: 'HOSTNAME_TAKEN',
      });
    }
    return op;
  }

  async function bindFloating(scope: WorkspaceScope, installId: string, body: BindFloatingBodyT, tx: Executor): Promise<OperationT> {
    await assertWorkspaceActive(tx, scope.workspaceId);
    const install = await lockLiveInstall(tx, scope, installId);
    await deployedRender(tx, install, body.render_id);
    const existing = await repo.findBinding(tx, install.id, { kind: 'floating', track: body.track });
    return bind(tx, scope, install, existing, {
      type: BIND_FLOATING, kind: 'floating', track: body.track, hostname: floatingHostname(body.track, install.id, preview.domain),
      renderId: body.render_id, protocol: body.protocol ?? 'http', routingMode: body.routing_mode ?? 'through_dispatcher',
    });
  }

  async function bindPinned(scope: WorkspaceScope, installId: string, body: BindPinnedBodyT, tx: Executor): Promise<OperationT> {
    await assertWorkspaceActive(tx, scope.workspaceId);
    const install = await lockLiveInstall(tx, scope, installId);
    const render = await deployedRender(tx, install, body.render_id);
    if (render.replaced_at !== null && render.replaced_at <= clock.now() - preview.pinnedRetentionSeconds) {
      throw new ApiError('FAILED_PRECONDITION', `render ${render.id} was replaced longer ago than the pinned retention (${preview.pinnedRetentionSeconds} s)`, {
        reason: 'RENDER_RETIRED',
      });
    }
    const track = body.track ?? DEFAULT_PINNED_TRACK;
    const existing = await repo.findBinding(tx, install.id, { kind: 'pinned', track, renderId: render.id });
    return bind(tx, scope, install, existing, {
      type: BIND_PINNED, kind: 'pinned', track, hostname: pinnedHostname(track, render.id, install.id, preview.domain),
      renderId: render.id, protocol: body.protocol ?? 'http', routingMode: body.routing_mode ?? 'through_dispatcher',
    });
  }

  async function findOr404(executor: Executor, scope: WorkspaceScope, installId: string, id: string): Promise<repo.HostnameRow> {
    const row = isId('install', installId) && isId('previewHostname', id) ? await repo.findHostname(executor, scope.workspaceId, installId, id) : undefined;
    if (!row) throw notFound('preview hostname');
    return row;
  }

  async function get(scope: WorkspaceScope, installId: string, id: string): Promise<PreviewHostnameT> {
    return toHostname(await findOr404(db, scope, installId, id));
  }

  async function list(scope: WorkspaceScope, installId: string, query: ListPreviewHostnamesQueryT): Promise<Page<PreviewHostnameT>> {
    if (!isId('install', installId) || !(await repo.installExists(db, scope.workspaceId, installId))) throw notFound('install');
    const filters = { install_id: installId, binding_kind: query.binding_kind, track: query.track, state: query.state };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listHostnames(db, scope.workspaceId, installId, filters, page);
    return cursors.page(rows, page, scope.workspaceId, filters, toHostname);
  }

  /**
   * The hostname becomes releasing (no longer served) and preview_hostname.release removes it.
   * While one runs, a DELETE returns it, whatever its if-match.
   */
  async function release(scope: WorkspaceScope, installId: string, id: string, revision: number | null): Promise<OperationT> {
    if (!isId('install', installId) || !isId('previewHostname', id)) throw notFound('preview hostname');
    return db.transaction().execute(async (tx) => {
      const install = await lockInstall(tx, dialect, scope.workspaceId, installId);
      if (!install) throw notFound('preview hostname');
      const row = await findOr404(tx, scope, installId, id);
      if (row.state === 'releasing') return runningRelease(tx, scope, row);
      if (revision !== null && row.revision !== revision) throw etagMismatch(`preview hostname ${id}`, row.revision);
      const op = await operations.start(tx, {
        type: RELEASE_HOSTNAME, workspaceId: scope.workspaceId, ownerType: 'install', ownerId: installId, clusterId: install.cluster_id,
        input: { preview_hostname_id: id, hostname: row.hostname },
        metadata: { install_id: installId, preview_hostname_id: id, hostname: row.hostname }, actor: actorOf(scope),
      });
      if (await repo.markReleasingIfRevision(tx, id, revision, op.id, clock.now())) return op;
      // Changed since the read by a workflow (a bind completed, the install's deletion released
      // it): throwing rolls the operation back.
      const now = await findOr404(tx, scope, installId, id);
      if (now.state === 'releasing') throw installDeleting(installId);
      throw etagMismatch(`preview hostname ${id}`, now.revision);
    });
  }

  /** The release operation of a releasing hostname; 422 when the install's deletion released it. */
  async function runningRelease(tx: Executor, scope: WorkspaceScope, row: repo.HostnameRow): Promise<OperationT> {
    const op = row.pending_operation_id ? await findVisibleOperation(tx, scope.workspaceId, row.pending_operation_id, null) : undefined;
    if (op && op.type === RELEASE_HOSTNAME) return operations.toOperation(op, await listSteps(tx, op.id));
    throw installDeleting(row.install_id);
  }

  return { toHostname, bindFloating, bindPinned, get, list, release };
}

export type PreviewHostnameService = ReturnType<typeof createPreviewHostnameService>;
