// The one keyring: everything the service stores encrypted goes through it (secret versions,
// cluster kubeconfigs, JWT signing keys). Envelope encryption:
//
// - A key-encryption key (KEK) is derived from SVC_SECRET_KEY (HKDF, purpose `kek`); its key id
//   is a short hash of the KEK, stored next to everything it wraps. SVC_PREVIOUS_SECRET_KEYS
//   yield the KEKs that may still open older data.
// - Every sealed value has its own random 256-bit data key (DK). The value is encrypted with the
//   DK (AES-256-GCM), and the DK with the KEK (AES-256-GCM). Both carry additional authenticated
//   data naming where the value lives (e.g. `secret:<ws>:<sec>:<secv>`), so a ciphertext or a
//   wrapped key copied onto another row does not open.
// - Rotating the KEK re-wraps data keys only: the value's ciphertext never changes.
// - Opening a value unwraps its data key first. Unwrapped data keys of recently opened envelopes
//   are kept in memory (at most DATA_KEY_CACHE_ENTRIES, each for DATA_KEY_CACHE_MS), keyed by key
//   id, context and wrapped key, as the AWS Encryption SDK's data key caching does: a secret read
//   again soon costs one AES-GCM open, not two. The process holds the KEKs that unwrap every data
//   key anyway, so this adds no exposure; a destroyed or re-wrapped version has no such wrapped key
//   any more and is never found, and evicted keys are zeroed.
//
// Two stored forms: secret versions keep key id, wrapped key and ciphertext in three columns
// (so destroying a version nulls them: crypto-shredding); other values are one string,
// `k1.<key id>.<wrapped key>.<ciphertext>`. Values sealed before the keyring existed
// (`v1.<iv>.<tag>.<ct>` from platform/crypto `encrypt` under `deriveKey(master, purpose)`) still
// open, under the current or a previous master key, until `svc admin rotate-keys` re-seals them.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { decrypt, deriveKey } from './crypto.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const DATA_KEY_CACHE_ENTRIES = 1000;
const DATA_KEY_CACHE_MS = 5 * 60_000;
const SEALED_PREFIX = 'k1';
const LEGACY_PREFIX = 'v1.';

/** A value sealed under a data key that the keyring wrapped: what a secret version row stores. */
export interface Envelope {
  /** id of the KEK that wrapped the data key */
  keyId: string;
  /** the data key, AES-256-GCM under the KEK: base64url of iv | tag | ciphertext */
  wrappedKey: string;
  /** the value, AES-256-GCM under the data key: base64url of iv | tag | ciphertext */
  ciphertext: string;
}

/** Thrown when a value cannot be opened: unknown key id, wrong context, tampering. Says nothing of the value. */
export class KeyringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyringError';
  }
}

function gcmSeal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url');
}

function gcmOpen(key: Buffer, sealed: string, aad: string): Buffer {
  const raw = Buffer.from(sealed, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new KeyringError('sealed data is truncated');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new KeyringError('sealed data does not open here: wrong key, wrong place, or tampered');
  }
}

/** The KEK of one master key and its public id (16 hex characters of a hash of the KEK). */
function kekOf(master: Buffer): { id: string; key: Buffer } {
  const key = deriveKey(master, 'kek');
  return { id: createHash('sha256').update('svc key id\n').update(key).digest('hex').slice(0, 16), key };
}

/** The id a master key's values are sealed under (as rotate-keys and the start check print it). */
export const keyIdOf = (master: Buffer): string => kekOf(master).id;

// The additional data of the two layers differ, so a wrapped key can never pass for a value.
const keyAad = (context: string) => `svc:data-key:${context}`;
const valueAad = (context: string) => `svc:value:${context}`;

/** Unwrapped data keys, least recently used first (Map order), each with the time it expires. */
class DataKeyCache {
  private readonly entries = new Map<string, { key: Buffer; expires: number }>();
  constructor(private readonly max: number, private readonly ttlMs: number) {}

  get(id: string): Buffer | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    if (entry.expires <= performance.now()) {
      entry.key.fill(0);
      return undefined;
    }
    this.entries.set(id, entry);
    return entry.key;
  }

  set(id: string, key: Buffer): void {
    if (this.max <= 0) {
      key.fill(0);
      return;
    }
    if (this.entries.size >= this.max) {
      const [oldest, entry] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      entry.key.fill(0);
    }
    this.entries.set(id, { key, expires: performance.now() + this.ttlMs });
  }
}

export class Keyring {
  /** id of the KEK new data keys are wrapped with */
  readonly currentKeyId: string;
  private readonly current: Buffer;
  private readonly keks = new Map<string, Buffer>();
  /** master keys, current first: they open values sealed before the keyring (legacy form) */
  private readonly masters: Buffer[];
  private readonly legacyKeys = new Map<string, Buffer[]>();
  private readonly dataKeys: DataKeyCache;

  constructor(current: Buffer, previous: readonly Buffer[] = [], cache: { entries?: number; ttlMs?: number } = {}) {
    this.dataKeys = new DataKeyCache(cache.entries ?? DATA_KEY_CACHE_ENTRIES, cache.ttlMs ?? DATA_KEY_CACHE_MS);
    this.masters = [current, ...previous];
    const kek = kekOf(current);
    this.currentKeyId = kek.id;
    this.current = kek.key;
    for (const master of this.masters) {
      const k = kekOf(master);
      if (!this.keks.has(k.id)) this.keks.set(k.id, k.key);
    }
  }

  /** Ids of every KEK this keyring can open with, current first. */
  keyIds(): string[] {
    return [...this.keks.keys()];
  }

  private kek(keyId: string): Buffer {
    const key = this.keks.get(keyId);
    if (!key) throw new KeyringError(`key ${keyId} is neither SVC_SECRET_KEY nor one of SVC_PREVIOUS_SECRET_KEYS`);
    return key;
  }

  /** Seals a value under a fresh data key wrapped with the current KEK; `context` names where it is stored. */
  sealEnvelope(plaintext: string | Buffer, context: string): Envelope {
    const dataKey = randomBytes(32);
    try {
      return {
        keyId: this.currentKeyId,
        wrappedKey: gcmSeal(this.current, dataKey, keyAad(context)),
        ciphertext: gcmSeal(dataKey, typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext, valueAad(context)),
      };
    } finally {
      dataKey.fill(0);
    }
  }

  /** Opens an envelope stored at `context`; KeyringError when it cannot. */
  openEnvelope(envelope: Envelope, context: string): Buffer {
    const cacheId = `${envelope.keyId}\n${context}\n${envelope.wrappedKey}`;
    const cached = this.dataKeys.get(cacheId);
    if (cached) return gcmOpen(cached, envelope.ciphertext, valueAad(context));
    const dataKey = gcmOpen(this.kek(envelope.keyId), envelope.wrappedKey, keyAad(context));
    let value: Buffer;
    try {
      value = gcmOpen(dataKey, envelope.ciphertext, valueAad(context));
    } catch (err) {
      dataKey.fill(0);
      throw err;
    }
    // Kept only once it has opened its value: a wrapped key moved next to another ciphertext is not.
    this.dataKeys.set(cacheId, dataKey);
    return value;
  }

  /** The data key of an envelope wrapped again under the current KEK (the ciphertext is unchanged). */
  rewrap(envelope: Pick<Envelope, 'keyId' | 'wrappedKey'>, context: string): Pick<Envelope, 'keyId' | 'wrappedKey'> {
    const dataKey = gcmOpen(this.kek(envelope.keyId), envelope.wrappedKey, keyAad(context));
    try {
      return { keyId: this.currentKeyId, wrappedKey: gcmSeal(this.current, dataKey, keyAad(context)) };
    } finally {
      dataKey.fill(0);
    }
  }

  /** One-string form of an envelope, for a single text column: `k1.<key id>.<wrapped key>.<ciphertext>`. */
  seal(plaintext: string, context: string): string {
    const e = this.sealEnvelope(plaintext, context);
    return [SEALED_PREFIX, e.keyId, e.wrappedKey, e.ciphertext].join('.');
  }

  /**
   * Opens a one-string sealed value. `legacyPurpose` is the deriveKey purpose a value sealed before
   * the keyring used (`kubeconfig`, `signing-key`): such values open under any known master key.
   */
  open(sealed: string, context: string, legacyPurpose?: string): string {
    if (sealed.startsWith(LEGACY_PREFIX)) {
      if (!legacyPurpose) throw new KeyringError('a value in the pre-keyring form has no legacy purpose here');
      for (const key of this.legacyKeysOf(legacyPurpose)) {
        try {
          return decrypt(key, sealed);
        } catch {
          // the next master key, if any
        }
      }
      throw new KeyringError('a value in the pre-keyring form opens under none of the configured keys');
    }
    return this.openEnvelope(parseSealed(sealed), context).toString('utf8');
  }

  /** True when a one-string sealed value is already wrapped under the current KEK. */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`${SEALED_PREFIX}.${this.currentKeyId}.`);
  }

  /**
   * The value re-sealed for the current KEK: a keyring value has its data key re-wrapped, a
   * pre-keyring one is opened and sealed anew. Null when it is current already.
   */
  reseal(sealed: string, context: string, legacyPurpose?: string): string | null {
    if (this.isCurrent(sealed)) return null;
    if (sealed.startsWith(LEGACY_PREFIX)) return this.seal(this.open(sealed, context, legacyPurpose), context);
    const e = parseSealed(sealed);
    const rewrapped = this.rewrap(e, context);
    return [SEALED_PREFIX, rewrapped.keyId, rewrapped.wrappedKey, e.ciphertext].join('.');
  }

  /** A purpose-bound key derived from the current master key (digests, not encryption of stored values). */
  deriveKey(purpose: string): Buffer {
    return deriveKey(this.masters[0]!, purpose);
  }

  private legacyKeysOf(purpose: string): Buffer[] {
    let keys = this.legacyKeys.get(purpose);
    if (!keys) {
      keys = this.masters.map((m) => deriveKey(m, purpose));
      this.legacyKeys.set(purpose, keys);
    }
    return keys;
  }
}

function parseSealed(sealed: string): Envelope {
  const [prefix, keyId, wrappedKey, ciphertext, extra] = sealed.split('.');
  if (prefix !== SEALED_PREFIX || !keyId || !wrappedKey || !ciphertext || extra !== undefined) throw new KeyringError('unrecognised sealed value');
  return { keyId, wrappedKey, ciphertext };
}

const byConfig = new WeakMap<Config, Keyring>();

/** The keyring of a configuration (one per config object: derivations are done once). */
export function keyringOf(config: Pick<Config, 'secretKey' | 'previousSecretKeys'> & object): Keyring {
  const known = byConfig.get(config as Config);
  if (known) return known;
  const keyring = new Keyring(config.secretKey, config.previousSecretKeys);
  byConfig.set(config as Config, keyring);
  return keyring;
}
