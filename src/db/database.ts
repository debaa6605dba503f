// One Kysely interface over better-sqlite3 (embedded default, WAL mode) or pg (PostgreSQL).
import { join } from 'node:path';
import { Kysely, PostgresDialect, sql, type Dialect as KyselyDialect, type LogConfig, type Transaction } from 'kysely';
import pg from 'pg';
import { preparePrivateDir, touchPrivateFile } from '../platform/data-dir.js';
import type { Database } from './schema.js';
import { createSqliteDialect } from './sqlite.js';

// Each request starts a new read epoch: SQLite's read cache checks again for commits by other
// instances before answering it (see sqlite.ts). Nothing to do on PostgreSQL, which has no cache.
export { newReadEpoch } from './sqlite.js';

export type Db = Kysely<Database>;
/** Either the root handle or a transaction: every repo function accepts both. */
export type Executor = Kysely<Database> | Transaction<Database>;
export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
  close(): Promise<void>;
  /** modes of the data directory and its files found too open, and tightened (see platform/data-dir.ts); SQLite only */
  dataDirNotes: string[];
}

// int8 (bigint) and numeric come back as strings by default; our values are Unix seconds and
// counters far below 2^53, so numbers are safe and keep both dialects returning the same types.
pg.types.setTypeParser(20, (v) => Number(v));

/** distinct statements one connection keeps prepared; further ones run unnamed */
const PREPARED_PER_CONNECTION = 500;

type QueryFn = (config: unknown, values?: unknown) => Promise<unknown>;

/**
 * Makes every parameterized query on this connection a named prepared statement (named by its
 * SQL): PostgreSQL parses and plans it once per connection instead of on every call, which
 * halves the server's CPU per statement on the operation runner's short queries. Kysely's pg
 * driver always calls `client.query(sql, parameters)`, so this is the one place to do it.
 */
function prepareStatements(client: pg.PoolClient): void {
  const names = new Map<string, string>();
  let prepared = 0;
  const unnamed = client.query.bind(client) as QueryFn;
  const query: QueryFn = async (text, values) => {
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0) return unnamed(text, values);
    let name = names.get(text);
    if (name === undefined) {
      if (prepared >= PREPARED_PER_CONNECTION) return unnamed(text, values);
      name = `svc_${++prepared}`;
      names.set(text, name);
    }
    try {
      return await unnamed({ name, text, values });
    } catch (err) {
      // A migration by another instance changed a table under a prepared `select *`: PostgreSQL
      // refuses the old plan ("cached plan must not change result type"). Prepare it afresh.
      if ((err as { code?: string }).code !== '0A000' || !/cached plan/.test(String((err as Error).message))) throw err;
      names.delete(text);
      await unnamed(`deallocate ${name}`);
      return unnamed(text, values);
    }
  };
  (client as unknown as { query: QueryFn }).query = query;
}

/**
 * `log`: Kysely's query log (tests read which statements a routine ran, to explain their plans).
 * `traceDialect`: wraps the dialect so that statements become spans (tracing on, platform/otel.ts).
 */
export function openDatabase(opts: {
  databaseUrl: string | null; dataDir: string; poolSize?: number; log?: LogConfig;
  traceDialect?: (dialect: KyselyDialect, system: 'sqlite' | 'postgresql') => KyselyDialect;
}): DatabaseHandle {
  const traced = (dialect: KyselyDialect, system: 'sqlite' | 'postgresql') => (opts.traceDialect ? opts.traceDialect(dialect, system) : dialect);
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.poolSize ?? 10 });
    pool.on('connect', prepareStatements);
    // An idle client that errors (server restart) must not crash the process.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: traced(new PostgresDialect({ pool }), 'postgresql'), ...(opts.log ? { log: opts.log } : {}) });
    return { db, dialect: 'postgres', close: () => db.destroy(), dataDirNotes: [] };
  }
  // Owner only: the directory 0700, the database 0600 before SQLite opens it (its -wal and -shm
  // files take the database's mode).
  const dataDirNotes = preparePrivateDir(opts.dataDir);
  touchPrivateFile(join(opts.dataDir, 'svc.db'));
  const db = new Kysely<Database>({ dialect: traced(createSqliteDialect(opts.dataDir), 'sqlite'), ...(opts.log ? { log: opts.log } : {}) });
  return { db, dialect: 'sqlite', close: () => db.destroy(), dataDirNotes };
}

/** Runs `fn` in the caller's transaction if it already is one, else in a new transaction. */
export function inTransaction<T>(executor: Executor, fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  return executor.isTransaction ? fn(executor as Transaction<Database>) : executor.transaction().execute(fn);
}

/** The readiness probe's query (`select 1`): resolves when the database answers, throws when it does not. */
export async function ping(db: Executor): Promise<void> {
  await sql`select 1`.execute(db);
}

/** True when a driver error is a unique-constraint violation, on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
