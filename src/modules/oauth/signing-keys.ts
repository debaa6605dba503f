// The service's own JWT signing keys (Ed25519, JWS alg EdDSA), kept in `signing_keys`: the public
// JWK in clear, the private JWK sealed by the keyring (platform/keyring.ts). The first
// instance that needs a key creates it; every instance then signs with the oldest row.
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { SigningKeysTable } from '../../db/schema.js';
import { clock } from '../../platform/clock.js';
import { isId, newId } from '../../platform/ids.js';
import { keyringOf } from '../../platform/keyring.js';
import { findOldestSigningKey, findPublicSigningKey, insertSigningKey, listPublicSigningKeys } from './oauth.repo.js';

export const SIGNING_ALGORITHM = 'EdDSA';

/**
 * How a private key is sealed (platform/keyring.ts): bound to its kid. `legacyPurpose`: the key of
 * rows written before the keyring, `encrypt(deriveKey(secretKey, 'signing-key'))`, which still open.
 */
export const SIGNING_KEY_SEAL = { context: (kid: string) => `signing-key:${kid}`, legacyPurpose: 'signing-key' } as const;

export interface ActiveSigningKey {
  kid: string;
  privateKey: CryptoKey;
}

/** A public key as published at /.well-known/jwks.json. */
export interface PublishedJwk extends JWK {
  kty: string;
  kid: string;
  alg: string;
  use: 'sig';
}

function publishedJwk(row: Pick<SigningKeysTable, 'id' | 'algorithm' | 'public_jwk'>): PublishedJwk {
  const jwk = JSON.parse(row.public_jwk) as JWK & { kty: string };
  return { ...jwk, kid: row.id, alg: row.algorithm, use: 'sig' };
}

export function createSigningKeys(deps: { db: Db; config: Config }) {
  const { db } = deps;
  const keyring = keyringOf(deps.config);
  let active: Promise<ActiveSigningKey> | null = null;
  const publicKeys = new Map<string, CryptoKey>();

  function oldestKey(): Promise<SigningKeysTable | undefined> {
    return findOldestSigningKey(db, SIGNING_ALGORITHM);
  }

  async function generateKeyRow(): Promise<SigningKeysTable> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
    const id = newId('signingKey');
    return {
      id,
      algorithm: SIGNING_ALGORITHM,
      public_jwk: JSON.stringify(await exportJWK(publicKey)),
      private_jwk_sealed: keyring.seal(JSON.stringify(await exportJWK(privateKey)), SIGNING_KEY_SEAL.context(id)),
      created_at: clock.now(),
    };
  }

  async function loadActive(): Promise<ActiveSigningKey> {
    let row = await oldestKey();
    if (!row) {
      // Several instances may start at once and each insert a key. Re-reading the oldest row
      // makes them converge; an instance that already signed with a younger key stays valid,
      // because verification accepts every stored key by its kid.
      await insertSigningKey(db, await generateKeyRow());
      row = await oldestKey();
      if (!row) throw new Error('signing key vanished right after it was stored');
    }
    let privateJwk: JWK;
    try {
      privateJwk = JSON.parse(keyring.open(row.private_jwk_sealed, SIGNING_KEY_SEAL.context(row.id), SIGNING_KEY_SEAL.legacyPurpose)) as JWK;
    } catch {
      throw new Error(`signing key ${row.id} cannot be unsealed: was SVC_SECRET_KEY changed without listing the old key in SVC_PREVIOUS_SECRET_KEYS?`);
    }
    return { kid: row.id, privateKey: (await importJWK(privateJwk, row.algorithm)) as CryptoKey };
  }

  /** The key new tokens are signed with; created on first need, cached for the process. */
  function signingKey(): Promise<ActiveSigningKey> {
    if (!active) {
      active = loadActive();
      // A failed load (database down) must not be cached forever.
      active.catch(() => {
        active = null;
      });
    }
    return active;
  }

  /** The public key with this kid, or null; a kid this process has not seen is looked up once. */
  async function publicKey(kid: string): Promise<CryptoKey | null> {
    const cached = publicKeys.get(kid);
    if (cached) return cached;
    if (!isId('signingKey', kid)) return null;
    const row = await findPublicSigningKey(db, kid);
    if (!row || row.algorithm !== SIGNING_ALGORITHM) return null;
    const key = (await importJWK(JSON.parse(row.public_jwk) as JWK, row.algorithm)) as CryptoKey;
    publicKeys.set(kid, key);
    return key;
  }

  /** Every stored public key, so tokens from any instance verify against the published set. */
  async function publishedKeys(): Promise<PublishedJwk[]> {
    await signingKey();
    const rows = await listPublicSigningKeys(db);
    return rows.map(publishedJwk);
  }

  return { signingKey, publicKey, publishedKeys };
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;
