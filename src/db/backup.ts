// The database side of `svc admin backup` and `svc admin restore` (platform/backup.ts builds the
// archive around it): a consistent snapshot taken while the service keeps writing, and its restore
// into an empty database.
//
// - SQLite: better-sqlite3's online backup API, told to copy every page in one step. One step is
//   one read transaction: in WAL mode it sees one committed state and blocks no writer (several
//   smaller steps would restart from the first page whenever another process commits, which
//   under steady writes may never end).
// - PostgreSQL: a read-only repeatable-read transaction exports its snapshot
//   (pg_export_snapshot), `pg_dump --snapshot` dumps exactly that state in its custom format, and
//   what the manifest says of the database (its migrations, the key ids its values are sealed
//   under) is read in the same transaction, so it describes the dump and nothing later. pg_dump
//   and pg_restore are PostgreSQL's client tools, required on PATH (docs/backups.md).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import type { Db, Executor } from './database.js';

/** The SQLite database's file name in the data dir (database.ts opens `${dataDir}/svc.db`). */
export const SQLITE_FILE = 'svc.db';

/** Something the operator must act on (no tool, no database, a failed dump): its message says what. */
export class DatabaseBackupError extends Error {}

/** The migrations applied to the database `db` reads, in order; refuses a database svc never migrated. */
export async function appliedMigrations(db: Executor): Promise<string[]> {
  try {
    const { rows } = await sql<{ name: string }>`select name from svc_migrations order by name`.execute(db);
    return rows.map((r) => r.name);
  } catch (err) {
    if (/svc_migrations/.test(String((err as Error).message))) {
      throw new DatabaseBackupError('the database holds no svc schema (no migration was ever applied): there is nothing to back up');
    }
    throw err;
  }
}

/**
 * Copies the live `${dataDir}/svc.db` (its committed state, WAL included) into `dest`, a file that
 * does not exist yet, without stopping the service.
 */
export async function snapshotSqlite(dataDir: string, dest: string): Promise<void> {
  const source = join(dataDir, SQLITE_FILE);
  if (!existsSync(source)) throw new DatabaseBackupError(`there is no database at ${source}: check SVC_DATA_DIR (or set DATABASE_URL for PostgreSQL)`);
  const db = new SQLite(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    // better-sqlite3 first copies a few pages, then as many per step as this returns: all of them.
    await db.backup(dest, { progress: () => 0x7fffffff });
  } finally {
    db.close();
  }
}

/**
 * Runs `fn` in a read-only repeatable-read transaction whose snapshot is exported: `fn` gets the
 * transaction (its reads see that snapshot) and the snapshot's id for `pg_dump --snapshot`. The
 * transaction stays open until `fn` returns, as an exported snapshot lives only that long.
 */
export async function withPostgresSnapshot<T>(db: Db, fn: (tx: Db, snapshotId: string) => Promise<T>): Promise<T> {
  return db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only').execute(async (tx) => {
    const { rows } = await sql<{ id: string }>`select pg_export_snapshot() as id`.execute(tx);
    return fn(tx, rows[0]!.id);
  });
}

/**
 * The connection for PostgreSQL's client tools: the URL without its password (a command line is
 * visible to every user of the host in `ps`), and the password in PGPASSWORD of their environment.
 */
function toolConnection(databaseUrl: string, baseEnv: NodeJS.ProcessEnv): { dbname: string; env: NodeJS.ProcessEnv } {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  return { dbname: url.toString(), env: { ...baseEnv, ...(password ? { PGPASSWORD: password } : {}) } };
}

/** Runs pg_dump or pg_restore; resolves when it exits 0, else a DatabaseBackupError with its stderr. */
function runTool(tool: 'pg_dump' | 'pg_restore', args: string[], databaseUrl: string, baseEnv: NodeJS.ProcessEnv): Promise<void> {
  const { dbname, env } = toolConnection(databaseUrl, baseEnv);
  return new Promise((resolve, reject) => {
    const child = spawn(tool, [...args, `--dbname=${dbname}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += d.toString();
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'ENOENT'
        ? new DatabaseBackupError(`${tool} was not found on PATH: install PostgreSQL's client tools, of the server's major version or newer (Debian and Ubuntu: apt-get install postgresql-client), see docs/backups.md`)
        : err);
    });
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new DatabaseBackupError(`${tool} failed (${code ?? signal}):\n${stderr.trim()}`));
    });
  });
}

/** `pg_dump --format=custom` of the exported snapshot `snapshotId` into `dest`. */
export function dumpPostgres(databaseUrl: string, snapshotId: string, dest: string, baseEnv: NodeJS.ProcessEnv): Promise<void> {
  return runTool('pg_dump', ['--format=custom', `--snapshot=${snapshotId}`, `--file=${dest}`], databaseUrl, baseEnv);
}

/**
 * `pg_restore` of a custom-format dump into the (empty) database, all or nothing: one
 * transaction, stopping at the first error. Owners and grants of the dump are not restored: the
 * tables belong to the user of DATABASE_URL, who may be another than the one that was dumped.
 */
export function restorePostgres(databaseUrl: string, file: string, baseEnv: NodeJS.ProcessEnv): Promise<void> {
  return runTool('pg_restore', ['--exit-on-error', '--single-transaction', '--no-owner', '--no-privileges', file], databaseUrl, baseEnv);
}

/** The tables of the schema the service's tables go to (the first of the search path): none in an empty database. */
export async function postgresTables(db: Db): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema() order by tablename`.execute(db);
  return rows.map((r) => r.name);
}

/** Drops every table of that schema, in one transaction (`svc admin restore --force`). */
export async function dropPostgresTables(db: Db): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const { rows } = await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(tx);
    for (const { name } of rows) await sql`drop table if exists ${sql.id(name)} cascade`.execute(tx);
  });
}
