// `svc admin backup` and `svc admin restore` (issue 35, API.md 8.12), through real processes on the
// suite's database: a backup taken while writers keep creating workspaces and secrets over HTTP,
// restored into a fresh data dir (and, on PostgreSQL, a fresh empty database), holds every record
// committed before the backup began, every secret value readable with the key kept apart, and
// every file of the data dir (a bare git repository's files, where a later feature keeps them);
// records committed during the backup, when present, are whole. The archive never holds the key:
// not its hex, its bytes or its base64, also in the plain SQL of a PostgreSQL dump. Restore
// refuses an archive of a newer schema and a target that is not empty, changing nothing; --force
// replaces what the target holds.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { create, extract } from 'tar';
import { keyIdOf } from '../src/platform/keyring.js';
import { databasesDroppedAfter, DIALECT, type TestDatabase } from './harness.js';
import { runSvc, startSvc, svcCaller, type RunningSvc } from './processes.js';

const TOKEN = 'Backup0Under0Load0Bootstrap0Tok0';
const call = svcCaller(TOKEN);

/** The service's environment over `db`; no SVC_SECRET_KEY unless given: the key is the data dir's secret.key. */
const envOf = (db: TestDatabase, extra: Record<string, string> = {}) => ({
  SVC_DATA_DIR: db.dataDir,
  ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
  SVC_TEST_HOOKS: '1',
  SVC_TEST_PASSWORD_HASH: 'fast',
  SVC_QUOTAS_ENFORCED: 'false',
  ...extra,
});

/** Tables of the database's public schema (PostgreSQL); the SQLite file's presence otherwise. */
async function databaseIsEmpty(db: TestDatabase): Promise<boolean> {
  if (!db.databaseUrl) return !existsSync(join(db.dataDir, 'svc.db'));
  const client = new pg.Client({ connectionString: db.databaseUrl });
  await client.connect();
  try {
    return (await client.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`)).rows[0].n === 0;
  } finally {
    await client.end();
  }
}

interface Written {
  kind: 'secret' | 'workspace';
  id: string;
  value?: string;
  /** performance.now() when its response (201: committed) arrived */
  at: number;
}

describe(`svc admin backup and restore (${DIALECT})`, () => {
  const database = databasesDroppedAfter();
  const work = mkdtempSync(join(tmpdir(), 'svc-backup-test-'));
  const archive = join(work, 'svc-backup.tar');
  let source: TestDatabase;
  let target: TestDatabase;
  let key: Buffer;
  let ws: string;
  /** a bare repository's files, where SVC_GIT_DIR (default {data dir}/git) will keep them */
  const gitFiles: Record<string, Buffer> = {
    'git/repo_backup0test.git/HEAD': Buffer.from('ref: refs/heads/main\n'),
    'git/repo_backup0test.git/refs/heads/main': Buffer.from('3b18e512dba79e4c8300dd08aeb37f8e728b8dad\n'),
    'git/repo_backup0test.git/objects/3b/18e512dba79e4c8300dd08aeb37f8e728b8dad': randomBytes(300),
  };
  let before: Written[] = [];
  let during: Written[] = [];

  after(() => rmSync(work, { recursive: true, force: true }));

  test('a backup under a burst of writes restores every record committed before it, every value, every file', { timeout: 240_000 }, async () => {
    source = await database();
    const env = envOf(source, { SVC_BOOTSTRAP_EMAIL: 'owner@example.test', SVC_BOOTSTRAP_PASSWORD: 'owner password', SVC_BOOTSTRAP_TOKEN: TOKEN });
    const svc = await startSvc(env);
    let writing = true;
    const written: Written[] = [];
    try {
      key = Buffer.from(readFileSync(join(source.dataDir, 'secret.key'), 'utf8').trim(), 'hex');
      assert.equal(key.length, 32, 'the service generated its key into the data dir');
      const created = await call(svc.url, 'POST', '/v1/workspaces', { body: { name: 'Backed up' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      ws = created.body.id;
      for (const [path, bytes] of Object.entries(gitFiles)) {
        mkdirSync(join(source.dataDir, path, '..'), { recursive: true });
        writeFileSync(join(source.dataDir, path), bytes);
      }

      // Four writers: secrets with values in the workspace, and now and then a workspace.
      const writer = async (w: number) => {
        for (let i = 0; writing; i++) {
          if (i % 4 === 3) {
            const res = await call(svc.url, 'POST', '/v1/workspaces', { body: { name: `burst ${w}-${i}` } });
            assert.equal(res.status, 201, JSON.stringify(res.body));
            written.push({ kind: 'workspace', id: res.body.id, at: performance.now() });
          } else {
            const value = `value ${w}-${i} ${randomBytes(8).toString('hex')}`;
            const res = await call(svc.url, 'POST', '/v1/secrets', { headers: { 'svc-context': ws }, body: { name: `burst-${w}-${i}`, value } });
            assert.equal(res.status, 201, JSON.stringify(res.body));
            written.push({ kind: 'secret', id: res.body.id, value, at: performance.now() });
          }
        }
      };
      const writers = [0, 1, 2, 3].map(writer);
      while (written.length < 40) await new Promise((r) => setTimeout(r, 20));

      const began = performance.now();
      const backup = await runSvc(['admin', 'backup', '--to', archive], env);
      const ended = performance.now();
      // A few more after the backup, then stop.
      const count = written.length;
      while (written.length < count + 8) await new Promise((r) => setTimeout(r, 20));
      writing = false;
      await Promise.all(writers);

      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stderr, /^backup: snapshotting the /m, 'progress on stderr');
      assert.match(backup.stdout, /^backup written: .*svc-backup\.tar/m);
      assert.match(backup.stdout, /THIS ARCHIVE HOLDS NO KEY\. Its secret values are sealed under key id [0-9a-f]{16}/);
      assert.match(backup.stdout, new RegExp(`secret versions: \\d+ sealed under key ${keyIdOf(key)}`));
      before = written.filter((r) => r.at < began);
      during = written.filter((r) => r.at >= began && r.at <= ended);
      assert.ok(before.length >= 40);
      assert.ok(during.length > 0, 'the writers kept committing while the backup ran');
    } finally {
      writing = false;
      await svc.stop();
    }

    // The archive: a manifest first, then the database and the data dir's files; never the key.
    const bytes = readFileSync(archive);
    for (const form of [key, Buffer.from(key.toString('hex')), Buffer.from(key.toString('hex').toUpperCase()), Buffer.from(key.toString('base64'))]) {
      assert.equal(bytes.indexOf(form), -1, 'the archive holds no form of the key');
    }
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    const entries: string[] = [];
    await extract({ file: archive, cwd: unpacked, onReadEntry: (e) => void entries.push(e.path) });
    assert.equal(entries[0], 'manifest.json');
    assert.ok(!entries.some((p) => /secret\.key/.test(p)), entries.join('\n'));
    const manifest = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8'));
    assert.equal(manifest.dialect, DIALECT);
    assert.equal(manifest.format_version, 1);
    assert.match(manifest.schema.latest_migration, /^\d{3}_/);
    assert.ok(manifest.keys.sealed_under.some((s: { key_id: string }) => s.key_id === keyIdOf(key)));
    for (const [path, content] of Object.entries(gitFiles)) assert.deepEqual(readFileSync(join(unpacked, 'data', path)), content, path);
    if (DIALECT === 'postgres') {
      // The custom format compresses: its plain SQL must not hold the key either.
      const { stdout } = await promisify(execFile)('pg_restore', ['--file=-', join(unpacked, manifest.database.file)], { maxBuffer: 256 * 1024 * 1024 });
      assert.match(stdout, /svc_migrations/);
      assert.ok(!stdout.includes(key.toString('hex')) && !stdout.includes(key.toString('base64')), 'the dump holds no form of the key');
    }

    // Restore into a fresh data dir (and database), the kept key given in the environment.
    target = await database();
    const restored = await runSvc(['admin', 'restore', '--from', archive], envOf(target, { SVC_SECRET_KEY: key.toString('hex') }));
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, new RegExp(`sealed under key id ${keyIdOf(key)}, which the configured key opens`));
    assert.match(restored.stderr, /^restore: the database in the archive matches its checksum$/m);
    assert.ok(!existsSync(join(target.dataDir, 'secret.key')), 'restore writes no key');
    for (const [path, content] of Object.entries(gitFiles)) assert.deepEqual(readFileSync(join(target.dataDir, path)), content, path);

    // No bootstrap: all the restored service knows comes from the archive.
    const restoredSvc = await startSvc(envOf(target, { SVC_SECRET_KEY: key.toString('hex') }));
    try {
      const read = (r: Written) => r.kind === 'secret'
        ? call(restoredSvc.url, 'POST', `/v1/secrets/${r.id}/versions/latest:access`, { headers: { 'svc-context': ws } })
        : call(restoredSvc.url, 'GET', `/v1/workspaces/${r.id}`);
      const reads = async (records: Written[]) => {
        const out: { status: number; body: any }[] = [];
        for (let i = 0; i < records.length; i += 8) out.push(...(await Promise.all(records.slice(i, i + 8).map(read))));
        return out;
      };
      const readBefore = await reads(before);
      for (const [i, r] of before.entries()) {
        const res = readBefore[i]!;
        assert.equal(res.status, 200, `${r.kind} ${r.id}, committed before the backup began: ${JSON.stringify(res.body)}`);
        if (r.value !== undefined) assert.equal(res.body.value, r.value);
      }
      const readDuring = await reads(during);
      for (const [i, r] of during.entries()) {
        const res = readDuring[i]!;
        // Absent from the snapshot: a secret is 404, a workspace 403 (it does not say whether it exists).
        assert.ok(res.status === 200 || res.status === (r.kind === 'secret' ? 404 : 403), `${r.kind} ${r.id}: ${res.status} ${JSON.stringify(res.body)}`);
        if (res.status === 200 && r.value !== undefined) assert.equal(res.body.value, r.value, 'a secret in the snapshot is whole');
      }
    } finally {
      await restoredSvc.stop();
    }
  });

  test('restore refuses a target that is not empty, then --force replaces what it holds (but the key file)', { timeout: 120_000 }, async () => {
    assert.ok(target, 'the first test restored into target');
    const env = envOf(target, { SVC_SECRET_KEY: key.toString('hex') });
    writeFileSync(join(target.dataDir, 'stray.txt'), 'not from the archive');
    writeFileSync(join(target.dataDir, 'secret.key'), key.toString('hex') + '\n', { mode: 0o600 });
    const refused = await runSvc(['admin', 'restore', '--from', archive], env);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /^error: refusing to restore into a target that is not empty:\n/m);
    assert.match(refused.stderr, /stray\.txt/);
    assert.match(refused.stderr, /pass --force/);
    assert.ok(existsSync(join(target.dataDir, 'stray.txt')), 'nothing changed');

    const forced = await runSvc(['admin', 'restore', '--from', archive, '--force'], env);
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stderr, /--force: deleting what the target holds/);
    assert.ok(!existsSync(join(target.dataDir, 'stray.txt')));
    assert.equal(readFileSync(join(target.dataDir, 'secret.key'), 'utf8'), key.toString('hex') + '\n', 'the key file stays');
    for (const [path, content] of Object.entries(gitFiles)) assert.deepEqual(readFileSync(join(target.dataDir, path)), content, path);
    assert.equal(await databaseIsEmpty(target), false);
    assert.deepEqual(readdirSync(target.dataDir).filter((n) => n.startsWith('.svc-restore-')), [], 'no staging left behind');
  });

  test('backup refuses to overwrite an archive without --force, and to write one inside the data dir', { timeout: 120_000 }, async () => {
    const before = readFileSync(archive);
    const [exists, inside] = await Promise.all([
      runSvc(['admin', 'backup', '--to', archive], envOf(source)),
      runSvc(['admin', 'backup', '--to', join(source.dataDir, 'git', 'inside.tar')], envOf(source)),
    ]);
    assert.equal(exists.code, 1, exists.stderr);
    assert.match(exists.stderr, /^error: .*svc-backup\.tar exists: choose another file, or pass --force to replace it$/m);
    assert.deepEqual(readFileSync(archive), before, 'the archive is untouched');
    assert.equal(inside.code, 1, inside.stderr);
    assert.match(inside.stderr, /is inside the data dir .*: the archive would hold itself/);
    assert.ok(!existsSync(join(source.dataDir, 'git', 'inside.tar')));
    assert.deepEqual(readdirSync(work).filter((n) => n.includes('.partial-')), [], 'no partial file left behind');
  });

  test('restore refuses an archive of a newer schema (changing nothing), names the key it needs when none is configured; usage errors', { timeout: 120_000 }, async () => {
    const unpacked = join(work, 'unpacked');
    const manifest = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8'));
    manifest.schema.migrations.push('999_from_the_future');
    manifest.schema.latest_migration = '999_from_the_future';
    writeFileSync(join(unpacked, 'manifest.json'), JSON.stringify(manifest));
    const tampered = join(work, 'newer.tar');
    await create({ file: tampered, cwd: unpacked }, ['manifest.json', 'database', 'data']);

    const fresh = await database();
    const [refused, noFrom, noTo, help] = await Promise.all([
      runSvc(['admin', 'restore', '--from', tampered], envOf(fresh, { SVC_SECRET_KEY: key.toString('hex') })),
      runSvc(['admin', 'restore'], envOf(fresh)),
      runSvc(['admin', 'backup'], envOf(fresh)),
      runSvc(['admin', 'backup', '--help'], envOf(fresh)),
    ]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, /^error: refusing to restore .*newer\.tar: the archive's database has a newer schema than this svc \S+ knows \(migration 999_from_the_future; this build's last is \d{3}_\w+\)/);
    assert.deepEqual(readdirSync(fresh.dataDir), [], 'nothing written to the data dir');
    assert.equal(await databaseIsEmpty(fresh), true, 'nothing written to the database');

    // The refusal left the target as it was: the archive restores there, and without a key
    // configured, restore says which key to give before svc serve (it never makes one).
    const keyless = await runSvc(['admin', 'restore', '--from', archive], envOf(fresh));
    assert.equal(keyless.code, 0, keyless.stderr);
    assert.match(keyless.stdout, new RegExp(`KEYS: the restored values are sealed under key id ${keyIdOf(key)}; no key is configured\\.`));
    assert.match(keyless.stdout, new RegExp(`set SVC_SECRET_KEY to the key of id ${keyIdOf(key)} that you kept`));
    assert.ok(!existsSync(join(fresh.dataDir, 'secret.key')));
    assert.equal(noFrom.code, 2);
    assert.match(noFrom.stderr, /^error: admin restore needs --from FILE\n\nUsage: svc admin restore/);
    assert.equal(noTo.code, 2);
    assert.match(noTo.stderr, /^error: admin backup needs --to FILE\n\nUsage: svc admin backup/);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: svc admin backup --to FILE \[--force\]/);
    assert.match(help.stdout, /THE ARCHIVE HOLDS NO KEY/);
  });
});
