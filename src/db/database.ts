// One Kysely interface over better-sqlite3 (embedded default, WAL mode) or pg (PostgreSQL).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery, Kysely, PostgresDialect, SqliteDialect, SqliteDriver,
  type DatabaseConnection, type Driver, type SqliteDialectConfig, type Transaction,
} from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
/** Either the root handle or a transaction: every repo function accepts both. */
export type Executor = Kysely<Database> | Transaction<Database>;
export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
  close(): Promise<void>;
}

// int8 (bigint) and numeric come back as strings by default; our values are Unix seconds and
// counters far below 2^53, so numbers are safe and keep both dialects returning the same types.
pg.types.setTypeParser(20, (v) => Number(v));

/**
 * Kysely prepares every query anew; better-sqlite3 statements are reusable, so keep the compiled
 * statement per SQL text (a bounded LRU). Kysely runs one query at a time per connection, so a
 * cached statement is never used by two queries at once.
 */
function withStatementCache(sqlite: SQLite.Database, max = 1000) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(text: string): SQLite.Statement {
      let stmt = cache.get(text);
      if (stmt) {
        cache.delete(text);
      } else {
        stmt = sqlite.prepare(text);
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
      }
      cache.set(text, stmt);
      return stmt;
    },
  };
}

/**
 * SQLite transactions start with `begin immediate`, taking the write lock up front. With the
 * default deferred `begin`, a transaction that reads and then writes fails at once with
 * SQLITE_BUSY when another process (a second instance, `svc migrate`) wrote in between, since
 * busy_timeout cannot help a stale snapshot; immediate makes it wait instead. This is also what
 * serializes concurrent migrations: Kysely's SQLite migration lock is per process only.
 */
class SqliteImmediateDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class SqliteImmediateDialect extends SqliteDialect {
  constructor(private readonly sqliteConfig: SqliteDialectConfig) {
    super(sqliteConfig);
  }
  override createDriver(): Driver {
    return new SqliteImmediateDriver(this.sqliteConfig);
  }
}

export function openDatabase(opts: { databaseUrl: string | null; dataDir: string; poolSize?: number }): DatabaseHandle {
  if (opts.databaseUrl) {
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: opts.poolSize ?? 10 });
    // An idle client that errors (server restart) must not crash the process.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const sqlite = new SQLite(join(opts.dataDir, 'svc.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 10000');
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteImmediateDialect({ database: withStatementCache(sqlite) }) });
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/** Runs `fn` in the caller's transaction if it already is one, else in a new transaction. */
export function inTransaction<T>(executor: Executor, fn: (tx: Transaction<Database>) => Promise<T>): Promise<T> {
  return executor.isTransaction ? fn(executor as Transaction<Database>) : executor.transaction().execute(fn);
}

/** True when a driver error is a unique-constraint violation, on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
