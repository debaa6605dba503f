// The embedded SQLite backend: better-sqlite3 under Kysely, with three additions.
//
// 1. Statement reuse. Kysely prepares every query anew; better-sqlite3 statements are reusable,
//    so compiled statements are kept per SQL text (bounded).
// 2. A read cache. Materialising rows into JS objects dominates the cost of a list read (about
//    1.5 µs per row value on the reference machine). Results of read-only statements are kept
//    per (SQL, parameters) and dropped as soon as anything could have changed them: any write on
//    this connection, any rollback, and any commit by another connection or process (SQLite's
//    `pragma data_version` changes then, and it is checked before every cached answer). So a
//    cached answer is always what the query would return now; revoking a token in another
//    instance takes effect on the next request. Cached rows are shared: callers must not mutate
//    them (repos map rows to new objects).
// 3. `begin immediate`. With the default deferred `begin`, a transaction that reads and then
//    writes fails at once with SQLITE_BUSY when another process wrote in between, since
//    busy_timeout cannot help a stale snapshot; immediate makes it wait instead. This is also
//    what serializes concurrent migrations: Kysely's SQLite migration lock is per process only.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import {
  CompiledQuery, SqliteDialect, SqliteDriver, type DatabaseConnection, type Driver, type SqliteDialectConfig,
} from 'kysely';

const MAX_STATEMENTS = 1000;
const MAX_CACHED_RESULTS = 5000;
const TRANSACTION_END = /^\s*(rollback|release|commit|end)\b/i;

type Params = readonly unknown[];

class CachingDatabase {
  private readonly statements = new Map<string, CachedStatement>();
  private readonly results = new Map<string, unknown[]>();
  private readonly dataVersion: SQLite.Statement;
  private lastDataVersion = -1;

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
    this.results.clear();
  }

  /** Cached rows for the key, unless another connection committed since they were read. */
  lookup(key: string): unknown[] | undefined {
    const version = this.dataVersion.get() as number;
    if (version !== this.lastDataVersion) {
      this.lastDataVersion = version;
      this.results.clear();
      return undefined;
    }
    return this.results.get(key);
  }

  store(key: string, rows: unknown[]): void {
    if (this.results.size >= MAX_CACHED_RESULTS) this.results.clear();
    this.results.set(key, rows);
  }
}

class CachedStatement {
  readonly reader: boolean;
  private readonly cacheable: boolean;
  private readonly endsTransaction: boolean;

  constructor(
    private readonly owner: CachingDatabase,
    private readonly text: string,
    private readonly stmt: SQLite.Statement,
  ) {
    this.reader = stmt.reader;
    // Transaction control statements count as read-only to SQLite; they are not query results.
    this.endsTransaction = TRANSACTION_END.test(text);
    this.cacheable = stmt.readonly && stmt.reader && !/^\s*(pragma|begin|savepoint)\b/i.test(text);
  }

  all(params: Params): unknown[] {
    if (!this.cacheable) {
      if (!this.stmt.readonly || this.endsTransaction) this.owner.invalidate();
      return this.stmt.all(...params);
    }
    const key = `${this.text}\u0000${JSON.stringify(params)}`;
    const hit = this.owner.lookup(key);
    if (hit) return hit;
    const rows = this.stmt.all(...params);
    this.owner.store(key, rows);
    return rows;
  }

  run(params: Params): SQLite.RunResult {
    if (!this.stmt.readonly || this.endsTransaction) this.owner.invalidate();
    return this.stmt.run(...params);
  }

  iterate(params: Params): IterableIterator<unknown> {
    return this.stmt.iterate(...params);
  }
}

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

export function createSqliteDialect(dataDir: string): SqliteDialect {
  mkdirSync(dataDir, { recursive: true });
  const sqlite = new SQLite(join(dataDir, 'svc.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 10000');
  sqlite.pragma('foreign_keys = ON');
  // Kysely's SqliteDatabase interface is structural: prepare() returning {reader, all, run, iterate}.
  return new SqliteImmediateDialect({ database: new CachingDatabase(sqlite) as unknown as SqliteDialectConfig['database'] });
}
