// Secrets (API.md 8.1): create with a first value, list, read, change, soft-delete and restore,
// force-delete, and the purge of soft-deleted secrets past purge_at. Members read metadata;
// admins and owners write. Every write and its audit event commit in one transaction.
import { isUniqueViolation, type Db, type Executor } from '../../db/database.js';
import { requireRole, type WorkspaceScope } from '../../platform/auth.js';
import { clock } from '../../platform/clock.js';
import { ApiError, fieldInvalid, invalidArgument, notFound } from '../../platform/errors.js';
import { etagMismatch, etagOf } from '../../platform/etag.js';
import { isId, newId } from '../../platform/ids.js';
import type { Keyring } from '../../platform/keyring.js';
import type { CursorCodec, Page } from '../../platform/pagination.js';
import { recordAuditEvent, type AuditContext } from '../audit/audit.js';
import { assertWorkspaceActive } from '../workspaces/workspace-deletion.js';
import { secretPurgeScheduled, secretPurgeSuperseded } from '../notifications/sources.js';
import type { QuotaService } from '../quotas/quotas.service.js';
import { sealVersionValue, secretDeleted } from './secret-values.js';
import * as repo from './secrets.repo.js';
import {
  VALUE_MAX_BYTES, type CreateSecretBodyT, type ListSecretsQueryT, type PatchSecretBodyT, type SecretKind, type SecretState, type SecretT,
} from './secrets.schemas.js';

/** Read functions other modules use: they import them from this service, never from the repo (ARCHITECTURE.md). */
export { findSecret } from './secrets.repo.js';

export interface SecretServiceDeps {
  db: Db;
  cursors: CursorCodec;
  keyring: Keyring;
  publicUrl: string;
  /** SVC_SECRET_RETENTION: seconds between a soft delete and the purge */
  retentionSeconds: number;
  /** secrets/secrets is checked where a secret is created */
  quotas: Pick<QuotaService, 'enforce'>;
}

/** The actor of the purge sweep: the service itself. */
const PURGE_ACTOR = { type: 'system', id: 'secret-purge' } as const;
const PURGE_BATCH = 100;

/** 1 byte to 64 KiB of UTF-8 (the schema counts characters, which may be up to 4 bytes each). */
export function checkValueSize(value: string, field = 'body.value'): void {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > VALUE_MAX_BYTES) throw fieldInvalid(field, `the value is ${bytes} bytes of UTF-8; at most ${VALUE_MAX_BYTES} are accepted`, 'VALUE_TOO_LARGE');
}

export function createSecretService(deps: SecretServiceDeps) {
  const { db, cursors, keyring, publicUrl } = deps;

  function toSecret(row: repo.SecretRow): SecretT {
    return {
      id: row.id,
      workspace_id: row.workspace_id,
      name: row.name,
      description: row.description,
      kind: row.kind as SecretKind,
      labels: JSON.parse(row.labels) as Record<string, string>,
      state: row.state as SecretState,
      version_count: row.version_count,
      enabled_version_count: row.enabled_version_count,
      version_aliases: JSON.parse(row.version_aliases) as Record<string, number>,
      html_url: `${publicUrl}/secrets/${row.id}`,
      created_at: row.created_at,
      updated_at: row.updated_at,
      deleted_at: row.deleted_at,
      purge_at: row.purge_at,
      etag: etagOf(row.revision),
    };
  }

  async function findOr404(executor: Executor, workspaceId: string, id: string): Promise<repo.SecretRow> {
    const row = isId('secret', id) ? await repo.findSecret(executor, workspaceId, id) : undefined;
    if (!row) throw notFound('secret');
    return row;
  }

  const nameTaken = (name: string) => new ApiError('ALREADY_EXISTS', `a secret named "${name}" already exists in the workspace`, { reason: 'SECRET_NAME_TAKEN' });

  /** Creates the secret and its version 1 (enabled), in the caller's transaction. */
  async function createSecret(scope: WorkspaceScope, body: CreateSecretBodyT, tx: Executor): Promise<SecretT> {
    requireRole(scope, 'admin');
    checkValueSize(body.value);
    await assertWorkspaceActive(tx, scope.workspaceId);
    await deps.quotas.enforce(tx, { workspaceId: scope.workspaceId }, 'secrets/secrets');
    const now = clock.now();
    const row: repo.SecretRow = {
      id: newId('secret'), workspace_id: scope.workspaceId, name: body.name, description: body.description ?? null,
      kind: body.kind ?? 'generic', labels: JSON.stringify(body.labels ?? {}), version_aliases: '{}', state: 'active',
      version_count: 1, enabled_version_count: 1, created_at: now, updated_at: now, deleted_at: null, purge_at: null, revision: 1,
    };
    if (!(await repo.insertSecretIfNameFree(tx, row))) throw nameTaken(body.name);
    const version = { id: newId('secretVersion'), secret_id: row.id, workspace_id: row.workspace_id };
    const sealed = sealVersionValue(keyring, version, body.value);
    await repo.insertVersion(tx, {
      ...version, version_number: 1, state: 'enabled', comment: body.comment ?? null,
      key_id: sealed.keyId, wrapped_key: sealed.wrappedKey, ciphertext: sealed.ciphertext,
      created_at: now, updated_at: now, destroyed_at: null, revision: 1,
    });
    await recordAuditEvent(tx, scope, { action: 'secret.create', resourceType: 'secret', resourceId: row.id, metadata: { name: row.name, kind: row.kind } });
    await recordAuditEvent(tx, scope, {
      action: 'secret.version.create', resourceType: 'secret_version', resourceId: version.id, metadata: { secret_id: row.id, version_number: '1' },
    });
    return toSecret(row);
  }

  async function getSecret(scope: WorkspaceScope, id: string): Promise<SecretT> {
    return toSecret(await findOr404(db, scope.workspaceId, id));
  }

  /** For idempotent replays: the secret now, or null when it is gone. */
  async function loadSecret(workspaceId: string, id: string): Promise<SecretT | null> {
    const row = await repo.findSecret(db, workspaceId, id);
    return row ? toSecret(row) : null;
  }

  async function listSecrets(scope: WorkspaceScope, query: ListSecretsQueryT): Promise<Page<SecretT>> {
    const filters = { kind: query.kind ?? null, state: query.state ?? null };
    const page = cursors.request(query, scope.workspaceId, filters);
    const rows = await repo.listSecrets(db, scope.workspaceId, page, filters);
    return cursors.page(rows, page, scope.workspaceId, filters, toSecret);
  }

  /** Aliases must name versions that exist and are not destroyed; `latest` is reserved. */
  async function checkAliases(executor: Executor, secretId: string, aliases: Record<string, number>): Promise<void> {
    if (Object.hasOwn(aliases, 'latest')) throw fieldInvalid('body.version_aliases.latest', '`latest` is reserved: it always names the highest enabled version');
    const numbers = [...new Set(Object.values(aliases))];
    if (numbers.length === 0) return;
    const found = new Map((await repo.versionsByNumbers(executor, secretId, numbers)).map((v) => [v.version_number, v.state]));
    const violations = Object.entries(aliases)
      .filter(([, n]) => found.get(n) === undefined || found.get(n) === 'destroyed')
      .map(([alias, n]) => ({ field: `body.version_aliases.${alias}`, description: found.has(n) ? `version ${n} is destroyed` : `the secret has no version ${n}` }));
    if (violations.length) throw invalidArgument(`version_aliases: ${violations[0]!.description}`, 'ALIAS_TARGET_INVALID', violations);
  }

  async function updateSecret(scope: WorkspaceScope, id: string, revision: number | null, body: PatchSecretBodyT): Promise<SecretT> {
    requireRole(scope, 'admin');
    const current = await findOr404(db, scope.workspaceId, id);
    const set: Parameters<typeof repo.updateSecretIfRevision>[4] = {};
    if (body.name !== undefined) set.name = body.name;
    if (body.description !== undefined) set.description = body.description;
    if (body.labels !== undefined) set.labels = JSON.stringify(body.labels);
    if (body.version_aliases !== undefined) set.version_aliases = JSON.stringify(body.version_aliases);
    try {
      return await db.transaction().execute(async (tx) => {
        if (body.version_aliases !== undefined) await checkAliases(tx, current.id, body.version_aliases);
        const row = await repo.updateSecretIfRevision(tx, scope.workspaceId, current.id, revision, set, clock.now());
        if (!row) {
          const now = await findOr404(tx, scope.workspaceId, id);
          if (revision !== null && revision !== now.revision) throw etagMismatch(`secret ${id}`, now.revision);
          throw secretDeleted(id);
        }
        await recordAuditEvent(tx, scope, {
          action: 'secret.update', resourceType: 'secret', resourceId: row.id, metadata: { name: row.name, fields: Object.keys(body).sort().join(',') },
        });
        return toSecret(row);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw nameTaken(body.name ?? '');
      throw err;
    }
  }

  /**
   * DELETE: a soft delete (200 with the secret, purged at purge_at) or, with force, the secret and
   * every version removed at once (null: 204). A soft-deleted secret deleted again without force
   * is returned as it is.
   */
  async function deleteSecret(scope: WorkspaceScope, id: string, revision: number | null, force: boolean): Promise<SecretT | null> {
    requireRole(scope, 'admin');
    if (!isId('secret', id)) throw notFound('secret');
    return db.transaction().execute(async (tx) => {
      const current = await findOr404(tx, scope.workspaceId, id);
      if (revision !== null && revision !== current.revision) throw etagMismatch(`secret ${id}`, current.revision);
      const now = clock.now();
      if (force) {
        const removed = await repo.deleteSecret(tx, scope.workspaceId, id);
        if (!removed || removed.revision !== current.revision) throw etagMismatch(`secret ${id}`, removed?.revision ?? current.revision);
        await recordAuditEvent(tx, scope, {
          action: 'secret.delete', resourceType: 'secret', resourceId: id,
          metadata: { name: removed.name, force: 'true', destroyed_versions: String(removed.version_count) },
        });
        if (current.state === 'soft_deleted') await secretPurgeSuperseded(tx, { secretId: id, by: 'secret.delete' });
        return null;
      }
      if (current.state === 'soft_deleted') return toSecret(current);
      const row = await repo.softDeleteIfRevision(tx, scope.workspaceId, id, current.revision, now, now + deps.retentionSeconds);
      if (!row) throw etagMismatch(`secret ${id}`, (await findOr404(tx, scope.workspaceId, id)).revision);
      await recordAuditEvent(tx, scope, {
        action: 'secret.delete', resourceType: 'secret', resourceId: id, metadata: { name: row.name, force: 'false', purge_at: String(row.purge_at) },
      });
      // The workspace's owners and admins hear of it before the values are destroyed for good.
      await secretPurgeScheduled(tx, { workspaceId: scope.workspaceId, secretId: id, name: row.name, purgeAt: row.purge_at!, revision: row.revision });
      return toSecret(row);
    });
  }

  async function undeleteSecret(scope: WorkspaceScope, id: string, revision: number | null): Promise<SecretT> {
    requireRole(scope, 'admin');
    if (!isId('secret', id)) throw notFound('secret');
    return db.transaction().execute(async (tx) => {
      const now = clock.now();
      const row = await repo.undeleteIfRevision(tx, scope.workspaceId, id, revision, now);
      if (!row) {
        const current = await findOr404(tx, scope.workspaceId, id);
        if (revision !== null && revision !== current.revision) throw etagMismatch(`secret ${id}`, current.revision);
        if (current.state === 'active') throw new ApiError('FAILED_PRECONDITION', `secret ${id} is not deleted`, { reason: 'SECRET_NOT_DELETED' });
        throw new ApiError('FAILED_PRECONDITION', `secret ${id} reached its purge time and is being purged`, { reason: 'SECRET_PURGE_DUE' });
      }
      await recordAuditEvent(tx, scope, { action: 'secret.undelete', resourceType: 'secret', resourceId: id, metadata: { name: row.name } });
      await secretPurgeSuperseded(tx, { secretId: id, by: 'secret.undelete' });
      return toSecret(row);
    });
  }

  /**
   * Destroys and removes every soft-deleted secret whose purge time has come; returns how many.
   * Each removal is one conditional statement with its audit event, so when several instances
   * sweep at once each secret is purged, and recorded, exactly once.
   */
  async function purgeDue(): Promise<number> {
    const now = clock.now();
    let purged = 0;
    for (;;) {
      const due = await repo.purgeCandidates(db, now, PURGE_BATCH);
      for (const { id } of due) {
        await db.transaction().execute(async (tx) => {
          const row = await repo.purgeIfDue(tx, id, now);
          if (!row) return;
          purged++;
          const ctx: AuditContext = { workspaceId: row.workspace_id, actor: PURGE_ACTOR, requestId: null };
          await recordAuditEvent(tx, ctx, {
            action: 'secret.purge', resourceType: 'secret', resourceId: id,
            metadata: { name: row.name, destroyed_versions: String(row.version_count), deleted_at: String(row.deleted_at) },
          });
          await secretPurgeSuperseded(tx, { secretId: id, by: 'secret.purge' });
        });
      }
      if (due.length < PURGE_BATCH) return purged;
    }
  }

  return { toSecret, createSecret, getSecret, loadSecret, listSecrets, updateSecret, deleteSecret, undeleteSecret, purgeDue };
}

export type SecretService = ReturnType<typeof createSecretService>;
