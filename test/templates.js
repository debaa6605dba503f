// Migrated template databases, made once per set of migrations and copied by each test file
// (test/harness.ts, createTestDatabase({ migrated: true })) instead of migrating its own: on
// PostgreSQL a database `svc_template_<hash>` copied with CREATE DATABASE ... TEMPLATE, on SQLite
// a migrated svc.db copied into the test's data dir.
//
// A template holds the schema and the svc_migrations rows only: the migrations write no key
// material and no secret (the service key, SVC_SECRET_KEY, is each test's own and is only read at
// start), so one template serves every test whatever its key. The name carries a hash of the
// migration sources, so a changed migration gets a new template, and runs of different branches
// against one shared server never use each other's. Made with the compiled migrations in dist/
// (built first by test/build.js), which are the same code.
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const ROOT = join(import.meta.dirname, '..');

/** A hash of everything that decides the migrated schema. */
export function migrationsHash() {
  const hash = createHash('sha256');
  const dir = join(ROOT, 'src', 'db', 'migrations');
  for (const file of [join(ROOT, 'src', 'db', 'migrate.ts'), ...readdirSync(dir).sort().map((n) => join(dir, n))]) {
    hash.update(file.slice(ROOT.length)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

async function migrateWithBuild(databaseUrl, dataDir) {
  const { openDatabase } = await import('../dist/db/database.js');
  const { migrateToLatest } = await import('../dist/db/migrate.js');
  const handle = openDatabase({ databaseUrl, dataDir, poolSize: 1 });
  try {
    await migrateToLatest(handle.db);
  } finally {
    await handle.close();
  }
}

/** A migrated svc.db under the system temp dir (made once per hash; the rename makes it appear whole). */
async function sqliteTemplate(hash) {
  const dir = join(tmpdir(), `svc-test-template-${hash}`);
  const file = join(dir, 'svc.db');
  if (existsSync(file)) return file;
  const work = mkdtempSync(join(tmpdir(), 'svc-test-template-work-'));
  try {
    await migrateWithBuild(null, join(work, 'data'));
    // Closed above, so the write-ahead log is checkpointed into svc.db and removed: one file holds it all.
    const ready = join(work, 'ready');
    mkdirSync(ready, { mode: 0o700 });
    copyFileSync(join(work, 'data', 'svc.db'), join(ready, 'svc.db'));
    try {
      renameSync(ready, dir);
    } catch (err) {
      if (!existsSync(file)) throw err; // another run made it at the same moment: use theirs
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return file;
}

/**
 * `svc_template_<hash>` on the server of `adminUrl`, made once: migrated under a temporary name,
 * then closed to connections (a database is copied only while nobody is connected to it) and
 * renamed, so no test file ever copies a half-migrated template.
 */
async function postgresTemplate(adminUrl, hash) {
  const name = `svc_template_${hash}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return name;
    const work = `svc_template_work_${randomBytes(6).toString('hex')}`;
    await admin.query(`create database ${work}`);
    const url = new URL(adminUrl);
    url.pathname = `/${work}`;
    try {
      await migrateWithBuild(url.toString(), tmpdir()); // no data dir on PostgreSQL
      await admin.query(`alter database ${work} with allow_connections false is_template true`);
      await admin.query(`alter database ${work} rename to ${name}`);
    } catch (err) {
      await admin.query(`alter database ${work} is_template false`).catch(() => {});
      await admin.query(`drop database if exists ${work} with (force)`).catch(() => {});
      const again = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (!again.rowCount) throw err; // not a lost race with another run: a real failure
    }
    return name;
  } finally {
    await admin.end();
  }
}

/** Makes the template for this run's dialect; returns the environment naming it to the test files. */
export async function prepareTemplates(adminUrl) {
  const hash = migrationsHash();
  if (adminUrl) return { SVC_TEST_PG_TEMPLATE: await postgresTemplate(adminUrl, hash) };
  return { SVC_TEST_SQLITE_TEMPLATE: await sqliteTemplate(hash) };
}
