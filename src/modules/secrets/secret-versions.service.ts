// Secret versions (spec 2.7 and endpoint 5; API.md 8.1): add a value, list and read versions,
// disable, enable and destroy them, and read a value with `:access`. Version numbers come from a
// counter on the secret row, taken in the same transaction as the insert, so concurrent adds get
// consecutive numbers and a number is never handed out twice.
import type { Db, Executor } from '../../db/database.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { commitAuditEvent, recordAuditEvent } from '../audit/audit.js';
import { recordEvent } from '../../events/record.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import {
  assertReadable, openVersionValue, resolveVersion, sealVersionValue, secretDeleted, versionDestroyed,
} from './secret-values.js';
import { checkValueSize } from './secrets.service.js';
import * as repo from './secrets.repo.js';
import type { AccessedSecretVersionT, CreateVersionBodyT, ListVersionsQueryT, SecretVersionT, VersionState } from './secrets.schemas.js';
import { SECRET_VALUE_READER_ROLE } from './secret-readers.js';

export interface SecretVersionServiceDeps {
  db: Db;
  cursors: CursorCodec;
  keyring: Keyring;
}

export type VersionTransition = 'enable' | 'disable' | 'destroy';

export function toVersion(row: repo.VersionRow): SecretVersionT {
  return {
    id: row.id,
    secret_id: row.secret_id,
    workspace_id: row.workspace_id,
    version_number: row.version_number,
    state: row.state as VersionState,
    created_at: row.created_at,
    etag: etagOf(row.revision),
    ...(row.comment !== null ? { comment: row.comment } : {}),
    ...(row.destroyed_at !== null ? { destroyed_at: row.destroyed_at } : {}),
  };
}

export function createSecretVersionService(deps: SecretVersionServiceDeps) {
  const { db, cursors, keyring } = deps;

  async function secretOr404(executor: Executor, workspaceId: string, id: string): Promise<repo.SecretRow> {
    const row = isId('secret', id) ? await repo.findSecret(executor, workspaceId, id) : undefined;
    if (!row) throw notFound('secret');
    return row;
  }

  async function versionOr404(executor: Executor, secretId: string, vid: string): Promise<repo.VersionRow> {
    const row = isId('secretVersion', vid) ? await repo.findVersion(executor, secretId, vid) : undefined;
    if (!row) throw notFound('secret version');
    return row;
  }

  /** Adds the next version (enabled), in the caller's transaction. */
  async function createVersion(scope: WorkspaceScope, secretId: string, body: CreateVersionBodyT, tx: Executor): Promise<SecretVersionT> {
    requireRole(scope, 'admin');
    checkValueSize(body.value);
    if (!isId('secret', secretId)) throw notFound('secret');
    await assertWorkspaceActive(tx, scope.workspaceId);
    const number = await repo.takeNextVersionNumber(tx, scope.workspaceId, secretId);
    if (number === undefined) {
      await secretOr404(tx, scope.workspaceId, secretId);
      throw secretDeleted(secretId);
    }
    const now = clock.now();
    const ids = { id: newId('secretVersion'), secret_id: secretId, workspace_id: scope.workspaceId };
    const sealed = sealVersionValue(keyring, ids, body.value);
    const row: repo.VersionRow = {
      ...ids, version_number: number, state: 'enabled', comment: body.comment ?? null,
      key_id: sealed.keyId, wrapped_key: sealed.wrappedKey, ciphertext: sealed.ciphertext,
      created_at: now, updated_at: now, destroyed_at: null, revision: 1,
    };
    await repo.insertVersion(tx, row);
    await recordAuditEvent(tx, scope, {
      action: 'secret.version.create', resourceType: 'secret_version', resourceId: row.id, metadata: { secret_id: secretId, version_number: String(number) },
    });
    // The version as its GET returns it: never its value.
    await recordEvent(tx, { type: 'secret.version_created', workspace_id: scope.workspaceId, data: toVersion(row) });
    return toVersion(row);
  }

  /** For idempotent replays: the version now, or null when it is gone. */
  async function loadVersion(workspaceId: string, secretId: string, id: string): Promise<SecretVersionT | null> {
    const secret = await repo.findSecret(db, workspaceId, secretId);
    const row = secret ? await repo.findVersion(db, secretId, id) : undefined;
    return row ? toVersion(row) : null;
  }

  async function listVersions(scope: WorkspaceScope, secretId: string, query: ListVersionsQueryT): Promise<Page<SecretVersionT>> {
    const secret = await secretOr404(db, scope.workspaceId, secretId);
    const filters = { secret_id: secret.id, state: query.state ?? null };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listVersions(db, secret.id, page, filters.state);
    return cursors.page(rows, page, scope.workspaceId, filters, toVersion);
  }

  async function getVersion(scope: WorkspaceScope, secretId: string, vid: string): Promise<SecretVersionT> {
    const secret = await secretOr404(db, scope.workspaceId, secretId);
    return toVersion(await versionOr404(db, secret.id, vid));
  }

  /**
   * :enable, :disable and :destroy. The etag is checked first (409 with the current one); then
   * the state: a destroyed version cannot be enabled or disabled (422 VERSION_DESTROYED), a
   * deleted secret's versions cannot be enabled or disabled (422 SECRET_DELETED; destroying is
   * always allowed), and a version already in the wanted state is returned as it is. The version
   * is read under a row lock, so concurrent transitions run one after the other and each decides
   * on the state the previous one left: `if-match: *` matches whatever that is and never
   * conflicts; a concrete etag is compared with the current revision (409 when it moved).
   */
  async function transition(scope: WorkspaceScope, secretId: string, vid: string, revision: number | null, verb: VersionTransition): Promise<SecretVersionT> {
    requireRole(scope, 'admin');
    return db.transaction().execute(async (tx) => {
      const secret = await secretOr404(tx, scope.workspaceId, secretId);
      const current = isId('secretVersion', vid) ? await repo.lockVersion(tx, secret.id, vid) : undefined;
      if (!current) throw notFound('secret version');
      if (revision !== null && revision !== current.revision) throw etagMismatch(`secret version ${vid}`, current.revision);
      const target = verb === 'enable' ? 'enabled' : verb === 'disable' ? 'disabled' : 'destroyed';
      if (current.state === target) return toVersion(current);
      if (verb !== 'destroy') {
        if (current.state === 'destroyed') throw versionDestroyed(current);
        if (secret.state !== 'active') throw secretDeleted(secret.id);
      }
      const now = clock.now();
      const row = verb === 'destroy'
        ? await repo.destroyVersionIfRevision(tx, secret.id, current.id, revision, now)
        : await repo.setVersionStateIfRevision(tx, secret.id, current.id, revision, current.state, target, now);
      if (!row) throw etagMismatch(`secret version ${vid}`, (await versionOr404(tx, secret.id, vid)).revision);
      const delta = (target === 'enabled' ? 1 : 0) - (current.state === 'enabled' ? 1 : 0);
      if (delta !== 0) await repo.adjustEnabledCount(tx, secret.id, delta);
      await recordAuditEvent(tx, scope, {
        action: `secret.version.${verb}`, resourceType: 'secret_version', resourceId: row.id,
        metadata: { secret_id: secret.id, version_number: String(row.version_number), from: current.state },
      });
      if (verb === 'destroy') await recordEvent(tx, { type: 'secret.version_destroyed', workspace_id: scope.workspaceId, data: toVersion(row) });
      return toVersion(row);
    });
  }

  /**
   * :access: the value of the version `which` names (id, number, `latest` or alias). The read is
   * recorded before the value leaves: the event is committed (shared with concurrent reads, see
   * commitAuditEvent) before this returns, and if it cannot be written no value is returned (503
   * AUDIT_UNAVAILABLE, as Vault refuses a request no audit device could record).
   */
  async function accessVersion(scope: WorkspaceScope, secretId: string, which: string): Promise<AccessedSecretVersionT> {
    requireRole(scope, SECRET_VALUE_READER_ROLE);
    const secret = await secretOr404(db, scope.workspaceId, secretId);
    if (secret.state !== 'active') throw secretDeleted(secret.id);
    const version = await resolveVersion(db, secret, which);
    assertReadable(secret, version);
    const value = openVersionValue(keyring, version);
    try {
      await commitAuditEvent(db, scope, {
        action: 'secret.version.access', resourceType: 'secret_version', resourceId: version.id,
        metadata: { secret_id: secret.id, version_number: String(version.version_number), requested: which },
      });
    } catch (err) {
      throw new ApiError('UNAVAILABLE', 'the read could not be recorded in the audit log, so no value is returned; retry', {
        reason: 'AUDIT_UNAVAILABLE', headers: { 'retry-after': '1' }, cause: err,
      });
    }
    return { secret_id: secret.id, version_id: version.id, version_number: version.version_number, value };
  }

  return { createVersion, loadVersion, listVersions, getVersion, transition, accessVersion };
}

export type SecretVersionService = ReturnType<typeof createSecretVersionService>;
