// Which keys the stored values are sealed under, without opening any: the distinct key ids of
// secret versions (their key_id column) and of one-string sealed values (`k1.<key id>.`, the first
// 19 characters), each with how many values it seals. Read from the indexes of migration 010 by a
// loose index scan (one probe per distinct key id, then one indexed count per key), so it costs
// the same with ten values or ten million and can run at every start.
//
// `svc serve` refuses to start when some key id is neither SVC_SECRET_KEY's nor one of
// SVC_PREVIOUS_SECRET_KEYS' (every read of those values would fail with 422 VALUE_UNREADABLE), and
// `svc admin rotate-keys` checks that nothing is left under another key before it calls the
// rotation done. Values sealed before the keyring existed (`v1.`) name no key and are not counted:
// rotate-keys reports those it cannot open.
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { Keyring } from '../../platform/keyring.js';
import * as repo from './keys.repo.js';
import { SEALED_COLUMNS } from './rotate-keys.js';

export interface SealedUnder {
  /** what is sealed: `secret versions`, `cluster kubeconfigs`, `signing keys` */
  what: string;
  keyId: string;
  count: number;
}

const SEALED_PREFIX = 'k1.';
/** `k1.` and the 16 hex characters of a key id: the indexed expression of migration 010 */
const PREFIX_LENGTH = 19;

/** The distinct values `next` walks in index order, starting after `from`, while `keep` holds. */
async function looseScan(from: string, next: (after: string) => Promise<string | undefined>, keep: (v: string) => boolean): Promise<string[]> {
  const found: string[] = [];
  for (let after = from; ;) {
    const value = await next(after);
    if (value === undefined || !keep(value)) return found;
    found.push(value);
    after = value;
  }
}

async function versionKeys(db: Db): Promise<SealedUnder[]> {
  const ids = await looseScan('', (after) => repo.nextVersionKeyId(db, after), () => true);
  const out: SealedUnder[] = [];
  for (const keyId of ids) out.push({ what: 'secret versions', keyId, count: await repo.countVersionsUnder(db, keyId) });
  return out;
}

async function columnKeys(db: Db, target: (typeof SEALED_COLUMNS)[number]): Promise<SealedUnder[]> {
  const prefixes = await looseScan(SEALED_PREFIX, (after) => repo.nextSealedPrefix(db, target, after), (p) => p.startsWith(SEALED_PREFIX) && p.length === PREFIX_LENGTH);
  const out: SealedUnder[] = [];
  for (const p of prefixes) out.push({ what: target.what, keyId: p.slice(SEALED_PREFIX.length), count: await repo.countSealedWithPrefix(db, target, p) });
  return out;
}

/** Every key id a stored value is sealed under, per kind of value, with its count. */
export async function keyCensus(db: Db): Promise<SealedUnder[]> {
  const out = await versionKeys(db);
  for (const target of SEALED_COLUMNS) out.push(...(await columnKeys(db, target)));
  return out;
}

/**
 * Null when every value is sealed under a key the keyring holds (or under a key id listed in
 * SVC_LOST_KEY_IDS); else why the service must not start, and what to set.
 */
export async function unopenableKeysProblem(db: Db, keyring: Keyring, config: Pick<Config, 'secretKeyGenerated' | 'dataDir' | 'lostKeyIds'>): Promise<string | null> {
  const known = new Set([...keyring.keyIds(), ...config.lostKeyIds]);
  const unknown = (await keyCensus(db)).filter((c) => !known.has(c.keyId));
  if (unknown.length === 0) return null;
  const ids = [...new Set(unknown.map((u) => u.keyId))];
  const source = config.secretKeyGenerated ? `read from ${config.dataDir}/secret.key, as SVC_SECRET_KEY is not set` : 'from the environment';
  const previous = keyring.keyIds().slice(1);
  return [
    `the database holds values sealed under ${ids.length === 1 ? 'a key' : 'keys'} this service was not given:`,
    ...unknown.map((u) => `  ${u.what}: ${u.count} sealed under key ${u.keyId}`),
    `SVC_SECRET_KEY (${source}) has key id ${keyring.currentKeyId}; SVC_PREVIOUS_SECRET_KEYS ${previous.length ? `have key ids ${previous.join(', ')}` : 'is not set'}.`,
    `Start with the key of id ${ids.join(' / ')} as SVC_SECRET_KEY, or add it to SVC_PREVIOUS_SECRET_KEYS (then \`svc admin rotate-keys\` moves everything under SVC_SECRET_KEY).`,
    ...(config.secretKeyGenerated
      ? ['After a rotation done with SVC_SECRET_KEY in the environment, that is the new key: set it, and `svc admin rotate-keys` writes it to the key file.']
      : []),
    `A key that is lost for good: list its id in SVC_LOST_KEY_IDS to start anyway (its values answer 422 VALUE_UNREADABLE).`,
  ].join('\n');
}
