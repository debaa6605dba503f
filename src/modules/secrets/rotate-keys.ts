// `svc admin rotate-keys`: brings everything the keyring sealed under the current SVC_SECRET_KEY.
// Secret versions have their data key re-wrapped (the ciphertext stays as it is); one-string sealed
// values (cluster kubeconfigs, JWT signing keys, accounts' TOTP secrets, the local compute provider's server user data and
// credentials) are re-sealed, those from before the keyring included. Afterwards the keys in
// SVC_PREVIOUS_SECRET_KEYS can be dropped.
//
// - Resumable: rows are walked in id order in batches, each batch committed on its own; a run that
//   is stopped leaves finished batches finished, and the next run only sees what is left (rows
//   already under the current key are skipped).
// - Safe while the service runs and when several runs overlap: each row is written with a
//   compare-and-set on the value it was read with (its old key id), so a row changed meanwhile (a
//   version destroyed, a row another run re-wrapped first) is left alone and counted by whoever
//   wrote it. Rewrapping does not change a resource's etag: its representation is unchanged.
import type { Db } from '../../db/database.js';
import { KeyringError, type Keyring } from '../../platform/keyring.js';
import { KUBECONFIG_SEAL } from '../clusters/clusters.service.js';
import { LOCAL_SERVER_SEALS } from '../../drivers/compute/local.js';
import { SIGNING_KEY_SEAL } from '../oauth/signing-keys.js';
import { TOTP_SEAL } from '../sessions/two-factor.service.js';
import * as repo from './keys.repo.js';
import { versionContext } from './secret-values.js';

export interface RotationCount {
  /** rows this run re-wrapped or re-sealed */
  rewrapped: number;
  /** rows that open under none of the configured keys (left as they are) */
  failed: number;
}

export type RotationReport = Record<string, RotationCount>;

export interface RotationOptions {
  /** rows per committed batch (default 500) */
  batchSize?: number;
  /** called after each committed batch; a throw stops the run there (what is committed stays) */
  onBatch?: (what: string, count: RotationCount) => void | Promise<void>;
}

/** One-string sealed columns: where they are, and the context and legacy purpose they were sealed with. */
export const SEALED_COLUMNS = [
  { what: 'cluster kubeconfigs', table: 'clusters', column: 'kubeconfig_sealed', seal: KUBECONFIG_SEAL },
  { what: 'signing keys', table: 'signing_keys', column: 'private_jwk_sealed', seal: SIGNING_KEY_SEAL },
  { what: 'two-factor secrets', table: 'user_totp', column: 'secret_sealed', seal: TOTP_SEAL },
] as const;

interface SealedColumn {
  what: string;
  table: string;
  column: string;
  seal: { context(id: string): string; legacyPurpose: string | undefined };
}

/**
 * Also re-sealed, but not counted by the start check (key-census.ts), which reads key ids from
 * expression indexes these columns do not have: the local compute provider's few servers.
 */
const ROTATED_ONLY: readonly SealedColumn[] = [
  { what: 'local server user data', table: 'local_servers', column: 'user_data_sealed', seal: LOCAL_SERVER_SEALS.userData },
  { what: 'local server credentials', table: 'local_servers', column: 'credential_sealed', seal: LOCAL_SERVER_SEALS.credential },
];

async function rewrapSecretVersions(db: Db, keyring: Keyring, batchSize: number, onBatch: RotationOptions['onBatch']): Promise<RotationCount> {
  const total: RotationCount = { rewrapped: 0, failed: 0 };
  const current = keyring.currentKeyId;
  let after = '';
  for (;;) {
    const rows = await repo.versionsNotUnder(db, current, after, batchSize);
    if (rows.length === 0) return total;
    const batch: RotationCount = { rewrapped: 0, failed: 0 };
    await db.transaction().execute(async (tx) => {
      for (const row of rows) {
        let next;
        try {
          next = keyring.rewrap({ keyId: row.key_id!, wrappedKey: row.wrapped_key! }, versionContext(row));
        } catch (err) {
          if (!(err instanceof KeyringError)) throw err;
          batch.failed++;
          continue;
        }
        batch.rewrapped += await repo.rewrapVersion(tx, { id: row.id, oldKeyId: row.key_id!, keyId: next.keyId, wrappedKey: next.wrappedKey });
      }
    });
    total.rewrapped += batch.rewrapped;
    total.failed += batch.failed;
    after = rows[rows.length - 1]!.id;
    await onBatch?.('secret versions', batch);
  }
}

async function resealColumn(db: Db, keyring: Keyring, target: SealedColumn, batchSize: number, onBatch: RotationOptions['onBatch']): Promise<RotationCount> {
  const total: RotationCount = { rewrapped: 0, failed: 0 };
  const currentPrefix = `k1.${keyring.currentKeyId}.%`;
  let after = '';
  for (;;) {
    const rows = await repo.sealedNotUnder(db, target, currentPrefix, after, batchSize);
    if (rows.length === 0) return total;
    const batch: RotationCount = { rewrapped: 0, failed: 0 };
    await db.transaction().execute(async (tx) => {
      for (const row of rows) {
        let next: string | null;
        try {
          next = keyring.reseal(row.sealed, target.seal.context(row.id), target.seal.legacyPurpose);
        } catch (err) {
          if (!(err instanceof KeyringError)) throw err;
          batch.failed++;
          continue;
        }
        if (next === null) continue;
        batch.rewrapped += await repo.resealValue(tx, target, row.id, row.sealed, next);
      }
    });
    total.rewrapped += batch.rewrapped;
    total.failed += batch.failed;
    after = rows[rows.length - 1]!.id;
    await onBatch?.(target.what, batch);
  }
}

/** Re-wraps and re-seals everything under the keyring's current key; returns the counts per kind of value. */
export async function rotateKeys(db: Db, keyring: Keyring, options: RotationOptions = {}): Promise<RotationReport> {
  const batchSize = options.batchSize ?? 500;
  const report: RotationReport = {};
  report['secret versions'] = await rewrapSecretVersions(db, keyring, batchSize, options.onBatch);
  for (const target of [...SEALED_COLUMNS, ...ROTATED_ONLY]) report[target.what] = await resealColumn(db, keyring, target, batchSize, options.onBatch);
  return report;
}
