// `svc admin backup --to FILE` and `svc admin restore --from FILE`: one tar archive (gzipped when
// FILE ends in .gz or .tgz) holding, in this order,
//
//   manifest.json                     format version, svc version, dialect, migrations, key ids
//   database/svc.db | svc.pgdump      the database's snapshot (db/backup.ts)
//   data/...                          every file the service keeps under its data dir
//
// and never a key: the data dir's secret.key (and rotate-keys' temporary copies of it) stay out,
// and the manifest names only key ids. Values stay sealed as they are stored, so an archive is
// useless without the key it names, and the operator keeps the keys apart from the archives.
//
// The database is snapshotted first, then the files are read: what the service writes to files
// (git repositories, a later feature) after rows that point at it is as new as the snapshot or
// newer. The manifest comes first so that restore refuses an archive it cannot take (a newer
// schema, another dialect) before unpacking anything.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { extract, Pack, Parser, type ReadEntry, type WriteEntry } from 'tar';
import type { Db } from '../db/database.js';
import { openDatabase } from '../db/database.js';
import {
  appliedMigrations, DatabaseBackupError, dropPostgresTables, dumpPostgres, postgresTables, restorePostgres, snapshotSqlite, SQLITE_FILE,
  withPostgresSnapshot,
} from '../db/backup.js';
import { MIGRATION_NAMES } from '../db/migrate.js';
import { clock } from './clock.js';
import { preparePrivateDir } from './data-dir.js';

export const FORMAT = 'svc-backup';
export const FORMAT_VERSION = 1;
const MANIFEST = 'manifest.json';
const DATA_PREFIX = 'data';

/** A refusal or failure the operator acts on; its message says what happened and what to do. */
export class BackupError extends Error {}

export interface SealedUnder {
  what: string;
  keyId: string;
  count: number;
}

export interface Manifest {
  format: typeof FORMAT;
  format_version: number;
  svc_version: string;
  /** ISO 8601, UTC: when the database snapshot was taken */
  created_at: string;
  dialect: 'sqlite' | 'postgres';
  schema: {
    /** the last migration applied to the snapshot */
    latest_migration: string | null;
    /** every migration applied to it, in order */
    migrations: string[];
  };
  database: { file: string; bytes: number; sha256: string };
  keys: {
    /** the key id of SVC_SECRET_KEY when the backup was taken */
    current_key_id: string;
    /** every key id a value of the snapshot is sealed under: the keys a restore needs */
    sealed_under: { what: string; key_id: string; count: number }[];
  };
  /** what the data/ part of the archive holds: the data dir, without the database and the keys */
  files: { area: string; archive_dir: string; excluded: string[] };
  warning: string;
}

/** Names directly under the data dir that a backup leaves out: the live database (snapshotted instead), the keys, and our own temporary directories. */
const EXCLUDED = [SQLITE_FILE, `${SQLITE_FILE}-wal`, `${SQLITE_FILE}-shm`, `${SQLITE_FILE}-journal`, 'secret.key', 'secret.key.*.tmp', 'lost+found', '.svc-restore-*'];
const excluded = (name: string) => EXCLUDED.some((p) => (p.endsWith('*') ? name.startsWith(p.slice(0, -1)) : p.includes('*') ? new RegExp(`^${p.replaceAll('.', '\\.').replace('*', '\\d+')}$`).test(name) : name === p));

/** What restore leaves in a data dir it calls empty: the key file an operator put there first, and a file system's lost+found. */
const KEPT_IN_TARGET = new Set(['secret.key', 'lost+found']);

export const keysWarning = (ids: string[], currentKeyId: string) =>
  `THIS ARCHIVE HOLDS NO KEY. ${ids.length ? `Its secret values are sealed under key id${ids.length === 1 ? '' : 's'} ${ids.join(', ')}` : `No value is sealed yet; the service seals new ones under key id ${currentKeyId}`}: ` +
  'keep SVC_SECRET_KEY (or SVC_DATA_DIR/secret.key) apart from the archive, in a password manager or secret store. ' +
  'Without that key a restored service cannot read any secret.';

const gzipped = (file: string) => /\.(t?gz)$/i.test(file);
const within = (dir: string, path: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const megabytes = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;

/** Reports progress at most every two seconds, then once at the end. */
function throttled(progress: (line: string) => void) {
  let last = 0;
  return (line: () => string, force = false) => {
    const now = performance.now();
    if (!force && now - last < 2000) return;
    last = now;
    progress(line());
  };
}

export interface BackupOptions {
  to: string;
  force: boolean;
  dataDir: string;
  databaseUrl: string | null;
  currentKeyId: string;
  svcVersion: string;
  /** the key ids a database's values are sealed under (the secrets module's key census) */
  census: (db: Db) => Promise<SealedUnder[]>;
  /** the environment pg_dump runs in (PATH, PG* settings) */
  toolEnv: NodeJS.ProcessEnv;
  progress: (line: string) => void;
}

export interface BackupResult {
  file: string;
  bytes: number;
  files: number;
  manifest: Manifest;
}

/** Takes a backup without stopping the service. The archive appears at `to` only once complete (owner only, 0600). */
export async function createBackup(opts: BackupOptions): Promise<BackupResult> {
  const to = resolve(opts.to);
  const dataDir = resolve(opts.dataDir);
  if (within(dataDir, to)) throw new BackupError(`--to ${to} is inside the data dir ${dataDir}: the archive would hold itself; write it elsewhere`);
  if (existsSync(to) && !opts.force) throw new BackupError(`${to} exists: choose another file, or pass --force to replace it`);
  if (!existsSync(dirname(to))) throw new BackupError(`the directory ${dirname(to)} does not exist`);
  const staging = mkdtempSync(join(dirname(to), `.${basename(to)}.partial-`));
  const partial = `${staging}.tar`;
  try {
    const dbDir = join(staging, 'database');
    preparePrivateDir(dbDir);
    const dialect = opts.databaseUrl ? 'postgres' : 'sqlite';
    const dbFile = join(dbDir, dialect === 'sqlite' ? SQLITE_FILE : 'svc.pgdump');
    opts.progress(`snapshotting the ${dialect === 'sqlite' ? `SQLite database ${join(dataDir, SQLITE_FILE)}` : 'PostgreSQL database with pg_dump'}`);
    const createdAt = new Date(clock.nowMs()).toISOString();
    const described = dialect === 'sqlite' ? await snapshotOfSqlite(dataDir, dbDir, dbFile, opts.census) : await snapshotOfPostgres(opts, dbFile);
    const bytes = statSync(dbFile).size;
    opts.progress(`database snapshot: ${megabytes(bytes)}; checksumming it`);
    const manifest: Manifest = {
      format: FORMAT,
      format_version: FORMAT_VERSION,
      svc_version: opts.svcVersion,
      created_at: createdAt,
      dialect,
      schema: { latest_migration: described.migrations.at(-1) ?? null, migrations: described.migrations },
      database: { file: `database/${basename(dbFile)}`, bytes, sha256: await sha256(dbFile) },
      keys: {
        current_key_id: opts.currentKeyId,
        sealed_under: described.sealed.map((s) => ({ what: s.what, key_id: s.keyId, count: s.count })),
      },
      files: { area: 'SVC_DATA_DIR', archive_dir: `${DATA_PREFIX}/`, excluded: EXCLUDED },
      warning: keysWarning([...new Set(described.sealed.map((s) => s.keyId))], opts.currentKeyId),
    };
    writeFileSync(join(staging, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });

    opts.progress(`archiving the database and the files of ${dataDir}`);
    const files = await writeArchive(staging, dataDir, partial, gzipped(to), opts.progress);
    renameSync(partial, to);
    return { file: to, bytes: statSync(to).size, files, manifest };
  } finally {
    rmSync(staging, { recursive: true, force: true });
    rmSync(partial, { force: true });
  }
}

async function snapshotOfSqlite(dataDir: string, dbDir: string, dbFile: string, census: BackupOptions['census']) {
  await snapshotSqlite(dataDir, dbFile);
  // The manifest describes the copy itself: its migrations and key ids, read from it.
  const copy = openDatabase({ databaseUrl: null, dataDir: dbDir, poolSize: 1 });
  try {
    return { migrations: await appliedMigrations(copy.db), sealed: await census(copy.db) };
  } finally {
    await copy.close();
  }
}

async function snapshotOfPostgres(opts: BackupOptions, dbFile: string) {
  const handle = openDatabase({ databaseUrl: opts.databaseUrl, dataDir: opts.dataDir, poolSize: 1 });
  try {
    return await withPostgresSnapshot(handle.db, async (tx, snapshotId) => {
      const described = { migrations: await appliedMigrations(tx), sealed: await opts.census(tx) };
      opts.progress(`pg_dump of snapshot ${snapshotId} started`);
      await dumpPostgres(opts.databaseUrl!, snapshotId, dbFile, opts.toolEnv);
      return described;
    });
  } finally {
    await handle.close();
  }
}

/**
 * Writes the tar: the staging dir's manifest and database, then the data dir's files under data/.
 * Hard links are stored as files (a file linked twice is stored twice), so every entry stands
 * alone. Returns how many files of the data dir it holds.
 */
async function writeArchive(staging: string, dataDir: string, file: string, gzip: boolean, progress: (line: string) => void): Promise<number> {
  let files = 0;
  let bytes = 0;
  const report = throttled(progress);
  const noLinks = new Map<string, string>();
  noLinks.set = function set() {
    return this;
  };
  const pack = new Pack({
    cwd: staging,
    portable: true,
    gzip: gzip || undefined,
    linkCache: noLinks as never,
    // Entries of the data dir are added by absolute path: they go under data/ in the archive.
    onWriteEntry: (entry: WriteEntry) => {
      const absolute = entry.absolute;
      if (within(dataDir, absolute)) {
        const inside = relative(dataDir, absolute).split(sep).join('/');
        entry.path = `${DATA_PREFIX}/${inside}${entry.type === 'Directory' ? '/' : ''}`;
        if (entry.type === 'File') {
          files++;
          bytes += entry.stat?.size ?? 0;
          report(() => `files: ${files} (${megabytes(bytes)}) so far`);
        }
      } else {
        entry.path = relative(staging, absolute).split(sep).join('/') + (entry.type === 'Directory' ? '/' : '');
      }
    },
    // "stripping / from absolute path": expected for the data dir's entries.
    onwarn: (code: string, message: string) => {
      if (code !== 'TAR_ENTRY_INFO') progress(`warning: ${message}`);
    },
  });
  const written = pipeline(pack, createWriteStream(file, { mode: 0o600, flags: 'wx' }));
  pack.add(MANIFEST);
  pack.add('database');
  if (existsSync(dataDir)) {
    for (const name of readdirSync(dataDir).sort()) if (!excluded(name)) pack.add(join(dataDir, name));
  }
  pack.end();
  await written;
  report(() => `files: ${files} of the data dir (${megabytes(bytes)})`, true);
  return files;
}

/** The manifest, read from the archive's first entry without reading the rest. */
export async function readManifest(file: string): Promise<Manifest> {
  if (!existsSync(file)) throw new BackupError(`${file} does not exist`);
  const source = createReadStream(file);
  const parser = new Parser();
  const text = await new Promise<string | null>((resolveText, reject) => {
    let done = false;
    const finish = (value: string | null) => {
      if (done) return;
      done = true;
      resolveText(value);
      source.destroy();
    };
    parser.on('entry', (entry: ReadEntry) => {
      if (done || entry.path !== MANIFEST) {
        entry.resume();
        finish(null);
        return;
      }
      const chunks: Buffer[] = [];
      entry.on('data', (c: Buffer) => chunks.push(c));
      entry.on('end', () => finish(Buffer.concat(chunks).toString('utf8')));
    });
    parser.on('error', (err: Error) => (done ? undefined : reject(new BackupError(`${file} is not an svc backup (not a tar archive: ${err.message})`))));
    parser.on('end', () => finish(null));
    source.on('error', (err: Error) => reject(new BackupError(`cannot read ${file}: ${err.message}`)));
    source.pipe(parser as unknown as NodeJS.WritableStream);
  });
  if (text === null) throw new BackupError(`${file} is not an svc backup: it does not begin with ${MANIFEST}`);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(text) as Manifest;
  } catch {
    throw new BackupError(`${file}: its ${MANIFEST} is not JSON`);
  }
  if (manifest?.format !== FORMAT || !Number.isInteger(manifest.format_version)) throw new BackupError(`${file} is not an svc backup (its manifest names no ${FORMAT} format)`);
  return manifest;
}

/** Null when this build can restore the archive; else why not. */
export function manifestProblem(manifest: Manifest, svcVersion: string): string | null {
  if (manifest.format_version > FORMAT_VERSION) {
    return `the archive is in backup format ${manifest.format_version}, made by svc ${manifest.svc_version}; this svc ${svcVersion} reads format ${FORMAT_VERSION}: restore it with svc ${manifest.svc_version} or newer`;
  }
  const migrations = manifest.schema?.migrations;
  if (!Array.isArray(migrations) || !manifest.database?.file || !/^[0-9a-f]{64}$/.test(manifest.database.sha256 ?? '')) return 'the archive\'s manifest is incomplete (schema or database missing)';
  const unknown = migrations.filter((m) => !MIGRATION_NAMES.includes(m));
  if (unknown.length) {
    return `the archive's database has a newer schema than this svc ${svcVersion} knows (migration${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}; ` +
      `this build's last is ${MIGRATION_NAMES.at(-1)}). It was made by svc ${manifest.svc_version}: restore it with that version or a newer one`;
  }
  return null;
}

export interface RestoreOptions {
  from: string;
  force: boolean;
  dataDir: string;
  databaseUrl: string | null;
  svcVersion: string;
  toolEnv: NodeJS.ProcessEnv;
  progress: (line: string) => void;
}

export interface RestoreResult {
  manifest: Manifest;
  files: number;
}

/** What makes the target not empty: the data dir's entries besides a key file, and the database's tables. */
async function targetContents(opts: RestoreOptions, db: Db | null): Promise<string[]> {
  const found: string[] = [];
  if (existsSync(opts.dataDir)) {
    for (const name of readdirSync(opts.dataDir)) {
      if (KEPT_IN_TARGET.has(name)) continue;
      if (name === SQLITE_FILE && statSync(join(opts.dataDir, name)).size === 0) continue;
      found.push(join(opts.dataDir, name));
    }
  }
  if (db) {
    const tables = await postgresTables(db);
    if (tables.length) found.push(`${tables.length} table(s) in the database of DATABASE_URL (${tables.slice(0, 3).join(', ')}${tables.length > 3 ? ', ...' : ''})`);
  }
  return found;
}

/**
 * Restores an archive into an empty target: the data dir (nothing in it but maybe the key file),
 * and for PostgreSQL a database without tables. With `force`, the target's database and files
 * (but a key file) are deleted first, once the archive has been unpacked and checked.
 */
export async function restoreBackup(opts: RestoreOptions): Promise<RestoreResult> {
  const from = resolve(opts.from);
  const manifest = await readManifest(from);
  const problem = manifestProblem(manifest, opts.svcVersion);
  if (problem) throw new BackupError(`refusing to restore ${from}: ${problem}`);
  const target = opts.databaseUrl ? 'postgres' : 'sqlite';
  if (manifest.dialect !== target) {
    throw new BackupError(manifest.dialect === 'sqlite'
      ? `refusing to restore ${from}: it holds a SQLite database; unset DATABASE_URL to restore it into SVC_DATA_DIR (moving between SQLite and PostgreSQL is not supported)`
      : `refusing to restore ${from}: it holds a PostgreSQL dump; set DATABASE_URL to an empty PostgreSQL database (moving between PostgreSQL and SQLite is not supported)`);
  }
  opts.progress(`archive of svc ${manifest.svc_version}, taken ${manifest.created_at}: ${manifest.dialect}, schema ${manifest.schema.latest_migration ?? '(none)'}`);
  const handle = opts.databaseUrl ? openDatabase({ databaseUrl: opts.databaseUrl, dataDir: opts.dataDir, poolSize: 1 }) : null;
  try {
    const contents = await targetContents(opts, handle?.db ?? null);
    if (contents.length && !opts.force) {
      throw new BackupError(`refusing to restore into a target that is not empty:\n${contents.slice(0, 10).map((c) => `  ${c}`).join('\n')}\n` +
        'Restore into a new SVC_DATA_DIR (and, for PostgreSQL, a new empty database), or pass --force to delete what is there first (the key file stays).');
    }
    preparePrivateDir(opts.dataDir);
    const staging = mkdtempSync(join(opts.dataDir, '.svc-restore-'));
    try {
      opts.progress(`unpacking ${from}`);
      await extract({ file: from, cwd: staging, strict: true, preserveOwner: false });
      const dbFile = join(staging, manifest.database.file);
      if (!within(join(staging, 'database'), dbFile) || !existsSync(dbFile)) throw new BackupError(`${from} is damaged: ${manifest.database.file} is missing`);
      if ((await sha256(dbFile)) !== manifest.database.sha256) throw new BackupError(`${from} is damaged: ${manifest.database.file} does not match its checksum`);
      opts.progress('the database in the archive matches its checksum');
      if (contents.length) {
        opts.progress('--force: deleting what the target holds');
        for (const name of readdirSync(opts.dataDir)) {
          if (!KEPT_IN_TARGET.has(name) && join(opts.dataDir, name) !== staging) rmSync(join(opts.dataDir, name), { recursive: true, force: true });
        }
        if (handle) await dropPostgresTables(handle.db);
      }
      if (handle) {
        opts.progress('pg_restore into the database of DATABASE_URL');
        await restorePostgres(opts.databaseUrl!, dbFile, opts.toolEnv);
      } else {
        renameSync(dbFile, join(opts.dataDir, SQLITE_FILE));
      }
      const files = moveFiles(join(staging, DATA_PREFIX), opts.dataDir);
      opts.progress(`files: ${files} restored into ${opts.dataDir}`);
      preparePrivateDir(opts.dataDir);
      return { manifest, files };
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  } finally {
    await handle?.close();
  }
}

/** Moves the unpacked data/ tree into the data dir (same file system: renames); returns how many files it holds. */
function moveFiles(from: string, to: string): number {
  if (!existsSync(from)) return 0;
  const count = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? count(join(dir, e.name)) : 1), 0);
  let files = 0;
  for (const name of readdirSync(from)) {
    if (KEPT_IN_TARGET.has(name) || excluded(name)) continue;
    const source = join(from, name);
    files += statSync(source).isDirectory() ? count(source) : 1;
    renameSync(source, join(to, name));
  }
  return files;
}

export { DatabaseBackupError };
