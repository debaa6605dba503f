// Sealing and opening the value of one secret version, and the rules that decide whether a version
// may be read: shared by `:access` and by install deploys that resolve secret references.
import { ApiError, notFound } from '../../platform/errors.js';
import { isId } from '../../platform/ids.js';
import { KeyringError, type Envelope, type Keyring } from '../../platform/keyring.js';
import type { Executor } from '../../db/database.js';
import * as repo from './secrets.repo.js';

/** Where a version's value lives: the additional data its envelope is bound to. */
export function versionContext(row: Pick<repo.VersionRow, 'workspace_id' | 'secret_id' | 'id'>): string {
  return `secret:${row.workspace_id}:${row.secret_id}:${row.id}`;
}

export function sealVersionValue(keyring: Keyring, row: Pick<repo.VersionRow, 'workspace_id' | 'secret_id' | 'id'>, value: string): Envelope {
  return keyring.sealEnvelope(value, versionContext(row));
}

export const secretDeleted = (id: string) =>
  new ApiError('FAILED_PRECONDITION', `secret ${id} is deleted; restore it with :undelete before its purge time`, { reason: 'SECRET_DELETED' });
export const versionDestroyed = (v: { id: string; version_number: number }) =>
  new ApiError('FAILED_PRECONDITION', `version ${v.version_number} (${v.id}) is destroyed; its value is gone for good`, { reason: 'VERSION_DESTROYED' });
export const versionDisabled = (v: { id: string; version_number: number }) =>
  new ApiError('FAILED_PRECONDITION', `version ${v.version_number} (${v.id}) is disabled; enable it to read it`, { reason: 'VERSION_DISABLED' });

const NUMBER = /^[1-9][0-9]{0,9}$/;

/**
 * The version that `which` names in a secret: a secv_ id, a version number, `latest` (the highest
 * enabled version) or an alias. 404 when it names none; 422 NO_ENABLED_VERSION for `latest`
 * without any enabled version.
 */
export async function resolveVersion(db: Executor, secret: repo.SecretRow, which: string | number): Promise<repo.VersionRow> {
  let row: repo.VersionRow | undefined;
  if (typeof which === 'number') {
    row = Number.isSafeInteger(which) && which >= 1 ? await repo.findVersionByNumber(db, secret.id, which) : undefined;
  } else if (isId('secretVersion', which)) {
    row = await repo.findVersion(db, secret.id, which);
  } else if (NUMBER.test(which)) {
    row = await repo.findVersionByNumber(db, secret.id, Number(which));
  } else if (which === 'latest') {
    row = await repo.findLatestEnabled(db, secret.id);
    if (!row) throw new ApiError('FAILED_PRECONDITION', `secret ${secret.id} has no enabled version`, { reason: 'NO_ENABLED_VERSION' });
  } else {
    const aliases = JSON.parse(secret.version_aliases) as Record<string, number>;
    const number = Object.hasOwn(aliases, which) ? aliases[which] : undefined;
    row = number !== undefined ? await repo.findVersionByNumber(db, secret.id, number) : undefined;
  }
  if (!row) throw notFound('secret version');
  return row;
}

/** 422 unless the secret is active and the version enabled: the rule of every read of a value. */
export function assertReadable(secret: repo.SecretRow, version: repo.VersionRow): void {
  if (secret.state !== 'active') throw secretDeleted(secret.id);
  if (version.state === 'destroyed') throw versionDestroyed(version);
  if (version.state !== 'enabled') throw versionDisabled(version);
}

/** Opens a readable version's value; 422 VALUE_UNREADABLE when it does not open (moved, tampered, or its key is gone). */
export function openVersionValue(keyring: Keyring, version: repo.VersionRow): string {
  if (version.key_id === null || version.wrapped_key === null || version.ciphertext === null) throw versionDestroyed(version);
  try {
    return keyring.openEnvelope({ keyId: version.key_id, wrappedKey: version.wrapped_key, ciphertext: version.ciphertext }, versionContext(version)).toString('utf8');
  } catch (err) {
    if (!(err instanceof KeyringError)) throw err;
    // Which of the two it is tells the operator what to fix: a key setting, or the stored row.
    const why = keyring.keyIds().includes(version.key_id)
      ? 'it was altered or copied from elsewhere'
      : 'the key it was sealed with is not among the service\'s keys (SVC_SECRET_KEY, SVC_PREVIOUS_SECRET_KEYS)';
    throw new ApiError('FAILED_PRECONDITION', `the stored value of version ${version.version_number} does not open: ${why}`, { reason: 'VALUE_UNREADABLE' });
  }
}
