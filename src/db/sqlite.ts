// The embedded SQLite backend: better-sqlite3 under Kysely, with three additions.
//
// 1. Statement reuse. Kysely prepares every query anew; better-sqlite3 statements are reusable,
//    so compiled statements are kept per SQL text (bounded).
// 2. A read cache. Materialising rows into JS objects dominates the cost of a list read (about
//    1.5 µs per row value on the reference machine). Results of read-only statements are kept
//    per (SQL, parameters) and dropped as soon as anything could have changed them: any write on
//    this connection (a plain insert drops only the results that read its table), any rollback, and any commit by another connection or process (SQLite's
//    `pragma data_version` changes then, and it is checked before cached answers). So a cached
//    answer is always what the query would return now; revoking a token in another instance
//    takes effect on the next request. Cached rows are shared: callers must not mutate them
//    (repos map rows to new objects).
//    One check serves the cached reads that follow it until anything could have let this process
//    learn of a newer commit: a request arriving (newReadEpoch, called by the app for every
//    request), any statement actually executed on this connection (it may have seen the newer
//    state; a transaction begins with one), or the event loop turning (setImmediate). A request
//    whose token, membership and secret are all cached so checks once, not three times, and its
//    answers are one consistent snapshot: no read in it sees an older state than an earlier one.
// 3. `begin immediate`. With the default deferred `begin`, a transaction that reads and then
//    writes fails at once with SQLITE_BUSY when another process wrote in between, since
//    busy_timeout cannot help a stale snapshot; immediate makes it wait instead. This is also
//    what serializes concurrent migrations: Kysely's SQLite migration lock is per process only.
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery, SqliteAdapter, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig,
} from 'kysely';

const MAX_STATEMENTS = 1000;
const MAX_CACHED_RESULTS = 5000;
const TRANSACTION_END = /^\s*(rollback|release|commit|end)\b/i;
// `insert into "t" ...`, not `insert or replace` (whose deletes may cascade to other tables).
const PLAIN_INSERT = /^\s*insert\s+into\s+"?([a-z_][a-z0-9_]*)"?/i;

type Params = readonly unknown[];

/** Bumped when a request arrives: every connection checks data_version again before its next cached answer. */
let readEpoch = 0;

/**
 * Called by the app as each request arrives (an onRequest hook): a commit made elsewhere before the
 * request was sent (revoking a token in another instance, then retrying) is seen by its reads.
 */
export function newReadEpoch(): void {
  readEpoch++;
}

class CachingDatabase {
  private readonly statements = new Map<string, CachedStatement>();
  private readonly dataVersion: SQLite.Statement;
  private lastDataVersion = -1;
  /** the read epoch in which data_version was last checked, if nothing has executed or turned since; else -1 */
  private verifiedEpoch = -1;
  private expiryScheduled = false;
  private readonly expire = (): void => {
    this.expiryScheduled = false;
    this.verifiedEpoch = -1;
  };
  /** statements holding cached results, and how many results they hold together (bounded) */
  private readonly holders = new Set<CachedStatement>();
  private size = 0;

  constructor(readonly sqlite: SQLite.Database) {
    this.dataVersion = sqlite.prepare('pragma data_version').pluck();
  }

  close(): void {
    this.sqlite.close();
  }

  prepare(text: string): CachedStatement {
    let stmt = this.statements.get(text);
    if (!stmt) {
      if (this.statements.size >= MAX_STATEMENTS) this.statements.delete(this.statements.keys().next().value!);
      stmt = new CachedStatement(this, text, this.sqlite.prepare(text));
      this.statements.set(text, stmt);
    }
    return stmt;
  }

  invalidate(): void {
    for (const stmt of this.holders) stmt.results.clear();
    this.holders.clear();
    this.size = 0;
  }

  /** Drops the cached results of the statements that read `table` (see CachedStatement.writes). */
  invalidateTable(table: RegExp): void {
    for (const stmt of this.holders) {
      if (!table.test(stmt.text)) continue;
      this.size -= stmt.results.size;
      stmt.results.clear();
      this.holders.delete(stmt);
    }
  }

  /** True when cached results may be served: no other connection committed since the last check. */
  current(): boolean {
    if (this.verifiedEpoch === readEpoch) return true;
    const version = this.dataVersion.get() as number;
    if (version !== this.lastDataVersion) {
      this.lastDataVersion = version;
      this.invalidate();
      return false;
    }
    this.verifiedEpoch = readEpoch;
    if (!this.expiryScheduled) {
      this.expiryScheduled = true;
      setImmediate(this.expire);
    }
    return true;
  }

  /** A statement is executing on this connection: what it reads may be newer than the last check. */
  executed(): void {
    this.verifiedEpoch = -1;
  }

  /** Records that `stmt` is about to cache one more result, dropping everything when full. */
  admit(stmt: CachedStatement): void {
    if (this.size >= MAX_CACHED_RESULTS) this.invalidate();
    this.size++;
    this.holders.add(stmt);
  }
}

class CachedStatement {
  readonly reader: boolean;
  /** cached results by JSON of the parameters */
  readonly results = new Map<string, unknown[]>();
  private readonly cacheable: boolean;
  private readonly endsTransaction: boolean;

  /**
   * For a plain insert, the table it writes: the only table whose contents it can change (the
   * schema has no triggers, and foreign-key actions fire on update and delete only), so only the
   * results that read that table are dropped. This is what keeps an audited read cheap: the audit
   * event it inserts does not throw away the cached rows of tokens, members and secrets.
   */
  private readonly writes: RegExp | null;

  constructor(
    private readonly owner: CachingDatabase,
    readonly text: string,
    private readonly stmt: SQLite.Statement,
  ) {
    this.reader = stmt.reader;
    // Transaction control statements count as read-only to SQLite; they are not query results.
    this.endsTransaction = TRANSACTION_END.test(text);
    this.cacheable = stmt.readonly && stmt.reader && !/^\s*(pragma|begin|savepoint)\b/i.test(text);
    const inserted = stmt.readonly ? undefined : PLAIN_INSERT.exec(text)?.[1];
    this.writes = inserted ? new RegExp(`\\b${inserted}\\b`, 'i') : null;
  }

  private invalidate(): void {
    if (this.writes) this.owner.invalidateTable(this.writes);
    else this.owner.invalidate();
  }

  all(params: Params): unknown[] {
    if (!this.cacheable) {
      if (!this.stmt.readonly || this.endsTransaction) this.invalidate();
      this.owner.executed();
      return this.stmt.all(...params);
    }
    const key = JSON.stringify(params);
    if (this.owner.current()) {
      const hit = this.results.get(key);
      if (hit) return hit;
    }
    this.owner.executed();
    const rows = this.stmt.all(...params);
    this.owner.admit(this);
    this.results.set(key, rows);
    return rows;
  }

  run(params: Params): SQLite.RunResult {
    if (!this.stmt.readonly || this.endsTransaction) this.invalidate();
    this.owner.executed();
    return this.stmt.run(...params);
  }

  iterate(params: Params): IterableIterator<unknown> {
    this.owner.executed();
    return this.stmt.iterate(...params);
  }
}

class SqliteImmediateDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/**
 * SQLite runs DDL in transactions; saying so makes Kysely's migrator run each batch in one
 * (`begin immediate`), which is what serializes `svc migrate` run by several processes at once:
 * Kysely's SQLite migration lock is a no-op, and without the transaction two processes could both
 * read "nothing applied yet" and apply the same migration.
 */
class SqliteTransactionalDdlAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class SqliteImmediateDialect extends SqliteDialect {
  constructor(private readonly sqliteConfig: SqliteDialectConfig) {
    super(sqliteConfig);
  }
  override createDriver(): Driver {
    return new SqliteImmediateDriver(this.sqliteConfig);
  }
  override createAdapter(): SqliteAdapter {
    return new SqliteTransactionalDdlAdapter();
  }
}

/** Opens `${dataDir}/svc.db`; the directory exists (database.ts prepares it, owner only). */
export function createSqliteDialect(dataDir: string): SqliteDialect {
  const sqlite = new SQLite(join(dataDir, 'svc.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 10000');
  sqlite.pragma('foreign_keys = ON');
  // Deleted and overwritten content is zeroed in the database file rather than left in free space:
  // a destroyed secret version's ciphertext and wrapped key do not linger in the file.
  sqlite.pragma('secure_delete = ON');
  // Kysely's SqliteDatabase interface is structural: prepare() returning {reader, all, run, iterate}.
  return new SqliteImmediateDialect({ database: new CachingDatabase(sqlite) as unknown as SqliteDialectConfig['database'] });
}
