// SQL of key rotation and the key census (rotate-keys.ts, key-census.ts): they walk every sealed
// value of the database, the secret versions (a key_id column) and the one-string sealed columns of
// other tables (`k1.<key id>.` prefixes), named by table and column. One statement per function.
import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import type { SecretVersionsTable } from '../../db/schema.js';

/** A one-string sealed column: the table and the column (trusted names from SEALED_COLUMNS, never input). */
export interface SealedColumnRef {
  table: string;
  column: string;
}

// ---- the census (key-census.ts): loose index scans over migration 010's indexes ----

/** The smallest key id of a secret version greater than `after`; undefined when there is none. */
export async function nextVersionKeyId(db: Executor, after: string): Promise<string | undefined> {
  return (await db.selectFrom('secret_versions').select('key_id')
    .where('key_id', '>', after).orderBy('key_id').limit(1).executeTakeFirst())?.key_id ?? undefined;
}

/** How many secret versions are sealed under `keyId`. */
export async function countVersionsUnder(db: Executor, keyId: string): Promise<number> {
  const { n } = await db.selectFrom('secret_versions').select((eb) => eb.fn.countAll<number | string>().as('n')).where('key_id', '=', keyId).executeTakeFirstOrThrow();
  return Number(n);
}

/** The indexed expression of migration 010: it must read exactly as in the index for either database to use it. */
const prefixOf = (target: SealedColumnRef) => sql<string>`substr(${sql.ref(target.column)}, 1, 19)`;

/** The smallest 19-character prefix of the column's values greater than `after`; undefined when there is none. */
export async function nextSealedPrefix(db: Executor, target: SealedColumnRef, after: string): Promise<string | undefined> {
  const prefix = prefixOf(target);
  const { rows } = await sql<{ p: string }>`select ${prefix} as p from ${sql.table(target.table)} where ${prefix} > ${after} order by ${prefix} limit 1`.execute(db);
  return rows[0]?.p;
}

/** How many values of the column start with `prefix` (19 characters). */
export async function countSealedWithPrefix(db: Executor, target: SealedColumnRef, prefix: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(target.table)} where ${prefixOf(target)} = ${prefix}`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

// ---- rotation (rotate-keys.ts): batches in id order, each row written with a compare-and-set ----

export type VersionToRewrap = Pick<SecretVersionsTable, 'id' | 'workspace_id' | 'secret_id' | 'key_id' | 'wrapped_key'>;

/** The next `limit` secret versions after id `after` whose key is not `currentKeyId`, in id order. */
export function versionsNotUnder(db: Executor, currentKeyId: string, after: string, limit: number): Promise<VersionToRewrap[]> {
  return db.selectFrom('secret_versions')
    .select(['id', 'workspace_id', 'secret_id', 'key_id', 'wrapped_key'])
    .where('id', '>', after).where('key_id', 'is not', null).where('key_id', '!=', currentKeyId)
    .orderBy('id').limit(limit).execute();
}

// Prepared: built once, not once per row (10,000 rows are a few seconds of query building otherwise).
const rewrapVersionQuery = preparedQuery((db, p: { id: string; oldKeyId: string; keyId: string; wrappedKey: string }) =>
  db.updateTable('secret_versions').set({ key_id: p.keyId, wrapped_key: p.wrappedKey })
    .where('id', '=', p.id).where('key_id', '=', p.oldKeyId).returning('id'));

/** Stores a version's re-wrapped data key if it is still under `oldKeyId`; how many rows changed (0 or 1). */
export async function rewrapVersion(tx: Executor, p: { id: string; oldKeyId: string; keyId: string; wrappedKey: string }): Promise<number> {
  return (await rewrapVersionQuery(tx, p)).length;
}

/** The next `limit` rows after id `after` whose value is set and not under the current key (`not like currentPrefix`), in id order. */
export async function sealedNotUnder(db: Executor, target: SealedColumnRef, currentPrefix: string, after: string, limit: number): Promise<{ id: string; sealed: string }[]> {
  const column = sql.ref(target.column);
  const { rows } = await sql<{ id: string; sealed: string }>`
      select id, ${column} as sealed from ${sql.table(target.table)}
      where id > ${after} and ${column} is not null and ${column} not like ${currentPrefix}
      order by id limit ${limit}`.execute(db);
  return rows;
}

/** Stores a re-sealed value if the row still holds `old`; how many rows changed (0 or 1). */
export async function resealValue(tx: Executor, target: SealedColumnRef, id: string, old: string, next: string): Promise<number> {
  const column = sql.ref(target.column);
  const res = await sql`update ${sql.table(target.table)} set ${column} = ${next} where id = ${id} and ${column} = ${old}`.execute(tx);
  return Number(res.numAffectedRows ?? 0n);
}
